//! An emulated run's records → the simulator's run directory: summary.json (the simulator's typed summary, less
//! what only a simulation measures, plus an `emulation` block), fct.csv, series/, config.toml.

use super::tasks::OpenedFlow;
use super::Measured;
use crate::dataplane::{LinkReport, QueueSamples, RttSamples};
use crate::traffic::report::{stats, Endpoints, FlowResult, LinkModel};
use crate::traffic::server::ReceiverRecord;
use ecnlab::observe::{fmt_num, LogHist};
use ecnlab::scenario::{EmulatedPorts, Workload};
use ecnlab::sim::summary::{
    Build, FirstMark, FlowStats, HistSummary, PoolSummary, PortSummary, QueueSummary, RttSummary, RunSummary,
    ScenarioId, Totals, Window, WorkloadSummary,
};
use ecnlab::sim::{counters, occupancy};
use ecnlab::units::{Bytes, Time};
use ecnlab::Scenario;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Keys of the simulator's summary.json that an emulated run does not write (`*` stands for every port):
/// `events` and `events_per_s` count a simulation's events; `first_mark.cwnd_segments` is the sender's window
/// stamped on a simulated packet, which a real frame does not carry. (`rtt` is written: the switch measures
/// the connections' RTT from the data and ACK frames it forwards, `dataplane::RttMeter`.)
pub const SIMULATOR_ONLY: &[&str] = &["events", "events_per_s", "ports.*.first_mark.cwnd_segments"];

/// An emulated run, ready to be written as a run directory.
#[derive(Clone, Debug)]
pub struct Emulated {
    /// summary.json.
    pub summary: Value,
    pub fct_csv: String,
    /// series/ files: (file name, text).
    pub series: Vec<(String, String)>,
    pub config_toml: String,
}

impl Emulated {
    /// Writes the run directory into `staged` (whose pcap/ the run already filled) and swaps it in.
    pub fn write_staged(&self, staged: ecnlab::outdir::Staged) -> ecnlab::Result<PathBuf> {
        let dir = staged.dir().to_path_buf();
        let io = |e: std::io::Error| ecnlab::Error::Io(format!("{}: {e}", staged.target().display()));
        std::fs::create_dir_all(dir.join("series")).map_err(io)?;
        std::fs::write(dir.join("config.toml"), &self.config_toml).map_err(io)?;
        std::fs::write(dir.join("fct.csv"), &self.fct_csv).map_err(io)?;
        for (name, text) in &self.series {
            std::fs::write(dir.join("series").join(name), text).map_err(io)?;
        }
        let summary = serde_json::to_string_pretty(&self.summary).expect("a summary is JSON");
        std::fs::write(dir.join("summary.json"), summary + "\n").map_err(io)?;
        staged.commit()
    }
}

/// Removes a dotted key path (`*` for every key of an object) from a JSON value.
pub fn remove_path(v: &mut Value, path: &str) {
    fn go(v: &mut Value, keys: &[&str]) {
        let Some(obj) = v.as_object_mut() else { return };
        match keys {
            [] => {}
            [last] => {
                obj.remove(*last);
            }
            ["*", rest @ ..] => obj.values_mut().for_each(|c| go(c, rest)),
            [k, rest @ ..] => {
                if let Some(c) = obj.get_mut(*k) {
                    go(c, rest);
                }
            }
        }
    }
    go(v, &path.split('.').collect::<Vec<_>>());
}

/// The simulator's base RTT of a star: out over two links with one MTU packet, back with one 40-byte ACK.
fn base_rtt(sc: &Scenario) -> LinkModel {
    let (_, links) = sc.topology.links();
    let l = &links[0];
    let one_way = |bytes: Bytes| l.rate_ab.tx_time(bytes) + l.delay_ab + l.rate_ba.tx_time(bytes) + l.delay_ba;
    LinkModel { rate: l.rate_ab, base_rtt: one_way(sc.mtu) + one_way(Bytes(ecnlab::packet::HEADER_BYTES as u64)) }
}

fn flow_stats(flows: &[&FlowResult]) -> FlowStats {
    let n = flows.len() as u64;
    let finished: Vec<&FlowResult> = flows.iter().copied().filter(|f| f.sender.fct_ns().is_some()).collect();
    let fct: Vec<f64> = finished.iter().filter_map(|f| f.sender.fct_ns()).map(|ns| ns as f64 / 1e9).collect();
    let from_data: Vec<f64> = finished
        .iter()
        .filter_map(|f| Some(f.sender.receiver?.last_byte_ns.saturating_sub(f.sender.first_write_ns) as f64 / 1e9))
        .collect();
    let timed_out = flows.iter().filter(|f| f.sender.info.total_rto.unwrap_or(0) > 0).count() as f64;
    FlowStats {
        flows: n,
        finished: finished.len() as u64,
        timeout_fraction: if n == 0 { 0.0 } else { timed_out / n as f64 },
        fct: stats(&fct),
        fct_from_first_data: stats(&from_data),
    }
}

fn port_summary(sc: &Scenario, name: &str, rate: ecnlab::units::Rate, l: &LinkReport, t0: Time) -> PortSummary {
    let mtu = sc.mtu.0;
    let o = &sc.observe;
    // The simulator's rule: quantiles only for the ports observed, and not at all when turned off.
    let quantiles = o.occupancy_quantiles && (o.ports.is_empty() || o.ports.iter().any(|p| p == name));
    let occ = |mut s: ecnlab::port::OccupancyStats| {
        if !quantiles {
            (s.p50, s.p99) = (None, None);
        }
        occupancy(s, mtu)
    };
    PortSummary {
        rate_gbps: rate.as_gbps(),
        utilization: l.utilization,
        counters: counters(&l.run_counters),
        window_counters: counters(&l.counters),
        occupancy: occ(l.occupancy),
        queues: l.queues.iter().map(|(c, s)| QueueSummary { counters: counters(c), occupancy: occ(*s) }).collect(),
        arrival_backlog_min_pkts: l.arrival_backlog_min.map(|b| b as f64 / mtu as f64),
        first_mark: l.first_mark.map(|t| FirstMark { time_s: (t.saturating_sub(t0)).as_secs_f64(), cwnd_segments: 0 }),
    }
}

/// The switch ports' names in the switch's order: the hosts' ports, then those between switches.
fn port_names(sc: &Scenario) -> Vec<String> {
    let plan = EmulatedPorts::of(&sc.topology);
    plan.hosts.into_iter().map(|(_, n, _)| n).chain(plan.trunks.into_iter().map(|t| t.name)).collect()
}

/// series/queues.csv from the switch's samples, as the simulator writes it (ports of `observe.ports`, all if
/// empty; a column per queue).
fn queues_csv(sc: &Scenario, s: &QueueSamples, rows_max: usize) -> String {
    let mut cols = Vec::new();
    let mut at = 0;
    for (name, &nq) in port_names(sc).into_iter().zip(&s.queues) {
        let shown = sc.observe.ports.is_empty() || sc.observe.ports.contains(&name);
        for q in 0..nq {
            if shown {
                cols.push((format!("{name}:q{q}_bytes"), at + q));
            }
        }
        at += nq;
    }
    let width: usize = s.queues.iter().sum();
    let mut out = String::from("time_s");
    for (h, _) in &cols {
        out.push(',');
        out.push_str(h);
    }
    out.push('\n');
    for r in 0..s.rows().min(rows_max) {
        out.push_str(&fmt_num(Time(s.step.0 * r as u64).as_secs_f64()));
        for (_, c) in &cols {
            out.push_str(&format!(",{}", s.bytes[r * width + c]));
        }
        out.push('\n');
    }
    out
}

/// Flows as opened, with their receivers' records; a flow whose receiver read its last byte after the end is
/// unfinished, and what it delivered counts up to the end, as in the simulator.
fn flow_results(
    opened: Vec<OpenedFlow>,
    receivers: &mut BTreeMap<u32, ReceiverRecord>,
    end_ns: u64,
) -> Vec<FlowResult> {
    opened
        .into_iter()
        .map(|f| {
            let mut sender = f.sender;
            if sender.receiver.is_some_and(|r| r.last_byte_ns > end_ns) {
                sender.receiver = None;
                sender.report_ns = None;
            }
            let receiver = receivers.remove(&sender.flow).map(|mut r| {
                r.tally.total = r.tally.at_to.unwrap_or(r.tally.total);
                r
            });
            FlowResult { id: sender.flow, src: f.src, dst: f.dst, class: f.class, sender, receiver }
        })
        .collect()
}

fn take<T: Default>(x: &std::sync::Mutex<T>) -> T {
    std::mem::take(&mut *x.lock().unwrap_or_else(|p| p.into_inner()))
}

pub(super) fn build(sc: &Scenario, m: Measured) -> Emulated {
    let opened: Vec<OpenedFlow> = take(&m.records.flows);
    let workloads_of: Vec<usize> = opened.iter().map(|f| f.workload).collect();
    let mut receivers: BTreeMap<u32, ReceiverRecord> =
        m.servers.iter().flat_map(|s| s.records.iter().cloned()).map(|r| (r.flow, r)).collect();
    let flows = flow_results(opened, &mut receivers, m.clock.end_ns);
    let incasts = take(&m.records.incasts);
    let probes = take(&m.records.probes);
    let endpoints = Endpoints {
        timeline: m.timeline,
        link: Some(base_rtt(sc)),
        flows,
        incasts: incasts.iter().map(|(_, i)| i.clone()).collect(),
        probes: probes.iter().map(|(_, p)| p.clone()).collect(),
    };
    let ep = endpoints.summary();
    // summary() lists incast workloads, then probes, each in file order: put every workload back in its place.
    let (mut inc, mut prb) = (ep.workloads.iter().take(incasts.len()), ep.workloads.iter().skip(incasts.len()));
    let workloads: Vec<WorkloadSummary> = sc
        .workloads
        .iter()
        .enumerate()
        .map(|(w, wl)| {
            let mine: Vec<&FlowResult> =
                endpoints.flows.iter().zip(&workloads_of).filter(|(_, &k)| k == w).map(|(f, _)| f).collect();
            match wl {
                Workload::Flows { .. } => WorkloadSummary::Flows(flow_stats(&mine)),
                Workload::BackToBack { .. } => WorkloadSummary::BackToBack(flow_stats(&mine)),
                Workload::Incast { .. } => inc.next().expect("one per incast workload").clone(),
                Workload::Probe { .. } => prb.next().expect("one per probe workload").clone(),
                Workload::Poisson { .. } | Workload::Query { .. } => unreachable!("refused by check_emulatable"),
            }
        })
        .collect();

    let t0 = Time::from_ns(m.clock.t0_ns);
    let (_, links) = sc.topology.links();
    let plan = EmulatedPorts::of(&sc.topology);
    let rates = links.iter().take(plan.hosts.len()).map(|l| l.rate_ba).chain(plan.trunks.iter().map(|t| t.rate));
    let mut ports = BTreeMap::new();
    // (arrived, sent, marked, dropped) over the switches' ports, whole run: as the simulator's, a packet counts
    // at every port it crosses.
    let mut total = (0, 0, 0, 0);
    let reports = m.at_close.links.iter().chain(&m.at_close.trunks);
    for ((name, rate), l) in port_names(sc).into_iter().zip(rates).zip(reports) {
        let c = &l.run_counters;
        total = (total.0 + c.arrived_pkts, total.1 + c.sent_pkts, total.2 + c.total_marks(), total.3 + c.total_drops());
        ports.insert(name.clone(), port_summary(sc, &name, rate, l, t0));
    }
    let pools: Vec<PoolSummary> = match (&sc.switch.pool, m.at_close.pool) {
        (Some(p), Some(o)) => {
            vec![PoolSummary { switch: "s0".into(), size_bytes: p.size.0, occupancy: occupancy(o, sc.mtu.0) }]
        }
        _ => vec![],
    };

    let end = m.clock.end_ns;
    let last_activity = endpoints
        .flows
        .iter()
        .flat_map(|f| [f.sender.last_write_ns, f.sender.receiver.map_or(0, |r| r.last_byte_ns)])
        .chain(endpoints.incasts.iter().flat_map(|i| i.records.iter().map(|r| r.end_ns)))
        .chain(endpoints.probes.iter().flat_map(|p| p.samples.iter().map(|s| s.at_ns + s.rtt_ns)))
        .max()
        .map_or(m.clock.t0_ns, |t| t.min(end));
    let config_toml = sc.to_toml();
    let rtt = rtt_summary(&m.at_close.rtt, &ep.goodput.per_class_gbps);
    let typed = RunSummary {
        ecnlab: Build::current(),
        scenario: ScenarioId::of(sc, &config_toml),
        sim_time_s: sc.duration.as_secs_f64(),
        traffic_end_s: m.timeline.secs(last_activity),
        wall_time_s: m.wall_time_s,
        events: 0,
        events_per_s: 0.0,
        window: Window { from_s: sc.observe.warmup.as_secs_f64(), to_s: sc.duration.as_secs_f64() },
        goodput: ep.goodput,
        totals: Totals {
            switch_arrived_pkts: total.0,
            switch_sent_pkts: total.1,
            marked_pkts: total.2,
            dropped_pkts: total.3,
            timeouts: ep.timeouts,
            retransmits: ep.retransmits,
            flows: ep.flows,
        },
        ports,
        pools,
        rtt,
        phases: vec![],
        fct: ep.fct,
        workloads,
        pfc: None,
        pias: None,
    };
    let mut summary = serde_json::to_value(&typed).expect("a summary is JSON");
    for path in SIMULATOR_ONLY {
        remove_path(&mut summary, path);
    }
    summary["emulation"] = emulation_block(&m, &links, &port_names(sc));

    let mut series = Vec::new();
    if let Some(s) = &m.last.samples {
        let rows = (sc.duration.0 / sc.observe.sample_interval.0.max(1)) as usize + 1;
        series.push(("queues.csv".to_string(), queues_csv(sc, s, rows)));
    }
    if let Some(d) = endpoints.delivered_csv(end) {
        series.push(("delivered.csv".to_string(), d));
    }
    Emulated { summary, fct_csv: endpoints.fct_csv(), series, config_toml }
}

/// `rtt` as the simulator writes it: per class (the classes of `goodput.per_class_gbps` and those with
/// samples) and `all`, over the window.
fn rtt_summary(r: &RttSamples, goodput_classes: &BTreeMap<String, f64>) -> RttSummary {
    let empty = LogHist::default();
    let mut per_class: BTreeMap<String, HistSummary> =
        goodput_classes.keys().map(|c| (c.clone(), HistSummary::of_ps(&empty))).collect();
    for (c, h) in &r.per_class {
        per_class.insert(c.to_string(), HistSummary::of_ps(h));
    }
    RttSummary { all: HistSummary::of_ps(&r.all), per_class }
}

/// The `emulation` block: what ran where, and the data plane's own health over the whole run.
fn emulation_block(m: &Measured, links: &[ecnlab::net::LinkSpec], names: &[String]) -> Value {
    let r = &m.last;
    let ports: serde_json::Map<String, Value> = r
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut v = l.data_plane_json();
            v["uplink_rate_gbps"] = json!(links[i].rate_ab.as_gbps());
            (names[i].clone(), v)
        })
        .collect();
    let errors = m.records.errors.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let server_errors: Vec<&String> = m.servers.iter().flat_map(|s| s.errors.iter()).collect();
    json!({
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        "host_cc": m.stack.cc,
        "tcp_ecn": m.stack.tcp_ecn,
        "rto_min_ms": m.rto_min_ms,
        "switch_core": m.switch_core,
        "host_cores": m.host_cores,
        "memory_locked": r.memory_locked,
        "ring_drops": r.links.iter().map(|l| l.ring_drops).sum::<u64>(),
        "late_offers": r.late_offers,
        "max_late_us": r.max_late_ns as f64 / 1e3,
        "stalls": r.stalls_ns.json_us(),
        "ports": ports,
        "client_errors": errors,
        "server_errors": server_errors,
        "pcap": m.pcaps,
    })
}
