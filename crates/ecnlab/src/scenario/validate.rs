//! Semantic checks of a parsed scenario; every error names the field path and the allowed range.

use super::*;

fn err<T>(path: impl Into<String>, msg: impl Into<String>) -> Result<T, Error> {
    Err(Error::config(path, msg))
}

fn positive_rate(path: &str, r: Rate) -> Result<(), Error> {
    if r.0 == 0 {
        return err(path, "rate must be > 0");
    }
    Ok(())
}

impl Scenario {
    pub fn host_count(&self) -> u32 {
        match &self.topology {
            Topology::Star { hosts, .. } => *hosts,
            Topology::Dumbbell { left, right, .. } => left + right,
        }
    }

    fn host(&self, path: &str, h: u32) -> Result<(), Error> {
        let n = self.host_count();
        if h >= n {
            return err(path, format!("host {h} does not exist (hosts are 0..{})", n.saturating_sub(1)));
        }
        Ok(())
    }

    fn hosts(&self, path: &str, s: &HostSet) -> Result<(), Error> {
        s.0.iter().try_for_each(|&h| self.host(path, h))
    }

    pub fn validate(&self) -> Result<(), Error> {
        if self.duration == Time::ZERO {
            return err("duration", "must be > 0");
        }
        if self.mtu.0 < 128 || self.mtu.0 > 65_536 {
            return err("mtu", "must be in [128B, 65536B]");
        }
        self.validate_topology()?;
        let t = &self.transport;
        if t.mss == 0 || t.mss as u64 + crate::packet::HEADER_BYTES as u64 > self.mtu.0 {
            return err("transport.mss", format!("must be in [1, mtu − 40] = [1, {}]", self.mtu.0 - 40));
        }
        if t.initial_window == 0 {
            return err("transport.initial_window", "must be ≥ 1 segment");
        }
        if t.min_cwnd == 0 {
            return err("transport.min_cwnd", "must be ≥ 1 segment");
        }
        if t.min_rto == Time::ZERO || t.initial_rto == Time::ZERO {
            return err("transport.min_rto", "RTOs must be > 0");
        }
        if t.max_rto < t.min_rto {
            return err("transport.max_rto", "must be ≥ min_rto");
        }
        if let Some(d) = t.delayed_ack {
            if d.count == 0 {
                return err("transport.delayed_ack.count", "must be ≥ 1");
            }
            if d.timeout == Time::ZERO {
                return err("transport.delayed_ack.timeout", "must be > 0");
            }
        }
        t.cc.validate().or_else(|(f, m)| err(format!("transport.cc.{f}"), m))?;
        self.validate_port("switch", &self.switch)?;
        for (i, o) in self.ports.iter().enumerate() {
            let path = format!("ports.{i}");
            let merged = self.port_settings_with(o);
            self.validate_port(&path, &merged)?;
        }
        for (i, w) in self.workloads.iter().enumerate() {
            self.validate_workload(&format!("workloads.{i}"), w)?;
        }
        if self.observe.warmup >= self.duration {
            return err("observe.warmup", "must be < duration");
        }
        self.validate_sample_interval()?;
        if self.limits.max_events == 0 {
            return err("limits.max_events", "must be > 0");
        }
        Ok(())
    }

    /// Every sample holds a row per series: at most `MAX_SAMPLES` of them keep a run's memory bounded.
    fn validate_sample_interval(&self) -> Result<(), Error> {
        const MAX_SAMPLES: u64 = 1_000_000;
        let i = self.observe.sample_interval;
        if i > Time::ZERO && self.duration.0 / i.0 > MAX_SAMPLES {
            let min = Time(self.duration.0.div_ceil(MAX_SAMPLES));
            return err(
                "observe.sample_interval",
                format!("must be 0 (no series) or ≥ duration / {MAX_SAMPLES} = {min}, got {i}"),
            );
        }
        Ok(())
    }

    fn validate_topology(&self) -> Result<(), Error> {
        match &self.topology {
            Topology::Star { hosts, rate, host_links, .. } => {
                if *hosts < 2 || *hosts > 100_000 {
                    return err("topology.hosts", "must be in [2, 100000]");
                }
                positive_rate("topology.rate", *rate)?;
                self.validate_host_links(host_links)
            }
            Topology::Dumbbell { left, right, rate, bottleneck_rate, host_links, .. } => {
                if *left == 0 || *right == 0 {
                    return err("topology.left", "both sides need ≥ 1 host");
                }
                positive_rate("topology.rate", *rate)?;
                positive_rate("topology.bottleneck_rate", *bottleneck_rate)?;
                self.validate_host_links(host_links)
            }
        }
    }

    fn validate_host_links(&self, links: &[HostLink]) -> Result<(), Error> {
        for (i, l) in links.iter().enumerate() {
            let path = format!("topology.host_links.{i}");
            self.hosts(&format!("{path}.hosts"), &l.hosts)?;
            if let Some(r) = l.rate {
                positive_rate(&format!("{path}.rate"), r)?;
            }
        }
        Ok(())
    }

    /// The switch defaults with one override applied.
    pub fn port_settings_with(&self, o: &PortOverride) -> PortSettings {
        let s = &self.switch;
        PortSettings {
            buffer: o.buffer.unwrap_or(s.buffer),
            queues: o.queues.unwrap_or(s.queues),
            scheduler: o.scheduler.clone().unwrap_or_else(|| s.scheduler.clone()),
            marker: o.marker.clone().unwrap_or_else(|| s.marker.clone()),
            non_ect: o.non_ect.unwrap_or(s.non_ect),
        }
    }

    fn validate_port(&self, path: &str, p: &PortSettings) -> Result<(), Error> {
        if p.buffer.0 < self.mtu.0 {
            return err(format!("{path}.buffer"), format!("must hold at least one MTU ({})", self.mtu));
        }
        if p.queues == 0 || p.queues > 32 {
            return err(format!("{path}.queues"), "must be in [1, 32]");
        }
        // Thresholds given as times resolve at the slowest plausible rate here; the builder re-checks per port.
        let rate = self.max_rate();
        let resolve = |q: QueueLen| q.resolve(self.mtu, rate);
        let check_k = |field: &str, k: QueueLen| -> Result<(), Error> {
            let b = resolve(k);
            if b > p.buffer {
                return err(format!("{path}.marker.{field}"), format!("{k} = {b} exceeds the buffer ({})", p.buffer));
            }
            Ok(())
        };
        match &p.marker {
            MarkerConfig::None => {}
            MarkerConfig::Threshold { threshold, .. } => check_k("threshold", *threshold)?,
            MarkerConfig::Red { min, max, max_p, weight, .. } => {
                check_k("min", *min)?;
                check_k("max", *max)?;
                if resolve(*min) > resolve(*max) {
                    return err(format!("{path}.marker.min"), "must be ≤ max");
                }
                if !(*max_p > 0.0 && *max_p <= 1.0) {
                    return err(format!("{path}.marker.max_p"), format!("must be in (0, 1], got {max_p}"));
                }
                if !(*weight > 0.0 && *weight <= 1.0) {
                    return err(format!("{path}.marker.weight"), format!("must be in (0, 1], got {weight}"));
                }
            }
        }
        Ok(())
    }

    fn max_rate(&self) -> Rate {
        match &self.topology {
            Topology::Star { rate, host_links, .. } | Topology::Dumbbell { rate, host_links, .. } => {
                host_links.iter().filter_map(|l| l.rate).fold(*rate, Rate::max)
            }
        }
    }

    fn validate_workload(&self, path: &str, w: &Workload) -> Result<(), Error> {
        let p = |f: &str| format!("{path}.{f}");
        let size = |f: &str, b: Bytes| {
            if b.0 == 0 {
                err(p(f), "must be > 0")
            } else {
                Ok(())
            }
        };
        match w {
            Workload::Flows { src, dst, size: sz, stop, start, rate, .. } => {
                self.hosts(&p("src"), src)?;
                self.host(&p("dst"), *dst)?;
                if src.0.contains(dst) {
                    return err(p("src"), format!("contains the destination h{dst}"));
                }
                if let Some(b) = sz {
                    size("size", *b)?;
                }
                if let Some(s) = stop {
                    if s <= start {
                        return err(p("stop"), "must be after start");
                    }
                }
                if let Some(r) = rate {
                    positive_rate(&p("rate"), *r)?;
                }
            }
            Workload::BackToBack { src, dst, size: sz, count, .. } => {
                self.host(&p("src"), *src)?;
                self.host(&p("dst"), *dst)?;
                if src == dst {
                    return err(p("dst"), "must differ from src");
                }
                size("size", *sz)?;
                if *count == Some(0) {
                    return err(p("count"), "must be ≥ 1");
                }
            }
            Workload::Incast { senders, receiver, block, rounds, .. } => {
                self.hosts(&p("senders"), senders)?;
                self.host(&p("receiver"), *receiver)?;
                if senders.0.contains(receiver) {
                    return err(p("senders"), "contains the receiver");
                }
                size("block", *block)?;
                if *rounds == 0 {
                    return err(p("rounds"), "must be ≥ 1");
                }
            }
            Workload::Probe { src, dst, interval, size: sz, .. } => {
                self.host(&p("src"), *src)?;
                self.host(&p("dst"), *dst)?;
                if src == dst {
                    return err(p("dst"), "must differ from src");
                }
                if *interval == Time::ZERO {
                    return err(p("interval"), "must be > 0");
                }
                if sz.0 < 40 || sz.0 > self.mtu.0 {
                    return err(p("size"), format!("must be in [40B, mtu = {}]", self.mtu));
                }
            }
        }
        Ok(())
    }
}
