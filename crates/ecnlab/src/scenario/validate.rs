//! Semantic checks of a parsed scenario; every error names the field path and the allowed range.

use super::*;
use crate::net::node_name;
use crate::transport::pias::DeriveSpec;
use crate::units::PS_PER_S;

/// Star and dumbbell host counts: the network builder's routing grows with hosts².
const MAX_HOSTS: u32 = 100_000;
/// Buffers, per-queue limits, pools, PFC thresholds and the NIC limit: 1 TiB is far beyond any switch, and sums of
/// a few of them (XOFF + headroom + a NIC's backlog) stay far inside u64 bytes.
const MAX_BYTES: Bytes = Bytes(1 << 40);
/// Poisson arrivals are rounded to whole picoseconds: a mean gap of at least 1 ns keeps that rounding's effect on
/// the offered load below 0.05 % (and a gap may still round to 0: two arrivals in the same picosecond).
const MIN_POISSON_GAP_PS: f64 = 1000.0;
/// Keeps every simulated time, and sums of RTT samples in the transport, inside u64 picoseconds.
const MAX_DURATION: Time = Time(1_000_000 * PS_PER_S);

fn err<T>(path: impl Into<String>, msg: impl Into<String>) -> Result<T, Error> {
    Err(Error::config(path, msg))
}

/// One egress port of the topology.
struct PortInfo {
    name: String,
    rate: Rate,
    /// A switch port, or a host's like a switch's (configurable); else a host NIC.
    queues: bool,
    /// A switch's port (what `[switch]`'s shaper shapes).
    switch: bool,
}

/// A byte size field in [lo, MAX_BYTES].
fn byte_range(path: &str, b: Bytes, lo: Bytes, what: &str) -> Result<(), Error> {
    if b < lo || b > MAX_BYTES {
        return err(path, format!("must be in [{lo}, {MAX_BYTES}] ({what}), got {b}"));
    }
    Ok(())
}

fn positive_rate(path: &str, r: Rate) -> Result<(), Error> {
    if r.0 == 0 {
        return err(path, "rate must be > 0");
    }
    Ok(())
}

impl Scenario {
    pub fn host_count(&self) -> u32 {
        self.topology.host_count()
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
        if self.duration == Time::ZERO || self.duration > MAX_DURATION {
            return err("duration", format!("must be in (0s, {MAX_DURATION}], got {}", self.duration));
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
        if self.hosts.tsq_limit > MAX_BYTES {
            return err(
                "hosts.tsq_limit",
                format!("must be in [0B, {MAX_BYTES}] (at most 1 TiB), got {}", self.hosts.tsq_limit),
            );
        }
        if let Some(max) = self.hosts.tso_max {
            // At least two segments of data (TSO autosizing's floor); at most 256 KiB (Linux's largest GSO size,
            // BIG TCP aside, is 64 KiB; more is allowed for what-if runs).
            let lo = Bytes(2 * t.mss as u64);
            if max < lo || max > Bytes(256 * 1024) {
                return err("hosts.tso_max", format!("must be in [{lo}, 256KiB] (two segments to 256 KiB), got {max}"));
            }
            if matches!(t.cc, crate::transport::CcConfig::Dcqcn(_)) {
                return err("hosts.tso_max", "segmentation offload is TCP's: RoCE (cc.kind = \"dcqcn\") has none");
            }
        }
        t.cc.validate().or_else(|(f, m)| err(format!("transport.cc.{f}"), m))?;
        if matches!(t.cc, crate::transport::CcConfig::Dcqcn(_)) && t.handshake {
            return err("transport.handshake", "RoCE (cc.kind = \"dcqcn\") has no handshake: set it false");
        }
        if let Some(p) = t.pias {
            self.check_pias(p.levels(), "transport.pias.thresholds")?;
        }
        self.validate_host_queue()?;
        self.validate_ports()?;
        for (i, w) in self.workloads.iter().enumerate() {
            self.validate_workload(&format!("workloads.{i}"), w)?;
        }
        if self.observe.warmup >= self.duration {
            return err("observe.warmup", "must be < duration");
        }
        for (i, w) in self.observe.phases.windows(2).enumerate() {
            if w[1] <= w[0] {
                return err(format!("observe.phases.{}", i + 1), "phase boundaries must increase");
            }
        }
        if let Some((i, _)) = self.observe.phases.iter().enumerate().find(|(_, &t)| t >= self.duration) {
            return err(format!("observe.phases.{i}"), "must be < duration");
        }
        self.validate_sample_interval()?;
        self.validate_observed_ports()?;
        if self.limits.max_events == 0 {
            return err("limits.max_events", "must be > 0");
        }
        if let Some(m) = self.limits.max_memory {
            if m.0 < 1_000_000 {
                return err(
                    "limits.max_memory",
                    format!("must be ≥ 1MB (or absent: half the machine's memory), got {m}"),
                );
            }
        }
        self.check_memory()
    }

    /// PIAS with `levels` priorities: TCP only, and a switch queue per priority (`field` names where the levels
    /// come from).
    fn check_pias(&self, levels: usize, field: &str) -> Result<(), Error> {
        if matches!(self.transport.cc, crate::transport::CcConfig::Dcqcn(_)) {
            return err("transport.pias", "PIAS tags TCP flows; cc.kind = \"dcqcn\" does not support it");
        }
        if (self.switch.queues as usize) < levels {
            return err(
                field,
                format!("{levels} priorities need switch.queues ≥ {levels}, got {}", self.switch.queues),
            );
        }
        Ok(())
    }

    /// `transport.pias = { derive = true, … }` on a validated scenario: sets the thresholds that minimise the
    /// model mean FCT (transport::pias::derive, PIAS §4.2) for the CDF and load given in the table, or else those
    /// of the scenario's Poisson workload. Errors name `transport.pias.<field>` and say what to set.
    pub(super) fn resolve_pias(&mut self, d: &DeriveSpec) -> Result<(), Error> {
        self.check_pias(d.levels, "transport.pias.levels")?;
        let poisson: Vec<(usize, &[String], f64)> = (self.workloads.iter().enumerate())
            .filter_map(|(i, w)| match w {
                Workload::Poisson { cdf, load, .. } => Some((i, cdf.as_slice(), *load)),
                _ => None,
            })
            .collect();
        let cdf = match &d.cdf {
            Some(c) => c.clone(),
            None => {
                let mut all: Vec<&String> = poisson.iter().flat_map(|p| p.1).collect();
                all.sort();
                all.dedup();
                match all.as_slice() {
                    [one] => one.to_string(),
                    [] => {
                        return err(
                            "transport.pias.cdf",
                            "derive = true needs a flow-size CDF: the scenario has no poisson workload; set \
                             transport.pias.cdf (and load)",
                        )
                    }
                    many => {
                        return err(
                            "transport.pias.cdf",
                            format!(
                            "the poisson workloads use {} CDFs ({}); set transport.pias.cdf to the one to derive for",
                            many.len(),
                            many.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
                        ),
                        )
                    }
                }
            }
        };
        let load = match (d.load, poisson.as_slice()) {
            (Some(l), _) => l,
            (None, [(i, _, l)]) => {
                if !(*l > 0.0 && *l < 1.0) {
                    return err(
                        "transport.pias.load",
                        format!(
                            "the derivation needs a load in (0, 1), workloads.{i}.load is {l}; set transport.pias.load"
                        ),
                    );
                }
                *l
            }
            (None, []) => {
                return err(
                    "transport.pias.load",
                    "derive = true needs a load: the scenario has no poisson workload; set transport.pias.load",
                )
            }
            (None, many) => {
                return err(
                    "transport.pias.load",
                    format!("{} poisson workloads; set transport.pias.load to the load to derive for", many.len()),
                )
            }
        };
        let table = crate::dist::load_cdf(&cdf).map_err(|e| e.at("transport.pias.cdf"))?;
        let derived = crate::transport::pias::derive(&table, load, d.levels).map_err(|e| match e {
            Error::Config { path, msg } => Error::config(format!("transport.pias.{path}"), msg),
            e => e,
        })?;
        self.transport.pias = Some(derived.pias);
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
                if *hosts < 2 || *hosts > MAX_HOSTS {
                    return err("topology.hosts", format!("must be in [2, {MAX_HOSTS}]"));
                }
                positive_rate("topology.rate", *rate)?;
                self.validate_host_links(host_links)
            }
            Topology::Dumbbell { left, right, rate, bottleneck_rate, host_links, .. } => {
                if *left == 0 || *right == 0 {
                    return err("topology.left", "both sides need ≥ 1 host");
                }
                if left.saturating_add(*right) > MAX_HOSTS {
                    return err("topology.right", format!("left + right must be ≤ {MAX_HOSTS}"));
                }
                positive_rate("topology.rate", *rate)?;
                positive_rate("topology.bottleneck_rate", *bottleneck_rate)?;
                self.validate_host_links(host_links)
            }
            Topology::LeafSpine { leaves, spines, hosts_per_leaf, rate, fabric_rate, host_links, .. } => {
                for (f, v) in [("leaves", leaves), ("spines", spines), ("hosts_per_leaf", hosts_per_leaf)] {
                    if *v == 0 || *v > MAX_HOSTS {
                        return err(format!("topology.{f}"), format!("must be in [1, {MAX_HOSTS}]"));
                    }
                }
                if (*leaves as u64) * (*hosts_per_leaf as u64) > MAX_HOSTS as u64 || leaves * hosts_per_leaf < 2 {
                    return err(
                        "topology.hosts_per_leaf",
                        format!("leaves × hosts_per_leaf must be in [2, {MAX_HOSTS}]"),
                    );
                }
                if (*leaves as u64) * (*spines as u64) > MAX_HOSTS as u64 {
                    return err("topology.spines", format!("leaves × spines must be ≤ {MAX_HOSTS}"));
                }
                positive_rate("topology.rate", *rate)?;
                if let Some(r) = fabric_rate {
                    positive_rate("topology.fabric_rate", *r)?;
                }
                self.validate_host_links(host_links)
            }
            Topology::FatTree { k, rate, host_links, .. } => {
                if *k < 2 || *k % 2 == 1 || *k > 64 {
                    return err("topology.k", "must be even and in [2, 64]");
                }
                positive_rate("topology.rate", *rate)?;
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

    /// Whether a port transmitting from `from` queues, schedules and marks (a switch's, or a host's with
    /// `hosts.egress = "switch"`); else it is a host NIC.
    pub fn queueing_port(&self, from: crate::net::Node) -> bool {
        self.hosts.egress == super::Egress::Switch || matches!(from, crate::net::Node::Switch(_))
    }

    /// A queueing port's settings: `[switch]`'s, then its `[[ports]]` override if it has one. `[switch]`'s
    /// shaper shapes switches' ports only (`at_switch`), never a host's port built like a switch's, which gets
    /// one only from its own override.
    pub fn port_settings(&self, at_switch: bool, o: Option<&PortOverride>) -> PortSettings {
        let s = &self.switch;
        let shaper = if at_switch { s.shaper } else { None };
        let Some(o) = o else { return PortSettings { shaper, ..s.clone() } };
        PortSettings {
            buffer: o.buffer.unwrap_or(s.buffer),
            queues: o.queues.unwrap_or(s.queues),
            scheduler: o.scheduler.clone().unwrap_or_else(|| s.scheduler.clone()),
            marker: o.marker.clone().unwrap_or_else(|| s.marker.clone()),
            non_ect: o.non_ect.unwrap_or(s.non_ect),
            queue_limits: o.queue_limits.clone().unwrap_or_else(|| s.queue_limits.clone()),
            pool: s.pool.clone(),
            pfc: s.pfc.clone(),
            shaper: o.shaper.or(shaper),
        }
    }

    /// The switch defaults at the fastest switch port they apply to, then each override at its own port.
    fn validate_ports(&self) -> Result<(), Error> {
        let ports = self.port_list();
        let overridden = |name: &str| self.ports.iter().any(|o| o.port == name);
        // `rev`: the first of equally fast ports, so errors name the lowest host.
        let fastest = ports.iter().rev().filter(|p| p.queues && !overridden(&p.name)).max_by_key(|p| p.rate);
        if let Some(p) = fastest {
            self.validate_port("switch", &self.switch, p)?;
        }
        // The shaper's rate is bounded by the line rate of the slowest switch port it shapes.
        let slowest = ports.iter().filter(|p| p.switch && !overridden(&p.name)).min_by_key(|p| p.rate);
        if let (Some(s), Some(p)) = (&self.switch.shaper, slowest) {
            self.validate_shaper("switch.shaper", s, p)?;
        }
        for (i, o) in self.ports.iter().enumerate() {
            let path = format!("ports.{i}");
            let port = ports.iter().find(|p| p.name == o.port).ok_or_else(|| {
                Error::config(format!("{path}.port"), format!("no port named `{}` (names look like s0->h0)", o.port))
            })?;
            if !port.queues {
                return err(
                    format!("{path}.port"),
                    "host NIC ports are not configurable (unless hosts.egress = \"switch\"); name a switch port",
                );
            }
            let settings = self.port_settings(port.switch, Some(o));
            self.validate_port(&path, &settings, port)?;
            if let Some(s) = &settings.shaper {
                let field = if o.shaper.is_some() { format!("{path}.shaper") } else { "switch.shaper".into() };
                self.validate_shaper(&field, s, port)?;
            }
        }
        Ok(())
    }

    /// A shaper's rate in (0, the port's line rate] (a faster one would never hold a packet back) and its
    /// bucket in [one MTU, 1 TiB] (a smaller one could never hold a full-size packet's tokens).
    fn validate_shaper(&self, path: &str, s: &crate::port::Shaper, port: &PortInfo) -> Result<(), Error> {
        if s.rate.0 == 0 || s.rate > port.rate {
            return err(
                format!("{path}.rate"),
                format!("must be in (0, {}] (the line rate of {}), got {}", port.rate, port.name, s.rate),
            );
        }
        if s.bucket < self.mtu {
            return err(
                format!("{path}.bucket"),
                format!("must hold at least one MTU ({}), got {}", self.mtu, s.bucket),
            );
        }
        byte_range(&format!("{path}.bucket"), s.bucket, self.mtu, "one MTU to 1 TiB")
    }

    fn validate_observed_ports(&self) -> Result<(), Error> {
        let ports = self.port_list();
        let no_trace = Vec::new();
        let traced = self.observe.trace.as_ref().map_or(&no_trace, |t| &t.ports);
        for (field, names) in [("observe.ports", &self.observe.ports), ("observe.trace.ports", traced)] {
            for (i, n) in names.iter().enumerate() {
                if !ports.iter().any(|p| &p.name == n) {
                    return err(
                        format!("{field}.{i}"),
                        format!("no port named `{n}` (names look like s0->h0, h0->s0)"),
                    );
                }
            }
        }
        Ok(())
    }

    /// Host `h`'s link rate after `host_links` overrides (its link is the topology's link `h`).
    fn host_rate(&self, h: u32) -> Rate {
        let (_, links) = self.topology.links();
        links.get(h as usize).map_or(Rate(0), |l| l.rate_ab)
    }

    /// Every egress port as the network builder names it, with its rate after `host_links` overrides.
    fn port_list(&self) -> Vec<PortInfo> {
        let (_, links) = self.topology.links();
        let name = |a: crate::net::Node, b: crate::net::Node| format!("{}->{}", node_name(a), node_name(b));
        links
            .iter()
            .flat_map(|l| {
                [
                    PortInfo {
                        name: name(l.a, l.b),
                        rate: l.rate_ab,
                        queues: self.queueing_port(l.a),
                        switch: matches!(l.a, crate::net::Node::Switch(_)),
                    },
                    PortInfo {
                        name: name(l.b, l.a),
                        rate: l.rate_ba,
                        queues: self.queueing_port(l.b),
                        switch: matches!(l.b, crate::net::Node::Switch(_)),
                    },
                ]
            })
            .collect()
    }

    /// Host egress ports like a switch's carry neither PFC nor RoCE.
    fn validate_host_queue(&self) -> Result<(), Error> {
        if self.hosts.egress != super::Egress::Switch {
            return Ok(());
        }
        let why = |what: &str| format!("\"switch\" host egress ports do not support {what}; use \"nic\"");
        if matches!(self.transport.cc, crate::transport::CcConfig::Dcqcn(_)) {
            return err("hosts.egress", why("RoCE (transport.cc is dcqcn)"));
        }
        if self.switch.pfc.is_some() {
            return err("hosts.egress", why("PFC (switch.pfc is set)"));
        }
        Ok(())
    }

    fn validate_pfc(&self, path: &str, pfc: &crate::net::pfc::PfcConfig, p: &PortSettings) -> Result<(), Error> {
        if pfc.xoff.0 < self.mtu.0 {
            return err(format!("{path}.pfc.xoff"), format!("must hold at least one MTU ({})", self.mtu));
        }
        byte_range(&format!("{path}.pfc.xoff"), pfc.xoff, self.mtu, "one MTU to 1 TiB")?;
        if let Some(h) = pfc.headroom {
            byte_range(&format!("{path}.pfc.headroom"), h, Bytes::ZERO, "at most 1 TiB")?;
        }
        if pfc.xon.is_some_and(|x| x > pfc.xoff) {
            return err(format!("{path}.pfc.xon"), format!("must be ≤ xoff ({})", pfc.xoff));
        }
        if let Some(i) = pfc.priorities.iter().position(|&q| q as usize >= crate::net::pfc::PRIORITIES) {
            return err(format!("{path}.pfc.priorities.{i}"), "priorities are 0 … 7");
        }
        if p.queues > 1 && !matches!(p.scheduler, SchedulerConfig::Sp(_)) {
            return err(
                format!("{path}.scheduler.kind"),
                "PFC pauses queues, which only the strict-priority scheduler (\"sp\") supports here",
            );
        }
        Ok(())
    }

    fn validate_port(&self, path: &str, p: &PortSettings, port: &PortInfo) -> Result<(), Error> {
        if p.buffer.0 < self.mtu.0 {
            return err(format!("{path}.buffer"), format!("must hold at least one MTU ({})", self.mtu));
        }
        byte_range(&format!("{path}.buffer"), p.buffer, self.mtu, "one MTU to 1 TiB")?;
        if p.queues == 0 || p.queues > 32 {
            return err(format!("{path}.queues"), "must be in [1, 32]");
        }
        let sched_path = format!("{path}.scheduler");
        p.scheduler.validate(&crate::sched::Check { path: &sched_path, mtu: self.mtu, queues: p.queues as usize })?;
        if let Some(i) = p.queue_limits.iter().position(|b| b.0 < self.mtu.0) {
            return err(format!("{path}.queue_limits.{i}"), format!("must hold at least one MTU ({})", self.mtu));
        }
        for (i, b) in p.queue_limits.iter().enumerate() {
            byte_range(&format!("{path}.queue_limits.{i}"), *b, self.mtu, "one MTU to 1 TiB")?;
        }
        if let Some(pool) = &p.pool {
            if pool.size.0 < self.mtu.0 {
                return err(format!("{path}.pool.size"), format!("must hold at least one MTU ({})", self.mtu));
            }
            byte_range(&format!("{path}.pool.size"), pool.size, self.mtu, "one MTU to 1 TiB")?;
            if pool.alpha.is_empty() {
                return err(format!("{path}.pool.alpha"), "needs at least one value");
            }
            if let Some(i) = pool.alpha.iter().position(|a| !(*a > 0.0 && a.is_finite())) {
                return err(format!("{path}.pool.alpha.{i}"), "α must be > 0");
            }
        }
        if let Some(pfc) = &p.pfc {
            self.validate_pfc(path, pfc, p)?;
        }
        let check = crate::mark::Check {
            path: &format!("{path}.marker"),
            mtu: self.mtu,
            rate: port.rate,
            buffer: p.buffer,
            port: &port.name,
            round_robin: p.scheduler.has_round_robin(),
            pool: p.pool.is_some(),
        };
        p.marker.validate(&check)
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
            Workload::Flows { src, dst, size: sz, stop, start, rate, classes, .. } => {
                if classes.as_ref().is_some_and(|c| c.is_empty()) {
                    return err(p("classes"), "needs at least one class (or omit it and use `class`)");
                }
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
                    // Paced writes faster than the host's link only pile up behind it.
                    let (_, links) = self.topology.links();
                    let rate = |h: u32| links.get(h as usize).map_or(Rate(0), |l| l.rate_ab);
                    if let Some((h, link)) = src.0.iter().map(|&h| (h, rate(h))).min_by_key(|x| x.1) {
                        if *r > link {
                            return err(p("rate"), format!("must be in (0, {link}] (h{h}'s link rate), got {r}"));
                        }
                    }
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
            Workload::Poisson { hosts, dst, load, flows, start, stop, cdf, services, rtt, connections } => {
                if let Some(h) = hosts {
                    self.hosts(&p("hosts"), h)?;
                }
                if let Some(d) = dst {
                    self.host(&p("dst"), *d)?;
                }
                let mut senders: Vec<u32> =
                    hosts.as_ref().map_or_else(|| (0..self.host_count()).collect(), |h| h.0.clone());
                senders.sort_unstable();
                senders.dedup();
                senders.retain(|h| Some(*h) != *dst);
                match dst {
                    None if senders.len() < 2 => return err(p("hosts"), "all-to-all traffic needs ≥ 2 distinct hosts"),
                    Some(_) if senders.is_empty() => return err(p("hosts"), "needs ≥ 1 sender other than dst"),
                    _ => {}
                }
                if !(*load > 0.0 && *load <= 10.0) {
                    return err(p("load"), format!("must be in (0, 10], got {load}"));
                }
                if *flows == Some(0) {
                    return err(p("flows"), "must be ≥ 1");
                }
                if stop.is_some_and(|s| s <= *start) {
                    return err(p("stop"), "must be after start");
                }
                let n_services = match services {
                    Services::Single => 1,
                    Services::Random { count } | Services::Pairs { count } | Services::PairRule { count } => {
                        *count as usize
                    }
                    Services::Weighted { probabilities } => {
                        let sum: f64 = probabilities.iter().sum();
                        if probabilities.is_empty()
                            || probabilities.iter().any(|x| x.is_nan() || *x < 0.0)
                            || (sum - 1.0).abs() > 1e-6
                        {
                            return err(p("services.probabilities"), "non-negative probabilities summing to 1");
                        }
                        probabilities.len()
                    }
                };
                if n_services == 0 || n_services > 256 {
                    return err(p("services"), "1 to 256 services (each is a class)");
                }
                if cdf.is_empty() || n_services % cdf.len() != 0 {
                    return err(p("cdf"), format!("one CDF, or one per group of services ({n_services} services)"));
                }
                for (i, c) in cdf.iter().enumerate() {
                    crate::dist::load_cdf(c).map_err(|e| e.at(p(&format!("cdf.{i}"))))?;
                }
                if let Some(r) = rtt {
                    crate::dist::load_rtt(&r.dist).map_err(|e| e.at(p("rtt.dist")))?;
                    if r.lo == Time::ZERO || r.hi < r.lo {
                        return err(p("rtt.hi"), "need 0 < lo ≤ hi");
                    }
                }
                if let Some(gap) = self.poisson_min_gap(w) {
                    if gap < MIN_POISSON_GAP_PS {
                        let most = load * gap / MIN_POISSON_GAP_PS;
                        return err(
                            p("load"),
                            format!(
                                "{load} gives a mean gap between flow arrivals of {gap:.3}ps; the mean gap must be ≥ 1ns \
                                 (arrivals are rounded to whole picoseconds), so load must be in (0, {most:.3e}] here"
                            ),
                        );
                    }
                }
                if *connections == Connections::Persistent {
                    if rtt.is_some() {
                        return err(
                            p("connections"),
                            "\"persistent\" cannot be combined with per-flow RTT variation (`rtt`): a connection \
                             has one base RTT; use \"new\"",
                        );
                    }
                    if matches!(self.transport.cc, crate::transport::CcConfig::Dcqcn(_)) {
                        return err(p("connections"), "\"persistent\" needs a TCP transport (transport.cc is dcqcn)");
                    }
                }
            }
            Workload::Query { senders, receiver, count, size_min, size_max, .. } => {
                self.hosts(&p("senders"), senders)?;
                self.host(&p("receiver"), *receiver)?;
                if senders.0.contains(receiver) {
                    return err(p("senders"), "contains the receiver");
                }
                if *count == 0 {
                    return err(p("count"), "must be ≥ 1");
                }
                size("size_min", *size_min)?;
                if size_max < size_min {
                    return err(p("size_max"), "must be ≥ size_min");
                }
            }
            Workload::Probe { src, dst, interval, size: sz, .. } => {
                self.host(&p("src"), *src)?;
                self.host(&p("dst"), *dst)?;
                if src == dst {
                    return err(p("dst"), "must differ from src");
                }
                if sz.0 < 40 || sz.0 > self.mtu.0 {
                    return err(p("size"), format!("must be in [40B, mtu = {}]", self.mtu));
                }
                // Probes sent faster than one probe's serialization on either host link (the echo returns
                // on the other) would queue there without bound.
                let slowest = self.host_rate(*src).min(self.host_rate(*dst));
                let least = slowest.tx_time(*sz);
                if *interval < least || *interval > MAX_DURATION {
                    return err(
                        p("interval"),
                        format!(
                            "must be in [{least}, {MAX_DURATION}] (a {sz} probe's transmission time at {slowest}), got {interval}"
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}
