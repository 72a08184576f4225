//! The network graph: hosts, switches, one egress port per link direction, and shortest-path routing with
//! per-flow ECMP.

pub mod pfc;

use crate::units::{Bytes, Rate, Time};
use std::collections::{HashMap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    Host(u32),
    Switch(u32),
}

/// One direction of a link: the port at `from` that transmits toward `to`.
#[derive(Clone, Debug)]
pub struct PortSpec {
    pub from: Node,
    pub to: Node,
    pub rate: Rate,
    pub delay: Time,
    pub mtu: Bytes,
}

impl PortSpec {
    pub fn name(&self) -> String {
        format!("{}->{}", node_name(self.from), node_name(self.to))
    }
}

pub fn node_name(n: Node) -> String {
    match n {
        Node::Host(h) => format!("h{h}"),
        Node::Switch(s) => format!("s{s}"),
    }
}

/// A full-duplex link between two nodes; each direction may have its own rate and delay.
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub a: Node,
    pub b: Node,
    pub rate_ab: Rate,
    pub rate_ba: Rate,
    pub delay_ab: Time,
    pub delay_ba: Time,
}

#[derive(Clone, Debug, Default)]
pub struct Network {
    pub hosts: usize,
    pub switches: usize,
    pub ports: Vec<PortSpec>,
    /// The NIC port of each host.
    pub host_port: Vec<u32>,
    /// At `switch × hosts + destination host`: `(port, 1)` where one next hop leads there, else
    /// `(start, n)`, a range of `next_ports` to spread flows over (one flat table: one load per hop without
    /// ECMP, two with).
    routes: Vec<(u32, u16)>,
    next_ports: Vec<u32>,
    /// At n: `remainder_magic(n)`, for every ECMP width n up to the widest route.
    ecmp_magic: Vec<u64>,
}

/// The multiplier with which `remainder` computes `a % n` for every 32-bit `a` (Lemire, Kaser and Kurz,
/// "Faster remainder by direct computation", 2019, §3): ⌈2^64 / n⌉.
fn remainder_magic(n: u32) -> u64 {
    (u64::MAX / n as u64).wrapping_add(1)
}

/// `a % n` by two multiplications instead of a division (tens of cycles on the hop's path), exact for every
/// 32-bit `a` and `n ≥ 1` (ibid., Theorem 1), given `magic = remainder_magic(n)`.
#[inline(always)]
fn remainder(a: u32, n: u32, magic: u64) -> u32 {
    let low = magic.wrapping_mul(a as u64);
    ((low as u128 * n as u128) >> 64) as u32
}

impl Network {
    /// Builds ports for every link direction and routing tables. Hosts must have exactly one link.
    pub fn build(hosts: usize, switches: usize, links: &[LinkSpec], mtu: Bytes) -> Result<Network, String> {
        let mut net = Network { hosts, switches, ..Network::default() };
        let mut host_port = vec![None; hosts];
        let mut adj: Vec<Vec<u32>> = vec![Vec::new(); hosts + switches]; // ports leaving each node
        let idx = |n: Node| match n {
            Node::Host(h) => h as usize,
            Node::Switch(s) => hosts + s as usize,
        };
        for l in links {
            for (from, to, rate, delay) in [(l.a, l.b, l.rate_ab, l.delay_ab), (l.b, l.a, l.rate_ba, l.delay_ba)] {
                let id = net.ports.len() as u32;
                net.ports.push(PortSpec { from, to, rate, delay, mtu });
                adj[idx(from)].push(id);
                if let Node::Host(h) = from {
                    if host_port[h as usize].replace(id).is_some() {
                        return Err(format!("host h{h} has more than one link"));
                    }
                }
            }
        }
        net.host_port = host_port
            .into_iter()
            .enumerate()
            .map(|(h, p)| p.ok_or_else(|| format!("host h{h} has no link")))
            .collect::<Result<_, _>>()?;
        // BFS from each destination host over switches; next hops are neighbours one step closer.
        net.routes = vec![(0, 0); switches * hosts];
        let mut dist = vec![u32::MAX; hosts + switches];
        let mut hop_sets: HashMap<Vec<u32>, u32> = HashMap::new();
        for dst in 0..hosts {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[dst] = 0;
            let mut q = VecDeque::from([dst]);
            while let Some(u) = q.pop_front() {
                // Traverse links in reverse: a node v reaches u if v has a port to u.
                for &p in &adj[u] {
                    let v = idx(net.ports[p as usize].to);
                    if dist[v] == u32::MAX && (v >= hosts) {
                        dist[v] = dist[u] + 1;
                        q.push_back(v);
                    }
                }
            }
            for s in 0..switches {
                let start = net.next_ports.len() as u32;
                let here = dist[hosts + s];
                if here != u32::MAX {
                    for &p in &adj[hosts + s] {
                        if dist[idx(net.ports[p as usize].to)].checked_add(1) == Some(here) {
                            net.next_ports.push(p);
                        }
                    }
                }
                let n = net.next_ports.len() as u32 - start;
                if n == 0 {
                    return Err(format!("switch s{s} has no route to host h{dst}"));
                }
                net.routes[s * hosts + dst] = if n == 1 {
                    (net.next_ports.pop().expect("one next hop"), 1)
                } else {
                    // Most destinations share a switch's set of next hops (a leaf's uplinks): store each set
                    // once, so the table a host's every send reads stays small enough for the cache.
                    let set = net.next_ports.split_off(start as usize);
                    let len = net.next_ports.len() as u32;
                    let at = *hop_sets.entry(set).or_insert_with_key(|set| {
                        net.next_ports.extend_from_slice(set);
                        len
                    });
                    (at, n as u16)
                };
            }
        }
        let widest = net.routes.iter().map(|&(_, n)| n as u32).max().unwrap_or(0);
        net.ecmp_magic = (0..=widest).map(|n| remainder_magic(n.max(1))).collect();
        Ok(net)
    }

    /// The egress port at switch `s` for a packet of `flow` to host `dst`: ECMP by a per-flow hash.
    #[inline]
    pub fn route(&self, s: u32, dst: u32, flow_hash: u64) -> u32 {
        let (start, n) = self.routes[s as usize * self.hosts + dst as usize];
        if n == 1 {
            return start;
        }
        let h = flow_hash ^ (s as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let h = (h ^ (h >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        // The high half is below 2^32: a 32-bit remainder, the same value as a 64-bit one.
        let i = remainder((h >> 32) as u32, n as u32, self.ecmp_magic[n as usize]);
        self.next_ports[start as usize + i as usize]
    }

    /// Base RTT between two hosts: propagation both ways plus store-and-forward serialization of one MTU
    /// data packet on the way out and one `ack_bytes` ACK on the way back (first ECMP path).
    pub fn base_rtt(&self, src: u32, dst: u32, data_bytes: Bytes, ack_bytes: Bytes) -> Time {
        self.one_way(src, dst, data_bytes) + self.one_way(dst, src, ack_bytes)
    }

    pub fn one_way(&self, src: u32, dst: u32, bytes: Bytes) -> Time {
        let mut t = Time::ZERO;
        let mut p = self.host_port[src as usize];
        for _ in 0..64 {
            let spec = &self.ports[p as usize];
            t += spec.rate.tx_time(bytes) + spec.delay;
            match spec.to {
                Node::Host(_) => return t,
                Node::Switch(s) => p = self.route(s, dst, 0),
            }
        }
        unreachable!("routing loop")
    }

    pub fn port_by_name(&self, name: &str) -> Option<u32> {
        self.ports.iter().position(|p| p.name() == name).map(|i| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(a: Node, b: Node, gbps: u64, us: u64) -> LinkSpec {
        LinkSpec {
            a,
            b,
            rate_ab: Rate::gbps(gbps),
            rate_ba: Rate::gbps(gbps),
            delay_ab: Time::from_us(us),
            delay_ba: Time::from_us(us),
        }
    }

    #[test]
    fn remainder_by_multiplication_equals_the_division() {
        // The division is the second implementation: every divisor up to 300 and a few large ones, against
        // the extremes and pseudo-random numerators.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let divisors = (1..=300).chain([1 << 16, 65_535, 1_000_003, u32::MAX - 1, u32::MAX]);
        for n in divisors {
            let magic = remainder_magic(n);
            for a in [0, 1, n - 1, n, n.wrapping_add(1), u32::MAX - 1, u32::MAX] {
                assert_eq!(remainder(a, n, magic), a % n, "{a} % {n}");
            }
            for _ in 0..2_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let a = (x >> 32) as u32;
                assert_eq!(remainder(a, n, magic), a % n, "{a} % {n}");
            }
        }
    }

    #[test]
    fn star_routes_and_base_rtt() {
        let links: Vec<_> = (0..3).map(|h| link(Node::Host(h), Node::Switch(0), 10, 20)).collect();
        let net = Network::build(3, 1, &links, Bytes(1500)).unwrap();
        let to_h2 = net.route(0, 2, 12345);
        assert_eq!(net.ports[to_h2 as usize].to, Node::Host(2));
        // 4 × 20 us + 2 × 1.2 us (data) + 2 × 32 ns (40 B ACK).
        let rtt = net.base_rtt(0, 2, Bytes(1500), Bytes(40));
        assert_eq!(rtt, Time::from_ns(80_000 + 2_400 + 64));
    }

    #[test]
    fn ecmp_spreads_flows_over_equal_paths() {
        // Two leaves, two spines, one host per leaf.
        let (l0, l1, s0, s1) = (Node::Switch(0), Node::Switch(1), Node::Switch(2), Node::Switch(3));
        let links = vec![
            link(Node::Host(0), l0, 10, 1),
            link(Node::Host(1), l1, 10, 1),
            link(l0, s0, 10, 1),
            link(l0, s1, 10, 1),
            link(l1, s0, 10, 1),
            link(l1, s1, 10, 1),
        ];
        let net = Network::build(2, 4, &links, Bytes(1500)).unwrap();
        let mut counts = [0u32; 2];
        for f in 0..10_000u64 {
            let p = net.route(0, 1, f.wrapping_mul(0x2545_F491_4F6C_DD1D));
            counts[(net.ports[p as usize].to == s1) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (4500..5500).contains(&c)), "{counts:?}");
    }

    #[test]
    fn a_leafs_uplinks_are_stored_once_for_every_remote_host() {
        // Two leaves of two hosts, two spines: each leaf reaches the other leaf's two hosts over the same two
        // uplinks, so the ECMP table holds one set per leaf, and both destinations hash onto it alike.
        let (l0, l1, s0, s1) = (Node::Switch(0), Node::Switch(1), Node::Switch(2), Node::Switch(3));
        let mut links: Vec<_> = (0..4).map(|h| link(Node::Host(h), [l0, l1][h as usize / 2], 10, 1)).collect();
        links.extend([link(l0, s0, 10, 1), link(l0, s1, 10, 1), link(l1, s0, 10, 1), link(l1, s1, 10, 1)]);
        let net = Network::build(4, 4, &links, Bytes(1500)).unwrap();
        assert_eq!(net.next_ports.len(), 4, "{:?}", net.next_ports);
        for f in 0..100u64 {
            let hash = f.wrapping_mul(0x2545_F491_4F6C_DD1D);
            assert_eq!(net.route(0, 2, hash), net.route(0, 3, hash));
            assert_eq!(net.ports[net.route(0, 2, hash) as usize].from, l0);
        }
    }

    #[test]
    fn rejects_disconnected_hosts() {
        let links = vec![link(Node::Host(0), Node::Switch(0), 10, 1)];
        assert!(Network::build(2, 1, &links, Bytes(1500)).unwrap_err().contains("h1"));
    }
}
