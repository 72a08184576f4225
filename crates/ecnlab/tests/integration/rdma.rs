//! RDMA fabrics: priority flow control (802.1Qbb) and DCQCN.

use crate::common::{f, run_text};
use ecnlab::Scenario;

/// 32 senders on two leaves answer one receiver on a third: the receiver's ToR port is the incast point.
const INCAST: &str = r#"
duration = "0.1s"
[topology]
kind = "leaf_spine"
leaves = 3
spines = 2
hosts_per_leaf = 16
rate = "10Gbps"
delay = "1us"
[switch]
buffer = "200KB"
[transport]
cc = { kind = "reno" }
[[workloads]]
kind = "incast"
senders = "16-47"
receiver = 0
block = "64KB"
rounds = 5
"#;

#[test]
fn pfc_makes_a_32_to_1_incast_lossless_and_pauses_propagate_upstream() {
    let off = run_text(INCAST, &[]);
    assert!(f(&off.summary["totals"]["dropped_pkts"]) > 0.0, "without PFC the 200 KB port overflows");

    let on = run_text(INCAST, &["switch.pfc={ xoff = \"20KB\" }"]);
    let pfc = &on.summary["pfc"];
    assert_eq!(f(&on.summary["totals"]["dropped_pkts"]), 0.0);
    assert_eq!(f(&on.summary["totals"]["timeouts"]), 0.0);
    assert_eq!(f(&on.summary["workloads"][0]["rounds_completed"]), 5.0);
    assert!(f(&pfc["pauses_sent"]) > 0.0);
    assert_eq!(pfc["pauses_sent"], pfc["pauses_received"], "every PAUSE reaches its transmitter within the run");
    // Propagation: the receiver's ToR pauses the spines, whose queues then pause the senders' leaves, which
    // pause the hosts.
    let paused: Vec<&String> = pfc["paused_time_s"].as_object().unwrap().keys().collect();
    let spine_to_leaf = paused.iter().any(|n| n.starts_with("s3->") || n.starts_with("s4->"));
    let leaf_to_spine = paused.iter().any(|n| n.starts_with("s1->s") || n.starts_with("s2->s"));
    let host = paused.iter().any(|n| n.starts_with('h'));
    assert!(spine_to_leaf && leaf_to_spine && host, "paused transmitters: {paused:?}");
    // 802.1Qbb headroom, computed here independently: what one 10 Gb/s, 1 us link delivers after XOFF is
    // crossed is at most two link delays of data (1250 B each), the PAUSE frame's own time (64 B), the frame
    // in transmission and the one that crossed (2 MTU), and a host NIC's committed backlog (3000 + 1500 B).
    let bound = 20_000.0 + 2.0 * 1250.0 + 64.0 + 3000.0 + 4500.0;
    assert!(f(&pfc["max_peak_ingress_bytes"]) <= bound, "{}", pfc["max_peak_ingress_bytes"]);
    assert!(f(&pfc["max_peak_ingress_bytes"]) >= 20_000.0, "XOFF was reached");
}

#[test]
fn pfc_rejects_round_robin_schedulers_and_fails_runs_that_drop_lossless_packets() {
    let sets = ["switch.pfc={ xoff = \"20KB\" }".into(), "switch.queues=2".into()];
    let dwrr = [&sets[..], &["switch.scheduler={ kind = \"dwrr\", quantum = \"1500B\" }".into()]].concat();
    let e = Scenario::from_toml(INCAST, &dwrr).unwrap_err().to_string();
    assert!(e.contains("switch.scheduler.kind") && e.contains("sp"), "{e}");

    // A WRED profile that drops non-ECT traffic would drop lossless packets: the run must fail, loudly.
    let drop = [
        &sets[..],
        &["switch.marker={ kind = \"threshold\", threshold = \"10KB\" }".into(), "switch.non_ect=\"drop\"".into()],
    ]
    .concat();
    let sc = Scenario::from_toml(INCAST, &drop).expect("valid");
    let e = ecnlab::run(&sc).err().expect("the run fails").to_string();
    assert!(e.contains("lossless"), "{e}");
}

/// Four long-lived DCQCN flows into one 40 Gb/s port, RED-ECN between K_min = 5 KB and K_max = 200 KB with
/// P_max = 1 % (DCQCN §5).
const OVER_PFC: &str = "switch.pfc={ xoff = \"100KB\" }";
const DCQCN_4_TO_1: &str = r#"
duration = "0.2s"
[topology]
kind = "star"
hosts = 5
rate = "40Gbps"
delay = "1us"
[switch]
buffer = "1MB"
marker = { kind = "red", min = "5KB", max = "200KB", max_p = 0.01 }
[transport]
mss = 1000
cc = { kind = "dcqcn" }
[[workloads]]
kind = "flows"
src = "1-4"
dst = 0
[observe]
warmup = "0.1s"
ports = ["s0->h0"]
"#;

#[test]
fn dcqcn_flows_converge_to_fair_shares_with_the_queue_between_kmin_and_kmax() {
    let r = run_text(DCQCN_4_TO_1, &[OVER_PFC]);
    let g = &r.summary["goodput"];
    assert!(f(&g["jain_long_lived"]) >= 0.95, "Jain index {}", g["jain_long_lived"]);
    // Line rate less headers: 40 Gb/s × 1000 / 1040.
    assert!(f(&g["total_gbps"]) > 0.95 * 40.0 * 1000.0 / 1040.0, "{}", g["total_gbps"]);
    let q = &r.summary["ports"]["s0->h0"]["occupancy"];
    let mean = f(&q["mean_bytes"]);
    assert!((5_000.0..200_000.0).contains(&mean), "mean queue {mean} B");
    assert!(f(&q["max_bytes"]) < 200_000.0, "the queue stays below K_max after convergence");
    assert!(f(&r.summary["totals"]["marked_pkts"]) > 0.0);
    assert_eq!(f(&r.summary["totals"]["dropped_pkts"]), 0.0);
}

#[test]
fn dcqcn_rates_sampled_in_gbps_share_the_link() {
    let sample = ["observe.sample_interval=\"100us\"", "observe.cwnd=[0,1,2,3]"];
    let r = run_text(DCQCN_4_TO_1, &[&[OVER_PFC][..], &sample].concat());
    let s = r.series.iter().find(|s| s.name == "cwnd").expect("cwnd series");
    assert_eq!(s.columns[1..], ["flow0_rate_gbps", "flow1_rate_gbps", "flow2_rate_gbps", "flow3_rate_gbps"]);
    // After warm-up the four rates (wire bits, headers included) add up to about the 40 Gb/s they share: a
    // lasting surplus would grow the queue past K_max, a deficit would idle the port.
    let late: Vec<f64> = s.rows.iter().filter(|row| row[0] >= 0.1).map(|row| row[1..].iter().sum()).collect();
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!((36.0..44.0).contains(&mean), "mean sum of the rates {mean} Gb/s");
}

#[test]
fn roce_recovers_losses_by_go_back_n_when_pfc_is_off() {
    // No PFC and a 30 KB buffer: the line-rate start overflows it; NACKs and the timeout resend what was lost.
    let r = run_text(
        DCQCN_4_TO_1,
        &[
            "switch.buffer=\"30KB\"",
            "switch.marker={ kind = \"red\", min = \"5KB\", max = \"25KB\", max_p = 0.01 }",
            "workloads.0={ kind = \"flows\", src = \"1-4\", dst = 0, size = \"2MB\" }",
        ],
    );
    let t = &r.summary["totals"];
    assert!(f(&t["dropped_pkts"]) > 0.0);
    assert!(f(&t["retransmits"]) > 0.0);
    assert_eq!(f(&r.summary["fct"]["finished"]), 4.0, "every message completes");
    assert_eq!(r.flows.iter().map(|f| f.delivered_bytes).sum::<u64>(), 4 * 2_000_000);
}

#[test]
fn dcqcn_rejects_tcp_only_options() {
    for (set, field) in [("transport.handshake=true", "transport.handshake"), ("transport.pias={}", "transport.pias")] {
        let e = Scenario::from_toml(DCQCN_4_TO_1, &[set.into(), "switch.queues=4".into()]).unwrap_err().to_string();
        assert!(e.contains(field), "{e}");
    }
}

#[test]
fn dcqcn_over_pfc_is_deterministic_per_seed() {
    // RED draws and Poisson arrivals come from seeded streams; rates are floats updated in event order.
    let traffic =
        "workloads.0={ kind = \"poisson\", hosts = \"1-4\", dst = 0, load = 0.8, flows = 200, cdf = [\"websearch\"] }";
    let run = |seed: &str| {
        let r = run_text(DCQCN_4_TO_1, &[OVER_PFC, traffic, seed]);
        let mut s = r.summary.clone();
        s["wall_time_s"] = 0.into();
        s["events_per_s"] = 0.into();
        (serde_json::to_string(&s).unwrap(), r.fct_csv())
    };
    let a = run("seed=1");
    assert_eq!(a, run("seed=1"));
    assert_ne!(a.1, run("seed=2").1);
}
