//! What a run produces: summary.json, fct.csv, series/*.csv and the optional trace, written atomically.

use super::summary::*;
use super::workload::WorkloadState;
use super::Sim;
use crate::error::Error;
use crate::mark::{DropReason, MarkReason};
use crate::net::Network;
use crate::observe::{fmt_num, LogHist, Series, TraceRecord};
use crate::port::{Counters, OccupancyStats};
use crate::scenario::{PortSettings, Scenario, TraceFilter};
use crate::units::Time;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub(crate) struct TraceSpec {
    ports: Vec<bool>,
    flows: Vec<u32>,
    from: Time,
    to: Time,
}

impl TraceSpec {
    pub fn new(t: &TraceFilter, net: &Network, settings: &[Option<PortSettings>]) -> Result<TraceSpec, Error> {
        let mut ports = vec![t.ports.is_empty(); net.ports.len()];
        if t.ports.is_empty() {
            for (i, s) in settings.iter().enumerate() {
                ports[i] = s.is_some();
            }
        }
        for (i, n) in t.ports.iter().enumerate() {
            let id = net
                .port_by_name(n)
                .ok_or_else(|| Error::config(format!("observe.trace.ports.{i}"), format!("no port named `{n}`")))?;
            // A host NIC (no settings) has no queue: it records nothing.
            ports[id as usize] = settings[id as usize].is_some();
        }
        Ok(TraceSpec {
            ports,
            flows: t.flows.clone(),
            from: t.from.unwrap_or(Time::ZERO),
            to: t.to.unwrap_or(Time::MAX),
        })
    }
    pub fn accepts(&self, now: Time, port: u32, flow: u32) -> bool {
        self.ports[port as usize]
            && now >= self.from
            && now <= self.to
            && (self.flows.is_empty() || self.flows.contains(&flow))
    }
}

/// One row of fct.csv.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FlowRecord {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub class: u8,
    pub size_bytes: Option<u64>,
    pub start_s: f64,
    pub first_data_s: Option<f64>,
    pub finish_s: Option<f64>,
    pub fct_s: Option<f64>,
    pub ideal_fct_s: Option<f64>,
    pub slowdown: Option<f64>,
    pub timeouts: u32,
    pub retransmits: u32,
    /// Payload bytes delivered in order by the end of the run.
    pub delivered_bytes: u64,
    /// Goodput over the statistics window, Gb/s.
    pub goodput_gbps: f64,
}

pub struct RunReport {
    /// summary.json: the JSON value of [`RunReport::summary_typed`] (objects with their keys in alphabetical
    /// order), which the run directory, the Python bindings and experiment metrics (by JSON pointer) read.
    pub summary: Value,
    /// The same summary, typed.
    typed: RunSummary,
    pub flows: Vec<FlowRecord>,
    pub series: Vec<Series>,
    pub trace: Vec<TraceRecord>,
    pub port_names: Vec<String>,
    pub config_toml: String,
}

/// The papers' FCT size bins: (0,100KB], (100KB,10MB], (10MB,∞).
pub const BINS: [(&str, u64, u64); 3] =
    [("small", 0, 100_000), ("medium", 100_000, 10_000_000), ("large", 10_000_000, u64::MAX)];

/// Exact nearest-rank statistics (the ⌈p·n⌉-th smallest) of finite values; sorts them in place.
pub fn fct_stats(fcts: &mut [f64]) -> Stats {
    if fcts.is_empty() {
        return Stats { count: 0, mean_s: None, p50_s: None, p95_s: None, p99_s: None, max_s: None };
    }
    fcts.sort_by(|a, b| a.partial_cmp(b).expect("finite FCT"));
    let n = fcts.len();
    let q = |p: f64| fcts[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
    Stats {
        count: n as u64,
        mean_s: Some(fcts.iter().sum::<f64>() / n as f64),
        p50_s: Some(q(0.5)),
        p95_s: Some(q(0.95)),
        p99_s: Some(q(0.99)),
        max_s: Some(fcts[n - 1]),
    }
}

fn hist_us(h: &LogHist) -> HistSummary {
    HistSummary::of_ps(h)
}

/// A port's or queue's counters as summary.json writes them (also the software switch's ports).
pub fn counters(c: &Counters) -> CounterSummary {
    CounterSummary {
        arrived_pkts: c.arrived_pkts,
        arrived_bytes: c.arrived_bytes,
        sent_pkts: c.sent_pkts,
        sent_bytes: c.sent_bytes,
        marked_pkts: c.total_marks(),
        dropped_pkts: c.total_drops(),
        marks: MarkReason::ALL.iter().map(|r| (r.name(), c.marks[*r as usize])).collect(),
        drops: DropReason::ALL.iter().map(|r| (r.name(), c.drops[*r as usize])).collect(),
        non_ect_passed: c.non_ect_passed,
    }
}

/// Occupancy statistics as summary.json writes them, `_pkts` in units of `mtu` (also the software switch's).
pub fn occupancy(o: OccupancyStats, mtu: u64) -> OccupancySummary {
    OccupancySummary {
        mean_bytes: o.mean,
        max_bytes: o.max,
        p50_bytes: o.p50,
        p99_bytes: o.p99,
        min_bytes: o.min,
        max_all_bytes: o.max_all,
        std_bytes: o.std,
        mean_pkts: o.mean / mtu as f64,
        min_pkts: o.min as f64 / mtu as f64,
        max_all_pkts: o.max_all as f64 / mtu as f64,
        max_pkts: o.max as f64 / mtu as f64,
        p99_pkts: o.p99.map(|v| v / mtu as f64),
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²); `None` without values or when all are 0.
pub fn jain(x: &[f64]) -> Option<f64> {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    (!x.is_empty() && s2 > 0.0).then(|| s * s / (x.len() as f64 * s2))
}

/// fct.csv's text from its rows (also written by the software switch's real endpoints).
pub fn fct_csv(flows: &[FlowRecord]) -> String {
    let opt = |v: Option<f64>| v.map(fmt_num).unwrap_or_default();
    let mut s = String::from(
        "id,src,dst,class,size_bytes,start_s,first_data_s,finish_s,fct_s,ideal_fct_s,slowdown,timeouts,retransmits,delivered_bytes,goodput_gbps\n",
    );
    for r in flows {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            r.id,
            r.src,
            r.dst,
            r.class,
            r.size_bytes.map(|b| b.to_string()).unwrap_or_default(),
            fmt_num(r.start_s),
            opt(r.first_data_s),
            opt(r.finish_s),
            opt(r.fct_s),
            opt(r.ideal_fct_s),
            opt(r.slowdown),
            r.timeouts,
            r.retransmits,
            r.delivered_bytes,
            fmt_num(r.goodput_gbps),
        ));
    }
    s
}

pub(crate) fn fnv(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

impl Sim {
    pub fn report(&mut self, sc: &Scenario, wall_time_s: f64) -> RunReport {
        let now = self.clock.now();
        let warmup = self.observer.warmup();
        let window = (now - warmup).as_secs_f64().max(1e-12);
        let fct_acked = self.flows.fct_acked();
        let flows: Vec<FlowRecord> = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let rate = self.fabric.raw(self.fabric.host_port(f.addr.src)).cfg.rate;
                let ideal = f.size.map(|s| rate.tx_time(crate::units::Bytes(s)) + f.base_rtt);
                let fct = f.end(fct_acked).map(|t| t - f.start);
                let delivered = f.receiver.rcv_nxt();
                let in_window = delivered.saturating_sub(f.delivered_at_warmup);
                FlowRecord {
                    id: i as u32,
                    src: f.addr.src,
                    dst: f.addr.dst,
                    class: f.addr.class,
                    size_bytes: f.size,
                    start_s: f.start.as_secs_f64(),
                    first_data_s: f.first_data.map(Time::as_secs_f64),
                    finish_s: f.end(fct_acked).map(Time::as_secs_f64),
                    fct_s: fct.map(Time::as_secs_f64),
                    ideal_fct_s: ideal.map(Time::as_secs_f64),
                    slowdown: fct.zip(ideal).map(|(a, b)| a.as_secs_f64() / b.as_secs_f64()),
                    timeouts: f.sender.stats().timeouts,
                    retransmits: f.sender.stats().retransmits,
                    delivered_bytes: delivered,
                    goodput_gbps: in_window as f64 * 8.0 / window / 1e9,
                }
            })
            .collect();

        let (ports, total) = self.fabric.port_summaries(sc, now, warmup);

        let classes = self.observer.classes();
        let (per_class_gbps, total_goodput) = self.observer.goodput(&classes, window);
        let long_lived: Vec<f64> = flows
            .iter()
            .zip(self.flows.iter())
            .filter(|(_, f)| f.size.is_none() && f.start <= warmup)
            .map(|(r, _)| r.goodput_gbps)
            .collect();
        let rtt = self.observer.rtt(&classes, hist_us);
        let phases = self.observer.phases(&classes, now);

        let [small, medium, large] = BINS.map(|(_, lo, hi)| {
            let mut v: Vec<f64> = flows
                .iter()
                .filter(|r| r.size_bytes.is_some_and(|s| s > lo && s <= hi))
                .filter_map(|r| r.fct_s)
                .collect();
            fct_stats(&mut v)
        });
        let sized: Vec<&FlowRecord> = flows.iter().filter(|r| r.size_bytes.is_some()).collect();
        let mut all: Vec<f64> = sized.iter().filter_map(|r| r.fct_s).collect();
        let finished = all.len();
        let mut slow: Vec<f64> = sized.iter().filter_map(|r| r.slowdown).collect();
        let slowdown = fct_stats(&mut slow);

        let pools = self.fabric.pool_summaries(now, sc.mtu);
        let workloads = self.workloads.iter().map(|w| workload_summary(w, &self.flows, fct_acked)).collect();
        let timeouts: u64 = self.flows.iter().map(|f| f.sender.stats().timeouts as u64).sum();
        let retransmits: u64 = self.flows.iter().map(|f| f.sender.stats().retransmits as u64).sum();
        let config_toml = sc.to_toml();
        let typed = RunSummary {
            ecnlab: Build::current(),
            scenario: ScenarioId::of(sc, &config_toml),
            sim_time_s: now.as_secs_f64(),
            traffic_end_s: self.clock.traffic_end().as_secs_f64(),
            wall_time_s,
            events: self.events_processed,
            events_per_s: self.events_processed as f64 / wall_time_s.max(1e-9),
            window: Window { from_s: warmup.as_secs_f64(), to_s: now.as_secs_f64() },
            goodput: Goodput {
                total_gbps: total_goodput,
                per_class_gbps,
                long_lived_flows: long_lived.len() as u64,
                jain_long_lived: jain(&long_lived),
            },
            totals: Totals {
                switch_arrived_pkts: total.arrived_pkts,
                switch_sent_pkts: total.sent_pkts,
                marked_pkts: total.total_marks(),
                dropped_pkts: total.total_drops(),
                timeouts,
                retransmits,
                flows: self.flows.len() as u64,
            },
            ports,
            pools,
            rtt,
            phases,
            fct: FctSummary {
                flows_with_size: sized.len() as u64,
                finished: finished as u64,
                unfinished: (sized.len() - finished) as u64,
                bins: FctBins { small, medium, large },
                overall: fct_stats(&mut all),
                slowdown,
            },
            workloads,
            pfc: self.fabric.pfc_summary(now),
            pias: sc
                .transport
                .pias
                .map(|p| PiasSummary { levels: p.levels(), thresholds_bytes: p.thresholds().to_vec() }),
        };
        let summary = serde_json::to_value(&typed).expect("a summary is JSON");
        let series = self.observer.series(&classes);
        RunReport {
            summary,
            typed,
            flows,
            series,
            trace: self.fabric.take_trace(),
            port_names: self.fabric.port_names(),
            config_toml,
        }
    }
}

/// FCT statistics of a workload's finished flows, timed from the first data byte (ECN* §5.2) and from the
/// flow's start, and the fraction of flows that met a retransmission timeout.
fn flow_stats(ids: &[u32], flows: &[super::Flow], acked: bool) -> FlowStats {
    let fs: Vec<&super::Flow> = ids.iter().map(|&i| &flows[i as usize]).collect();
    let mut from_start: Vec<f64> =
        fs.iter().filter_map(|f| f.end(acked).map(|t| (t - f.start).as_secs_f64())).collect();
    let mut from_data: Vec<f64> =
        fs.iter().filter_map(|f| f.end(acked).zip(f.first_data).map(|(t, d)| (t - d).as_secs_f64())).collect();
    let with_timeout = fs.iter().filter(|f| f.sender.stats().timeouts > 0).count();
    FlowStats {
        flows: fs.len() as u64,
        finished: from_start.len() as u64,
        timeout_fraction: if fs.is_empty() { 0.0 } else { with_timeout as f64 / fs.len() as f64 },
        fct: fct_stats(&mut from_start),
        fct_from_first_data: fct_stats(&mut from_data),
    }
}

fn workload_summary(w: &WorkloadState, flows: &[super::Flow], acked: bool) -> WorkloadSummary {
    match w {
        WorkloadState::Flows { flows: ids, .. } => WorkloadSummary::Flows(flow_stats(ids, flows, acked)),
        WorkloadState::BackToBack { flows: ids, .. } => WorkloadSummary::BackToBack(flow_stats(ids, flows, acked)),
        WorkloadState::Incast(inc) => {
            let times: Vec<f64> = inc.round_times.iter().map(|t| t.as_secs_f64()).collect();
            let bytes = inc.block as f64 * inc.senders.len() as f64;
            let total: f64 = times.iter().sum();
            WorkloadSummary::Incast(IncastSummary {
                senders: inc.senders.len() as u64,
                rounds_completed: times.len() as u64,
                rounds: inc.rounds,
                goodput_gbps: (total > 0.0).then(|| bytes * times.len() as f64 * 8.0 / total / 1e9),
                round_times_s: times,
                requests_resent: inc.requests_resent,
            })
        }
        WorkloadState::Poisson(p) => WorkloadSummary::Poisson(PoissonSummary {
            flows: flow_stats(&p.flows, flows, acked),
            offered_load: p.offered_load(),
            connections: p.persistent.then(|| p.pools.values().map(Vec::len).sum::<usize>() as u64),
            connections_reused: p.persistent.then_some(p.reused),
        }),
        WorkloadState::Query(q) => {
            let all_done = q.flows.iter().all(|&f| flows[f as usize].end(acked).is_some());
            let start = q.flows.first().map(|&f| flows[f as usize].start);
            let end = q.flows.iter().filter_map(|&f| flows[f as usize].end(acked)).max();
            WorkloadSummary::Query(QuerySummary {
                flows: flow_stats(&q.flows, flows, acked),
                qct_s: start.zip(end).filter(|_| all_done).map(|(s, e)| (e - s).as_secs_f64()),
            })
        }
        WorkloadState::Probe { sent, rtt, .. } => {
            WorkloadSummary::Probe(ProbeSummary { sent: *sent, rtt: hist_us(rtt) })
        }
    }
}

impl RunReport {
    /// The run's summary as typed values: the fields of summary.json, documented in [`super::summary`].
    pub fn summary_typed(&self) -> &RunSummary {
        &self.typed
    }

    pub fn fct_csv(&self) -> String {
        fct_csv(&self.flows)
    }

    pub fn trace_csv(&self) -> String {
        let mut s = String::from("time_s,port,queue,event,reason,flow,seq,wire_bytes,queue_bytes,port_bytes\n");
        for t in &self.trace {
            s.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{}\n",
                fmt_num(t.time.as_secs_f64()),
                self.port_names[t.port as usize],
                t.queue,
                t.kind.name(),
                t.reason,
                t.flow,
                t.seq,
                t.wire,
                t.queue_bytes,
                t.port_bytes
            ));
        }
        s
    }

    /// Writes the run directory `dir` through `outdir::Staged`: checked first (never a directory ecnlab did not
    /// write), written beside it, swapped in whole. Front ends that simulate first call `Staged::new` before the
    /// run and [`RunReport::write_staged`] after it, so a bad `--out` costs no simulation.
    pub fn write_dir(&self, dir: &Path) -> Result<PathBuf, Error> {
        self.write_staged(crate::outdir::Staged::new(dir)?)
    }

    /// Writes the run's files into `staged` and swaps it in; summary.json is written last, so a directory
    /// without it was never finished.
    pub fn write_staged(&self, staged: crate::outdir::Staged) -> Result<PathBuf, Error> {
        let dir = staged.dir();
        let io = |e: std::io::Error| Error::Io(format!("{}: {e}", staged.target().display()));
        std::fs::create_dir_all(dir.join("series")).map_err(io)?;
        std::fs::write(dir.join("config.toml"), &self.config_toml).map_err(io)?;
        std::fs::write(dir.join("fct.csv"), self.fct_csv()).map_err(io)?;
        for s in &self.series {
            std::fs::write(dir.join("series").join(format!("{}.csv", s.name)), s.to_csv()).map_err(io)?;
        }
        if !self.trace.is_empty() {
            std::fs::write(dir.join("trace.csv"), self.trace_csv()).map_err(io)?;
        }
        let summary = serde_json::to_string_pretty(&self.summary).expect("summary serializes");
        std::fs::write(dir.join("summary.json"), summary + "\n").map_err(io)?;
        staged.commit()
    }
}
