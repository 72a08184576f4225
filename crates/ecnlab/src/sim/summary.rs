//! summary.json, typed: what [`Sim::report`](super::Sim::report) measures about a run, one struct per JSON object.
//!
//! Field names are the JSON keys and carry their unit (`_s`, `_us`, `_bytes`, `_pkts`, `_gbps`); docs/OUTPUTS.md
//! ("summary.json") is the reference for every field, and a test keeps its key lists and these structs the same.
//! The file is written from the `serde_json::Value` of a [`RunSummary`] (`RunReport::summary`), whose objects
//! keep their keys in alphabetical order; serializing a `RunSummary` straight to text gives the same values in
//! declaration order. Optional fields are either `null` in the JSON (`Option` without a note) or absent
//! (noted "absent when …"). Non-finite numbers are written as `null`.

use serde::Serialize;
use std::collections::BTreeMap;

/// The whole of summary.json.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// The build that ran the simulation.
    pub ecnlab: Build,
    /// The scenario that was run.
    pub scenario: ScenarioId,
    /// Simulated time at the end (= `duration`), s.
    pub sim_time_s: f64,
    /// When the last packet, timer or workload event happened (sampling, phase boundaries and the window start do
    /// not count), s.
    pub traffic_end_s: f64,
    /// Wall-clock time of build + run + conservation check (not of writing files), s. Not deterministic.
    pub wall_time_s: f64,
    /// Events processed.
    pub events: u64,
    /// `events` / `wall_time_s`, 1/s. Not deterministic.
    pub events_per_s: f64,
    /// The statistics window, [`observe.warmup`, `duration`].
    pub window: Window,
    /// In-order TCP payload delivered to receivers during the window.
    pub goodput: Goodput,
    /// Whole-run sums over ports and senders.
    pub totals: Totals,
    /// Per queueing port (switch ports, and host ports with a switch's queues), keyed by port name (`"s0->h0"`).
    pub ports: BTreeMap<String, PortSummary>,
    /// Per switch, in switch order, when `switch.pool` is set (empty otherwise).
    pub pools: Vec<PoolSummary>,
    /// TCP RTT samples taken by senders during the window, per class and all together.
    pub rtt: RttSummary,
    /// Goodput per class between consecutive `observe.phases` boundaries (empty without phases).
    pub phases: Vec<Phase>,
    /// Flow completion times of connections with a `size`, whole run.
    pub fct: FctSummary,
    /// One entry per `[[workloads]]`, in file order.
    pub workloads: Vec<WorkloadSummary>,
    /// Priority flow control; absent unless `switch.pfc` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc: Option<PfcSummary>,
    /// PIAS tagging; absent unless `transport.pias` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pias: Option<PiasSummary>,
}

/// `ecnlab`: the build.
#[derive(Clone, Debug, Serialize)]
pub struct Build {
    /// Crate version (`"0.1.0"`).
    pub version: String,
    /// The git commit the binary was built from (12 hex digits, `-dirty` if tracked files had changes), or
    /// `"unknown"` outside a git checkout.
    pub commit: String,
}

impl Build {
    /// This build of ecnlab.
    pub fn current() -> Build {
        Build {
            version: env!("CARGO_PKG_VERSION").into(),
            commit: option_env!("ECNLAB_COMMIT").unwrap_or("unknown").into(),
        }
    }
}

/// `scenario`: which scenario ran.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioId {
    /// The scenario's `name`.
    pub name: String,
    /// 64-bit FNV-1a of config.toml's text, 16 hex digits: equal hashes mean identical resolved scenarios.
    pub hash: String,
    /// The scenario's `seed`.
    pub seed: u64,
}

impl ScenarioId {
    /// The scenario whose resolved text (config.toml) is `config_toml`.
    pub fn of(sc: &crate::Scenario, config_toml: &str) -> ScenarioId {
        ScenarioId { name: sc.name.clone(), hash: super::report::fnv(config_toml), seed: sc.seed }
    }
}

/// `window`: the statistics window.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    /// Start (`observe.warmup`), s.
    pub from_s: f64,
    /// End (`duration`), s.
    pub to_s: f64,
}

/// `goodput`: in-order payload delivered to receivers (headers, retransmitted duplicates and probes excluded).
#[derive(Clone, Debug, Serialize)]
pub struct Goodput {
    /// Payload bytes delivered in order during the window × 8 / W, all classes, Gb/s.
    pub total_gbps: f64,
    /// The same per class, Gb/s; keys are class numbers as strings, only classes that delivered data at any
    /// time or took RTT samples in the window (the key set of `rtt` and `phases` too).
    pub per_class_gbps: BTreeMap<String, f64>,
    /// Connections without a `size` opened at or before `warmup` (rate-limited and incast ones included).
    pub long_lived_flows: u64,
    /// Jain's fairness index over those connections' window goodputs; `None` if there are none or all are 0.
    pub jain_long_lived: Option<f64>,
}

/// `totals`: whole-run sums.
#[derive(Clone, Debug, Serialize)]
pub struct Totals {
    /// Sum over switch ports of `counters.arrived_pkts`, packets.
    pub switch_arrived_pkts: u64,
    /// Sum over switch ports of `counters.sent_pkts`, packets.
    pub switch_sent_pkts: u64,
    /// CE marks (all reasons) summed over the ports in `ports`, packets.
    pub marked_pkts: u64,
    /// Drops (all reasons) summed over the ports in `ports`, packets.
    pub dropped_pkts: u64,
    /// Retransmission timeouts over all TCP senders (SYN timeouts included).
    pub timeouts: u64,
    /// Retransmitted segments over all TCP senders.
    pub retransmits: u64,
    /// TCP connections opened (= rows of fct.csv).
    pub flows: u64,
}

/// `ports.<name>`: one queueing egress port.
#[derive(Clone, Debug, Serialize)]
pub struct PortSummary {
    /// Line rate, Gb/s.
    pub rate_gbps: f64,
    /// Time the transmitter was busy during the window ÷ W, fraction.
    pub utilization: f64,
    /// Whole-run counters.
    pub counters: CounterSummary,
    /// The same counters restricted to the window (value at the end − value at `warmup`).
    pub window_counters: CounterSummary,
    /// Port occupancy (all queues together).
    pub occupancy: OccupancySummary,
    /// Per queue, in queue order: whole-run counters and occupancy.
    pub queues: Vec<QueueSummary>,
    /// Over the window, the smallest backlog an arriving packet found (bytes queued plus the packet in
    /// transmission) ÷ `mtu`, MTU; absent if nothing arrived in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival_backlog_min_pkts: Option<f64>,
    /// The first packet this port marked CE (whole run); absent if it never marked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_mark: Option<FirstMark>,
}

/// `ports.<name>.queues[i]`: one queue of a port.
#[derive(Clone, Debug, Serialize)]
pub struct QueueSummary {
    /// Whole-run counters of the queue (no per-queue window counters).
    pub counters: CounterSummary,
    /// The queue's occupancy.
    pub occupancy: OccupancySummary,
}

/// `ports.<name>.first_mark`.
#[derive(Clone, Debug, Serialize)]
pub struct FirstMark {
    /// When the port first marked CE, s.
    pub time_s: f64,
    /// The sender's ⌊cwnd / mss⌋ stamped on that packet when it left the sender (0 for ACKs and probes), segments.
    pub cwnd_segments: u32,
}

/// Packet counters of a port or queue (`counters`, `window_counters`, `queues[i].counters`).
#[derive(Clone, Debug, Serialize)]
pub struct CounterSummary {
    /// Packets offered, admitted or not.
    pub arrived_pkts: u64,
    /// Wire bytes offered, admitted or not.
    pub arrived_bytes: u64,
    /// Packets dequeued for transmission (the one being serialized at the end included).
    pub sent_pkts: u64,
    /// Wire bytes dequeued for transmission.
    pub sent_bytes: u64,
    /// CE marks applied (= sum of `marks`), packets.
    pub marked_pkts: u64,
    /// Drops (= sum of `drops`), packets.
    pub dropped_pkts: u64,
    /// CE marks per reason ([`MarkReason::name`](crate::mark::MarkReason::name): `threshold`, `red`, `sojourn`,
    /// `persistent`, `codel`), packets.
    pub marks: BTreeMap<&'static str, u64>,
    /// Drops per reason ([`DropReason::name`](crate::mark::DropReason::name): `buffer_full`, `aqm`, `non_ect`),
    /// packets.
    pub drops: BTreeMap<&'static str, u64>,
    /// Mark verdicts on non-ECT packets forwarded unmarked under `non_ect = "pass"`, packets.
    pub non_ect_passed: u64,
}

/// Occupancy statistics: bytes queued in the FIFOs (wire bytes, the packet in transmission excluded),
/// time-weighted over every change. `_pkts` values are bytes ÷ the scenario's `mtu` (MTU-equivalents).
#[derive(Clone, Debug, Serialize)]
pub struct OccupancySummary {
    /// Time average over the window, B.
    pub mean_bytes: f64,
    /// Maximum over the window (the value at `warmup` included), B.
    pub max_bytes: u64,
    /// Time-weighted median over the window (log-linear histogram, within 1/64), B; `None` without a histogram.
    pub p50_bytes: Option<f64>,
    /// Time-weighted 99th percentile over the window, B; `None` without a histogram.
    pub p99_bytes: Option<f64>,
    /// Minimum over the window (the value at `warmup` included), B.
    pub min_bytes: u64,
    /// Maximum over the whole run, warm-up included, B.
    pub max_all_bytes: u64,
    /// Time-weighted standard deviation over the window, B.
    pub std_bytes: f64,
    /// `mean_bytes` in MTU.
    pub mean_pkts: f64,
    /// `min_bytes` in MTU.
    pub min_pkts: f64,
    /// `max_all_bytes` in MTU.
    pub max_all_pkts: f64,
    /// `max_bytes` in MTU.
    pub max_pkts: f64,
    /// `p99_bytes` in MTU; `None` without a histogram.
    pub p99_pkts: Option<f64>,
}

/// `pools[i]`: one switch's shared buffer pool.
#[derive(Clone, Debug, Serialize)]
pub struct PoolSummary {
    /// Switch name (`"s0"`).
    pub switch: String,
    /// The pool's `size`, B.
    pub size_bytes: u64,
    /// Bytes queued in the pool (all the switch's egress ports); `_pkts` fields divide by the scenario's `mtu`.
    pub occupancy: OccupancySummary,
}

/// `pfc`: priority flow control over the run (priority = packet class, capped at 7).
#[derive(Clone, Debug, Serialize)]
pub struct PfcSummary {
    /// PAUSE frames sent by switches (one per XOFF crossing of one ingress link and priority).
    pub pauses_sent: u64,
    /// PAUSE frames that reached their transmitter.
    pub pauses_received: u64,
    /// Per transmitter with any pause (port name): the time each of the 8 priorities was paused, s.
    pub paused_time_s: BTreeMap<String, Vec<f64>>,
    /// Per ingress link (named by its upstream transmitter) with any: the most bytes of one priority that sat in
    /// the switch at once, B.
    pub peak_ingress_bytes: BTreeMap<String, u64>,
    /// The largest of those, B.
    pub max_peak_ingress_bytes: u64,
    /// The XOFF threshold in force, B.
    pub xoff_bytes: u64,
    /// The XON threshold in force, B.
    pub xon_bytes: u64,
}

/// `pias`: the PIAS tagging in force.
#[derive(Clone, Debug, Serialize)]
pub struct PiasSummary {
    /// Priorities the tagging uses (thresholds + 1).
    pub levels: usize,
    /// The demotion thresholds, given or derived, B.
    pub thresholds_bytes: Vec<u64>,
}

/// `rtt`: RTT samples per class (keys as in `goodput.per_class_gbps`) and `all`.
#[derive(Clone, Debug, Serialize)]
pub struct RttSummary {
    /// Every class together (always present).
    pub all: HistSummary,
    /// Per class, keyed by class number as a string.
    #[serde(flatten)]
    pub per_class: BTreeMap<String, HistSummary>,
}

/// Statistics of a log-linear histogram of times, in µs (`rtt.*`, a probe's `rtt`).
#[derive(Clone, Debug, Serialize)]
pub struct HistSummary {
    /// Number of samples.
    pub count: u64,
    /// Mean (exact), µs; `None` without samples.
    pub mean_us: Option<f64>,
    /// Median (within 1/64 relative), µs; `None` without samples.
    pub p50_us: Option<f64>,
    /// 99th percentile (within 1/64 relative), µs; `None` without samples.
    pub p99_us: Option<f64>,
    /// Maximum (exact), µs; `None` without samples.
    pub max_us: Option<f64>,
}

impl HistSummary {
    /// The statistics of a histogram of picoseconds, in µs (what the simulator's and the emulation's `rtt`
    /// and probe statistics write).
    pub fn of_ps(h: &crate::observe::LogHist) -> HistSummary {
        HistSummary {
            count: h.samples(),
            mean_us: h.mean().map(|v| v / 1e6),
            p50_us: h.quantile(0.5).map(|v| v / 1e6),
            p99_us: h.quantile(0.99).map(|v| v / 1e6),
            max_us: (h.samples() > 0).then(|| h.max() as f64 / 1e6),
        }
    }
}

/// `phases[i]`: one phase of `observe.phases` (the last one ends at `duration`; phases ignore the warm-up).
#[derive(Clone, Debug, Serialize)]
pub struct Phase {
    /// Start, s.
    pub from_s: f64,
    /// End, s.
    pub to_s: f64,
    /// Per class: in-order payload delivered during the phase × 8 / (`to_s` − `from_s`), Gb/s.
    pub per_class_gbps: BTreeMap<String, f64>,
}

/// `fct`: flow completion times over the connections with a `size`, whole run.
#[derive(Clone, Debug, Serialize)]
pub struct FctSummary {
    /// Connections with a `size`.
    pub flows_with_size: u64,
    /// Those whose receiver got all `size` bytes in order by `duration`.
    pub finished: u64,
    /// The rest.
    pub unfinished: u64,
    /// FCT statistics of finished flows by size bin.
    pub bins: FctBins,
    /// FCT statistics of all finished sized flows, s.
    pub overall: Stats,
    /// Statistics of `fct_s / ideal_fct_s` over finished sized flows (dimensionless, although its keys end in `_s`).
    pub slowdown: Stats,
}

/// `fct.bins`: the papers' size bins (`report::BINS`), payload bytes, decimal units.
#[derive(Clone, Debug, Serialize)]
pub struct FctBins {
    /// Sizes in (0, 100 KB].
    pub small: Stats,
    /// Sizes in (100 KB, 10 MB].
    pub medium: Stats,
    /// Sizes above 10 MB.
    pub large: Stats,
}

/// Statistics of a set of values (FCTs in s, or slowdowns): exact nearest-rank quantiles. Only `count` is written
/// when it is 0 (the other fields are then absent).
#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    /// Number of values.
    pub count: u64,
    /// Mean; absent when `count` is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_s: Option<f64>,
    /// Median (the ⌈n/2⌉-th smallest); absent when `count` is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_s: Option<f64>,
    /// 95th percentile; absent when `count` is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95_s: Option<f64>,
    /// 99th percentile; absent when `count` is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_s: Option<f64>,
    /// Maximum; absent when `count` is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_s: Option<f64>,
}

/// `workloads[i]`: one workload, tagged by `kind`.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadSummary {
    /// `kind = "flows"`.
    Flows(FlowStats),
    /// `kind = "back_to_back"`.
    BackToBack(FlowStats),
    /// `kind = "incast"` (whole run, warm-up not excluded).
    Incast(IncastSummary),
    /// `kind = "poisson"`.
    Poisson(PoissonSummary),
    /// `kind = "query"`.
    Query(QuerySummary),
    /// `kind = "probe"`.
    Probe(ProbeSummary),
}

/// What `flows`, `back_to_back`, `poisson` and `query` workloads report over their connections (whole run).
#[derive(Clone, Debug, Serialize)]
pub struct FlowStats {
    /// Connections opened.
    pub flows: u64,
    /// Connections that completed (long-lived ones never do).
    pub finished: u64,
    /// Connections with at least one retransmission timeout ÷ `flows` (0 if `flows` is 0), fraction.
    pub timeout_fraction: f64,
    /// FCT from connection open to last byte delivered, finished connections, s.
    pub fct: Stats,
    /// FCT from the first data segment leaving the sender (ECN* §5.2: no handshake), s.
    pub fct_from_first_data: Stats,
}

/// A `poisson` workload.
#[derive(Clone, Debug, Serialize)]
pub struct PoissonSummary {
    /// Its connections' statistics.
    #[serde(flatten)]
    pub flows: FlowStats,
    /// The load actually offered, in the unit of the scenario's `load`; `None` with fewer than 2 flows opened
    /// (or all at one instant).
    pub offered_load: Option<f64>,
    /// Connections opened; absent unless `connections = "persistent"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// Flows that went on an idle connection instead of a new one; absent unless `connections = "persistent"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections_reused: Option<u64>,
}

/// A `query` workload.
#[derive(Clone, Debug, Serialize)]
pub struct QuerySummary {
    /// Its connections' statistics.
    #[serde(flatten)]
    pub flows: FlowStats,
    /// Query completion time (the last flow's finish − the query's start), s; `None` unless every flow finished.
    pub qct_s: Option<f64>,
}

/// An `incast` workload.
#[derive(Clone, Debug, Serialize)]
pub struct IncastSummary {
    /// Senders, as configured.
    pub senders: u64,
    /// Rounds, as configured.
    pub rounds: u32,
    /// Rounds finished by `duration`.
    pub rounds_completed: u64,
    /// Per completed round: requests sent → the last sender's block delivered in order, s.
    pub round_times_s: Vec<f64>,
    /// Requests sent again because a sender had not acted on the round's first one by the retry time.
    pub requests_resent: u64,
    /// `senders` × `block` × `rounds_completed` × 8 / Σ `round_times_s`, Gb/s; `None` if no round completed.
    pub goodput_gbps: Option<f64>,
}

/// A `probe` workload.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeSummary {
    /// Requests sent (whole run).
    pub sent: u64,
    /// Probe RTTs of replies received during the window.
    pub rtt: HistSummary,
}

#[cfg(test)]
mod tests {
    //! The keys of summary.json against docs/OUTPUTS.md, parsed: the top-level list, every field table of the
    //! "summary.json" section and its statistics-object sentence, so that the doc and the code cannot drift apart.

    use crate::sim::Sim;
    use crate::Scenario;
    use serde_json::Value;
    use std::collections::BTreeSet;

    /// A star with every workload kind, a persistent Poisson workload, PFC, PIAS, a shared pool and phases: every
    /// optional object and key of summary.json present somewhere (10 ms simulated).
    const EVERYTHING: &str = r#"
name = "summary-keys"
duration = "10ms"
[topology]
kind = "star"
hosts = 6
rate = "10Gbps"
delay = "5us"
[switch]
buffer = "200KB"
queues = 2
marker = { kind = "threshold", threshold = "20pkt", at = "enqueue", compare = "gt", scope = "queue" }
pfc = { xoff = "100KB" }
pool = { size = "1MB", alpha = [1.0] }
[transport]
cc = { kind = "dctcp", g = 0.0625 }
min_rto = "1ms"
initial_rto = "1ms"
pias = { thresholds = ["10KB"] }
[[workloads]]
kind = "flows"
src = "1-2"
dst = 0
size = "100KB"
[[workloads]]
kind = "flows"
src = [5]
dst = 0
class = 1
[[workloads]]
kind = "incast"
senders = [1, 2, 4]
receiver = 3
block = "20KB"
rounds = 3
start = "1ms"
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
[[workloads]]
kind = "poisson"
hosts = "1-2"
dst = 0
load = 0.1
flows = 5
cdf = ["websearch"]
connections = "persistent"
[[workloads]]
kind = "query"
senders = "1-3"
receiver = 0
at = "1ms"
count = 4
[observe]
warmup = "1ms"
phases = ["2ms", "5ms"]
"#;

    /// docs/OUTPUTS.md's "## summary.json" section.
    fn doc_section() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/OUTPUTS.md");
        let doc = std::fs::read_to_string(path).expect("docs/OUTPUTS.md");
        let from = doc.find("\n## summary.json\n").expect("a summary.json section");
        let rest = &doc[from + 1..];
        let to = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
        rest[..to].to_string()
    }

    /// The names in backticks in `text`.
    fn ticked(text: &str) -> BTreeSet<String> {
        text.split('`').skip(1).step_by(2).map(str::to_string).collect()
    }

    /// The section's field tables by `###` heading, in order: for each, the field names of its rows (the first
    /// cell's backticked names, `ecnlab.version` for a nested key).
    fn tables(section: &str) -> Vec<(String, Vec<BTreeSet<String>>)> {
        let mut out: Vec<(String, Vec<BTreeSet<String>>)> = vec![];
        let mut in_table = false;
        for line in section.lines() {
            if let Some(h) = line.strip_prefix("### ") {
                out.push((h.to_string(), vec![]));
            }
            let row = line.starts_with('|');
            if row && !line.starts_with("| field") && !line.starts_with("|---") {
                let (_, tables) = out.last_mut().expect("a table under a heading");
                if !in_table {
                    tables.push(BTreeSet::new());
                }
                let first = line.split('|').nth(1).expect("a first cell");
                tables.last_mut().unwrap().extend(ticked(first));
                in_table = true;
            } else if !row {
                in_table = false;
            }
        }
        out
    }

    /// The keys of `v` named as the doc names them: a nested object's keys as `key.inner` where the doc names any
    /// `key.…`, otherwise `key` alone (objects documented by their own table, maps keyed by class or port).
    fn keys(v: &Value, doc: &BTreeSet<String>, prefix: &str, out: &mut BTreeSet<String>) {
        for (k, x) in v.as_object().expect("an object") {
            let name = format!("{prefix}{k}");
            if x.is_object() && doc.iter().any(|d| d.starts_with(&format!("{name}."))) {
                keys(x, doc, &format!("{name}."), out);
            } else {
                out.insert(name);
            }
        }
    }

    /// Every object in `objects` has only documented keys, and every documented key is in one of them.
    fn check(what: &str, objects: &[&Value], doc: &BTreeSet<String>, ignore: &[&str]) {
        assert!(!objects.is_empty(), "{what}: nothing in the summary to compare");
        let mut union = BTreeSet::new();
        for o in objects {
            let mut k = BTreeSet::new();
            keys(o, doc, "", &mut k);
            k.retain(|k| !ignore.contains(&k.as_str()));
            assert!(
                k.is_subset(doc),
                "{what}: keys {:?} are not in docs/OUTPUTS.md",
                k.difference(doc).collect::<Vec<_>>()
            );
            union.extend(k);
        }
        assert_eq!(&union, doc, "{what}: the summary's keys (left) against docs/OUTPUTS.md's (right)");
    }

    #[test]
    fn summary_keys_are_the_documented_ones() {
        let sc = Scenario::from_toml(EVERYTHING, &[]).expect("valid");
        let mut sim = Sim::new(&sc).expect("builds");
        sim.run().expect("runs");
        let r = sim.report(&sc, 1.0);
        let s = &r.summary;
        assert_eq!(serde_json::to_value(r.summary_typed()).unwrap(), *s, "summary is the typed summary's value");

        let section = doc_section();
        // The top-level list: "A JSON object with keys in alphabetical order: `ecnlab`, …, `workloads`."
        let list = section.split_once("alphabetical order:").expect("the top-level key list").1;
        let top: Vec<String> = list[..list.find("`. ").expect("the list's end") + 1]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        let got: Vec<String> = s.as_object().unwrap().keys().cloned().collect();
        assert_eq!(got, top, "top-level keys, in the file's order, against the list opening the section");

        let tables = tables(&section);
        let table = |heading: &str, i: usize| -> &BTreeSet<String> {
            let (_, t) = tables.iter().find(|(h, _)| h.starts_with(heading)).unwrap_or_else(|| panic!("### {heading}"));
            t.get(i).unwrap_or_else(|| panic!("table {i} under ### {heading}"))
        };
        // Objects with a heading of their own are keys of the root, the rest of the root is the first table.
        let own: Vec<String> = tables.iter().flat_map(|(h, _)| ticked(h)).collect();
        let own: Vec<&str> = own.iter().map(String::as_str).collect();
        check("root", &[s], table("Run identification", 0), &own);
        check("goodput", &[&s["goodput"]], table("`goodput`", 0), &[]);
        check("totals", &[&s["totals"]], table("`totals`", 0), &[]);

        let ports: Vec<&Value> = s["ports"].as_object().unwrap().values().collect();
        let queues: Vec<&Value> = ports.iter().flat_map(|p| p["queues"].as_array().unwrap()).collect();
        let pools: Vec<&Value> = s["pools"].as_array().unwrap().iter().collect();
        check("ports.*", &ports, table("`ports`", 0), &[]);
        let counters: Vec<&Value> = (ports.iter().map(|p| &p["counters"]))
            .chain(ports.iter().map(|p| &p["window_counters"]))
            .chain(queues.iter().map(|q| &q["counters"]))
            .collect();
        check("counters", &counters, table("`ports`", 1), &[]);
        let occupancy: Vec<&Value> = (ports.iter().chain(&queues).chain(&pools)).map(|o| &o["occupancy"]).collect();
        check("occupancy", &occupancy, table("`ports`", 2), &[]);
        check("queues.*", &queues, &["counters", "occupancy"].map(String::from).into(), &[]);
        check("pools.*", &pools, table("`pools`", 0), &[]);
        check("pfc", &[&s["pfc"]], table("`pfc`", 0), &[]);
        check("pias", &[&s["pias"]], table("`pias`", 0), &[]);

        let rtt = s["rtt"].as_object().unwrap();
        assert_eq!(
            rtt.keys().filter(|k| *k != "all").collect::<Vec<_>>(),
            s["goodput"]["per_class_gbps"].as_object().unwrap().keys().collect::<Vec<_>>()
        );
        let probes: Vec<&Value> = s["workloads"].as_array().unwrap().iter().filter(|w| w["kind"] == "probe").collect();
        let hists: Vec<&Value> = rtt.values().chain(probes.iter().map(|p| &p["rtt"])).collect();
        check("rtt.*", &hists, table("`rtt`", 0), &[]);
        check("phases.*", &s["phases"].as_array().unwrap().iter().collect::<Vec<_>>(), table("`phases`", 0), &[]);
        check("fct", &[&s["fct"]], table("`fct`", 0), &[]);

        // "Each statistics object is `{ "count": n, "mean_s", "p50_s", "p95_s", "p99_s", "max_s" }`".
        let sentence = section.split_once("Each statistics object is").expect("the statistics sentence").1;
        let object = sentence.split('`').nth(1).expect("a statistics object in backticks");
        let stats: BTreeSet<String> = object.split('"').skip(1).step_by(2).map(str::to_string).collect();
        let workloads: Vec<&Value> = s["workloads"].as_array().unwrap().iter().collect();
        let kind = |k: &[&str]| -> Vec<&Value> {
            workloads.iter().copied().filter(|w| k.iter().any(|k| w["kind"] == *k)).collect()
        };
        let fct = &s["fct"];
        let mut all_stats: Vec<&Value> = vec![&fct["overall"], &fct["slowdown"]];
        all_stats.extend(fct["bins"].as_object().unwrap().values());
        for w in kind(&["flows", "back_to_back", "poisson", "query"]) {
            all_stats.extend([&w["fct"], &w["fct_from_first_data"]]);
        }
        check("statistics objects", &all_stats, &stats, &[]);

        let common = table("`workloads`", 0);
        let with = |more: &BTreeSet<String>| common.union(more).cloned().collect::<BTreeSet<_>>();
        check("workloads flows, back_to_back", &kind(&["flows", "back_to_back"]), common, &["kind"]);
        check("workloads poisson", &kind(&["poisson"]), &with(table("`workloads`", 1)), &["kind"]);
        check("workloads query", &kind(&["query"]), &with(table("`workloads`", 2)), &["kind"]);
        check("workloads incast", &kind(&["incast"]), table("`workloads`", 3), &["kind"]);
        check("workloads probe", &kind(&["probe"]), table("`workloads`", 4), &["kind"]);
        assert_eq!(kind(&["flows", "back_to_back", "poisson", "query", "incast", "probe"]).len(), workloads.len());
    }
}
