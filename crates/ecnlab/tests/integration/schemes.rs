//! Marking schemes inside a running port: MQ-ECN's round-time estimator against its analytic value.

use ecnlab::mark::AnyMarker;
use ecnlab::{Scenario, Sim};

/// n equal DWRR queues, each with one long DCTCP flow, at a 10 Gb/s port with MQ-ECN.
fn mqecn_port(quanta_weights: &str, n: usize) -> Sim {
    let classes: Vec<String> = (0..n).map(|c| c.to_string()).collect();
    let text = format!(
        r#"
duration = "50ms"
[topology]
kind = "star"
hosts = {hosts}
rate = "10Gbps"
delay = "5us"
host_links = [{{ hosts = "1-{n}", rate = "40Gbps" }}]
[switch]
buffer = "2MB"
queues = {n}
scheduler = {{ kind = "dwrr", quantum = "1500B", weights = {quanta_weights} }}
marker = {{ kind = "mqecn", threshold = "65pkt" }}
[transport]
cc = {{ kind = "dctcp" }}
[[workloads]]
kind = "flows"
src = "1-{n}"
dst = 0
classes = [{classes}]
"#,
        hosts = n + 1,
        classes = classes.join(", ")
    );
    let sc = Scenario::from_toml(&text, &[]).expect("valid");
    let mut sim = Sim::new(&sc).expect("builds");
    sim.run().expect("runs");
    sim
}

fn t_round_us(sim: &Sim) -> f64 {
    let p = sim.net.port_by_name("s0->h0").unwrap() as usize;
    match &sim.ports[p].marker {
        AnyMarker::MqEcn(m) => m.t_round / 1e6,
        _ => unreachable!("MQ-ECN port"),
    }
}

#[test]
fn round_time_converges_to_n_quanta_over_the_link_rate() {
    // MQ-ECN §3.3: with n backlogged queues of quantum Q, one round serves n·Q bytes: T_round = n·Q / C.
    for n in [2usize, 4, 8] {
        let w = format!("[{}]", vec!["1"; n].join(", "));
        let sim = mqecn_port(&w, n);
        let expect = n as f64 * 1500.0 * 8.0 / 10e9 * 1e6;
        let got = t_round_us(&sim);
        assert!((got - expect).abs() <= 0.05 * expect, "n = {n}: T_round {got} us, expected {expect} us");
    }
}

#[test]
fn unequal_quanta_give_thresholds_proportional_to_quantum() {
    // Quanta 1:2:5 (× 1500 B), all backlogged: T_round = 8·1500 B / C and K_i = K · Q_i / (C · T_round).
    let sim = mqecn_port("[1, 2, 5]", 3);
    let expect = 8.0 * 1500.0 * 8.0 / 10e9 * 1e6;
    let got = t_round_us(&sim);
    assert!((got - expect).abs() <= 0.05 * expect, "T_round {got} us, expected {expect} us");
    let bytes_per_round = 10e9 / 8.0 * got * 1e-6;
    for (q, w) in [1.0, 2.0, 5.0].iter().enumerate() {
        let scale = (w * 1500.0 / bytes_per_round).min(1.0);
        assert!((scale - w / 8.0).abs() < 0.05 * w / 8.0, "queue {q}: K_i / K = {scale}, expected {}", w / 8.0);
    }
}
