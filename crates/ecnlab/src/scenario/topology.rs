//! Topology configs expanded into links: star, dumbbell, leaf-spine and fat-tree, with per-host overrides.

use super::{HostLink, Topology};
use crate::net::{LinkSpec, Node};
use crate::units::{Rate, Time};

fn link(a: Node, b: Node, rate: Rate, delay: Time) -> LinkSpec {
    LinkSpec { a, b, rate_ab: rate, rate_ba: rate, delay_ab: delay, delay_ba: delay }
}

impl Topology {
    pub fn host_count(&self) -> u32 {
        match self {
            Topology::Star { hosts, .. } => *hosts,
            Topology::Dumbbell { left, right, .. } => left.saturating_add(*right),
            Topology::LeafSpine { leaves, hosts_per_leaf, .. } => leaves.saturating_mul(*hosts_per_leaf),
            Topology::FatTree { k, .. } => k.saturating_pow(3) / 4,
        }
    }

    pub fn host_overrides(&self) -> &[HostLink] {
        match self {
            Topology::Star { host_links, .. }
            | Topology::Dumbbell { host_links, .. }
            | Topology::LeafSpine { host_links, .. }
            | Topology::FatTree { host_links, .. } => host_links,
        }
    }

    /// Number of switches and every link (host links first, host h's link at index h).
    pub fn links(&self) -> (u32, Vec<LinkSpec>) {
        let hosts = self.host_count();
        // Host h's switch, rate and delay before overrides.
        let (switches, attach, rate, delay): (u32, Box<dyn Fn(u32) -> u32>, Rate, Time) = match *self {
            Topology::Star { rate, delay, .. } => (1, Box::new(|_| 0), rate, delay),
            Topology::Dumbbell { left, rate, delay, .. } => (2, Box::new(move |h| (h >= left) as u32), rate, delay),
            Topology::LeafSpine { leaves, spines, hosts_per_leaf, rate, delay, .. } => {
                (leaves + spines, Box::new(move |h| h / hosts_per_leaf), rate, delay)
            }
            Topology::FatTree { k, rate, delay, .. } => {
                let half = k / 2;
                (k * k + half * half, Box::new(move |h| h / half), rate, delay)
            }
        };
        let mut per_host = vec![(rate, delay, Time::ZERO); hosts as usize];
        for o in self.host_overrides() {
            for &h in o.hosts.0.iter().filter(|&&h| h < hosts) {
                let e = &mut per_host[h as usize];
                *e = (o.rate.unwrap_or(e.0), o.delay.unwrap_or(e.1), o.extra_delay.unwrap_or(e.2));
            }
        }
        let mut links: Vec<LinkSpec> = per_host
            .iter()
            .enumerate()
            .map(|(h, &(r, d, extra))| LinkSpec {
                a: Node::Host(h as u32),
                b: Node::Switch(attach(h as u32)),
                rate_ab: r,
                rate_ba: r,
                delay_ab: d + extra,
                delay_ba: d,
            })
            .collect();
        match *self {
            Topology::Star { .. } => {}
            Topology::Dumbbell { bottleneck_rate, bottleneck_delay, .. } => {
                links.push(link(Node::Switch(0), Node::Switch(1), bottleneck_rate, bottleneck_delay));
            }
            Topology::LeafSpine { leaves, spines, rate, delay, fabric_rate, fabric_delay, .. } => {
                let (r, d) = (fabric_rate.unwrap_or(rate), fabric_delay.unwrap_or(delay));
                for l in 0..leaves {
                    for s in 0..spines {
                        links.push(link(Node::Switch(l), Node::Switch(leaves + s), r, d));
                    }
                }
            }
            Topology::FatTree { k, rate, delay, .. } => {
                let half = k / 2;
                let (edge, agg, core) =
                    (|p: u32, i: u32| p * half + i, |p: u32, i: u32| k * half + p * half + i, |c: u32| k * k + c);
                for p in 0..k {
                    for e in 0..half {
                        for a in 0..half {
                            links.push(link(Node::Switch(edge(p, e)), Node::Switch(agg(p, a)), rate, delay));
                        }
                    }
                    for a in 0..half {
                        for c in 0..half {
                            links.push(link(Node::Switch(agg(p, a)), Node::Switch(core(a * half + c)), rate, delay));
                        }
                    }
                }
            }
        }
        (switches, links)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Network;
    use crate::units::Bytes;

    /// `leaves` × 12 hosts, `spines` spines, 10 Gb/s, 1 us links.
    fn leaf_spine(leaves: u32, spines: u32) -> Topology {
        Topology::LeafSpine {
            leaves,
            spines,
            hosts_per_leaf: 12,
            rate: Rate::gbps(10),
            delay: Time::from_us(1),
            fabric_rate: None,
            fabric_delay: None,
            host_links: vec![],
        }
    }

    #[test]
    fn leaf_spine_has_four_hop_paths_and_ecmp_over_every_spine() {
        let t = leaf_spine(4, 4);
        let (switches, links) = t.links();
        assert_eq!((t.host_count(), switches, links.len()), (48, 8, 48 + 16));
        let net = Network::build(48, switches as usize, &links, Bytes(1500)).unwrap();
        // h0 (leaf 0) → h47 (leaf 3): host→leaf→spine→leaf→host, 4 links each way.
        let one_way = net.one_way(0, 47, Bytes(1500));
        assert_eq!(one_way, Time::from_ns(4 * (1_000 + 1_200)));
        // Same-leaf pairs stay under the leaf: 2 links.
        assert_eq!(net.one_way(0, 1, Bytes(1500)), Time::from_ns(2 * 2_200));
    }

    #[test]
    fn ecmp_spreads_flows_within_10_percent_across_twelve_spines() {
        let t = leaf_spine(12, 12);
        let (switches, links) = t.links();
        let net = Network::build(144, switches as usize, &links, Bytes(1500)).unwrap();
        // Flows from leaf 0 to leaf 11, hashed as the simulator hashes them (flow id × constant ^ seed).
        let mut per_spine = [0u32; 12];
        for flow in 0..24_000u64 {
            let hash = flow.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 1;
            let p = net.route(0, 143, hash);
            match net.ports[p as usize].to {
                Node::Switch(s) => per_spine[(s - 12) as usize] += 1,
                other => panic!("leaf 0 sent a remote flow to {other:?}"),
            }
        }
        assert!(per_spine.iter().all(|&c| (c as f64 - 2_000.0).abs() <= 200.0), "{per_spine:?}");
    }

    #[test]
    fn fat_tree_k4_has_16_hosts_20_switches_and_six_hop_paths() {
        let t = Topology::FatTree { k: 4, rate: Rate::gbps(10), delay: Time::from_us(1), host_links: vec![] };
        let (switches, links) = t.links();
        assert_eq!((t.host_count(), switches), (16, 20));
        assert_eq!(links.len(), 16 + 4 * (2 * 2 + 2 * 2));
        let net = Network::build(16, switches as usize, &links, Bytes(1500)).unwrap();
        // Across pods: host→edge→agg→core→agg→edge→host = 6 links.
        assert_eq!(net.one_way(0, 15, Bytes(1500)), Time::from_ns(6 * 2_200));
        // Same edge: 2 links; same pod, other edge: 4.
        assert_eq!(net.one_way(0, 1, Bytes(1500)), Time::from_ns(2 * 2_200));
        assert_eq!(net.one_way(0, 2, Bytes(1500)), Time::from_ns(4 * 2_200));
    }
}
