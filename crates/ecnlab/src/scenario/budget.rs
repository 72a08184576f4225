//! What a scenario will hold in memory, estimated from its fields before anything big is built, against `limits.max_memory`.
//!
//! The estimate adds up what grows with the input: flow records (every flow opened stays for its FCT row), host
//! sets as expanded, route tables and ports, incast round times, and the rows of the time series. Each term is an
//! upper bound in spirit: counts are the most the workload can open in the run (a count given, or the run's span
//! over the shortest time one flow or round can take), priced at per-item sizes measured on release builds with
//! some margin. Not counted: packets queued in buffers (bounded by the buffers), `observe.trace` records and
//! `observe.rtt_samples` rows (they grow with events, which `limits.max_events` bounds), and the CDF tables.

use super::*;
use crate::units::PS_PER_S;

/// One flow's record: its sender and receiver state, its FCT row, its slot in the workload. Measured: a query of
/// 10⁶ flows peaks at 0.99 GB of resident memory; rounded up.
pub const FLOW_BYTES: u64 = 1024;
/// One egress port with its queues, scheduler, marker and statistics (a generous round figure; a port with
/// occupancy histograms holds one small histogram per queue).
const PORT_BYTES: u64 = 4096;
/// One expanded host of a host set.
const HOST_ENTRY_BYTES: u64 = 4;
/// One value of a series row (f64), and each row's own vector header.
const CELL_BYTES: u64 = 8;
const ROW_BYTES: u64 = 24;
/// Without `/proc/meminfo`: the default limit.
const FALLBACK_MAX_MEMORY: Bytes = Bytes(8_000_000_000);

/// `limits.max_memory` when not given: half of the machine's memory (MemTotal in `/proc/meminfo`), else 8 GB.
/// Resolved when a scenario is checked, never written into the scenario: the resolved `config.toml` of a run does
/// not depend on the machine it ran on.
pub fn default_max_memory() -> Bytes {
    let total_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines().find_map(|l| l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
    });
    total_kib.map_or(FALLBACK_MAX_MEMORY, |k| Bytes(k.saturating_mul(1024) / 2))
}

/// `bytes` for people: `17.2GB`, `312.5MB`, `900B` (decimal units, as the scenario's sizes).
pub fn human(bytes: u64) -> String {
    const UNITS: [(&str, f64); 4] = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)];
    match UNITS.iter().find(|u| bytes as f64 >= u.1) {
        Some((unit, scale)) => format!("{:.1}{unit}", bytes as f64 / scale),
        None => format!("{bytes}B"),
    }
}

/// One term of the estimate: the field that makes it large, what it is, its size in bytes.
#[derive(Debug)]
pub struct Item {
    pub path: String,
    pub what: &'static str,
    pub bytes: u64,
}

/// Route tables as `net::Network` stores them (`route_table_bytes` after the build), bounded before it: a next
/// hop per (switch, destination switch), with every switch counted as a destination, and each host's
/// attachment, 8 B each.
fn route_bytes(switches: u64, hosts: u64) -> u64 {
    switches.saturating_mul(switches).saturating_mul(8).saturating_add(hosts.saturating_mul(8))
}

/// How many times something that takes at least `period` can happen within `span` (at least once).
fn times_in(span: Time, period: Time) -> u64 {
    (span.0 / period.0.max(1)).max(1)
}

impl Scenario {
    /// The terms of the memory estimate (see the module comment), on a scenario whose fields are already valid.
    pub fn memory_items(&self) -> Vec<Item> {
        let (switches, links) = self.topology.links();
        let hosts = self.host_count() as u64;
        // Host h's link is links[h]: its rate and its one-way delays.
        let rate = |h: u32| links.get(h as usize).map_or(Rate(1), |l| l.rate_ab).max(Rate(1));
        let delay = |h: u32| links.get(h as usize).map_or(Time::ZERO, |l| l.delay_ab.min(l.delay_ba));
        let mut items = vec![Item {
            path: "topology".into(),
            what: "route tables and ports",
            bytes: route_bytes(switches as u64, hosts)
                .saturating_add((links.len() as u64 * 2).saturating_mul(PORT_BYTES + self.switch.queues as u64 * 64)),
        }];
        let mut set = |path: String, s: &HostSet| {
            items.push(Item { path, what: "host-set entries", bytes: s.0.len() as u64 * HOST_ENTRY_BYTES })
        };
        for (i, l) in self.topology.host_overrides().iter().enumerate() {
            set(format!("topology.host_links.{i}.hosts"), &l.hosts);
        }
        for (i, w) in self.workloads.iter().enumerate() {
            match w {
                Workload::Flows { src, .. } => set(format!("workloads.{i}.src"), src),
                Workload::Incast { senders, .. } | Workload::Query { senders, .. } => {
                    set(format!("workloads.{i}.senders"), senders)
                }
                Workload::Poisson { hosts: Some(h), .. } => set(format!("workloads.{i}.hosts"), h),
                _ => {}
            }
        }
        let flows = |path: String, n: u64| Item { path, what: "flow records", bytes: n.saturating_mul(FLOW_BYTES) };
        for (i, w) in self.workloads.iter().enumerate() {
            let p = |f: &str| format!("workloads.{i}.{f}");
            match w {
                Workload::Flows { src, .. } => items.push(flows(p("src"), src.0.len() as u64)),
                Workload::Query { count, .. } => {
                    items.push(Item { path: p("count"), what: "query records", ..flows(p("count"), *count as u64) })
                }
                Workload::Incast { senders, receiver, block, rounds, start, .. } => {
                    items.push(flows(p("senders"), senders.0.len() as u64));
                    // A round moves at least one block per sender through the receiver's link.
                    let round = rate(*receiver).tx_time(Bytes(
                        (block.0.saturating_add(crate::packet::HEADER_BYTES as u64))
                            .saturating_mul(senders.0.len() as u64),
                    ));
                    let n = (*rounds as u64).min(times_in(self.duration.saturating_sub(*start), round));
                    items.push(Item { path: p("rounds"), what: "incast round times", bytes: n * CELL_BYTES });
                }
                Workload::BackToBack { src, dst, size, start, count, .. } => {
                    // Each flow at least crosses both host links and is acknowledged back: two one-way trips
                    // of each link plus its own serialization at the sender's link.
                    let one = rate(*src).tx_time(Bytes(size.0.saturating_add(crate::packet::HEADER_BYTES as u64)))
                        + Time(delay(*src).0.saturating_add(delay(*dst).0).saturating_mul(2));
                    let most = times_in(self.duration.saturating_sub(*start), one);
                    items.push(flows(p("count"), count.map_or(most, |c| (c as u64).min(most))));
                }
                Workload::Poisson { flows: n, start, stop, .. } => {
                    let span = stop.unwrap_or(self.duration).min(self.duration).saturating_sub(*start);
                    let expected = self.poisson_min_gap(w).map_or(0.0, |g| span.0 as f64 / g);
                    // Arrivals in the span are Poisson: six standard deviations above the mean bound them.
                    let most = (expected + 6.0 * expected.sqrt() + 1.0).min(u64::MAX as f64) as u64;
                    let (path, k) = match n {
                        Some(n) if *n <= most => (p("flows"), *n),
                        _ => (p("load"), most),
                    };
                    items.push(flows(path, k));
                }
                Workload::Probe { .. } => {} // a counter and a fixed-size histogram
            }
        }
        let o = &self.observe;
        if o.sample_interval > Time::ZERO {
            let samples = self.duration.0 / o.sample_interval.0 + 1;
            let watched = if o.ports.is_empty() { links.len() as u64 * 2 } else { o.ports.len() as u64 };
            // The queues series has a column per watched port and queue (at most the most queues of any port),
            // the delivered series one per class (at most 256), the cwnd series one per listed flow.
            let most_queues = self.ports.iter().filter_map(|p| p.queues).chain([self.switch.queues]).max().unwrap_or(1);
            let cells = 3 + watched * most_queues as u64 + 256 + o.cwnd.len() as u64;
            let row = 3 * ROW_BYTES + cells * CELL_BYTES;
            items.push(Item {
                path: "observe.sample_interval".into(),
                what: "time-series rows",
                bytes: samples.saturating_mul(row),
            });
        }
        items
    }

    /// The shortest mean gap between a Poisson workload's arrivals, in ps: the smallest mean flow size of its CDFs
    /// over the load times the capacity (host links of the senders, or `dst`'s link). `None` when a CDF does not load.
    pub(super) fn poisson_min_gap(&self, w: &Workload) -> Option<f64> {
        let Workload::Poisson { hosts, dst, load, cdf, .. } = w else { return None };
        let (_, links) = self.topology.links();
        let rate = |h: u32| links.get(h as usize).map_or(0, |l| l.rate_ab.0) as f64;
        let capacity = match dst {
            Some(d) => rate(*d),
            None => match hosts {
                Some(h) => {
                    let mut v = h.0.clone();
                    v.sort_unstable();
                    v.dedup();
                    v.iter().map(|&h| rate(h)).sum()
                }
                None => (0..self.host_count()).map(rate).sum(),
            },
        };
        let mean = cdf
            .iter()
            .map(|c| crate::dist::load_cdf(c).ok().map(|t| t.mean().max(1.0)))
            .min_by(|a, b| a.unwrap_or(f64::INFINITY).total_cmp(&b.unwrap_or(f64::INFINITY)))??;
        Some(mean * 8.0 / (load * capacity) * PS_PER_S as f64)
    }

    /// Refuses a scenario whose estimate exceeds `limits.max_memory` (or the default), naming the largest term's
    /// field.
    pub(super) fn check_memory(&self) -> Result<(), Error> {
        let limit = self.limits.max_memory.unwrap_or_else(default_max_memory);
        let items = self.memory_items();
        let total = items.iter().fold(0u64, |s, i| s.saturating_add(i.bytes));
        if total <= limit.0 {
            return Ok(());
        }
        let top = items.iter().max_by_key(|i| i.bytes).expect("the topology is always an item");
        let given = if self.limits.max_memory.is_some() { "" } else { " (by default half of the machine's memory)" };
        let all = if human(top.bytes) != human(total) { format!(" ({} in all)", human(total)) } else { String::new() };
        Err(Error::config(
            &top.path,
            format!(
                "would hold about {} of {}{all}; limits.max_memory is {}{given}: lower this field or raise the limit",
                human(top.bytes),
                top.what,
                human(limit.0)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_and_the_machine_default() {
        assert_eq!(human(17_179_869_184), "17.2GB");
        assert_eq!(human(900), "900B");
        assert!(default_max_memory().0 >= 1_000_000);
        assert_eq!(route_bytes(2, 3), 2 * 2 * 8 + 3 * 8);
    }
}
