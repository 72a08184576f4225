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
    let p = sim.port_index("s0->h0").unwrap();
    match sim.marker(p) {
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

/// Eight DCTCP flows to h0 and one to h1 through one switch whose ports share a 1 MB pool.
fn shared_pool(marker: &str) -> ecnlab::RunReport {
    let text = format!(
        r#"
duration = "60ms"
[topology]
kind = "star"
hosts = 11
rate = "10Gbps"
delay = "5us"
[switch]
buffer = "1MB"
marker = {marker}
pool = {{ size = "1MB", alpha = [1.0] }}
[transport]
cc = {{ kind = "dctcp" }}
[[workloads]]
kind = "flows"
src = "2-9"
dst = 0
[[workloads]]
kind = "flows"
src = 10
dst = 1
[observe]
warmup = "10ms"
"#
    );
    let sc = Scenario::from_toml(&text, &[]).expect("valid");
    ecnlab::run(&sc).expect("runs, conserving packets")
}

#[test]
fn per_pool_marking_lets_one_port_congest_another() {
    // MQ-ECN §2.1: with per-service-pool marking, occupancy anywhere in the pool marks everyone.
    let marks_to_h1 = |m: &str| {
        let r = shared_pool(m);
        r.summary["ports"]["s0->h1"]["window_counters"]["marked_pkts"].as_u64().unwrap()
    };
    let pool = marks_to_h1(r#"{ kind = "threshold", threshold = "65pkt", scope = "pool" }"#);
    let port = marks_to_h1(r#"{ kind = "threshold", threshold = "65pkt", scope = "port" }"#);
    assert_eq!(port, 0, "h1's own port never holds 65 packets");
    assert!(pool > 0, "the pool's total does, so the lone flow to h1 is marked too");
}

#[test]
fn every_scheme_and_scheduler_conserves_packets_and_is_deterministic() {
    // `ecnlab::run` asserts conservation; two runs of one seed must agree to the byte (wall time aside).
    let markers = [
        r#"{ kind = "threshold", threshold = "16pkt", scope = "queue_weighted" }"#,
        r#"{ kind = "mqecn", threshold = "16pkt" }"#,
        r#"{ kind = "mqecn_red", min = "8pkt", max = "24pkt", max_p = 0.2 }"#,
        r#"{ kind = "pmsb", threshold = "12pkt", at = "dequeue" }"#,
        r#"{ kind = "tcn", threshold = "20us" }"#,
        r#"{ kind = "codel", target = "5us", interval = "50us" }"#,
        r#"{ kind = "ecnsharp", ins_target = "40us", pst_target = "5us", pst_interval = "40us" }"#,
        r#"{ kind = "ecnsharp_queue", ins_threshold = "30pkt", pst_threshold = "5pkt", pst_interval = "40us" }"#,
        r#"{ kind = "ecnsharp_red", min = "5pkt", max = "30pkt", max_p = 0.5, pst_target = "5us", pst_interval = "40us" }"#,
        r#"{ kind = "red", min = "5pkt", max = "20pkt", max_p = 0.1, weight = 0.01, gentle = true, scope = "queue_weighted" }"#,
    ];
    let schedulers = [
        r#"{ kind = "dwrr", weights = [1, 2, 1] }"#,
        r#"{ kind = "wrr", quantum = "3000B" }"#,
        r#"{ kind = "wfq", weights = [1, 2, 3] }"#,
        r#"{ kind = "sp_over", strict = 1, group = { kind = "dwrr" } }"#,
        r#"{ kind = "sp" }"#,
    ];
    for m in markers {
        for s in schedulers {
            if m.contains("mqecn") && (s.contains("wfq") || s.contains("\"sp\"")) {
                continue; // a config error by design (MQ-ECN needs round robin)
            }
            let text = format!(
                r#"
duration = "15ms"
[topology]
kind = "star"
hosts = 7
rate = "10Gbps"
delay = "5us"
[switch]
buffer = "60KB"
queues = 3
scheduler = {s}
marker = {m}
[transport]
cc = {{ kind = "dctcp" }}
[[workloads]]
kind = "flows"
src = "1-6"
dst = 0
classes = [0, 1, 2]
jitter = "30us"
[observe]
warmup = "1ms"
"#
            );
            let sc = Scenario::from_toml(&text, &[]).unwrap_or_else(|e| panic!("{m} / {s}: {e}"));
            let strip = |mut r: ecnlab::RunReport| {
                r.summary["wall_time_s"] = 0.into();
                r.summary["events_per_s"] = 0.into();
                r.summary.to_string()
            };
            let a = strip(ecnlab::run(&sc).unwrap_or_else(|e| panic!("{m} / {s}: {e}")));
            let b = strip(ecnlab::run(&sc).unwrap());
            assert_eq!(a, b, "{m} / {s} is not deterministic");
        }
    }
}

/// Research code's own marker, from the library API: TCN written outside the crate (mark at dequeue when the
/// sojourn exceeds `t`, Bai et al., CoNEXT 2016).
#[derive(Clone, Debug)]
struct MyTcn {
    t: ecnlab::units::Time,
}

impl ecnlab::mark::Marker for MyTcn {
    const ACTS: ecnlab::mark::Acts = ecnlab::mark::Acts::DEQUEUE;
    fn on_dequeue(
        &mut self,
        _st: &ecnlab::mark::PortState<impl ecnlab::mark::Queues>,
        _q: usize,
        _p: &ecnlab::packet::Packet,
        sojourn: ecnlab::units::Time,
    ) -> ecnlab::mark::Verdict {
        if sojourn > self.t {
            ecnlab::mark::Verdict::Mark(ecnlab::mark::MarkReason::Sojourn)
        } else {
            ecnlab::mark::Verdict::Pass
        }
    }
}

/// 8 DCTCP flows into one port, marked by the TOML `tcn` kind or by `MyTcn` as `AnyMarker::Custom` on the
/// bottleneck: the same marks, the same flows (a `Custom` marker sits in the port like a registered one).
#[test]
fn a_custom_marker_from_the_library_api_runs_like_its_registered_twin() {
    // The benchmark scenario (8 DCTCP senders, one 10 Gb/s bottleneck), cut to 20 ms.
    let scenario = |marker: &str| {
        let text = ecnlab::builtin::scenario("dctcp-8flows").expect("shipped scenario");
        let sets = ["duration=20ms".to_string(), "observe.warmup=0ms".into(), format!("switch.marker={marker}")];
        Scenario::from_toml(text, &sets).expect("valid")
    };
    let run = |sim: &mut Sim, custom: bool| {
        let p = sim.port_index("s0->h0").unwrap();
        if custom {
            let t = ecnlab::units::Time::from_us(20);
            sim.set_marker(p, AnyMarker::Custom(Box::new(MyTcn { t })));
        }
        sim.run().expect("runs");
        let c = sim.port_counters(p);
        (c.total_marks(), c.sent_pkts)
    };
    let registered = scenario(r#"{ kind = "tcn", threshold = "20us" }"#);
    let plain = scenario(r#"{ kind = "none" }"#);
    let want = run(&mut Sim::new(&registered).unwrap(), false);
    let got = run(&mut Sim::new(&plain).unwrap(), true);
    assert!(want.0 > 100, "TCN marks: {want:?}");
    assert_eq!(got, want);
}
