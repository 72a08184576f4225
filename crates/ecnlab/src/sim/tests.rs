//! The simulation's glue against a second implementation of itself.

use super::Sim;
use crate::Scenario;

/// A shipped scenario run with `sets`, after `change` to the built simulation: the summary without what
/// measures the machine, the per-flow table, the sampled series, and the number of events handled.
fn run(name: &str, sets: &[&str], change: impl FnOnce(&mut Sim)) -> (String, String, String, u64) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::from_toml(crate::builtin::scenario(name).expect("shipped"), &sets).expect("valid");
    let mut sim = Sim::new(&sc).expect("builds");
    change(&mut sim);
    sim.run().expect("runs");
    sim.check_conservation().expect("packets conserved");
    let events = sim.events_processed;
    let r = sim.report(&sc, 0.0);
    let mut summary = r.summary.clone();
    for k in ["wall_time_s", "events", "events_per_s"] {
        summary[k] = 0.into();
    }
    let series = format!("{:?}", r.series);
    (summary.to_string(), r.fct_csv(), series, events)
}

/// Lazy departures are an optimisation only: every result is the same as with a `TxDone` event per departure.
/// On the leaf-spine benchmark (host ports like a switch's, samples every 50 us, a window opening mid-run,
/// the run cut while packets wait), with its hosts' flows free to fill their ports, held at `tsq_limit`, or
/// delayed after them (RTT variation), and on a single bottleneck cut at 24 instants 137 ns apart, so that some
/// run's last event is a departure (the traffic's end).
#[test]
fn lazy_departures_change_nothing_but_the_event_count() {
    let leafspine = |more: &[&str]| {
        let mut sets =
            vec!["workloads.0.flows=300", "duration=12ms", "observe.warmup=3ms", "observe.sample_interval=50us"];
        sets.extend_from_slice(more);
        ("leafspine-mqecn", sets.into_iter().map(String::from).collect::<Vec<_>>())
    };
    // Host ports lazy too, then host ports whose departures reach further (theirs by event).
    let rtt = r#"workloads.0.rtt={ dist = "longtail_80_240us", lo = "90us", hi = "240us" }"#;
    let mut cases =
        vec![leafspine(&[]), leafspine(&["hosts.tsq_limit=3000B"]), leafspine(&[rtt, "workloads.0.connections=new"])];
    for k in 0..24 {
        cases.push(("dctcp-8flows", vec![format!("duration={}ns", 3_000_000 + 137 * k), "observe.warmup=1ms".into()]));
    }
    for (name, sets) in cases {
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let lazy = run(name, &sets, |_| {});
        let by_event = run(name, &sets, |sim| {
            (0..sim.fabric.port_count()).for_each(|p| sim.fabric.raw_mut(p).set_deferred_departures(false))
        });
        assert_eq!(lazy.0, by_event.0, "{name} {sets:?}: summary");
        assert_eq!(lazy.1, by_event.1, "{name} {sets:?}: per-flow table");
        assert_eq!(lazy.2, by_event.2, "{name} {sets:?}: series");
        assert!(lazy.3 < by_event.3, "{name}: {} events lazily, {} by event", lazy.3, by_event.3);
    }
}

/// A data segment that completes nothing drains only its flow's receiver where the sender cannot have anything
/// to send or be held back (`Sim::pump_side`): the same results as draining both endpoints, on the benchmark
/// (hosts' ports never full). Where a sender could be held back (a host's port that fills to `tsq_limit`), both
/// are drained.
#[test]
fn draining_only_the_changed_endpoint_changes_nothing() {
    let sets = ["workloads.0.flows=300", "duration=12ms", "observe.warmup=3ms"];
    let one_side = run("leafspine-mqecn", &sets, |sim| assert!(sim.hosts.receiver_events_leave_senders()));
    let both = run("leafspine-mqecn", &sets, |sim| sim.hosts.set_receiver_events_leave_senders(false));
    assert_eq!(one_side.0, both.0, "summary");
    assert_eq!(one_side.1, both.1, "per-flow table");
    // Where a host's port fills to `tsq_limit`, a receiver's event can hold back its sender (which then waits
    // for the port to drain): draining the receiver alone there would change the run.
    let held = [&sets[..], &["hosts.tsq_limit=3000B"]].concat();
    let both = run("leafspine-mqecn", &held, |sim| assert!(!sim.hosts.receiver_events_leave_senders()));
    let one_side = run("leafspine-mqecn", &held, |sim| sim.hosts.set_receiver_events_leave_senders(true));
    assert_ne!(one_side.1, both.1, "per-flow table");
}
