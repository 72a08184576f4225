//! Endpoint records → the run directory's `fct.csv`, `series/delivered.csv` and the endpoint parts of
//! `summary.json`, in the simulator's formats (docs/OUTPUTS.md) so the Python package reads them unchanged.
//!
//! What the real endpoints measure, against the simulator's definitions:
//! - **FCT** (`fct_s`) = the receiver's application reading the last byte − the sender's start, taken just before
//!   `connect` (the handshake included, as the simulator's FCT). Both are `CLOCK_MONOTONIC`, one clock for every
//!   namespace. The simulator's end is "the receiver holds the last byte in order"; the application's read adds
//!   the socket wake-up (µs). The sender's view (the receiver's report arriving back) is in the records, not in
//!   fct.csv.
//! - `first_data_s`: the first payload byte handed to the kernel (after the handshake and the 32-byte request).
//! - **Goodput** = payload bytes read by sink applications inside the window × 8 / W. Incast blocks and probes are
//!   not in it (incast rounds report their own goodput), unlike the simulator which counts every delivery.
//! - `timeouts`, `retransmits`: the sender socket's `tcpi_total_rto` and `tcpi_total_retrans`.

use super::client::{ProbeSample, RoundRecord, SenderRecord};
use super::server::ReceiverRecord;
use ecnlab::observe::{fmt_num, LogHist};
use ecnlab::sim::summary::{
    FctBins, FctSummary, Goodput, HistSummary, IncastSummary, ProbeSummary, Stats, WorkloadSummary,
};
use ecnlab::sim::{fct_csv, fct_stats, jain, FlowRecord};
use ecnlab::units::{Bytes, Rate, Time};
use std::collections::BTreeMap;

/// The run's clock: its origin, the sampling step of the series, and the statistics window (absolute
/// `CLOCK_MONOTONIC` ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeline {
    pub t0_ns: u64,
    /// Series step, ns (0: no series).
    pub sample_ns: u64,
    pub window_from_ns: u64,
    pub window_to_ns: u64,
}

impl Timeline {
    /// Seconds since t0 (0 for instants before it).
    pub fn secs(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.t0_ns) as f64 / 1e9
    }

    /// Window length W, s.
    pub fn window_s(&self) -> f64 {
        self.window_to_ns.saturating_sub(self.window_from_ns) as f64 / 1e9
    }
}

/// The host link model for the ideal FCT (the simulator's: size × 8 / rate + base RTT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkModel {
    pub rate: Rate,
    pub base_rtt: Time,
}

impl LinkModel {
    pub fn ideal_fct_s(&self, size: Bytes) -> f64 {
        self.rate.tx_time(size).as_secs_f64() + self.base_rtt.as_secs_f64()
    }
}

/// One flow: who, its class, and both ends' records.
#[derive(Clone, Debug)]
pub struct FlowResult {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub class: u8,
    pub sender: SenderRecord,
    /// The sink's record (`None` if the receiver is not in this process: then goodput is not known).
    pub receiver: Option<ReceiverRecord>,
}

/// An incast workload's rounds.
#[derive(Clone, Debug)]
pub struct IncastResult {
    pub senders: u64,
    /// Rounds configured.
    pub rounds: u32,
    pub block: Bytes,
    /// Completed rounds, in order.
    pub records: Vec<RoundRecord>,
}

/// A probe workload's samples.
#[derive(Clone, Debug)]
pub struct ProbeResult {
    pub sent: u64,
    pub samples: Vec<ProbeSample>,
}

/// Everything the endpoints of a run recorded.
#[derive(Clone, Debug)]
pub struct Endpoints {
    pub timeline: Timeline,
    /// The host links (for `ideal_fct_s` and `slowdown`; `None` leaves them empty).
    pub link: Option<LinkModel>,
    pub flows: Vec<FlowResult>,
    pub incasts: Vec<IncastResult>,
    pub probes: Vec<ProbeResult>,
}

/// The endpoint parts of summary.json (`goodput`, `fct`, `workloads`, and the endpoint fields of `totals`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct EndpointSummary {
    pub goodput: Goodput,
    pub fct: FctSummary,
    pub workloads: Vec<WorkloadSummary>,
    /// `totals.flows`, `totals.timeouts`, `totals.retransmits`.
    pub flows: u64,
    pub timeouts: u64,
    pub retransmits: u64,
}

/// Exact nearest-rank statistics of finite values (the simulator's, `ecnlab::sim::fct_stats`).
pub fn stats(values: &[f64]) -> Stats {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    fct_stats(&mut v)
}

impl FlowResult {
    fn fct_s(&self) -> Option<f64> {
        self.sender.fct_ns().map(|ns| ns as f64 / 1e9)
    }

    fn window_bytes(&self) -> u64 {
        self.receiver.as_ref().map_or(0, |r| r.tally.window_bytes())
    }
}

impl Endpoints {
    /// One fct.csv row per connection of a flow, in flow-id order.
    pub fn fct_rows(&self) -> Vec<FlowRecord> {
        let tl = &self.timeline;
        let w = tl.window_s();
        let mut rows: Vec<FlowRecord> = self
            .flows
            .iter()
            .map(|f| {
                let s = &f.sender;
                let size = (s.size > 0).then_some(s.size);
                let fct_s = f.fct_s();
                let ideal = match (size, self.link) {
                    (Some(b), Some(l)) => Some(l.ideal_fct_s(Bytes(b))),
                    _ => None,
                };
                let delivered = match (&f.receiver, s.receiver) {
                    (Some(r), _) => r.tally.total,
                    (None, Some(rep)) => rep.bytes,
                    (None, None) => 0,
                };
                FlowRecord {
                    id: f.id,
                    src: f.src,
                    dst: f.dst,
                    class: f.class,
                    size_bytes: size,
                    start_s: tl.secs(s.start_ns),
                    first_data_s: Some(tl.secs(s.first_write_ns)),
                    finish_s: fct_s.and(s.receiver).map(|r| tl.secs(r.last_byte_ns)),
                    fct_s,
                    ideal_fct_s: ideal,
                    slowdown: fct_s.zip(ideal).map(|(f, i)| f / i),
                    timeouts: s.info.total_rto.unwrap_or(0) as u32,
                    retransmits: s.info.total_retrans,
                    delivered_bytes: delivered,
                    goodput_gbps: if w > 0.0 { f.window_bytes() as f64 * 8.0 / w / 1e9 } else { 0.0 },
                }
            })
            .collect();
        rows.sort_by_key(|r| r.id);
        rows
    }

    /// fct.csv, with the simulator's header and number format.
    pub fn fct_csv(&self) -> String {
        fct_csv(&self.fct_rows())
    }

    /// series/delivered.csv: cumulative payload bytes read per class at t0, t0 + Δ, … ≤ `end_ns` (`None` without
    /// a sampling step).
    pub fn delivered_csv(&self, end_ns: u64) -> Option<String> {
        let tl = &self.timeline;
        if tl.sample_ns == 0 {
            return None;
        }
        let mut classes: BTreeMap<u8, Vec<&ReceiverRecord>> = BTreeMap::new();
        for f in &self.flows {
            if let Some(r) = &f.receiver {
                classes.entry(f.class).or_default().push(r);
            }
        }
        let mut s = String::from("time_s");
        for c in classes.keys() {
            s.push_str(&format!(",class{c}_delivered_bytes"));
        }
        s.push('\n');
        let steps = end_ns.saturating_sub(tl.t0_ns) / tl.sample_ns;
        for k in 0..=steps {
            s.push_str(&fmt_num((k * tl.sample_ns) as f64 / 1e9));
            for recs in classes.values() {
                let v: u64 = recs.iter().map(|r| r.tally.at(k)).sum();
                s.push_str(&format!(",{v}"));
            }
            s.push('\n');
        }
        Some(s)
    }

    /// The endpoint parts of summary.json.
    pub fn summary(&self) -> EndpointSummary {
        let tl = &self.timeline;
        let w = tl.window_s();
        let gbps = |bytes: u64| if w > 0.0 { bytes as f64 * 8.0 / w / 1e9 } else { 0.0 };
        let mut per_class: BTreeMap<String, f64> = BTreeMap::new();
        for f in self.flows.iter().filter(|f| f.receiver.is_some()) {
            *per_class.entry(f.class.to_string()).or_default() += gbps(f.window_bytes());
        }
        let long: Vec<f64> = self
            .flows
            .iter()
            .filter(|f| f.sender.size == 0 && f.sender.start_ns <= tl.window_from_ns)
            .map(|f| gbps(f.window_bytes()))
            .collect();
        let goodput = Goodput {
            total_gbps: per_class.values().sum(),
            per_class_gbps: per_class,
            long_lived_flows: long.len() as u64,
            jain_long_lived: jain(&long),
        };

        let sized: Vec<&FlowResult> = self.flows.iter().filter(|f| f.sender.size > 0).collect();
        let finished: Vec<(u64, f64)> = sized.iter().filter_map(|f| Some((f.sender.size, f.fct_s()?))).collect();
        let bin = |lo: u64, hi: u64| {
            stats(&finished.iter().filter(|(b, _)| *b > lo && *b <= hi).map(|p| p.1).collect::<Vec<_>>())
        };
        let slowdowns: Vec<f64> = match self.link {
            Some(l) => finished.iter().map(|(b, f)| f / l.ideal_fct_s(Bytes(*b))).collect(),
            None => Vec::new(),
        };
        let fct = FctSummary {
            flows_with_size: sized.len() as u64,
            finished: finished.len() as u64,
            unfinished: (sized.len() - finished.len()) as u64,
            bins: FctBins {
                small: bin(0, 100_000),
                medium: bin(100_000, 10_000_000),
                large: bin(10_000_000, u64::MAX),
            },
            overall: stats(&finished.iter().map(|p| p.1).collect::<Vec<_>>()),
            slowdown: stats(&slowdowns),
        };

        let mut workloads: Vec<WorkloadSummary> = self.incasts.iter().map(incast_summary).collect();
        workloads.extend(self.probes.iter().map(|p| probe_summary(p, tl)));
        EndpointSummary {
            goodput,
            fct,
            workloads,
            flows: self.flows.len() as u64,
            timeouts: self.flows.iter().map(|f| f.sender.info.total_rto.unwrap_or(0) as u64).sum(),
            retransmits: self.flows.iter().map(|f| f.sender.info.total_retrans as u64).sum(),
        }
    }
}

fn incast_summary(i: &IncastResult) -> WorkloadSummary {
    let times: Vec<f64> = i.records.iter().map(|r| (r.end_ns - r.start_ns) as f64 / 1e9).collect();
    let total: f64 = times.iter().sum();
    let n = i.records.len() as u64;
    WorkloadSummary::Incast(IncastSummary {
        senders: i.senders,
        rounds: i.rounds,
        rounds_completed: n,
        goodput_gbps: (n > 0 && total > 0.0).then(|| (i.senders * i.block.0 * n) as f64 * 8.0 / total / 1e9),
        round_times_s: times,
        // Requests travel on kept TCP connections: TCP retransmits a lost one, the application never resends.
        requests_resent: 0,
    })
}

fn probe_summary(p: &ProbeResult, tl: &Timeline) -> WorkloadSummary {
    let mut h = LogHist::default();
    for s in &p.samples {
        let reply = s.at_ns + s.rtt_ns;
        if reply >= tl.window_from_ns && reply <= tl.window_to_ns {
            h.add(s.rtt_ns * 1000, 1); // ps, the simulator's histogram unit
        }
    }
    WorkloadSummary::Probe(ProbeSummary { sent: p.sent, rtt: HistSummary::of_ps(&h) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::proto::SinkReport;
    use crate::traffic::server::Tally;
    use crate::traffic::sock::TcpInfo;

    const MS: u64 = 1_000_000;

    fn tl() -> Timeline {
        Timeline { t0_ns: 1_000 * MS, sample_ns: 10 * MS, window_from_ns: 1_010 * MS, window_to_ns: 1_030 * MS }
    }

    /// A sized flow that started at `start` ms after t0 and whose last byte was read at `end` ms.
    fn sized(id: u32, size: u64, start: u64, end: u64) -> FlowResult {
        let t = tl();
        let mut tally = Tally::new(t, t.t0_ns + start * MS);
        tally.read(t.t0_ns + end * MS, size);
        FlowResult {
            id,
            src: 1,
            dst: 0,
            class: 0,
            sender: SenderRecord {
                flow: id,
                size,
                start_ns: t.t0_ns + start * MS,
                first_write_ns: t.t0_ns + start * MS + MS / 10,
                bytes: size,
                receiver: Some(SinkReport {
                    first_byte_ns: t.t0_ns + start * MS,
                    last_byte_ns: t.t0_ns + end * MS,
                    bytes: size,
                }),
                info: TcpInfo { total_retrans: 2, total_rto: Some(1), ..Default::default() },
                ..Default::default()
            },
            receiver: None,
        }
    }

    #[test]
    fn nearest_rank_statistics_of_ten_values() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = stats(&v);
        // ⌈0.5·10⌉ = 5th, ⌈0.95·10⌉ = 10th, mean 5.5.
        assert_eq!((s.count, s.mean_s, s.p50_s, s.p95_s, s.max_s), (10, Some(5.5), Some(5.0), Some(10.0), Some(10.0)));
        assert_eq!(stats(&[]).count, 0);
        assert_eq!(jain(&[1.0, 1.0, 1.0, 1.0]), Some(1.0));
        assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), Some(0.25)); // one flow takes everything: 1/n
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    #[test]
    fn sized_flows_become_fct_rows_and_size_bins() {
        let link = LinkModel { rate: Rate(1_000_000_000), base_rtt: Time::from_us(100) };
        let e = Endpoints {
            timeline: tl(),
            link: Some(link),
            // 50 KB in 2 ms (started at 5 ms), 1 MB in 12 ms, and one that never completed.
            flows: vec![sized(1, 50_000, 5, 7), sized(0, 1_000_000, 0, 12), {
                let mut f = sized(2, 20_000, 8, 9);
                f.sender.receiver = None;
                f
            }],
            incasts: vec![],
            probes: vec![],
        };
        let rows = e.fct_rows();
        assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), vec![0, 1, 2]);
        let r1 = &rows[1];
        assert!((r1.fct_s.unwrap() - 0.002).abs() < 1e-12);
        assert!((r1.finish_s.unwrap() - 0.007).abs() < 1e-12);
        // ideal = 50 000 B × 8 / 1 Gb/s + 100 µs = 500 µs.
        assert!((r1.ideal_fct_s.unwrap() - 0.0005).abs() < 1e-12);
        assert!((r1.slowdown.unwrap() - 4.0).abs() < 1e-9);
        assert_eq!((r1.timeouts, r1.retransmits, r1.delivered_bytes), (1, 2, 50_000));
        assert_eq!((rows[2].fct_s, rows[2].finish_s, rows[2].delivered_bytes), (None, None, 0));
        let s = e.summary();
        assert_eq!((s.fct.flows_with_size, s.fct.finished, s.fct.unfinished), (3, 2, 1));
        assert_eq!((s.fct.bins.small.count, s.fct.bins.medium.count, s.fct.bins.large.count), (1, 1, 0));
        assert_eq!(s.fct.overall.max_s, Some(0.012));
        assert_eq!((s.flows, s.timeouts, s.retransmits), (3, 3, 6));
        let csv = e.fct_csv();
        assert!(csv.starts_with("id,src,dst,class,size_bytes,start_s,first_data_s,finish_s,fct_s,"));
        assert!(csv.contains("\n1,1,0,0,50000,0.005,0.0051,0.007,0.002,0.0005,4,1,2,50000,0\n"), "{csv}");
        assert!(csv.contains("\n2,1,0,0,20000,0.008,0.0081,,,0.00026,,1,2,0,0\n"), "{csv}");
    }

    #[test]
    fn long_flow_goodput_counts_the_window_only() {
        let t = tl();
        // Two long flows from t0: one reads 1 MB every 5 ms, the other half of that, until 40 ms.
        let long = |id: u32, per_read: u64| {
            let mut tally = Tally::new(t, t.t0_ns);
            for k in 1..=8 {
                tally.read(t.t0_ns + k * 5 * MS, per_read);
            }
            FlowResult {
                id,
                src: id + 1,
                dst: 0,
                class: id as u8,
                sender: SenderRecord { flow: id, start_ns: t.t0_ns, ..Default::default() },
                receiver: Some(ReceiverRecord {
                    flow: id,
                    dscp: 0,
                    size: 0,
                    start_ns: t.t0_ns,
                    accepted_ns: t.t0_ns,
                    complete: true,
                    tally,
                    cc: "reno".into(),
                    ecn: false,
                }),
            }
        };
        let e = Endpoints {
            timeline: t,
            link: None,
            flows: vec![long(0, 1_000_000), long(1, 500_000)],
            incasts: vec![],
            probes: vec![],
        };
        let s = e.summary();
        // Window (10 ms, 30 ms]: reads at 15, 20, 25, 30 ms → 4 MB and 2 MB in 20 ms = 1.6 and 0.8 Gb/s.
        assert!((s.goodput.per_class_gbps["0"] - 1.6).abs() < 1e-9);
        assert!((s.goodput.per_class_gbps["1"] - 0.8).abs() < 1e-9);
        assert!((s.goodput.total_gbps - 2.4).abs() < 1e-9);
        assert_eq!(s.goodput.long_lived_flows, 2);
        // Jain of (1.6, 0.8) = 2.4² / (2 · 3.2) = 0.9.
        assert!((s.goodput.jain_long_lived.unwrap() - 0.9).abs() < 1e-12);
        let d = e.delivered_csv(t.t0_ns + 40 * MS).unwrap();
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines[0], "time_s,class0_delivered_bytes,class1_delivered_bytes");
        // At 10 ms, reads at 5 and 10 ms count: 2 MB and 1 MB; at 40 ms, all 8 reads.
        assert_eq!(lines[2], "0.01,2000000,1000000");
        assert_eq!(lines[5], "0.04,8000000,4000000");
    }

    #[test]
    fn incast_and_probe_workloads() {
        let t = tl();
        let round = |a: u64, b: u64| RoundRecord {
            start_ns: t.t0_ns + a * MS,
            end_ns: t.t0_ns + b * MS,
            done_ns: vec![],
            bytes: 4 * 100_000,
        };
        let inc =
            IncastResult { senders: 4, rounds: 3, block: Bytes(100_000), records: vec![round(0, 2), round(2, 6)] };
        let probes = ProbeResult {
            sent: 3,
            samples: vec![
                ProbeSample { at_ns: t.t0_ns + 5 * MS, rtt_ns: 100_000 }, // reply before the window
                ProbeSample { at_ns: t.t0_ns + 20 * MS, rtt_ns: 50_000 },
                ProbeSample { at_ns: t.t0_ns + 21 * MS, rtt_ns: 70_000 },
            ],
        };
        let e = Endpoints { timeline: t, link: None, flows: vec![], incasts: vec![inc], probes: vec![probes] };
        let v = serde_json::to_value(e.summary().workloads).unwrap();
        assert_eq!(v[0]["kind"], "incast");
        assert_eq!(v[0]["rounds_completed"], 2);
        // 4 × 100 KB × 2 rounds × 8 / 6 ms = 1.0667 Gb/s.
        assert!((v[0]["goodput_gbps"].as_f64().unwrap() - 6.4e6 / 6e-3 / 1e9).abs() < 1e-9);
        assert_eq!(v[1]["kind"], "probe");
        assert_eq!(v[1]["rtt"]["count"], 2);
        assert_eq!(v[1]["rtt"]["mean_us"], 60.0);
        assert_eq!(v[1]["rtt"]["max_us"], 70.0);
    }
}
