//! Persistent connections (MQ-ECN §5.1.2's client; the MQ-ECN and PIAS ns-2 scripts): a flow on an idle
//! connection restarts from the initial window after an idle period (RFC 5681 §4.1) and keeps the
//! connection's DCTCP α.

use crate::common::run_text;
use ecnlab::sim::Sim;
use ecnlab::transport::Sender;
use ecnlab::Scenario;

/// One sender, one receiver, flows of 3–60 KB far apart: each flow's cwnd is the only thing that can make
/// it faster, and without a second sender the switch never queues, so nothing is marked.
const ONE_PAIR: &str = r#"
duration = "60s"
[topology]
kind = "star"
hosts = 2
rate = "10Gbps"
delay = "5us"
[switch]
marker = { kind = "threshold", threshold = "65pkt" }
[transport]
cc = { kind = "dctcp" }
initial_window = 10
min_rto = "5ms"
initial_rto = "5ms"
[[workloads]]
kind = "poisson"
hosts = "1"
dst = 0
load = 0.002
flows = 300
cdf = ["uniform_3k_60k_bytes"]
"#;

fn alphas(connections: &str) -> Vec<f64> {
    let sc = Scenario::from_toml(ONE_PAIR, &[format!("workloads.0.connections=\"{connections}\"")]).unwrap();
    let mut sim = Sim::new(&sc).unwrap();
    sim.run().unwrap();
    sim.flows()
        .iter()
        .map(|f| match &f.sender {
            Sender::Tcp(s) => s.cc.alpha().expect("DCTCP"),
            Sender::Roce(_) => unreachable!(),
        })
        .collect()
}

#[test]
fn a_reused_idle_connection_restarts_from_the_initial_window_and_keeps_its_alpha() {
    let fresh = run_text(ONE_PAIR, &["workloads.0.connections=\"new\""]);
    let kept = run_text(ONE_PAIR, &["workloads.0.connections=\"persistent\""]);
    let w = &kept.summary["workloads"][0];
    let (conns, reused) = (w["connections"].as_u64().unwrap(), w["connections_reused"].as_u64().unwrap());
    assert_eq!(conns + reused, 300, "every flow opens a connection or reuses one");
    assert!(conns <= 3, "flows ~12 ms apart rarely overlap: {conns} connections");
    assert!(fresh.summary["workloads"][0].get("connections").is_none(), "only persistent pools are reported");

    // Idle for longer than the RTO, a kept connection's window restarts at IW (RFC 5681 §4.1): with nothing
    // marked or lost, its flow is exactly as fast as on a new connection. Idle for less, it may only be faster.
    let (mut equal, mut faster) = (0, 0);
    for (i, (a, b)) in fresh.flows.iter().zip(&kept.flows).enumerate() {
        let (fa, fb) = (a.fct_s.unwrap(), b.fct_s.unwrap());
        assert!(fb <= fa + 1e-12, "flow {i}: a kept connection made it slower ({fb} > {fa})");
        let prev_end = i.checked_sub(1).and_then(|j| kept.flows[j].finish_s).unwrap_or(0.0);
        let next_start = kept.flows.get(i + 1).map_or(f64::MAX, |n| n.start_s);
        if b.start_s - prev_end > 0.010 && next_start > b.finish_s.unwrap() {
            assert_eq!(fa, fb, "flow {i}: idle 10 ms > RTO, so the window restarted");
            equal += 1;
        } else if fb < fa {
            faster += 1;
        }
    }
    assert!(equal >= 100, "only {equal} flows after a long idle period");
    assert!(faster >= 1, "a connection reused within its RTO keeps its window, so some flow must gain");

    // DCTCP's α decays by (1 − g) = 15/16 per window without marks. A new connection starts at α = 1 and a
    // 60 KB flow lasts a handful of windows; a kept one carries the decay on from flow to flow.
    let fresh_alpha = alphas("new");
    assert!(
        fresh_alpha.iter().all(|&a| a > 0.5),
        "min α on new connections {:?}",
        fresh_alpha.iter().cloned().fold(1.0, f64::min)
    );
    let kept_alpha = alphas("persistent");
    assert!(*kept_alpha.last().unwrap() < 0.01, "the last flow's α {} after 300 flows", kept_alpha.last().unwrap());
}

#[test]
fn persistent_connections_are_deterministic() {
    let a = run_text(ONE_PAIR, &["workloads.0.connections=\"persistent\"", "workloads.0.load=0.3"]);
    let b = run_text(ONE_PAIR, &["workloads.0.connections=\"persistent\"", "workloads.0.load=0.3"]);
    assert_eq!(a.fct_csv(), b.fct_csv());
    assert!(a.summary["workloads"][0]["connections"].as_u64().unwrap() > 1, "at load 0.3 some flows overlap");
}
