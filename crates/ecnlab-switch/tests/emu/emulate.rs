//! Whole scenarios through `emulate::run`: ecnlab's DCTCP at both ends against Reno with RFC 3168 ECN, the same
//! port and K.

use super::common::exclusive;
use ecnlab_switch::emulate::{run, Options};

/// The shipped 2-flow example, shortened, with `cc` at the hosts: the port's time-average queue and its
/// standard deviation (packets), and the marks in the window.
fn queue(cc: &str) -> (f64, f64, u64) {
    let text = ecnlab::builtin::scenario("emu-ecnstar-2flows").expect("shipped");
    let sets = ["duration=3s".to_string(), "observe.warmup=1s".into(), format!("transport.cc={{ kind = \"{cc}\" }}")];
    let sc = ecnlab::Scenario::from_toml(text, &sets).expect("valid");
    let e = run(&sc, None, &Options::default()).expect("emulates");
    let p = &e.summary["ports"]["s0->h0"];
    let (mean, std) =
        (p["occupancy"]["mean_pkts"].as_f64().unwrap(), p["occupancy"]["std_bytes"].as_f64().unwrap() / 1500.0);
    let marks = p["window_counters"]["marked_pkts"].as_u64().unwrap();
    eprintln!(
        "{cc}: mean queue {mean:.2} pkts, std {std:.2} pkts, marks {marks}, {}",
        e.summary["goodput"]["total_gbps"]
    );
    (mean, std, marks)
}

/// The test: with ecnlab's DCTCP the queue stays nearer K than Reno's, and oscillates less (DCTCP cuts
/// cwnd by α/2 of it per marked window, RFC 8257 §3.3, where Reno+ECN halves it).
/// Reno+ECN's halving leaves the queue well below K on average; DCTCP's small cuts keep it near K.
#[test]
fn with_ecnlab_dctcp_the_queue_stays_nearer_k_than_with_reno() {
    let Some(_guard) = exclusive() else { return };
    const K: f64 = 20.0;
    let (reno_mean, reno_std, reno_marks) = queue("ecnstar");
    let (dctcp_mean, dctcp_std, dctcp_marks) = queue("dctcp");
    assert!(reno_marks > 0 && dctcp_marks > 0, "the port marks both");
    assert!((dctcp_mean - K).abs() < (reno_mean - K).abs(), "DCTCP {dctcp_mean:.1} vs Reno {reno_mean:.1} pkts from K");
    assert!(dctcp_std < reno_std, "DCTCP's queue oscillates less: {dctcp_std:.1} vs {reno_std:.1} pkts");
}
