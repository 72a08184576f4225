//! Bad input is a config error naming its field, never a panic or a hang (hand-written cases and a fuzzer).

use ecnlab::{Error, RunReport, Scenario, Sim};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use toml::Value;

/// Star of 6 hosts, DCTCP, a threshold marker (RED on one port), flows, incast, back-to-back and probes: every
/// workload kind and most optional fields, 10 ms simulated.
const BASE: &str = r#"
name = "bad-input-base"
seed = 7
duration = "10ms"
mtu = "1500B"

[topology]
kind = "star"
hosts = 6
rate = "10Gbps"
delay = "5us"
host_links = [{ hosts = "4-5", rate = "25Gbps", extra_delay = "2us" }]

[switch]
buffer = "200KB"
queues = 2
marker = { kind = "threshold", threshold = "20pkt", at = "enqueue", compare = "gt", scope = "queue" }

[[ports]]
port = "s0->h3"
marker = { kind = "red", min = "10pkt", max = "30pkt", max_p = 0.5, weight = 0.5 }

[transport]
cc = { kind = "dctcp", g = 0.0625 }
initial_window = 10
min_rto = "1ms"
initial_rto = "1ms"
delayed_ack = { count = 2, timeout = "40us" }

[[workloads]]
kind = "flows"
src = "1-2"
dst = 0
size = "100KB"
jitter = "50us"

[[workloads]]
kind = "flows"
src = [5]
dst = 0
start = "2ms"
stop = "8ms"
rate = "2Gbps"
class = 1

[[workloads]]
kind = "incast"
senders = [1, 2, 4]
receiver = 3
block = "20KB"
rounds = 3
start = "1ms"
class = 1

[[workloads]]
kind = "back_to_back"
src = 4
dst = 2
size = "30KB"
count = 5

[[workloads]]
kind = "probe"
src = 5
dst = 1
interval = "200us"
size = "64B"

[observe]
warmup = "1ms"
sample_interval = "500us"
ports = ["s0->h0", "s0->h3"]
cwnd = [0, 1]
rtt_samples = true
trace = { ports = ["s0->h0"], from = "2ms", to = "2.1ms" }

[limits]
max_events = 2000000
"#;

/// A Poisson workload in place of the probe, with an unknown connection kind.
const POISSON_BOGUS_CONNECTIONS: &str = "workloads.4={ kind = \"poisson\", hosts = \"1-2\", dst = 0, load = 0.1, \
     flows = 5, cdf = [\"websearch\"], connections = \"sometimes\" }";
/// Persistent connections with per-flow RTTs: a connection has one base RTT.
const POISSON_PERSISTENT_RTT: &str = "workloads.4={ kind = \"poisson\", hosts = \"1-2\", dst = 0, load = 0.1, \
     flows = 5, cdf = [\"websearch\"], connections = \"persistent\", \
     rtt = { dist = \"longtail_70_210us\", lo = \"70us\", hi = \"210us\" } }";

/// Two sides whose host counts overflow u32 when added.
const DUMBBELL_OVERFLOW: &str = "topology={ kind = \"dumbbell\", left = 4294967295, right = 3, rate = \"10Gbps\", \
     delay = \"1us\", bottleneck_rate = \"10Gbps\", bottleneck_delay = \"1us\" }";

/// Parses BASE with overrides and builds the simulation: the same checks as `ecnlab-sim validate`.
fn check(sets: &[&str]) -> Result<Scenario, Error> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::from_toml(BASE, &sets)?;
    Sim::new(&sc)?;
    Ok(sc)
}

fn describe<T>(r: &Result<T, Error>) -> String {
    match r {
        Ok(_) => "Ok".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_bad_field_is_a_config_error_naming_its_path_and_the_allowed_values() {
    // (override, path the error must name, fragment of the message saying what is allowed)
    let cases: &[(&str, &str, &str)] = &[
        ("bogus=1", "bogus", "unknown field `bogus`"),
        (
            "topology.kind=ring_of_fire",
            "topology.kind",
            "unknown variant `ring_of_fire`, expected one of `star`, `dumbbell`, `leaf_spine`, `fat_tree`",
        ),
        ("topology.hosts=0", "topology.hosts", "[2, 100000]"),
        ("topology.hosts=-3", "topology.hosts", "u32"),
        ("topology.rate=0Gbps", "topology.rate", "> 0"),
        ("topology.rate=-10Gbps", "topology.rate", "unit"),
        ("topology.rate=10Gbp", "topology.rate", "Gbps"),
        ("topology.rate=10", "topology.rate", "expected a rate (e.g. \"10Gbps\") string"),
        ("topology.delay=-5us", "topology.delay", "unit"),
        ("topology.delay=1.2.3us", "topology.delay", "non-negative decimal"),
        ("topology.delay=\"\"", "topology.delay", "needs a unit"),
        ("topology.delay=∞", "topology.delay", "needs a unit"),
        ("topology.delay=5", "topology.delay", "expected a time"),
        ("topology={ kind = \"star\", hosts = 6, delay = \"5us\" }", "topology.rate", "expected a rate"),
        ("topology={ kind = \"star\", rate = \"1Gbps\", delay = \"5us\" }", "topology.hosts", "missing field"),
        (
            "workloads.2={ kind = \"incast\", senders = [1], receiver = 3, block = \"1KB\" }",
            "workloads.2.rounds",
            "missing",
        ),
        ("topology.speed=1", "topology.speed", "unknown field `speed`"),
        ("topology.host_links.0.hosts=6", "topology.host_links.0.hosts", "hosts are 0..5"),
        ("topology.host_links.0.hosts=3-1", "topology.host_links.0.hosts", "empty"),
        ("topology.host_links.0.rate=0bps", "topology.host_links.0.rate", "> 0"),
        (DUMBBELL_OVERFLOW, "topology.right", "left + right must be ≤ 100000"),
        ("duration=0s", "duration", "must be in (0s, 1000000s]"),
        ("duration=1000001s", "duration", "must be in (0s, 1000000s]"),
        ("duration=-1ms", "duration", "unit"),
        ("duration=10", "duration", "expected a time"),
        ("mtu=0B", "mtu", "[128B, 65536B]"),
        ("mtu=1.2.3KB", "mtu", "non-negative decimal"),
        ("switch.buffer=0B", "switch.buffer", "at least one MTU"),
        ("switch.buffer=-1KB", "switch.buffer", "unit"),
        ("switch.queues=0", "switch.queues", "[1, 32]"),
        ("switch.queues=33", "switch.queues", "[1, 32]"),
        ("switch.scheduler.kind=no_such_scheduler", "switch.scheduler.kind", "unknown variant `no_such_scheduler`"),
        ("switch.marker.kind=no_such_marker", "switch.marker.kind", "unknown variant `no_such_marker`"),
        ("switch.marker.threshold=300KB", "switch.marker.threshold", "exceeds the buffer"),
        ("switch.marker.threshold=1ms", "switch.marker.threshold", "exceeds the buffer"),
        // 80 us fits the buffer at 10 Gb/s (100 KB) but not at the 25 Gb/s of the ports toward h4 and h5.
        ("switch.marker.threshold=80us", "switch.marker.threshold", "at 25Gbps (s0->h4)"),
        // 12297829382473034.411 packets of 1500 B is 2^64 B: must not wrap around to a tiny threshold.
        ("switch.marker.threshold=12297829382473034.411pkt", "switch.marker.threshold", "exceeds the buffer"),
        ("switch.marker.threshold=20", "switch.marker.threshold", "expected a queue length"),
        ("switch.marker.threshold=-1pkt", "switch.marker.threshold", "unit"),
        ("switch.marker.at=middle", "switch.marker.at", "unknown variant"),
        ("ports.0.port=s0->h9", "ports.0.port", "no port named"),
        ("ports.0.port=h0->s0", "ports.0.port", "not configurable"),
        ("ports.0.port=s1->h0", "ports.0.port", "no port named"),
        ("ports.0.marker.max_p=0", "ports.0.marker.max_p", "(0, 1]"),
        ("ports.0.marker.min=40pkt", "ports.0.marker.min", "≤ max"),
        ("ports.0.marker.max=300KB", "ports.0.marker.max", "exceeds the buffer"),
        ("ports.0.buffer=40KB", "ports.0.marker.max", "exceeds the buffer"),
        ("transport.cc.kind=no_such_cc", "transport.cc.kind", "unknown variant `no_such_cc`"),
        ("transport.cc.g=0", "transport.cc.g", "(0, 1]"),
        ("transport.cc.g=nan", "transport.cc.g", "(0, 1]"),
        ("transport.mss=0", "transport.mss", "[1, 1460]"),
        ("transport.mss=1461", "transport.mss", "[1, 1460]"),
        ("transport.min_rto=0s", "transport.min_rto", "> 0"),
        ("transport.max_rto=10us", "transport.max_rto", "≥ min_rto"),
        ("transport.delayed_ack.count=0", "transport.delayed_ack.count", "≥ 1"),
        ("workloads.0.kind=no_such_workload", "workloads.0.kind", "unknown variant `no_such_workload`"),
        ("workloads.0.dst=6", "workloads.0.dst", "hosts are 0..5"),
        ("workloads.0.dst=-1", "workloads.0.dst", "u32"),
        ("workloads.0.src=1-12", "workloads.0.src", "hosts are 0..5"),
        ("workloads.0.src=0-1", "workloads.0.src", "destination"),
        ("workloads.0.src=[]", "workloads.0.src", "empty"),
        ("workloads.0.size=0B", "workloads.0.size", "> 0"),
        ("workloads.0.size=-5KB", "workloads.0.size", "unit"),
        ("workloads.1.stop=1ms", "workloads.1.stop", "after start"),
        ("workloads.1.rate=0Gbps", "workloads.1.rate", "> 0"),
        ("workloads.2.receiver=99", "workloads.2.receiver", "hosts are 0..5"),
        ("workloads.2.senders=[1, 3]", "workloads.2.senders", "receiver"),
        ("workloads.2.rounds=0", "workloads.2.rounds", "≥ 1"),
        ("workloads.2.block=0KB", "workloads.2.block", "> 0"),
        ("workloads.3.dst=4", "workloads.3.dst", "differ"),
        ("workloads.3.count=0", "workloads.3.count", "≥ 1"),
        ("workloads.4.interval=0us", "workloads.4.interval", "[51.2ns, 1000000s]"),
        ("workloads.4.size=39B", "workloads.4.size", "[40B"),
        ("workloads.4.src=6", "workloads.4.src", "hosts are 0..5"),
        (
            POISSON_BOGUS_CONNECTIONS,
            "workloads.4.connections",
            "unknown variant `sometimes`, expected `new` or `persistent`",
        ),
        (POISSON_PERSISTENT_RTT, "workloads.4.connections", "per-flow RTT variation"),
        ("hosts.egress=\"fifo\"", "hosts.egress", "unknown variant `fifo`, expected `nic` or `switch`"),
        ("observe.warmup=10ms", "observe.warmup", "< duration"),
        ("observe.ports=[\"s0->h99\"]", "observe.ports.0", "no port named"),
        ("observe.trace.ports=[\"s9->h0\"]", "observe.trace.ports.0", "no port named"),
        ("limits.max_events=0", "limits.max_events", "> 0"),
        ("seed=-1", "seed", "u64"),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|&(set, want_path, want_msg)| match check(&[set]) {
            Err(Error::Config { path, msg }) if path.contains(want_path) && msg.contains(want_msg) => None,
            other => Some(format!("{set}: want error at `{want_path}` saying `{want_msg}`, got {}", describe(&other))),
        })
        .collect();
    assert!(wrong.is_empty(), "{} of {} cases wrong:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

#[test]
fn dropping_any_field_keeps_the_scenario_valid_or_is_an_error_at_exactly_that_field() {
    let base: Value = toml::from_str(BASE).expect("base parses");
    let mut all = vec![];
    paths(&base, &mut vec![], &mut all);
    let wrong: Vec<String> = all
        .iter()
        .filter(|p| matches!(p.last(), Some(Key::Field(_))))
        .filter_map(|p| {
            let mut doc = base.clone();
            remove(&mut doc, p);
            let dotted: Vec<String> = p.iter().map(Key::to_string).collect();
            let dotted = dotted.join(".");
            match Scenario::from_toml(&toml::to_string(&doc).expect("serializes"), &[]) {
                Ok(_) => None,
                Err(Error::Config { path, .. }) if path == dotted => None,
                Err(e) => Some(format!("without {dotted}: {e}")),
            }
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn edge_values_inside_the_ranges_are_valid() {
    let cases: &[&[&str]] = &[
        &["switch.marker.threshold=0pkt"],
        // 78 us is 97.5 KB at 10 Gb/s but 243.75 KB on the 25 Gb/s ports toward h4 and h5.
        &["switch.marker.threshold=78us", "switch.buffer=300KB"],
        &["switch.marker.threshold=200KB"],
        // A port override's time threshold resolves at that port's own rate: 10 Gb/s toward h3.
        &["ports.0.marker={ kind = \"threshold\", threshold = \"150us\" }"],
        &["duration=1000000s", "observe.sample_interval=0s"],
        &["switch.queues=32"],
        &["mtu=128B", "transport.mss=88", "workloads.4.size=40B"],
        &["workloads.0.size=1B"],
        &["transport.cc.g=1", "transport.cc.initial_alpha=0"],
        &["observe.warmup=0s"],
        &["limits.max_events=1"],
        &["topology.delay=0s"],
    ];
    for sets in cases {
        assert!(check(sets).is_ok(), "{sets:?}: {}", describe(&check(sets)));
    }
}

#[test]
fn a_zero_threshold_marks_more_and_a_time_threshold_resolves_at_the_port_rate() {
    let run = |k: &str| {
        let sets = [format!("switch.marker.threshold={k}"), "ports=[]".into()];
        ecnlab::run(&Scenario::from_toml(BASE, &sets).expect("valid")).expect("runs")
    };
    let marked = |r: &RunReport| r.summary["ports"]["s0->h0"]["counters"]["marked_pkts"].as_u64().unwrap();
    assert!(marked(&run("0pkt")) > marked(&run("20pkt")));
    // 24 us at 10 Gb/s is 30 000 B = 20 packets of 1500 B: the same marker, the same run.
    assert_eq!(marked(&run("24us")), marked(&run("20pkt")));
}

#[test]
fn a_run_over_its_event_budget_stops_with_a_run_error() {
    let sc = check(&["limits.max_events=1000"]).expect("valid");
    let e = ecnlab::run(&sc).err().expect("budget exhausted");
    assert!(matches!(&e, Error::Run(m) if m.contains("limits.max_events")), "{e}");
}

// ---------------------------------------------------------------------------------------------------------
// Resource bounds: what would exhaust memory, wrap a counter or never advance time is refused at validation.

/// A config error at exactly `path` whose message holds every fragment, within a few seconds.
fn refused(sets: &[&str], path: &str, fragments: &[&str]) {
    let t = std::time::Instant::now();
    let r = check(sets);
    assert!(t.elapsed() < Duration::from_secs(5), "{sets:?} took {:?}", t.elapsed());
    match &r {
        Err(Error::Config { path: p, msg }) if p == path && fragments.iter().all(|f| msg.contains(f)) => {}
        other => panic!("{sets:?}: want an error at `{path}` saying {fragments:?}, got {}", describe(other)),
    }
}

const QUERY: &str = "workloads.4={ kind = \"query\", senders = \"1-3\", receiver = 0, at = \"1ms\", count = ";

#[test]
fn a_query_of_i32_max_flows_is_refused_at_validation_naming_its_count_and_the_memory_limit() {
    // It aborted the process on an allocation of 32 GiB (rc 134; from Python, the interpreter died).
    refused(&[&format!("{QUERY}2147483647 }}")], "workloads.4.count", &["2.2TB of query records", "limits.max_memory"]);
}

#[test]
fn a_query_of_a_billion_flows_is_refused_under_the_default_limit_and_a_smaller_one_under_a_lower_limit() {
    // It grew past 17 GB before failing.
    refused(&[&format!("{QUERY}1000000000 }}")], "workloads.4.count", &["1.0TB of query records", "half of"]);
    refused(
        &[&format!("{QUERY}1000000 }}"), "limits.max_memory=100MB"],
        "workloads.4.count",
        &["about 1.0GB of query records", "limits.max_memory is 100.0MB"],
    );
    assert!(check(&[&format!("{QUERY}1000 }}"), "limits.max_memory=100MB"]).is_ok());
    refused(&["limits.max_memory=1KB"], "limits.max_memory", &["≥ 1MB"]);
}

#[test]
fn the_memory_limit_stays_out_of_the_resolved_config_unless_given() {
    let sc = check(&[]).expect("valid");
    assert!(!sc.to_toml().contains("max_memory"), "the default depends on the machine: never written");
    let sc = check(&["limits.max_memory=4GB"]).expect("valid");
    assert!(sc.to_toml().contains("max_memory = \"4000000000B\""), "{}", sc.to_toml());
    let items = sc.memory_items();
    assert!(items.iter().any(|i| i.path == "topology") && items.iter().any(|i| i.path == "observe.sample_interval"));
}

#[test]
fn a_probe_faster_than_its_link_is_refused_with_the_allowed_range() {
    // A 64 B probe every picosecond grew without bound in the host's queue.
    refused(&["workloads.4.interval=1ps"], "workloads.4.interval", &["[51.2ns, 1000000s]", "10Gbps"]);
    refused(&["workloads.4.interval=51.1ns"], "workloads.4.interval", &["[51.2ns"]);
    assert!(check(&["workloads.4.interval=51.2ns", "duration=100us", "observe.warmup=0s"]).is_ok());
}

#[test]
fn an_application_rate_above_the_host_link_is_refused() {
    refused(&["workloads.1.rate=26Gbps"], "workloads.1.rate", &["(0, 25Gbps]", "h5's link"]);
    assert!(check(&["workloads.1.rate=25Gbps"]).is_ok());
}

#[test]
fn a_host_set_string_that_expands_to_billions_is_refused_while_parsing() {
    // 160 KB of "1-99999," expanded to 2·10⁹ entries (8 GB) during `validate`.
    let huge = format!("workloads.0.src=\"{}\"", vec!["1-99999"; 20_000].join(","));
    refused(&[&huge], "workloads.0.src", &["more than 1048576"]);
}

#[test]
fn poisson_arrivals_closer_than_a_nanosecond_are_refused_instead_of_piling_up_at_the_start() {
    let dir = std::env::temp_dir().join(format!("ecnlab-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cdf = dir.join("one_byte.csv");
    std::fs::write(&cdf, "size_bytes,cumulative_probability\n1,0\n1,1\n").unwrap();
    let poisson = |load: &str| {
        format!(
            "workloads.4={{ kind = \"poisson\", hosts = \"1-2\", load = {load}, flows = 1000, cdf = [\"{}\"] }}",
            cdf.display()
        )
    };
    // 1 B flows at load 10 over two 10 Gb/s links: a mean gap of 40 ps. With the CDF's 1 B scaled down further
    // (a gap of 0.013 ps over 64 hosts at 1 Tb/s) every gap rounded to 0 ps and all flows opened at the start.
    refused(
        &[&poisson("10")],
        "workloads.4.load",
        &["gap between flow arrivals of 40.000ps", "≥ 1ns", "(0, 4.000e-1]"],
    );
    assert!(check(&[&poisson("0.4")]).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn weights_and_byte_sizes_past_their_ranges_are_refused_and_the_largest_allowed_do_not_wrap() {
    let cases: &[(&str, &str, &str)] = &[
        ("switch.scheduler={ kind = \"dwrr\", weights = [1, 1048577] }", "switch.scheduler.weights.1", "[1, 1048576]"),
        (
            "switch.scheduler={ kind = \"wfq\", weights = [9223372036854775807, 1] }",
            "switch.scheduler.weights.0",
            "[1, 1048576]",
        ),
        ("switch.scheduler={ kind = \"wrr\", quantum = \"5GiB\" }", "switch.scheduler.quantum", "4GiB"),
        ("hosts.tsq_limit=18446744073709551000B", "hosts.tsq_limit", "at most 1 TiB"),
        ("switch.pfc={ xoff = \"18446744073709551000B\" }", "switch.pfc.xoff", "1 TiB"),
        ("switch.pfc={ xoff = \"20KB\", headroom = \"2000GB\" }", "switch.pfc.headroom", "1 TiB"),
        ("switch.buffer=2000GB", "switch.buffer", "1 TiB"),
        ("switch.queue_limits=[\"2000GB\"]", "switch.queue_limits.0", "1 TiB"),
        ("switch.pool={ size = \"2000GB\" }", "switch.pool.size", "1 TiB"),
    ];
    for &(set, path, msg) in cases {
        refused(&[set], path, &[msg]);
    }
    // The largest weights at the largest quantum under PMSB (which sums them) and MQ-ECN: a complete run (the
    // test profile checks overflow), and PFC at the largest XOFF with the largest NIC limit raises no false error.
    let big = "switch.scheduler={ kind = \"dwrr\", quantum = \"4GiB\", weights = [1048576, 1048576] }";
    for marker in ["{ kind = \"pmsb\", threshold = \"20pkt\" }", "{ kind = \"mqecn\", threshold = \"20pkt\" }"] {
        let sc = check(&[big, &format!("switch.marker={marker}"), "ports=[]", "duration=2ms"]).expect("valid");
        ecnlab::run(&sc).expect("runs");
    }
    let pfc = [
        "switch.pfc={ xoff = \"1099511627776B\" }",
        "switch.queues=1",
        "switch.buffer=1099511627776B",
        "hosts.tsq_limit=1099511627776B",
        "ports=[]",
        "duration=2ms",
    ];
    let sc = check(&pfc).expect("valid");
    ecnlab::run(&sc).expect("no false PFC error");
}

// ---------------------------------------------------------------------------------------------------------
// The mutation fuzzer.

const MUTANTS: usize = 4000;
/// A mutant that takes longer than this is reported as a hang.
const HANG: Duration = Duration::from_secs(30);

/// SplitMix64: tiny, deterministic, good enough to pick mutations.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Key {
    Field(String),
    Index(usize),
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Key::Field(k) => f.write_str(k),
            Key::Index(i) => write!(f, "{i}"),
        }
    }
}

type Path = Vec<Key>;

/// Every node of the tree below the root, parents before children.
fn paths(v: &Value, prefix: &mut Path, out: &mut Vec<Path>) {
    let children: Vec<(Key, &Value)> = match v {
        Value::Table(t) => t.iter().map(|(k, v)| (Key::Field(k.clone()), v)).collect(),
        Value::Array(a) => a.iter().enumerate().map(|(i, v)| (Key::Index(i), v)).collect(),
        _ => return,
    };
    for (k, child) in children {
        prefix.push(k);
        out.push(prefix.clone());
        paths(child, prefix, out);
        prefix.pop();
    }
}

fn node<'a>(v: &'a mut Value, path: &[Key]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, k| match (v, k) {
        (Value::Table(t), Key::Field(f)) => t.get_mut(f),
        (Value::Array(a), Key::Index(i)) => a.get_mut(*i),
        _ => None,
    })
}

fn remove(doc: &mut Value, path: &[Key]) {
    let Some((last, parent)) = path.split_last() else { return };
    match (node(doc, parent), last) {
        (Some(Value::Table(t)), Key::Field(f)) => {
            t.remove(f);
        }
        (Some(Value::Array(a)), Key::Index(i)) if *i < a.len() => {
            a.remove(*i);
        }
        _ => {}
    }
}

fn last_field(path: &[Key]) -> &str {
    match path.last() {
        Some(Key::Field(f)) => f,
        _ => "",
    }
}

/// Values that are out of range, of the wrong type, or malformed somewhere in the schema.
fn bad_value(rng: &mut SplitMix) -> Value {
    let s = |x: &str| Value::String(x.into());
    let pool = [
        Value::Integer(0),
        Value::Integer(-1),
        Value::Integer(-5),
        Value::Integer(1),
        Value::Integer(7),
        // Not 100 000: valid as `topology.hosts`, and every such case would build 200 000 ports.
        Value::Integer(5_000),
        Value::Integer(4_294_967_296),
        Value::Integer(i64::MAX),
        Value::Integer(i64::MIN),
        Value::Float(0.0),
        Value::Float(-1.0),
        Value::Float(0.5),
        Value::Float(f64::NAN),
        Value::Float(f64::INFINITY),
        Value::Float(1e300),
        Value::Boolean(true),
        s(""),
        s("10Gbp"),
        s("-5us"),
        s("1.2.3KB"),
        s("∞"),
        s("0s"),
        s("0B"),
        s("0bps"),
        s("0pkt"),
        s("1ps"),
        s("1bps"),
        s("1B"),
        s("1000s"),
        s("18446744073709551615B"),
        s("18446744073709551615ps"),
        s("18446744073709551615pkt"),
        s("99999999999999999999pkt"),
        s("18446744073709551615Tbps"),
        s("1000000Tbps"),
        s("9999999999999us"),
        s("0.5pkt"),
        s("abc"),
        s("3-1"),
        s("0-99999"),
        s("s0->h0"),
        s("h0->s0"),
        Value::Array(vec![]),
        Value::Array(vec![Value::Integer(1), Value::Integer(1)]),
        Value::Table(toml::Table::new()),
    ];
    rng.pick(&pool).clone()
}

/// `85.2us` → the same unit with an extreme number, or the number with another dimension's unit.
fn bad_unit(rng: &mut SplitMix, text: &str) -> Value {
    let idx = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (num, unit) = text.split_at(idx);
    let nums = [
        "0",
        "0.000000001",
        "1",
        "18446744073709551615",
        "9223372036854775808",
        "4294967295",
        "99999999999999",
        "1e3",
        "-1",
        ".",
        "",
        "1..2",
    ];
    let units = ["ps", "s", "B", "GiB", "bps", "Tbps", "pkt", "", "furlongs", "µs", "Gbps "];
    Value::String(if rng.below(2) == 0 {
        format!("{}{unit}", rng.pick(&nums))
    } else {
        format!("{num}{}", rng.pick(&units))
    })
}

/// `200us` → the same unit with the number scaled by orders of magnitude (×10⁶, ×10⁻⁶, ×10¹²): sizes, rates,
/// times and counts far from the base, most still valid, where memory or time could run away.
fn scaled_unit(rng: &mut SplitMix, text: &str) -> Value {
    let idx = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (num, unit) = text.split_at(idx);
    let x: f64 = num.parse().unwrap_or(1.0) * rng.pick(&[1e6, 1e-6, 1e12, 1e3]);
    // Decimal text, not exponent notation: units parse plain decimals.
    let digits = if x >= 1.0 { format!("{x:.0}") } else { format!("{x:.12}").trim_end_matches('0').to_string() };
    Value::String(format!("{digits}{unit}"))
}

/// A host index or set that is out of range, empty, reversed or of the wrong type (the base has hosts 0..5).
fn bad_host(rng: &mut SplitMix) -> Value {
    let s = |x: &str| Value::String(x.into());
    let pool = [
        Value::Integer(6),
        Value::Integer(7),
        Value::Integer(1000),
        Value::Integer(4_294_967_295),
        Value::Integer(-1),
        s("0-6"),
        s("5-6"),
        s("6"),
        s("2-1"),
        s(""),
        s("1,,2"),
        s("x-3"),
        s("4294967295"),
        s("0-99999"),
        Value::Array(vec![Value::Integer(0), Value::Integer(6)]),
        Value::Array(vec![]),
        Value::Float(1.5),
    ];
    rng.pick(&pool).clone()
}

/// Tags of every enum in the schema plus unknown ones: swapping in a valid tag of the wrong enum is also bad.
const TAGS: &[&str] = &[
    "ring",
    "cbq",
    "codel",
    "bbr",
    "mice",
    "",
    "Star",
    "THRESHOLD",
    "star",
    "dumbbell",
    "none",
    "threshold",
    "red",
    "mqecn",
    "mqecn_red",
    "pmsb",
    "sp",
    "wrr",
    "dwrr",
    "wfq",
    "sp_over",
    "reno",
    "ecnstar",
    "dctcp",
    "flows",
    "incast",
    "tcn",
    "ecnsharp",
];
const HOST_FIELDS: [&str; 5] = ["src", "dst", "receiver", "senders", "hosts"];

/// Valid but extreme settings (`--set` syntax): where a scenario that passes validation could still panic.
const EXTREMES: &[&str] = &[
    "duration=1ps",
    "duration=1us",
    "mtu=128B",
    "mtu=9000B",
    "mtu=65536B",
    "topology.hosts=2",
    "topology.hosts=64",
    "topology.rate=1Mbps",
    "topology.rate=1Tbps",
    "topology.rate=1bps",
    "topology.delay=0s",
    "topology.delay=1ps",
    "topology.delay=5ms",
    "topology.host_links.0.extra_delay=1ms",
    "topology.host_links.0.rate=100Mbps",
    "topology.host_links.0.delay=0s",
    "topology={ kind = \"dumbbell\", left = 3, right = 3, rate = \"10Gbps\", delay = \"1us\", bottleneck_rate = \"40Gbps\", bottleneck_delay = \"0s\" }",
    DUMBBELL_OVERFLOW,
    "duration=1000000s",
    "topology.delay=100000s",
    "transport.initial_window=4294967295",
    "transport.min_cwnd=4294967295",
    "transport.max_rto=1000000s",
    "switch.marker.threshold=12297829382473034.411pkt",
    "workloads.0.size=18446744073709551615B",
    "workloads.2.block=18446744073709551615B",
    "switch.buffer=1500B",
    "switch.buffer=3000B",
    "switch.buffer=100MB",
    "switch.queues=1",
    "switch.queues=32",
    "switch.marker.threshold=0pkt",
    "switch.marker.threshold=0.5pkt",
    "switch.marker.threshold=1B",
    "switch.marker.threshold=1ps",
    "switch.marker.at=dequeue",
    "switch.marker.compare=ge",
    "switch.marker.scope=port",
    "switch.marker={ kind = \"none\" }",
    "switch.marker={ kind = \"red\", min = \"0pkt\", max = \"0pkt\" }",
    "switch.marker={ kind = \"red\", min = \"1pkt\", max = \"5pkt\", max_p = 1e-9, weight = 1e-9, gentle = true, drop_above_max = true, scope = \"port\" }",
    "switch.non_ect=drop",
    "switch.scheduler={ kind = \"wrr\" }",
    "switch.scheduler={ kind = \"dwrr\", quantum = \"1500B\", weights = [1, 1000] }",
    "switch.scheduler={ kind = \"wfq\", weights = [1, 3] }",
    "switch.scheduler={ kind = \"sp_over\", strict = 1, group = { kind = \"dwrr\" } }",
    "switch.marker={ kind = \"mqecn\", threshold = \"20pkt\" }",
    "switch.marker={ kind = \"mqecn\", threshold = \"0pkt\", beta = 1.0, t_idle = \"1ps\" }",
    "switch.marker={ kind = \"mqecn_red\", min = \"5pkt\", max = \"20pkt\", max_p = 0.1 }",
    "switch.marker={ kind = \"pmsb\", threshold = \"20pkt\" }",
    "ports.0.queues=1",
    "ports.0.buffer=1500B",
    "ports.0.port=s0->h0",
    "transport.mss=1",
    "transport.mss=1460",
    "transport.initial_window=1",
    "transport.initial_window=1000",
    "transport.min_cwnd=1",
    "transport.min_cwnd=100",
    "transport.min_rto=1ps",
    "transport.initial_rto=1ps",
    "transport.max_rto=1ms",
    "transport.recovery=newreno",
    "transport.ect=rfc3168",
    "transport.ect=data_only",
    "transport.handshake=true",
    "transport.restart_after_idle=false",
    "transport.delayed_ack.count=1000",
    "transport.delayed_ack.timeout=1ps",
    "transport.cc={ kind = \"reno\" }",
    "transport.cc={ kind = \"ecnstar\" }",
    "transport.cc.g=1",
    "transport.cc.g=1e-9",
    "transport.cc.initial_alpha=0",
    "workloads.0.size=1B",
    "workloads.0.size=1GB",
    "workloads.0.jitter=10ms",
    "workloads.0.start=9.999ms",
    "workloads.0.start=1s",
    "workloads.0.src=1-5",
    "workloads.0.class=255",
    "workloads.1.rate=1bps",
    "workloads.1.rate=1Tbps",
    "workloads.1.stop=2.000000001ms",
    "workloads.2.rounds=1000",
    "workloads.2.block=1B",
    "workloads.2.senders=0-2,4-5",
    "workloads.2.class=31",
    "workloads.3.count=1000000",
    "workloads.3.size=1B",
    "workloads.4.interval=1ns",
    "workloads.4.size=1500B",
    "workloads.4.ect=false",
    "workloads.4.stop=1ps",
    "observe.warmup=9.999ms",
    "observe.sample_interval=100ns",
    "observe.sample_interval=0s",
    "observe.cwnd=[0, 99, 4294967295]",
    "observe.ports=[]",
    "observe.trace={}",
    "observe.trace.flows=[0, 4294967295]",
    "observe.trace.from=9ms",
    "observe.trace.to=0s",
    "observe.rtt_samples=false",
    "seed=0",
    "seed=9223372036854775807",
    "limits.max_events=1",
    "limits.max_events=100",
    "limits.max_memory=1MB",
    "limits.max_memory=10MB",
    "workloads.4={ kind = \"query\", senders = \"1-3\", receiver = 0, at = \"1ms\", count = 4294967295 }",
    "workloads.4={ kind = \"query\", senders = \"1-3\", receiver = 0, at = \"1ms\", count = 2000 }",
    "workloads.4={ kind = \"poisson\", hosts = \"1-3\", load = 0.5, cdf = [\"cache\"] }",
    "workloads.4={ kind = \"poisson\", hosts = \"1-3\", dst = 0, load = 10, flows = 2000, cdf = [\"websearch\"] }",
    "switch.scheduler={ kind = \"dwrr\", quantum = \"4GiB\", weights = [1048576, 1048576] }",
    "switch.marker={ kind = \"pmsb\", threshold = \"20pkt\" }",
    "switch.pfc={ xoff = \"1099511627776B\", headroom = \"1099511627776B\" }",
    "hosts.tsq_limit=1099511627776B",
    "workloads.0.src=\"1-5,1-5,1-5,1-5\"",
];

/// Applies one random mutation to the document.
fn mutate(rng: &mut SplitMix, doc: &mut Value) {
    let mut all = vec![];
    paths(doc, &mut vec![], &mut all);
    if all.is_empty() {
        return;
    }
    let choose = |rng: &mut SplitMix, pred: &dyn Fn(&Path, &Value) -> bool, doc: &mut Value| {
        let fit: Vec<&Path> = all.iter().filter(|p| node(doc, p).is_some_and(|v| pred(p, v))).collect();
        (!fit.is_empty()).then(|| fit[rng.below(fit.len())].clone())
    };
    let any = all[rng.below(all.len())].clone();
    match rng.below(12) {
        11 => {
            // Orders of magnitude: a number, or the number of a quantity with a unit.
            let p = choose(
                rng,
                &|_, v| v.is_integer() || v.as_str().is_some_and(|s| s.starts_with(|c: char| c.is_ascii_digit())),
                doc,
            )
            .unwrap_or(any);
            let v = node(doc, &p).expect("path exists");
            *v = match &*v {
                Value::Integer(i) => Value::Integer(*rng.pick(&[
                    i.saturating_mul(1_000_000),
                    *i / 1_000_000,
                    i.saturating_mul(1_000_000_000_000),
                    u32::MAX as i64 + 1,
                    i64::MAX,
                ])),
                Value::String(t) => scaled_unit(rng, t),
                other => other.clone(),
            }
        }
        8..=10 => {
            // A path the document no longer has is an error of the override, not a mutant: skip it.
            let set = *rng.pick(EXTREMES);
            let _ = ecnlab::scenario::apply_set(doc, set);
        }
        0 => remove(doc, &any),
        1 | 2 => *node(doc, &any).expect("path exists") = bad_value(rng),
        3 => {
            let p = choose(rng, &|p, _| last_field(p) == "kind", doc).unwrap_or(any);
            *node(doc, &p).expect("path exists") = Value::String(rng.pick(TAGS).to_string());
        }
        4 => {
            let p = choose(rng, &|_, v| v.is_table(), doc);
            let t = match p {
                Some(p) if rng.below(4) > 0 => node(doc, &p).expect("path exists"),
                _ => doc,
            };
            if let Value::Table(t) = t {
                t.insert("bogus".into(), Value::Integer(1));
            }
        }
        5 => {
            let p = choose(rng, &|p, _| HOST_FIELDS.contains(&last_field(p)), doc).unwrap_or(any);
            *node(doc, &p).expect("path exists") = bad_host(rng);
        }
        6 => {
            let unit_like =
                |_: &Path, v: &Value| v.as_str().is_some_and(|s| s.starts_with(|c: char| c.is_ascii_digit()));
            let p = choose(rng, &unit_like, doc).unwrap_or(any);
            let v = node(doc, &p).expect("path exists");
            *v = bad_unit(rng, v.as_str().unwrap_or("10us"));
        }
        _ => {
            let p = choose(rng, &|_, v| v.is_integer() || v.is_float(), doc).unwrap_or(any);
            let v = node(doc, &p).expect("path exists");
            *v = match v {
                Value::Integer(i) => Value::Integer(*rng.pick(&[
                    0,
                    -1,
                    i.saturating_mul(1000).saturating_add(1),
                    u32::MAX as i64,
                    i64::MAX,
                ])),
                _ => Value::Float(*rng.pick(&[0.0, -0.5, 1.0000001, f64::NAN, f64::NEG_INFINITY])),
            }
        }
    }
}

/// Mutant `i`: one to three mutations of the base document, as TOML text.
fn mutant(base: &Value, i: usize) -> String {
    let mut rng = SplitMix(0xEC0_1AB ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut doc = base.clone();
    for _ in 0..1 + rng.below(3) {
        mutate(&mut rng, &mut doc);
    }
    toml::to_string(&doc).unwrap_or_else(|e| panic!("mutant {i} does not serialize: {e}\n{doc:?}"))
}

#[derive(Debug)]
enum Outcome {
    /// A config error at this path.
    Invalid(String),
    /// Stopped by a run error (event budget).
    RunError(String),
    Ran,
    /// A property violation: a panic, an empty error, an incomplete summary.
    Broken(String),
}

fn from_error(e: Error) -> Outcome {
    match e {
        Error::Config { path, msg } if !path.is_empty() && !msg.trim().is_empty() => Outcome::Invalid(path),
        Error::Run(m) if !m.is_empty() => Outcome::RunError(m),
        other => Outcome::Broken(format!("empty or unexpected error: {other:?}")),
    }
}

/// A completed run has every summary section, the full simulated time, one FCT row per flow, and a resolved
/// config that validates again.
fn check_report(sc: &Scenario, r: &RunReport) -> Outcome {
    let s = &r.summary;
    let missing: Vec<&str> =
        ["sim_time_s", "wall_time_s", "events", "events_per_s", "goodput", "totals", "ports", "rtt", "fct"]
            .into_iter()
            .filter(|k| s.get(*k).is_none_or(|v| v.is_null()))
            .collect();
    if !missing.is_empty() {
        return Outcome::Broken(format!("summary lacks {missing:?}"));
    }
    if s["sim_time_s"].as_f64() != Some(sc.duration.as_secs_f64()) {
        return Outcome::Broken(format!("sim_time_s {} ≠ duration {}", s["sim_time_s"], sc.duration));
    }
    if s["workloads"].as_array().map(Vec::len) != Some(sc.workloads.len()) {
        return Outcome::Broken("one summary entry per workload".into());
    }
    if r.fct_csv().lines().count() != r.flows.len() + 1 {
        return Outcome::Broken("fct.csv has one row per flow".into());
    }
    match Scenario::from_toml(&r.config_toml, &[]) {
        Ok(_) => Outcome::Ran,
        Err(e) => Outcome::Broken(format!("the resolved config.toml does not validate: {e}")),
    }
}

fn outcome(text: &str) -> Outcome {
    let run = || match Scenario::from_toml(text, &[]) {
        Err(e) => from_error(e),
        Ok(sc) => match ecnlab::run(&sc) {
            Err(e) => from_error(e),
            Ok(r) => check_report(&sc, &r),
        },
    };
    catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|p| {
        let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        Outcome::Broken(format!("panic: {}", msg.unwrap_or_default()))
    })
}

/// Runs every mutant on all cores; a mutant still running after `HANG` fails the test with its text.
fn run_all(texts: Arc<Vec<String>>) -> Vec<Outcome> {
    let (tx, rx) = mpsc::channel();
    let next = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(Mutex::new(BTreeSet::new()));
    let workers = std::thread::available_parallelism().map_or(4, |n| n.get()).min(16);
    for _ in 0..workers {
        let (tx, next, running, texts) = (tx.clone(), next.clone(), running.clone(), texts.clone());
        std::thread::spawn(move || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= texts.len() {
                return;
            }
            running.lock().unwrap().insert(i);
            let o = outcome(&texts[i]);
            running.lock().unwrap().remove(&i);
            if tx.send((i, o)).is_err() {
                return;
            }
        });
    }
    drop(tx);
    let mut out: Vec<Option<Outcome>> = (0..texts.len()).map(|_| None).collect();
    loop {
        match rx.recv_timeout(HANG) {
            Ok((i, o)) => out[i] = Some(o),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let stuck = running.lock().unwrap().clone();
                let shown: Vec<String> = stuck.iter().map(|&i| format!("--- mutant {i}:\n{}", texts[i])).collect();
                panic!("no mutant finished in {HANG:?}; hanging:\n{}", shown.join("\n"));
            }
        }
    }
    out.into_iter().map(|o| o.expect("every mutant reported")).collect()
}

/// This process's peak resident memory (VmHWM in /proc/self/status), where readable.
fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().strip_suffix("kB")?.trim().parse::<u64>();
    kb.ok().map(|k| k * 1024)
}

#[test]
fn thousands_of_mutated_scenarios_give_an_error_or_a_complete_run_never_a_panic_or_a_hang() {
    let mut base: Value = toml::from_str(BASE).expect("base parses");
    // The mutants' own memory limit: what a mutant is refused for is the estimate, not this machine's size.
    ecnlab::scenario::apply_set(&mut base, "limits.max_memory=\"256MB\"").expect("limits is a table");
    let base_text = toml::to_string(&base).expect("serializes");
    assert!(matches!(outcome(&base_text), Outcome::Ran), "the base scenario runs: {:?}", outcome(&base_text));
    let texts: Arc<Vec<String>> = Arc::new((0..MUTANTS).map(|i| mutant(&base, i)).collect());
    let outcomes = run_all(texts.clone());
    // Memory stays bounded too: validation refuses what would not fit the mutants' `limits.max_memory` (or the
    // default), and the peak resident memory of this process over all mutants stays far below the machine's.
    let peak = peak_resident_bytes();
    assert!(peak.is_none_or(|b| b < 2_000_000_000), "peak resident memory {peak:?} B");

    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut broken = vec![];
    for (i, o) in outcomes.iter().enumerate() {
        let key = match o {
            Outcome::Invalid(path) => format!("config error at {path}"),
            Outcome::RunError(m) => format!("run error: {}", m.split(':').next().unwrap_or_default()),
            Outcome::Ran => "ran".into(),
            Outcome::Broken(why) => {
                broken.push(format!("--- mutant {i}: {why}\n{}", texts[i]));
                "BROKEN".into()
            }
        };
        *counts.entry(key).or_default() += 1;
    }
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{n:6}  {k}")).collect();
    let summary = summary.join("\n");
    eprintln!("{MUTANTS} mutants:\n{summary}");
    assert!(broken.is_empty(), "{} broken mutants:\n{}\n\noutcomes:\n{summary}", broken.len(), broken.join("\n"));
    let ran = counts.get("ran").copied().unwrap_or(0);
    assert!(ran >= MUTANTS / 20, "the fuzzer keeps some mutants valid (ran {ran}):\n{summary}");
    assert!(counts.len() >= 30, "mutations reach many fields:\n{summary}");
}

#[test]
fn a_shaper_outside_its_ranges_is_refused_naming_the_field_and_the_range() {
    // The rate is bounded by the slowest switch port it shapes (10 Gb/s here; hosts 4-5 have 25 Gb/s links).
    let cases: &[(&str, &str, &[&str])] = &[
        ("switch.shaper={ rate = \"12Gbps\", bucket = \"3KB\" }", "switch.shaper.rate", &["(0, 10Gbps]", "s0->h0"]),
        ("switch.shaper={ rate = \"0bps\", bucket = \"3KB\" }", "switch.shaper.rate", &["(0, 10Gbps]"]),
        ("switch.shaper={ rate = \"9Gbps\", bucket = \"1000B\" }", "switch.shaper.bucket", &["at least one MTU"]),
        ("switch.shaper={ rate = \"9Gbps\", bucket = \"2000GB\" }", "switch.shaper.bucket", &["1 TiB"]),
        ("ports.0.shaper={ rate = \"11Gbps\", bucket = \"3KB\" }", "ports.0.shaper.rate", &["(0, 10Gbps]", "s0->h3"]),
    ];
    for &(set, path, msg) in cases {
        refused(&[set], path, msg);
    }
    assert!(check(&["switch.shaper={ rate = \"9.95Gbps\", bucket = \"2.5KB\" }"]).is_ok());
    let unknown = check(&["switch.shaper={ rate = \"9Gbps\", bucket = \"3KB\", peak = \"10Gbps\" }"]);
    assert!(describe(&unknown).contains("peak"), "{}", describe(&unknown));
}
