//! The one scenario schema (TOML via serde), `--set` overrides, and validation with precise field paths.

mod budget;
mod emulation;
mod hosts;
mod hostset;
mod source;
mod topology;
mod validate;

pub use budget::{default_max_memory, human as budget_human, Item as MemoryItem, FLOW_BYTES};
pub use emulation::{
    EmulatedPorts, EmulatedTrunk, Emulation, PcapDirection, PcapPort, MAX_EMULATED_DURATION, MAX_EMULATED_HOSTS,
    MAX_RATE_CAP,
};
pub use hosts::{Egress, Hosts};
pub use hostset::HostSet;
pub use source::Source;

use crate::error::Error;
/// A port's marker table: generated, with each scheme's own table, from the registry in `mark`.
pub use crate::mark::MarkerConfig;
use crate::port::NonEct;
pub use crate::sched::SchedulerConfig;
use crate::transport::pias::{DeriveSpec, PiasSpec, PiasToml};
use crate::transport::TcpConfig;
use crate::units::{Bytes, Rate, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: String,
    #[serde(default = "one")]
    pub seed: u64,
    /// Simulated time to run.
    pub duration: Time,
    /// MTU on the wire of every link.
    #[serde(default = "mtu_default")]
    pub mtu: Bytes,
    pub topology: Topology,
    /// Settings of every switch egress port.
    #[serde(default)]
    pub switch: PortSettings,
    /// Per-port overrides of `switch`, by port name (`s0->h0`).
    #[serde(default)]
    pub ports: Vec<PortOverride>,
    #[serde(default)]
    pub transport: TcpConfig,
    #[serde(default)]
    pub hosts: Hosts,
    #[serde(default)]
    pub workloads: Vec<Workload>,
    #[serde(default)]
    pub observe: Observe,
    #[serde(default)]
    pub limits: Limits,
    /// How `ecnlab-sim emulate` runs the scenario on the software switch (`emulation`); the simulator ignores
    /// it. Absent from config.toml when not given, so that scenarios without it keep their hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulation: Option<Emulation>,
    /// Notes on deprecated keys the scenario used (each names the key and its new spelling); fronts show
    /// them as warnings.
    #[serde(skip)]
    pub deprecated: Vec<String>,
}

fn one() -> u64 {
    1
}
fn mtu_default() -> Bytes {
    Bytes(1500)
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Topology {
    /// Hosts h0..h{n−1} on one switch s0.
    Star {
        hosts: u32,
        rate: Rate,
        /// One-way propagation delay of each host link.
        delay: Time,
        /// Per-host overrides: rate, delay, and extra delay on the host → switch direction.
        #[serde(default)]
        host_links: Vec<HostLink>,
    },
    /// `left` hosts on s0, `right` hosts on s1, one bottleneck link s0 ↔ s1. Left hosts are h0..h{left−1}.
    Dumbbell {
        left: u32,
        right: u32,
        rate: Rate,
        delay: Time,
        bottleneck_rate: Rate,
        bottleneck_delay: Time,
        #[serde(default)]
        host_links: Vec<HostLink>,
    },
    /// Two-tier Clos: `leaves` leaf switches s0..s{leaves−1} with `hosts_per_leaf` hosts each (leaf-major host
    /// numbering), `spines` spine switches after them, every leaf linked to every spine; ECMP across spines.
    LeafSpine {
        leaves: u32,
        spines: u32,
        hosts_per_leaf: u32,
        /// Host link rate and one-way delay.
        rate: Rate,
        delay: Time,
        /// Leaf–spine links (default: as the host links).
        fabric_rate: Option<Rate>,
        fabric_delay: Option<Time>,
        #[serde(default)]
        host_links: Vec<HostLink>,
    },
    /// k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and k/2 aggregation switches,
    /// (k/2)² cores, k³/4 hosts; switches numbered edges, then aggregations, then cores.
    FatTree {
        k: u32,
        rate: Rate,
        delay: Time,
        #[serde(default)]
        host_links: Vec<HostLink>,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostLink {
    pub hosts: HostSet,
    pub rate: Option<Rate>,
    pub delay: Option<Time>,
    /// Added to the host → switch propagation delay only (a delay at the sender).
    pub extra_delay: Option<Time>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PortSettings {
    /// Buffer shared by the port's queues, first come first served.
    pub buffer: Bytes,
    pub queues: u32,
    pub scheduler: SchedulerConfig,
    pub marker: MarkerConfig,
    pub non_ect: NonEct,
    /// Static per-queue limits (the last applies to higher queues); empty = the port buffer only.
    pub queue_limits: Vec<Bytes>,
    /// A switch-wide shared buffer pool with dynamic thresholds (only under `[switch]`, not per port).
    pub pool: Option<PoolConfig>,
    /// Priority flow control on every switch port (only under `[switch]`, not per port).
    pub pfc: Option<crate::net::pfc::PfcConfig>,
    /// A token bucket the port's transmissions wait for (a software switch's rate limiter); none by default.
    /// Under `[switch]` it shapes the switches' ports, not hosts' ports built like a switch's. Absent from
    /// config.toml when not given, so that scenarios without it keep their hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shaper: Option<crate::port::Shaper>,
}

impl PortSettings {
    /// An egress port from these settings, as the simulator and the emulated switch both build one: the
    /// scheduler and the marker by their own builders (time-valued thresholds resolve with `rate` and are
    /// re-checked against the buffer; `name` is the port the marker's errors name, `rng` its random stream).
    /// What depends on the port's surroundings (PFC, pass-through, a shared pool) is the caller's.
    pub fn build_port(
        &self,
        rate: Rate,
        delay: Time,
        mtu: Bytes,
        name: &str,
        rng: crate::engine::Rng,
        histogram: bool,
    ) -> Result<crate::port::Port, Error> {
        let sched = self.scheduler.build(self.queues as usize);
        let marker = self.marker.build(crate::mark::Build {
            mtu,
            rate,
            buffer: self.buffer,
            port: name,
            queues: self.queues as usize,
            sched: &sched,
            rng,
        })?;
        let cfg = crate::port::PortConfig {
            rate,
            delay,
            mtu,
            buffer: self.buffer,
            queues: self.queues,
            non_ect: self.non_ect,
            queue_limits: self.queue_limits.clone(),
        };
        let mut port = crate::port::Port::new(cfg, sched, marker, histogram);
        port.set_shaper(self.shaper);
        Ok(port)
    }
}

/// One shared buffer pool per switch (a Broadcom "service pool"): a queue admits a packet while its backlog
/// stays ≤ α × the pool's free space.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    pub size: Bytes,
    /// α per queue index (one value applies to all queues; the last applies to higher indices).
    #[serde(default = "alpha")]
    pub alpha: Vec<f64>,
}

fn alpha() -> Vec<f64> {
    vec![1.0]
}

impl Default for PortSettings {
    fn default() -> Self {
        PortSettings {
            buffer: Bytes(1_000_000),
            queues: 1,
            scheduler: SchedulerConfig::default(),
            marker: MarkerConfig::None,
            non_ect: NonEct::Pass,
            queue_limits: Vec::new(),
            pool: None,
            pfc: None,
            shaper: None,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortOverride {
    /// `s0->h0`: the port of s0 transmitting toward h0.
    pub port: String,
    pub buffer: Option<Bytes>,
    pub queues: Option<u32>,
    pub scheduler: Option<SchedulerConfig>,
    pub marker: Option<MarkerConfig>,
    pub non_ect: Option<NonEct>,
    pub queue_limits: Option<Vec<Bytes>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaper: Option<crate::port::Shaper>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Workload {
    /// One flow per source host to `dst`: long-lived without `size`, else of that size.
    Flows {
        src: HostSet,
        dst: u32,
        size: Option<Bytes>,
        #[serde(default)]
        start: Time,
        /// Each flow starts at `start + U(0, jitter)` (per-flow stream of the seed).
        #[serde(default)]
        jitter: Time,
        /// Long-lived flows stop writing new data here.
        stop: Option<Time>,
        #[serde(default)]
        class: u8,
        /// Per-flow classes, cycled over the sources (flow i gets classes[i % len]); overrides `class`.
        classes: Option<Vec<u8>>,
        /// Application rate limit, on the wire.
        rate: Option<Rate>,
    },
    /// Back-to-back flows of `size` on new connections: the next starts when the previous completes (ECN* §5.2).
    BackToBack {
        src: u32,
        dst: u32,
        size: Bytes,
        #[serde(default)]
        start: Time,
        /// Stop after this many flows (default: until the end of the run).
        count: Option<u32>,
        #[serde(default)]
        class: u8,
    },
    /// Barrier-synchronised incast rounds over kept connections (ECN* §2.1): each round the receiver sends
    /// a one-packet request to every sender, which answers with `block` bytes.
    Incast {
        senders: HostSet,
        receiver: u32,
        block: Bytes,
        rounds: u32,
        #[serde(default)]
        start: Time,
        #[serde(default)]
        class: u8,
    },
    /// Flows arriving as a Poisson process sized to a target load (DESIGN "Load"): all-to-all among `hosts`,
    /// or many-to-one into `dst`. Flow sizes from a CDF per service; services map to classes (queues).
    Poisson {
        /// Participating hosts (default: every host); with `dst`, the senders.
        hosts: Option<HostSet>,
        /// Many-to-one: every flow goes to this host.
        dst: Option<u32>,
        /// Offered load: bytes per second over the capacity of the host links (all-to-all) or of `dst`'s link.
        load: f64,
        /// Stop after this many flows (else at `stop`, else at the end of the run).
        flows: Option<u64>,
        #[serde(default)]
        start: Time,
        stop: Option<Time>,
        /// Flow-size CDFs, shipped names (`websearch`, `datamining`, `cache`, `hadoop`, `websearch_bytes`,
        /// `datamining_bytes`, `uniform_3k_60k_bytes`) or CSV paths; one for all services, or one per group of services.
        cdf: Vec<String>,
        #[serde(default)]
        services: Services,
        /// Per-flow end-to-end base RTT drawn from a distribution (ECN♯ §5); the sender adds the difference
        /// to the fabric's base RTT as delay on every packet of the flow it sends.
        rtt: Option<RttVariation>,
        /// A new connection per flow, or a pool of persistent ones per host pair and class.
        #[serde(default)]
        connections: Connections,
    },
    /// A query: `count` flows of U(size_min, size_max) bytes from `senders` (round robin) to `receiver`, all
    /// opened at `at` (ECN♯ §5.3); the query completes when its last flow does.
    Query {
        senders: HostSet,
        receiver: u32,
        count: u32,
        #[serde(default = "q_min")]
        size_min: Bytes,
        #[serde(default = "q_max")]
        size_max: Bytes,
        at: Time,
        #[serde(default)]
        class: u8,
    },
    /// Ping-like RTT probes from `src` to `dst` in `class`, echoed at once by `dst`.
    Probe {
        src: u32,
        dst: u32,
        interval: Time,
        #[serde(default)]
        start: Time,
        stop: Option<Time>,
        #[serde(default)]
        class: u8,
        #[serde(default = "probe_size")]
        size: Bytes,
        #[serde(default = "yes")]
        ect: bool,
    },
}

fn q_min() -> Bytes {
    Bytes(3_000)
}
fn q_max() -> Bytes {
    Bytes(60_000)
}

/// Which connection a Poisson flow travels on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Connections {
    /// Every flow opens a connection of its own, with fresh TCP state.
    #[default]
    New,
    /// Every (source, destination, class) keeps a pool of connections, as a client with persistent
    /// connections (MQ-ECN §5.1.2) and the MQ-ECN and PIAS ns-2 scripts (a pool per host pair, an idle
    /// connection reused, another opened while all are busy): a flow takes the longest-open idle connection
    /// of its pool, so it starts from that connection's congestion state (window, DCTCP α, RTT estimate),
    /// and opens a new one only if none is idle.
    Persistent,
}

/// How Poisson flows map to services (classes, i.e. switch queues).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Services {
    /// Every flow in one class.
    #[default]
    Single,
    /// Each flow picks one of `count` services uniformly (MQ-ECN §5.1.2 "balanced").
    Random { count: u8 },
    /// Each flow picks service i with probability `probabilities[i]` (e.g. 10/20/30/40 %).
    Weighted { probabilities: Vec<f64> },
    /// The ordered host pairs (src, dst) are dealt round robin onto `count` services (MQ-ECN §5.2).
    Pairs { count: u8 },
    /// As the MQ-ECN authors' ns-2 script assigns them: pair (i → j) of the network's hosts in service
    /// ((j + 1)·hosts + (i + 1)) mod `count`, and each pair's flows arriving at a rate ∝ 1 / its CDF's mean
    /// size (every pair offers the same bytes). With 144 hosts and 8 services a sending host's flows all share
    /// one service.
    PairRule { count: u8 },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttVariation {
    /// A shipped shape (`longtail_70_210us`, `longtail_80_240us`) or a CSV path.
    pub dist: String,
    /// The range the shape is rescaled to.
    pub lo: Time,
    pub hi: Time,
}

fn probe_size() -> Bytes {
    Bytes(64)
}
fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Observe {
    /// Statistics (goodput, occupancy, RTT) cover [warmup, duration].
    pub warmup: Time,
    /// Period of the time series in `series/`; 0 = no series.
    pub sample_interval: Time,
    /// Ports whose occupancy is sampled and histogrammed; empty = every switch port.
    pub ports: Vec<String>,
    /// Occupancy histograms (p50/p99) for those ports. Off, they keep mean, min, max and std: one histogram per
    /// queue is a cache line touched per enqueue and dequeue, which at datacenter scale is a sixth of the run.
    pub occupancy_quantiles: bool,
    /// Flows (by id) whose cwnd is recorded in the series.
    pub cwnd: Vec<u32>,
    /// Record every TCP RTT sample in `series/rtt.csv`.
    pub rtt_samples: bool,
    /// Phase boundaries: goodput per class is also reported for each interval between consecutive times.
    pub phases: Vec<Time>,
    pub trace: Option<TraceFilter>,
    /// Where a sized flow's completion time ends (`FctEnd`).
    pub fct_end: FctEnd,
}

/// Where a sized flow's completion time ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FctEnd {
    /// When the receiver holds the flow's last byte in order (the application has its data).
    #[default]
    Received,
    /// When the sender sees its last byte acknowledged, one ACK's trip later: how the MQ-ECN authors' ns-2
    /// scripts time a flow (`bench/vs-ns2`).
    Acked,
}

impl Default for Observe {
    fn default() -> Self {
        Observe {
            warmup: Time::ZERO,
            sample_interval: Time::ZERO,
            ports: Vec::new(),
            occupancy_quantiles: true,
            cwnd: Vec::new(),
            rtt_samples: false,
            phases: Vec::new(),
            trace: None,
            fct_end: FctEnd::Received,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraceFilter {
    /// Port names; empty = all switch ports.
    pub ports: Vec<String>,
    /// Flow ids; empty = all.
    pub flows: Vec<u32>,
    pub from: Option<Time>,
    pub to: Option<Time>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Stop with an error after this many events (guards against runaway scenarios).
    pub max_events: u64,
    /// Refuse, at validation, a scenario estimated to hold more memory than this (see `budget`). Absent: half
    /// of the machine's memory, resolved at check time so the resolved scenario stays machine-independent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory: Option<Bytes>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_events: 20_000_000_000, max_memory: None }
    }
}

impl Scenario {
    /// Parses TOML text, applies `key=value` overrides, deserializes with field paths, and validates.
    pub fn from_toml(text: &str, sets: &[String]) -> Result<Scenario, Error> {
        Scenario::from_toml_in(text, sets, None)
    }

    /// As `from_toml`, for the text of `file` (named in syntax errors as `file:line:column`).
    fn from_toml_in(text: &str, sets: &[String], file: Option<&std::path::Path>) -> Result<Scenario, Error> {
        let mut doc: toml::Value = toml::from_str(text).map_err(|e| syntax_error(text, &e, file))?;
        for s in sets {
            apply_set(&mut doc, s)?;
        }
        let deprecated = hosts::migrate(&mut doc)?;
        let derive = take_pias_derive(&mut doc)?;
        let mut sc = deserialize(&doc).map_err(|(path, msg)| Error::config(narrow(&doc, path, &msg).join("."), msg))?;
        sc.deprecated = deprecated;
        sc.validate()?;
        if let Some(d) = derive {
            sc.resolve_pias(&d)?;
        }
        Ok(sc)
    }

    /// Reads a scenario file. A file that cannot be a scenario (missing, a directory, not UTF-8 text) is
    /// invalid input, a config error naming the file, like a bad value inside it.
    pub fn from_file(path: &std::path::Path, sets: &[String]) -> Result<Scenario, Error> {
        let named = path.display().to_string();
        if path.is_dir() {
            return Err(Error::config(named, "is a directory, not a scenario file (TOML)"));
        }
        let bytes = std::fs::read(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::config(&named, "no such scenario file"),
            std::io::ErrorKind::PermissionDenied => Error::config(&named, format!("cannot be read: {e}")),
            _ => Error::Io(format!("cannot read scenario {named}: {e}")),
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let (line, col) = line_col(&String::from_utf8_lossy(&e.as_bytes()[..at]), at);
            Error::config(format!("{named}:{line}:{col}"), "not UTF-8 text: a scenario is a TOML file")
        })?;
        Scenario::from_toml_in(&text, sets, Some(path))
    }

    /// The resolved scenario as TOML: running it again replays the run.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("scenario serializes")
    }
}

/// Line and column (from 1; the column in characters) of byte offset `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// A TOML syntax error (a malformed line, a duplicate key, a number too large) at `file:line:column`, or at
/// `line L, column C` of text given without a file.
fn syntax_error(text: &str, e: &toml::de::Error, file: Option<&std::path::Path>) -> Error {
    let msg = format!("TOML: {}", e.message());
    match e.span() {
        Some(span) => {
            let (line, col) = line_col(text, span.start);
            match file {
                Some(f) => Error::config(format!("{}:{line}:{col}", f.display()), msg),
                None => Error::config(format!("line {line}, column {col}"), msg),
            }
        }
        None => Error::config(file.map(|f| f.display().to_string()).unwrap_or_default(), msg),
    }
}

/// A deserialization failure: the field path as `--set` spells it (`workloads.0.dst`) and the message.
type DeError = (Vec<String>, String);

fn deserialize(doc: &toml::Value) -> Result<Scenario, DeError> {
    deserialize_as(doc)
}

fn deserialize_as<T: serde::de::DeserializeOwned>(doc: &toml::Value) -> Result<T, DeError> {
    use serde_path_to_error::Segment;
    serde_path_to_error::deserialize(doc.clone()).map_err(|e| {
        let path = e
            .path()
            .iter()
            .filter_map(|s| match s {
                Segment::Seq { index } => Some(index.to_string()),
                Segment::Map { key } => Some(key.clone()),
                Segment::Enum { .. } | Segment::Unknown => None,
            })
            .collect();
        (path, e.inner().message().to_string())
    })
}

/// `transport.pias = { derive = true, … }` needs the workloads, which `Pias` (a `Copy` value inside `TcpConfig`)
/// cannot see: the table is checked and taken out of the document here, and `Scenario::resolve_pias` turns it into
/// thresholds once the rest of the scenario is valid. A `thresholds` table stays and deserializes as usual.
fn take_pias_derive(doc: &mut toml::Value) -> Result<Option<DeriveSpec>, Error> {
    let Some(toml::Value::Table(transport)) = doc.get_mut("transport") else { return Ok(None) };
    let Some(table) = transport.get("pias") else { return Ok(None) };
    let here = |field: &str| if field.is_empty() { "transport.pias".into() } else { format!("transport.pias.{field}") };
    let t: PiasToml = deserialize_as(table).map_err(|(path, msg)| Error::config(here(&path.join(".")), msg))?;
    match t.spec() {
        Ok(PiasSpec::Given(_)) => Ok(None),
        Ok(PiasSpec::Derive(d)) => {
            transport.remove("pias");
            Ok(Some(d))
        }
        Err((field, msg)) => Err(Error::config(here(field), msg)),
    }
}

/// Serde loses the path inside internally tagged enums (`topology`, `workloads.0`, `switch.marker`): descends
/// to the child whose removal clears or changes the error, as long as there is exactly one such child. A table
/// that fails only after all its fields were read lacks one; that one is named when it can be found.
fn narrow(doc: &toml::Value, mut path: Vec<String>, msg: &str) -> Vec<String> {
    loop {
        let Some(node) = lookup(doc, &path) else { return path };
        if node.is_table() {
            if let Some(field) = named_missing(msg) {
                path.push(field); // also the tag of an internally tagged enum
                return path;
            }
            if let Some(fields) = fields_if_read_to_the_end(doc, &path) {
                path.extend(missing_field(doc, &path, msg, &fields));
                return path;
            }
        }
        let children: Vec<String> = match node {
            toml::Value::Table(t) => t.keys().filter(|k| *k != "kind").cloned().collect(),
            toml::Value::Array(a) if a.iter().all(toml::Value::is_table) => {
                (0..a.len()).map(|i| i.to_string()).collect()
            }
            _ => return path,
        };
        let changes = |k: &String| {
            let mut d = doc.clone();
            if let Some(parent) = lookup_mut(&mut d, &path) {
                remove_child(parent, k);
            }
            // Gone, changed, or now only a missing field (which unit types report in the same words).
            deserialize(&d).err().is_none_or(|(_, m)| m != msg) || fields_if_read_to_the_end(&d, &path).is_some()
        };
        let culprits: Vec<String> = children.into_iter().filter(changes).collect();
        match <[String; 1]>::try_from(culprits) {
            Ok([k]) => path.push(k),
            Err(_) => return path,
        }
    }
}

/// If the table at `path` fails only once all its fields were read, its declared fields: an unknown key that
/// sorts after every other is then reported (with the list of fields) instead of the original error.
fn fields_if_read_to_the_end(doc: &toml::Value, path: &[String]) -> Option<Vec<String>> {
    const LAST: &str = "~"; // sorts after every ASCII letter
    let mut d = doc.clone();
    if let Some(toml::Value::Table(t)) = lookup_mut(&mut d, path) {
        t.insert(LAST.into(), toml::Value::Integer(0));
    }
    let (_, m) = deserialize(&d).err()?;
    let rest = m.strip_prefix(&format!("unknown field `{LAST}`"))?;
    Some(rest.split('`').skip(1).step_by(2).map(String::from).collect())
}

/// The field serde reports missing. Unit types and host sets hide that message behind "expected a time
/// (e.g. "85.2us") string"; the missing field is then the one absent field that accepts the message's first
/// quoted example and, given it, clears the error.
fn missing_field(doc: &toml::Value, path: &[String], msg: &str, fields: &[String]) -> Option<String> {
    if let Some(f) = named_missing(msg) {
        return Some(f);
    }
    let example = msg.split_once('"')?.1.split_once('"')?.0;
    let table = lookup(doc, path)?.as_table()?;
    let satisfies = |f: &&String| {
        let mut d = doc.clone();
        if let Some(toml::Value::Table(t)) = lookup_mut(&mut d, path) {
            t.insert(f.to_string(), toml::Value::String(example.into()));
        }
        match deserialize(&d) {
            Ok(_) => true,
            Err((_, m)) => m != msg && fields_if_read_to_the_end(&d, path).is_some(),
        }
    };
    let fits: Vec<&String> = fields.iter().filter(|f| !table.contains_key(*f)).filter(satisfies).collect();
    (fits.len() == 1).then(|| fits[0].clone())
}

fn named_missing(msg: &str) -> Option<String> {
    let rest = msg.split_once("missing field `")?.1;
    rest.split_once('`').map(|(f, _)| f.to_string())
}

fn lookup<'a>(v: &'a toml::Value, path: &[String]) -> Option<&'a toml::Value> {
    path.iter().try_fold(v, |v, k| match v {
        toml::Value::Table(t) => t.get(k),
        toml::Value::Array(a) => a.get(k.parse::<usize>().ok()?),
        _ => None,
    })
}

fn lookup_mut<'a>(v: &'a mut toml::Value, path: &[String]) -> Option<&'a mut toml::Value> {
    path.iter().try_fold(v, |v, k| match v {
        toml::Value::Table(t) => t.get_mut(k),
        toml::Value::Array(a) => a.get_mut(k.parse::<usize>().ok()?),
        _ => None,
    })
}

fn remove_child(v: &mut toml::Value, k: &str) {
    match v {
        toml::Value::Table(t) => {
            t.remove(k);
        }
        toml::Value::Array(a) => {
            if let Some(i) = k.parse::<usize>().ok().filter(|&i| i < a.len()) {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// Applies `a.b.0.c=value` to a TOML document. The value is read as a TOML literal when it parses as one
/// (`3`, `true`, `"x"`, `[1, 2]`, `{ kind = "red", … }`), else as a bare string (`10Gbps`).
pub fn apply_set(doc: &mut toml::Value, set: &str) -> Result<(), Error> {
    let (path, raw) =
        set.split_once('=').ok_or_else(|| Error::config("--set", format!("`{set}` is not of the form path=value")))?;
    let path = path.trim();
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").expect("parsed key"),
        Err(_) => toml::Value::String(raw.trim().to_string()),
    };
    let keys: Vec<&str> = path.split('.').collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(Error::config(path, "empty key in --set path"));
    }
    let mut cur = doc;
    for (i, k) in keys.iter().enumerate() {
        let last = i + 1 == keys.len();
        cur = match cur {
            toml::Value::Table(t) => {
                if last {
                    t.insert(k.to_string(), value);
                    return Ok(());
                }
                t.entry(k.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()))
            }
            toml::Value::Array(a) => {
                let idx: usize =
                    k.parse().map_err(|_| Error::config(path, format!("`{k}` must be an index into an array")))?;
                let len = a.len();
                let slot = a
                    .get_mut(idx)
                    .ok_or_else(|| Error::config(path, format!("index {idx} out of range (array has {len})")))?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            _ => return Err(Error::config(path, format!("`{}` is not a table", keys[..i].join(".")))),
        };
    }
    unreachable!()
}
