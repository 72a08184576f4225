//! What a run measures beside the ports' own statistics: delivered bytes and RTT samples per class, phases,
//! the measurement window, and the sampled series (queues, delivered bytes, windows).

use super::clock::Clock;
use super::fabric::Fabric;
use super::summary::{HistSummary, Phase, RttSummary};
use super::Flow;
use crate::engine::Event;
use crate::observe::{LogHist, Series};
use crate::scenario::Scenario;
use crate::transport::cc::CcConfig;
use crate::units::Time;
use std::collections::BTreeMap;

/// Service classes a packet can carry (`Packet::class` is a `u8`).
const CLASSES: usize = 256;

pub(super) struct Observer {
    warmup: Time,
    /// Per class: payload bytes delivered in order to receivers.
    class_delivered: Vec<u64>,
    class_delivered_at_warmup: Vec<u64>,
    /// Per class: TCP RTT samples (ps) after warm-up.
    class_rtt: Vec<LogHist>,
    /// Every class's TCP RTT samples together.
    all_rtt: LogHist,
    /// Phase boundaries and the delivered bytes per class at each.
    phases: Vec<Time>,
    phase_snapshots: Vec<Option<Vec<u64>>>,
    rtt_series: Option<Series>,
    sample_interval: Time,
    watched_ports: Vec<u32>,
    cwnd_flows: Vec<u32>,
    /// queues, delivered, cwnd: in that order.
    series: Vec<Series>,
}

impl Observer {
    pub(super) fn new(sc: &Scenario, fabric: &Fabric, watched: Vec<u32>) -> Observer {
        let mut cols = vec!["time_s".to_string()];
        for &p in &watched {
            for q in 0..fabric.raw(p).queue_count() {
                cols.push(format!("{}:q{q}_bytes", fabric.net().ports[p as usize].name()));
            }
        }
        let queues = Series::new("queues", cols);
        let mut cols = vec!["time_s".to_string()];
        cols.extend((0..used_classes(sc)).map(|c| format!("class{c}_delivered_bytes")));
        let delivered = Series::new("delivered", cols);
        let mut cols = vec!["time_s".to_string()];
        let unit = if matches!(sc.transport.cc, CcConfig::Dcqcn(_)) { "rate_gbps" } else { "cwnd_bytes" };
        cols.extend(sc.observe.cwnd.iter().map(|f| format!("flow{f}_{unit}")));
        let cwnd = Series::new("cwnd", cols);
        Observer {
            warmup: sc.observe.warmup,
            class_delivered: vec![0; CLASSES],
            class_delivered_at_warmup: vec![0; CLASSES],
            class_rtt: vec![Default::default(); CLASSES],
            all_rtt: Default::default(),
            phases: sc.observe.phases.clone(),
            phase_snapshots: vec![None; sc.observe.phases.len()],
            rtt_series: sc
                .observe
                .rtt_samples
                .then(|| Series::new("rtt", ["time_s", "flow", "class", "rtt_us"].map(String::from).to_vec())),
            sample_interval: sc.observe.sample_interval,
            watched_ports: watched,
            cwnd_flows: sc.observe.cwnd.clone(),
            series: vec![queues, delivered, cwnd],
        }
    }

    /// Its own events: the window's start, the first sample, the phase boundaries.
    pub(super) fn schedule(&self, clk: &mut Clock) {
        clk.schedule(self.warmup, Event::WindowStart);
        if self.sample_interval > Time::ZERO {
            clk.schedule(Time::ZERO, Event::Sample);
        }
        for (i, &t) in self.phases.iter().enumerate() {
            clk.schedule(t, Event::Phase { idx: i as u32 });
        }
    }

    pub(super) fn warmup(&self) -> Time {
        self.warmup
    }

    /// A receiver's in-order payload grew by `bytes`.
    #[inline(always)]
    pub(super) fn delivered(&mut self, class: u8, bytes: u64) {
        self.class_delivered[class as usize] += bytes;
    }

    /// A TCP sender's RTT sample, counted after warm-up.
    #[inline]
    pub(super) fn rtt_sample(&mut self, now: Time, flow: u32, class: u8, r: Time) {
        if now < self.warmup {
            return;
        }
        self.class_rtt[class as usize].add(r.0, 1);
        self.all_rtt.add(r.0, 1);
        if let Some(s) = &mut self.rtt_series {
            s.rows.push(vec![now.as_secs_f64(), flow as f64, class as f64, r.as_us_f64()]);
        }
    }

    /// A phase boundary: the delivered bytes per class so far.
    pub(super) fn phase(&mut self, idx: u32) {
        self.phase_snapshots[idx as usize] = Some(self.class_delivered.clone());
    }

    /// The measurement window opens (the ports' statistics restart in `Fabric::start_window`).
    pub(super) fn start_window(&mut self) {
        self.class_delivered_at_warmup = self.class_delivered.clone();
    }

    /// One row of each series, and the next sample.
    pub(super) fn sample(&mut self, clk: &mut Clock, fabric: &mut Fabric, flows: &[Flow]) {
        let t = clk.now().as_secs_f64();
        let mut row = vec![t];
        for &port in &self.watched_ports {
            row.extend(fabric.port(clk, port).queue_backlogs().map(|b| b as f64));
        }
        self.series[0].rows.push(row);
        let mut row = vec![t];
        let n = self.series[1].columns.len() - 1;
        row.extend(self.class_delivered[..n].iter().map(|&b| b as f64));
        self.series[1].rows.push(row);
        if !self.cwnd_flows.is_empty() {
            let mut row = vec![t];
            for &f in &self.cwnd_flows {
                row.push(flows.get(f as usize).map_or(0.0, |f| f.sender.window_sample()));
            }
            self.series[2].rows.push(row);
        }
        clk.schedule(clk.now() + self.sample_interval, Event::Sample);
    }

    /// Classes that carried traffic or an RTT sample.
    pub(super) fn classes(&self) -> Vec<usize> {
        (0..CLASSES).filter(|&c| self.class_delivered[c] > 0 || self.class_rtt[c].samples() > 0).collect()
    }

    /// Goodput over the window (`window_s` long) per class that carried traffic, and in all, Gb/s.
    pub(super) fn goodput(&self, classes: &[usize], window_s: f64) -> (BTreeMap<String, f64>, f64) {
        let gbps =
            |c: usize| (self.class_delivered[c] - self.class_delivered_at_warmup[c]) as f64 * 8.0 / window_s / 1e9;
        let per_class = classes.iter().map(|&c| (c.to_string(), gbps(c))).collect();
        (per_class, (0..CLASSES).map(gbps).sum())
    }

    pub(super) fn rtt(&self, classes: &[usize], hist_us: impl Fn(&LogHist) -> HistSummary) -> RttSummary {
        RttSummary {
            all: hist_us(&self.all_rtt),
            per_class: classes.iter().map(|&c| (c.to_string(), hist_us(&self.class_rtt[c]))).collect(),
        }
    }

    /// Goodput per class between consecutive phase boundaries (the last closes at the end of the run).
    pub(super) fn phases(&self, classes: &[usize], now: Time) -> Vec<Phase> {
        let mut out = vec![];
        for i in 0..self.phases.len() {
            let (t0, Some(d0)) = (self.phases[i], &self.phase_snapshots[i]) else { continue };
            let (t1, d1) = match self.phases.get(i + 1).zip(self.phase_snapshots.get(i + 1)) {
                Some((&t, Some(d))) => (t, d),
                _ => (now, &self.class_delivered),
            };
            let span = (t1 - t0).as_secs_f64().max(1e-12);
            let per_class_gbps =
                classes.iter().map(|&c| (c.to_string(), (d1[c] - d0[c]) as f64 * 8.0 / span / 1e9)).collect();
            out.push(Phase { from_s: t0.as_secs_f64(), to_s: t1.as_secs_f64(), per_class_gbps });
        }
        out
    }

    /// The sampled series that have rows (the delivered bytes only of classes that carried traffic), and the
    /// RTT samples if kept.
    pub(super) fn series(&self, classes: &[usize]) -> Vec<Series> {
        let mut series: Vec<Series> = if self.sample_interval > Time::ZERO {
            self.series.iter().filter(|s| !s.rows.is_empty()).cloned().collect()
        } else {
            vec![]
        };
        if let Some(d) = series.iter_mut().find(|s| s.name == "delivered") {
            let keep: Vec<usize> =
                std::iter::once(0).chain(classes.iter().map(|c| c + 1).filter(|&i| i < d.columns.len())).collect();
            d.columns = keep.iter().map(|&i| d.columns[i].clone()).collect();
            for r in &mut d.rows {
                *r = keep.iter().map(|&i| r[i]).collect();
            }
        }
        if let Some(r) = &self.rtt_series {
            series.push(r.clone());
        }
        series
    }
}

/// Classes the workloads can put traffic in (the delivered-bytes series has one column each).
fn used_classes(sc: &Scenario) -> usize {
    use crate::scenario::{Services, Workload};
    let top = sc.workloads.iter().map(|w| match w {
        Workload::Flows { class, classes, .. } => {
            classes.as_ref().and_then(|c| c.iter().max().copied()).unwrap_or(*class) as usize + 1
        }
        Workload::BackToBack { class, .. }
        | Workload::Incast { class, .. }
        | Workload::Probe { class, .. }
        | Workload::Query { class, .. } => *class as usize + 1,
        Workload::Poisson { services, .. } => match services {
            Services::Single => 1,
            Services::Random { count } | Services::Pairs { count } | Services::PairRule { count } => *count as usize,
            Services::Weighted { probabilities } => probabilities.len(),
        },
    });
    top.max().unwrap_or(1)
}
