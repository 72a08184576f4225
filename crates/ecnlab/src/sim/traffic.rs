//! Workload-driven traffic: Poisson flow arrivals at a target load with per-service flow-size CDFs and
//! optional per-flow RTT variation, and queries (many concurrent small flows into one receiver).

use super::item_rng;
use crate::dist::{load_cdf, load_rtt, FlowSizeCdf, RttDist};
use crate::engine::Rng;
use crate::error::Error;
use crate::net::Network;
use crate::packet::HEADER_BYTES;
use crate::scenario::{Connections, Services, Workload};
use crate::units::{Bytes, Time};
use std::collections::BTreeMap;

pub struct Poisson {
    pub hosts: Vec<u32>,
    pub dst: Option<u32>,
    /// Mean time between arrivals, ps.
    pub mean_gap: f64,
    pub max_flows: Option<u64>,
    pub stop: Option<Time>,
    pub services: Services,
    /// CDF of each service.
    pub cdfs: Vec<FlowSizeCdf>,
    /// The per-flow end-to-end base RTT distribution, already rescaled to its range.
    pub rtt: Option<RttDist>,
    pub rng: Rng,
    pub opened: u64,
    pub offered_bytes: u64,
    pub first: Time,
    pub last: Time,
    pub capacity_bps: f64,
    pub flows: Vec<u32>,
    /// `connections = "persistent"`: per (src, dst, class), the flow each of its connections carries now
    /// (or carried last), in the order the connections were opened.
    pub persistent: bool,
    pub pools: BTreeMap<(u32, u32, u8), Vec<u32>>,
    /// Flows that went on an idle connection instead of a new one.
    pub reused: u64,
    /// The network's host count (`Services::PairRule` numbers pairs by it).
    network_hosts: usize,
    /// Per service: the probability a drawn pair of it is kept (`Services::PairRule`).
    keep: Vec<f64>,
}

fn path(idx: u32, f: &str) -> String {
    format!("workloads.{idx}.{f}")
}

impl Poisson {
    pub fn new(seed: u64, idx: u32, w: &Workload, net: &Network) -> Result<Poisson, Error> {
        let Workload::Poisson { hosts, dst, load, flows, stop, cdf, services, rtt, connections, .. } = w else {
            unreachable!("Poisson::new on another workload")
        };
        let mut hosts: Vec<u32> = match hosts {
            Some(h) => h.0.iter().copied().filter(|h| Some(*h) != *dst).collect(),
            None => (0..net.hosts as u32).filter(|h| Some(*h) != *dst).collect(),
        };
        hosts.sort_unstable();
        hosts.dedup();
        let n_services = match services {
            Services::Single => 1,
            Services::Random { count } | Services::Pairs { count } | Services::PairRule { count } => *count as usize,
            Services::Weighted { probabilities } => probabilities.len(),
        };
        let loaded: Vec<FlowSizeCdf> = cdf
            .iter()
            .enumerate()
            .map(|(i, c)| load_cdf(c).map_err(|e| e.at(path(idx, &format!("cdf.{i}")))))
            .collect::<Result<_, _>>()?;
        let per_group = n_services / loaded.len();
        let cdfs: Vec<FlowSizeCdf> = (0..n_services).map(|s| loaded[s / per_group].clone()).collect();
        // The mean flow size over the service mix (for Pairs: the share of host pairs in each service).
        let shares: Vec<f64> = match services {
            Services::Single => vec![1.0],
            Services::Random { count } => vec![1.0 / *count as f64; *count as usize],
            Services::Weighted { probabilities } => probabilities.clone(),
            Services::Pairs { count } => {
                // Pairs dealt round robin: the first `pairs % count` services get one more than the rest (the
                // hosts exclude `dst` and are distinct, so every listed pair has two hosts).
                let m = hosts.len() as u64;
                let pairs = if dst.is_some() { m } else { m * m.saturating_sub(1) };
                let count = *count as u64;
                (0..count).map(|j| (pairs / count + (j < pairs % count) as u64) as f64 / pairs.max(1) as f64).collect()
            }
            Services::PairRule { count } => {
                // The pairs' shares of the services; each pair's rate is ∝ 1 / its mean (below). A pair's service
                // is (its destination's term + its source's term) mod count, so the destinations are counted by
                // their term once and each source adds them shifted: hosts × count steps, not hosts², which a
                // 100 000-host network could not afford.
                let c = *count as usize;
                let mut by_term = vec![0u64; c];
                match dst {
                    Some(d) => by_term[pair_rule_dst(net.hosts, *d, *count)] += 1,
                    None => hosts.iter().for_each(|&d| by_term[pair_rule_dst(net.hosts, d, *count)] += 1),
                }
                let mut n = vec![0u64; c];
                for &s in &hosts {
                    let src_term = pair_rule_src(s, *count);
                    for (t, &k) in by_term.iter().enumerate() {
                        n[(t + src_term) % c] += k;
                    }
                    if dst.is_none() {
                        // Not to itself.
                        n[pair_rule(net.hosts, s, s, *count)] -= 1;
                    }
                }
                let pairs = n.iter().sum::<u64>().max(1) as f64;
                n.iter().map(|&k| k as f64 / pairs).collect()
            }
        };
        let mean_bytes: f64 = match services {
            // Every pair offers the same bytes: the aggregate rate is the pairs' rates summed, i.e. the
            // capacity over the pairs' harmonic mean size.
            Services::PairRule { .. } => 1.0 / shares.iter().zip(&cdfs).map(|(p, c)| p / c.mean()).sum::<f64>(),
            _ => shares.iter().zip(&cdfs).map(|(p, c)| p * c.mean()).sum(),
        };
        // PairRule: a uniformly drawn pair is kept with probability smallest mean / its service's mean, so that
        // pairs arrive at rates ∝ 1 / their mean size.
        let smallest_mean = cdfs.iter().map(FlowSizeCdf::mean).fold(f64::INFINITY, f64::min);
        let keep = cdfs.iter().map(|c| smallest_mean / c.mean()).collect();
        let rate = |h: u32| net.ports[net.host_port[h as usize] as usize].rate.0 as f64;
        let capacity_bps = match dst {
            Some(d) => rate(*d),
            None => hosts.iter().map(|&h| rate(h)).sum(),
        };
        // λ = load · capacity / mean size (DESIGN "Load").
        let per_second = load * capacity_bps / (mean_bytes * 8.0);
        let rtt = match rtt {
            None => None,
            Some(r) => {
                let d = load_rtt(&r.dist).map_err(|e| e.at(path(idx, "rtt.dist")))?;
                // The lowest drawn RTT must cover the fabric's base RTT of every pair it may apply to.
                let mtu = Bytes(net.ports[0].mtu.0);
                let ack = Bytes(HEADER_BYTES as u64);
                let worst = match dst {
                    Some(d) => hosts.iter().map(|&s| net.base_rtt(s, *d, mtu, ack)).max(),
                    None => net.max_base_rtt(&hosts, mtu, ack),
                }
                .unwrap_or(Time::ZERO);
                if r.lo < worst {
                    return Err(Error::config(
                        path(idx, "rtt.lo"),
                        format!("{} is below the fabric's base RTT ({worst}); must be ≥ it", r.lo),
                    ));
                }
                Some(d.rescaled(r.lo, r.hi).map_err(|e| e.at(path(idx, "rtt.hi")))?)
            }
        };
        Ok(Poisson {
            hosts,
            dst: *dst,
            mean_gap: 1e12 / per_second,
            max_flows: *flows,
            stop: *stop,
            services: services.clone(),
            cdfs,
            rtt,
            rng: item_rng(seed, idx, 0),
            opened: 0,
            offered_bytes: 0,
            first: Time::MAX,
            last: Time::ZERO,
            capacity_bps,
            flows: vec![],
            persistent: *connections == Connections::Persistent,
            pools: BTreeMap::new(),
            reused: 0,
            network_hosts: net.hosts,
            keep,
        })
    }

    /// With persistent connections: `pair`'s longest-open connection whose flow has everything acknowledged
    /// (as the ns-2 scripts scan a pair's connections in order), if any, as (position in the pool, that flow).
    pub fn idle_connection(&self, pair: (u32, u32, u8), is_idle: impl Fn(u32) -> bool) -> Option<(usize, u32)> {
        if !self.persistent {
            return None;
        }
        let pool = self.pools.get(&pair)?;
        let slot = pool.iter().position(|&f| is_idle(f))?;
        Some((slot, pool[slot]))
    }

    /// Flow `f` now holds the connection at `slot` of `pair`'s pool, or a new one (`None`) at its end.
    pub fn carry(&mut self, pair: (u32, u32, u8), slot: Option<usize>, f: u32) {
        if !self.persistent {
            return;
        }
        let pool = self.pools.entry(pair).or_default();
        match slot {
            Some(i) => {
                pool[i] = f;
                self.reused += 1;
            }
            None => pool.push(f),
        }
    }

    /// The next flow: (src, dst, class, size, end-to-end base RTT target if varied).
    pub fn draw(&mut self) -> (u32, u32, u8, u64, Option<Time>) {
        loop {
            let (si, di, src, dst) = self.draw_pair();
            if let Services::PairRule { count } = self.services {
                let service = pair_rule(self.network_hosts, src, dst, count);
                if self.rng.uniform() >= self.keep[service] {
                    continue;
                }
            }
            return self.draw_flow(si, di, src, dst);
        }
    }

    /// A host pair drawn uniformly: (index of src in `hosts`, index of dst if all-to-all, src, dst).
    fn draw_pair(&mut self) -> (u64, Option<u64>, u32, u32) {
        let n = self.hosts.len() as u64;
        // The hosts' indices too: Pairs numbers the pair by them.
        let (si, di) = match self.dst {
            Some(_) => (self.rng.below(n), None),
            None => {
                let s = self.rng.below(n);
                let mut d = self.rng.below(n - 1);
                if d >= s {
                    d += 1;
                }
                (s, Some(d))
            }
        };
        let src = self.hosts[si as usize];
        let dst = match (self.dst, di) {
            (Some(d), _) => d,
            (None, d) => self.hosts[d.expect("a drawn destination") as usize],
        };
        (si, di, src, dst)
    }

    /// The flow of a drawn pair: its service, size and RTT target.
    fn draw_flow(&mut self, si: u64, di: Option<u64>, src: u32, dst: u32) -> (u32, u32, u8, u64, Option<Time>) {
        let n = self.hosts.len() as u64;
        let service = match &self.services {
            Services::Single => 0,
            Services::Random { count } => self.rng.below(*count as u64) as usize,
            Services::Weighted { probabilities } => {
                let u = self.rng.uniform();
                let mut acc = 0.0;
                probabilities
                    .iter()
                    .position(|p| {
                        acc += p;
                        u < acc
                    })
                    .unwrap_or(probabilities.len() - 1)
            }
            Services::Pairs { count } => {
                // Ordered pairs (src, dst ≠ src) numbered row by row, dealt round robin.
                let idx = match di {
                    None => si,
                    Some(di) => si * (n - 1) + if di > si { di - 1 } else { di },
                };
                (idx % *count as u64) as usize
            }
            Services::PairRule { count } => pair_rule(self.network_hosts, src, dst, *count),
        };
        let size = self.cdfs[service].sample(&mut self.rng).0.max(1);
        let rtt = self.rtt.as_ref().map(|d| d.sample(&mut self.rng));
        (src, dst, service as u8, size, rtt)
    }

    pub fn next_gap(&mut self) -> Time {
        Time(self.rng.exponential(self.mean_gap).round() as u64)
    }

    pub fn done(&self, now: Time) -> bool {
        self.max_flows.is_some_and(|m| self.opened >= m) || self.stop.is_some_and(|s| now >= s)
    }

    /// Offered bytes per second over the capacity, across the arrival span.
    pub fn offered_load(&self) -> Option<f64> {
        let span = self.last.saturating_sub(self.first).as_secs_f64();
        (self.opened > 1 && span > 0.0).then(|| {
            self.offered_bytes as f64 * 8.0 * (self.opened - 1) as f64 / self.opened as f64 / span / self.capacity_bps
        })
    }
}

/// The MQ-ECN authors' ns-2 script's service of the pair (`src` → `dst`) among `hosts` hosts:
/// ((dst + 1)·hosts + (src + 1)) mod `count` (`Services::PairRule`).
fn pair_rule(hosts: usize, src: u32, dst: u32, count: u8) -> usize {
    (pair_rule_dst(hosts, dst, count) + pair_rule_src(src, count)) % count as usize
}

/// `pair_rule`'s destination term, (dst + 1)·hosts mod count.
fn pair_rule_dst(hosts: usize, dst: u32, count: u8) -> usize {
    ((dst as u64 + 1) * hosts as u64 % count as u64) as usize
}

/// `pair_rule`'s source term, (src + 1) mod count.
fn pair_rule_src(src: u32, count: u8) -> usize {
    ((src as u64 + 1) % count as u64) as usize
}

pub struct Query {
    pub senders: Vec<u32>,
    pub receiver: u32,
    pub count: u32,
    pub size_min: u64,
    pub size_max: u64,
    pub class: u8,
    pub rng: Rng,
    pub flows: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::HostSet;

    fn leaf_spine() -> Network {
        let t = crate::scenario::Topology::LeafSpine {
            leaves: 4,
            spines: 4,
            hosts_per_leaf: 12,
            rate: crate::units::Rate::gbps(10),
            delay: Time::from_us(10),
            fabric_rate: None,
            fabric_delay: None,
            host_links: vec![],
        };
        let (sw, links) = t.links();
        Network::build(48, sw as usize, &links, Bytes(1500)).unwrap()
    }

    fn poisson(load: f64, services: Services, cdf: &[&str], dst: Option<u32>) -> Poisson {
        let w = Workload::Poisson {
            hosts: None,
            dst,
            load,
            flows: Some(20_000),
            start: Time::ZERO,
            stop: None,
            cdf: cdf.iter().map(|s| s.to_string()).collect(),
            services,
            rtt: None,
            connections: Default::default(),
        };
        Poisson::new(7, 0, &w, &leaf_spine()).unwrap()
    }

    /// Runs the generator alone: offered bytes over the arrival span, relative to the capacity.
    fn offered(p: &mut Poisson, n: usize) -> f64 {
        let (mut t, mut bytes) = (0u64, 0u64);
        for _ in 0..n {
            let (.., size, _) = p.draw();
            bytes += size;
            t += p.next_gap().0;
        }
        bytes as f64 * 8.0 / (t as f64 / 1e12) / p.capacity_bps
    }

    #[test]
    fn arrival_rate_is_load_times_capacity_over_mean_size() {
        let p = poisson(0.5, Services::Single, &["websearch"], None);
        let mean = FlowSizeCdf::builtin("websearch").unwrap().mean();
        let per_second = 0.5 * 48.0 * 10e9 / (mean * 8.0);
        assert!((1e12 / p.mean_gap - per_second).abs() < 1e-6 * per_second);
    }

    #[test]
    fn offered_load_over_20000_websearch_flows_is_within_5_percent() {
        for (load, dst) in [(0.3, None), (0.8, None), (0.5, Some(0))] {
            let mut p = poisson(load, Services::Single, &["websearch"], dst);
            let got = offered(&mut p, 20_000);
            assert!((got - load).abs() <= 0.05 * load, "target {load} (dst {dst:?}): offered {got}");
        }
    }

    #[test]
    fn the_authors_pair_rule_gives_each_sender_one_service_and_pairs_rates_by_their_mean() {
        // 48 hosts and 8 services: 48 ≡ 0 (mod 8), so pair (i → j) is in service (i + 1) mod 8, one per sender
        // (as in the authors' script, 144 hosts). Every service has 6 senders × 47 pairs; a pair's flows arrive
        // at a rate ∝ 1 / its CDF's mean, so each service's share of the flows is ∝ 1 / its mean.
        let cdf = ["websearch", "datamining", "cache", "hadoop"];
        let mut p = poisson(0.5, Services::PairRule { count: 8 }, &cdf, None);
        let mut class_of = [None; 48];
        let mut n = [0f64; 8];
        for _ in 0..40_000 {
            let (src, _, class, ..) = p.draw();
            assert_eq!(*class_of[src as usize].get_or_insert(class), class, "host {src} sends in one service");
            assert_eq!(class as u32, (src + 1) % 8);
            n[class as usize] += 1.0;
        }
        let w: Vec<f64> = (0..8).map(|s| 1.0 / FlowSizeCdf::builtin(cdf[s / 2]).unwrap().mean()).collect();
        let total: f64 = w.iter().sum();
        for s in 0..8 {
            let want = 40_000.0 * w[s] / total;
            assert!((n[s] - want).abs() < 4.0 * want.sqrt() + 1.0, "service {s}: {} flows, want {want:.0}", n[s]);
        }
        // Every pair offers the same bytes, so the aggregate offers the target load.
        let mut p = poisson(0.5, Services::PairRule { count: 2 }, &["websearch", "cache"], None);
        let got = offered(&mut p, 40_000);
        assert!((got - 0.5).abs() <= 0.05 * 0.5, "offered {got}");
    }

    #[test]
    fn the_pair_rules_rate_counts_every_pair_as_a_pair_by_pair_sum_does() {
        // 48 hosts onto 10 services (48 ≢ 0 mod 10: the destination matters): the aggregate rate, from the
        // services' shares counted per term, equals the per-pair rates summed pair by pair.
        let cdf = ["websearch", "cache"];
        let means: Vec<f64> = cdf.iter().map(|c| FlowSizeCdf::builtin(c).unwrap().mean()).collect();
        for dst in [None, Some(5)] {
            let p = poisson(0.5, Services::PairRule { count: 10 }, &cdf, dst);
            let mut sum = 0.0;
            let mut pairs = 0.0;
            for s in 0..48u32 {
                for d in (0..48u32).filter(|&d| d != s && dst.is_none_or(|x| x == d)) {
                    if dst == Some(s) {
                        continue;
                    }
                    sum += 1.0 / means[pair_rule(48, s, d, 10) / 5];
                    pairs += 1.0;
                }
            }
            let per_second = 0.5 * p.capacity_bps * sum / pairs / 8.0;
            assert!((1e12 / p.mean_gap - per_second).abs() < 1e-9 * per_second, "dst {dst:?}");
        }
    }

    #[test]
    fn host_pairs_are_dealt_evenly_onto_services() {
        // 48 × 47 ordered pairs onto 8 services, two per CDF: each service carries 1/8 of the flows.
        let mut p = poisson(0.5, Services::Pairs { count: 8 }, &["websearch", "datamining", "cache", "hadoop"], None);
        let mut n = [0u32; 8];
        for _ in 0..40_000 {
            n[p.draw().2 as usize] += 1;
        }
        assert!(n.iter().all(|&c| (c as f64 - 5_000.0).abs() < 350.0), "{n:?}");
        let _ = HostSet(vec![]);
    }
}
