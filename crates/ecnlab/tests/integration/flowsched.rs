//! Flow scheduling: PIAS priority tagging over strict-priority queues with ECN marking.

use crate::common::{f, run_text};
use ecnlab::Scenario;

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
    let sc = Scenario::from_toml(LEAF_SPINE, &["transport.pias={}".into(), "switch.queues=2".into()]);
    let e = sc.expect_err("rejected").to_string();
    assert!(e.contains("transport.pias.thresholds") && e.contains("switch.queues"), "{e}");
}

#[test]
fn derived_thresholds_come_from_the_workload_or_the_overrides_and_replay() {
    use ecnlab::dist::FlowSizeCdf;
    use ecnlab::transport::pias::derive;
    let load = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Scenario::from_toml(LEAF_SPINE, &sets).expect("valid").transport.pias.expect("PIAS on")
    };
    let websearch = FlowSizeCdf::builtin("websearch").unwrap();
    let datamining = FlowSizeCdf::builtin("datamining").unwrap();
    // The Poisson workload's CDF and load (web search, 0.5), 4 levels by default.
    let from_workload = load(&["transport.pias={ derive = true }"]);
    assert_eq!(from_workload, derive(&websearch, 0.5, 4).unwrap().pias);
    // Each override replaces what it names, and nothing else.
    let cases: [(&str, &FlowSizeCdf, f64, usize); 3] = [
        ("transport.pias={ derive = true, load = 0.8 }", &websearch, 0.8, 4),
        ("transport.pias={ derive = true, cdf = \"datamining\", levels = 3 }", &datamining, 0.5, 3),
        ("transport.pias={ derive = true, cdf = \"datamining\", load = 0.3, levels = 2 }", &datamining, 0.3, 2),
    ];
    for (set, cdf, l, levels) in cases {
        assert_eq!(load(&[set]), derive(cdf, l, levels).unwrap().pias, "{set}");
    }
    // No Poisson workload is fine when the table names both.
    let sets = ["workloads.0={ kind = \"flows\", src = [1], dst = 0 }".to_string()];
    let with_flows = Scenario::from_toml(LEAF_SPINE, &sets).unwrap().to_toml();
    let sc =
        Scenario::from_toml(&with_flows, &["transport.pias={ derive = true, cdf = \"websearch\", load = 0.5 }".into()]);
    assert_eq!(sc.unwrap().transport.pias, Some(from_workload));

    // The resolved scenario states the thresholds, so the written config.toml replays them without deriving.
    let sc = Scenario::from_toml(LEAF_SPINE, &["transport.pias={ derive = true }".into()]).unwrap();
    let text = sc.to_toml();
    let table = text.split_once("[transport.pias]\n").expect("a pias table").1;
    let pias = table.lines().next().unwrap();
    assert!(pias.starts_with("thresholds = ") && !text.contains("derive"), "{pias}");
    for t in from_workload.thresholds() {
        assert!(pias.contains(&format!("\"{t}B\"")), "{pias}");
    }
    assert_eq!(Scenario::from_toml(&text, &[]).unwrap().transport.pias, Some(from_workload));
    // The run's summary reports the thresholds in use.
    let r = run_text(LEAF_SPINE, &["transport.pias={ derive = true }", "workloads.0.flows=20"]);
    assert_eq!(r.summary["pias"]["levels"], 4);
    let got: Vec<u64> =
        r.summary["pias"]["thresholds_bytes"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(got, from_workload.thresholds());
}

#[test]
fn bad_pias_tables_name_the_field() {
    let two_poisson = "workloads=[{ kind = \"poisson\", load = 0.5, cdf = [\"websearch\"] }, \
                       { kind = \"poisson\", load = 0.2, cdf = [\"datamining\"] }]";
    let cases: &[(&[&str], &str, &str)] = &[
        (&["transport.pias={ derive = true, levels = 1 }"], "transport.pias.levels", "must be in [2, 8]"),
        (&["transport.pias={ derive = true, levels = 9 }"], "transport.pias.levels", "must be in [2, 8]"),
        (&["transport.pias={ derive = true, levels = \"four\" }"], "transport.pias.levels", ""),
        (&["transport.pias={ derive = true, load = 1.0 }"], "transport.pias.load", "must be in (0, 1)"),
        (&["transport.pias={ derive = true, load = 0 }"], "transport.pias.load", "must be in (0, 1)"),
        (&["transport.pias={ derive = true, cdf = \"nope\" }"], "transport.pias.cdf", "unknown flow-size CDF"),
        (&["transport.pias={ derive = true, cdf = \"\" }"], "transport.pias.cdf", "must name"),
        (&["transport.pias={ derive = true, thresholds = [\"1MB\"] }"], "transport.pias.thresholds", "not both"),
        (&["transport.pias={ levels = 4 }"], "transport.pias.levels", "only with `derive = true`"),
        (&["transport.pias={ load = 0.5 }"], "transport.pias.load", "only with `derive = true`"),
        (&["transport.pias={ derive = true, bogus = 1 }"], "transport.pias.bogus", "unknown field"),
        (&["transport.pias={ thresholds = [\"2MB\", \"1MB\"] }"], "transport.pias.thresholds", "strictly increasing"),
        (&["transport.pias={ derive = true }", "switch.queues=3"], "transport.pias.levels", "switch.queues ≥ 4"),
        (
            &["transport.pias={ derive = true }", "workloads.0.load=1.2"],
            "transport.pias.load",
            "workloads.0.load is 1.2",
        ),
        (
            &[
                "transport.pias={ derive = true }",
                "workloads.0.cdf=[\"websearch\", \"cache\"]",
                "workloads.0.services={ kind = \"random\", count = 2 }",
            ],
            "transport.pias.cdf",
            "2 CDFs",
        ),
        (&["transport.pias={ derive = true }", two_poisson], "transport.pias.cdf", "2 CDFs"),
        (
            &["transport.pias={ derive = true, cdf = \"websearch\" }", two_poisson],
            "transport.pias.load",
            "2 poisson workloads",
        ),
        (
            &["transport.pias={ derive = true }", "workloads.0={ kind = \"flows\", src = [1], dst = 0 }"],
            "transport.pias.cdf",
            "no poisson workload",
        ),
        (
            &[
                "transport.pias={ derive = true, cdf = \"websearch\" }",
                "workloads.0={ kind = \"flows\", src = [1], dst = 0 }",
            ],
            "transport.pias.load",
            "no poisson workload",
        ),
    ];
    for (sets, path, words) in cases {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        match Scenario::from_toml(LEAF_SPINE, &sets) {
            Err(ecnlab::Error::Config { path: p, msg }) => {
                assert!(p == *path && msg.contains(words), "{sets:?}: `{p}`: {msg}")
            }
            other => panic!("{sets:?}: {other:?}"),
        }
    }
}
