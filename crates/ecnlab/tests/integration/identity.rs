//! The fast paths change nothing: the shipped scenarios and a sample of quick grids give the same outputs with
//! every fast path on (the default) and off (`RunOptions::no_fast_paths`), only more events.

use ecnlab::experiment::{self, Options, ScaleKind};
use ecnlab::{RunOptions, Scenario};

/// Summary (without what measures the machine and the event count), fct.csv and every series of one run.
fn outputs(sc: &Scenario, no_fast_paths: bool) -> (serde_json::Value, String, Vec<String>, u64) {
    let r = ecnlab::run_with(sc, &RunOptions { no_fast_paths, ..Default::default() }).expect("runs");
    let mut s = r.summary.clone();
    let events = s["events"].as_u64().expect("an event count");
    for k in ["wall_time_s", "events_per_s", "events"] {
        s[k] = serde_json::Value::Null;
    }
    (s, r.fct_csv(), r.series.iter().map(|x| x.to_csv()).collect(), events)
}

#[test]
fn every_shipped_scenario_gives_the_same_outputs_with_its_fast_paths_off() {
    // Cut short, with samples, a window opening mid-run and the run ending while packets wait; the leaf-spine
    // with its hosts' ports like a switch's (the fast paths' widest use), then with RTT variation and NIC hosts.
    let cut = ["duration=12ms", "observe.warmup=3ms", "observe.sample_interval=50us"];
    let mut cases: Vec<(&str, Vec<String>)> = vec![];
    for (name, _) in ecnlab::builtin::SCENARIOS {
        let mut sets: Vec<String> = cut.iter().map(|s| s.to_string()).collect();
        if *name == "leafspine-mqecn" {
            sets.push("workloads.0.flows=300".into());
        }
        cases.push((name, sets));
    }
    let rtt = r#"workloads.0.rtt={ dist = "longtail_80_240us", lo = "90us", hi = "240us" }"#;
    for more in [vec![rtt, "workloads.0.connections=new"], vec!["hosts.egress=\"nic\"", "hosts.tsq_limit=3000B"]] {
        let mut sets: Vec<String> = cut.iter().map(|s| s.to_string()).collect();
        sets.push("workloads.0.flows=300".into());
        sets.extend(more.iter().map(|s| s.to_string()));
        cases.push(("leafspine-mqecn", sets));
    }
    // A shaper on every switch port: transmissions wait for tokens, whichever way the port is driven.
    let mut shaped: Vec<String> = cut.iter().map(|s| s.to_string()).collect();
    shaped.push(r#"switch.shaper={ rate = "9.5Gbps", bucket = "3KB" }"#.into());
    cases.push(("dctcp-8flows", shaped.clone()));
    shaped.push("workloads.0.flows=300".into());
    cases.push(("leafspine-mqecn", shaped));
    // A packet trace turns the idle pass-through and lazy departures off by themselves.
    let mut traced: Vec<String> = cut.iter().map(|s| s.to_string()).collect();
    traced.extend(["observe.trace.from=5ms".to_string(), "observe.trace.to=5.2ms".to_string()]);
    cases.push(("dctcp-8flows", traced));
    for (name, sets) in cases {
        let sc = Scenario::from_toml(ecnlab::builtin::scenario(name).expect("shipped"), &sets)
            .unwrap_or_else(|e| panic!("{name} {sets:?}: {e}"));
        let (fast, plain) = (outputs(&sc, false), outputs(&sc, true));
        assert_eq!(fast.0, plain.0, "{name} {sets:?}: summary");
        assert_eq!(fast.1, plain.1, "{name} {sets:?}: fct.csv");
        assert_eq!(fast.2, plain.2, "{name} {sets:?}: series");
        assert!(fast.3 <= plain.3, "{name} {sets:?}: the fast paths add events ({} vs {})", fast.3, plain.3);
    }
}

/// A sample of quick grids that between them use every fast path and the conditions that turn each off: a
/// leaf-spine with ns-2 hosts (mqecn-ls), PFC and DCQCN (ecnsharp-fig21), PIAS over SP (ecnsharp-fig22),
/// incast rounds (ecnstar-fig5-8), markers acting at dequeue (pmsb-fig11-12), SP over WFQ (pmsb-fig13).
#[test]
fn a_sample_of_quick_grids_gives_the_same_tables_with_the_fast_paths_off() {
    for id in ["mqecn-ls", "ecnsharp-fig21", "ecnsharp-fig22", "ecnstar-fig5-8", "pmsb-fig11-12", "pmsb-fig13"] {
        let table = |no_fast_paths: bool| {
            let out = std::env::temp_dir().join(format!("ecnlab-identity-{id}-{no_fast_paths}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&out);
            let opts = Options { jobs: 2, no_fast_paths, ..Options::new(ScaleKind::Quick, out.clone()) };
            experiment::reproduce(id, &opts).unwrap_or_else(|e| panic!("{id}: {e}"));
            let t = std::fs::read_to_string(out.join("table.csv")).expect("a table");
            let _ = std::fs::remove_dir_all(&out);
            t
        };
        assert_eq!(table(false), table(true), "{id}: table.csv");
    }
}
