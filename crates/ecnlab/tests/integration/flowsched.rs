//! Flow scheduling: PIAS priority tagging over strict-priority queues with ECN marking.

use crate::common::{f, run_text};

const LEAF_SPINE: &str = r#"
duration = "10s"
[topology]
kind = "leaf_spine"
leaves = 4
spines = 4
hosts_per_leaf = 4
rate = "10Gbps"
delay = "10us"
[switch]
buffer = "300KB"
queues = 4
scheduler = { kind = "sp" }
marker = { kind = "threshold", threshold = "65pkt" }
[transport]
cc = { kind = "dctcp" }
[[workloads]]
kind = "poisson"
load = 0.5
flows = 1500
cdf = ["websearch"]
"#;

#[test]
fn pias_gives_small_flows_a_lower_mean_fct_than_dctcp_alone() {
    // PIAS §2 / ECN♯ §3.5: demoting flows by bytes sent lets short flows bypass long flows' queues. Same
    // network, flows and seed; without PIAS every packet shares queue 0.
    let small_mean = |sets: &[&str]| {
        let r = run_text(LEAF_SPINE, sets);
        assert_eq!(f(&r.summary["fct"]["unfinished"]), 0.0);
        (f(&r.summary["fct"]["bins"]["small"]["mean_s"]), f(&r.summary["fct"]["overall"]["count"]))
    };
    let (dctcp, n1) = small_mean(&[]);
    let (pias, n2) = small_mean(&["transport.pias={}"]);
    assert_eq!(n1, n2);
    assert!(pias < 0.9 * dctcp, "small-flow mean FCT: PIAS {pias} s vs DCTCP {dctcp} s");
}

#[test]
fn pias_needs_a_queue_per_priority() {
    let sc = ecnlab::Scenario::from_toml(LEAF_SPINE, &["transport.pias={}".into(), "switch.queues=2".into()]);
    let e = sc.err().expect("rejected").to_string();
    assert!(e.contains("transport.pias.thresholds") && e.contains("switch.queues"), "{e}");
}
