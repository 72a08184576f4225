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

/// Where a host hangs off the fabric. Every host has one link, to one switch (its edge switch: the ToR of a
/// leaf-spine or fat-tree, the one switch of a star, a side's switch of a dumbbell), so a route to a host is
/// a route to its switch plus that switch's port down to it.
#[derive(Clone, Copy, Debug)]
struct Attachment {
    /// The host's switch as a column of the route table (`NO_COLUMN` for a host linked to a host).
    column: u32,
    /// The port at that switch toward the host: the last hop.
    down: u32,
}

/// The column of a host with no switch (only a network without switches has one).
const NO_COLUMN: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub struct Network {
    pub hosts: usize,
    pub switches: usize,
    pub ports: Vec<PortSpec>,
    /// The NIC port of each host.
    pub host_port: Vec<u32>,
    /// At each host: its switch's column in `routes` and the port down to it.
    attachment: Vec<Attachment>,
    /// At each column: the switch it stands for, one per switch with hosts (edge switches), in switch order.
    edge_switches: Vec<u32>,
    /// At `switch × edge_switches.len() + column`: `(port, 1)` where one next hop leads toward the column's
    /// switch, `(start, n)`, a range of `next_ports` to spread flows over, or `(0, 0)` at the column's switch
    /// itself, where the next hop is the port down to the destination host (one flat table: one load per hop
    /// without ECMP, two with). Per destination switch, not per host: a fat-tree of k = 48 holds 2 880 × 1 152
    /// entries (27 MB) where one per host would need 2 880 × 27 648 (637 MB).
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

/// The two largest values seen, each with its host, from distinct hosts.
type TopTwo = [Option<(Time, u32)>; 2];

fn keep_top_two(top: &mut TopTwo, value: Time, host: u32) {
    if top.iter().flatten().any(|&(_, h)| h == host) {
        return;
    }
    if top[0].is_none_or(|(v, _)| value > v) {
        top[1] = top[0];
        top[0] = Some((value, host));
    } else if top[1].is_none_or(|(v, _)| value > v) {
        top[1] = Some((value, host));
    }
}

impl Network {
    /// Builds ports for every link direction and routing tables. Hosts must have exactly one link.
    pub fn build(hosts: usize, switches: usize, links: &[LinkSpec], mtu: Bytes) -> Result<Network, String> {
        let mut net = Network { hosts, switches, ..Network::default() };
        let mut host_port = vec![None; hosts];
        let mut down = vec![0u32; hosts];
        // The ports from each switch to another switch, in link order: the fabric a route crosses (a port to a
        // host is only ever a last hop).
        let mut fabric: Vec<Vec<u32>> = vec![Vec::new(); switches];
        for l in links {
            for (from, to, rate, delay) in [(l.a, l.b, l.rate_ab, l.delay_ab), (l.b, l.a, l.rate_ba, l.delay_ba)] {
                let id = net.ports.len() as u32;
                net.ports.push(PortSpec { from, to, rate, delay, mtu });
                match (from, to) {
                    (Node::Host(h), _) => {
                        if host_port[h as usize].replace(id).is_some() {
                            return Err(format!("host h{h} has more than one link"));
                        }
                    }
                    (Node::Switch(s), Node::Switch(_)) => fabric[s as usize].push(id),
                    (Node::Switch(_), Node::Host(h)) => down[h as usize] = id,
                }
            }
        }
        net.host_port = host_port
            .into_iter()
            .enumerate()
            .map(|(h, p)| p.ok_or_else(|| format!("host h{h} has no link")))
            .collect::<Result<_, _>>()?;
        // One column per switch with hosts.
        let edge_of = |h: usize| match net.ports[net.host_port[h] as usize].to {
            Node::Switch(e) => Some(e as usize),
            Node::Host(_) => None,
        };
        let mut column_of = vec![NO_COLUMN; switches];
        for h in 0..hosts {
            if let Some(e) = edge_of(h) {
                column_of[e] = 0;
            }
        }
        for (e, c) in column_of.iter_mut().enumerate().filter(|(_, c)| **c == 0) {
            *c = net.edge_switches.len() as u32;
            net.edge_switches.push(e as u32);
        }
        net.attachment = (0..hosts)
            .map(|h| Attachment { column: edge_of(h).map_or(NO_COLUMN, |e| column_of[e]), down: down[h] })
            .collect();
        // BFS from each edge switch over the fabric (links run both ways: the ports leaving a switch are the
        // ways into it); a switch's next hops are its neighbours one step closer, in its ports' order. A host
        // is one step beyond its switch, so these are exactly the next hops toward each of its hosts.
        let columns = net.edge_switches.len();
        net.routes = vec![(0, 0); switches * columns];
        let mut dist = vec![u32::MAX; switches];
        let mut queue = VecDeque::new();
        let mut hop_sets: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut hops = Vec::new();
        // At each column: the first switch with no way to it.
        let mut cut_off: Vec<Option<u32>> = vec![None; columns];
        let far_switch = |p: u32| match net.ports[p as usize].to {
            Node::Switch(v) => v as usize,
            Node::Host(_) => unreachable!("a fabric port leads to a switch"),
        };
        for (c, &e) in net.edge_switches.iter().enumerate() {
            dist.fill(u32::MAX);
            dist[e as usize] = 0;
            queue.push_back(e as usize);
            while let Some(u) = queue.pop_front() {
                for &p in &fabric[u] {
                    let v = far_switch(p);
                    if dist[v] == u32::MAX {
                        dist[v] = dist[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for s in (0..switches).filter(|&s| s != e as usize) {
                let here = dist[s];
                hops.clear();
                if here != u32::MAX {
                    hops.extend(fabric[s].iter().filter(|&&p| dist[far_switch(p)].checked_add(1) == Some(here)));
                }
                net.routes[s * columns + c] = match hops.len() {
                    0 => {
                        cut_off[c].get_or_insert(s as u32);
                        continue;
                    }
                    1 => (hops[0], 1),
                    n => {
                        // Most destinations share a switch's set of next hops (a leaf's uplinks): store each set
                        // once, so the table a host's every send reads stays small enough for the cache.
                        let at = match hop_sets.get(hops.as_slice()) {
                            Some(&at) => at,
                            None => {
                                let at = net.next_ports.len() as u32;
                                net.next_ports.extend_from_slice(&hops);
                                hop_sets.insert(hops.clone(), at);
                                at
                            }
                        };
                        (at, n as u16)
                    }
                };
            }
        }
        // The first host (then the first switch) without a route, as a BFS from every host in turn finds it.
        for (h, a) in net.attachment.iter().enumerate() {
            let cut = match a.column {
                NO_COLUMN => (switches > 0).then_some(0),
                c => cut_off[c as usize],
            };
            if let Some(s) = cut {
                return Err(format!("switch s{s} has no route to host h{h}"));
            }
        }
        let widest = net.routes.iter().map(|&(_, n)| n as u32).max().unwrap_or(0);
        net.ecmp_magic = (0..=widest).map(|n| remainder_magic(n.max(1))).collect();
        Ok(net)
    }

    /// Memory held by the route table: `8 × switches × edge switches` (a 4-byte port or range start and a
    /// 2-byte width, padded, per switch and switch with hosts) `+ 8 × hosts` (each host's switch column and
    /// last-hop port) `+ 4 × ECMP port entries` (each distinct set of equal next hops once: a leaf's or
    /// aggregation switch's uplinks, at most the switch-to-switch ports) `+ 4 × edge switches + 8 × (widest
    /// ECMP width + 1)`. Estimate it before building with switches × edge switches ≤ switches × min(switches,
    /// hosts) for the first term; the ECMP entries are at most the number of switch-to-switch ports.
    pub fn route_table_bytes(&self) -> u64 {
        (self.routes.len() * std::mem::size_of::<(u32, u16)>()
            + self.attachment.len() * std::mem::size_of::<Attachment>()
            + self.next_ports.len() * 4
            + self.edge_switches.len() * 4
            + self.ecmp_magic.len() * 8) as u64
    }

    /// The egress port at switch `s` for a packet of `flow` to host `dst`: ECMP by a per-flow hash.
    #[inline]
    pub fn route(&self, s: u32, dst: u32, flow_hash: u64) -> u32 {
        let to = self.attachment[dst as usize];
        let (start, n) = self.routes[s as usize * self.edge_switches.len() + to.column as usize];
        if n <= 1 {
            // One next hop, or none at the destination's own switch (n = 0), where the last hop is the port
            // down to the host: a select, not a third branch, so a hop still takes one of two ways.
            return if n == 0 { to.down } else { start };
        }
        self.ecmp(s, start, n, flow_hash)
    }

    /// One of the `n ≥ 2` equal next hops from `next_ports[start..]` at switch `s`, by the flow's hash: the
    /// same for every destination behind the same set, so a flow keeps its path.
    #[inline(always)]
    fn ecmp(&self, s: u32, start: u32, n: u16, flow_hash: u64) -> u32 {
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

    /// The time from switch `s` to the switch of `column` along the path `one_way` takes (flow hash 0):
    /// propagation plus serialization of `bytes` on each switch-to-switch link.
    fn fabric_one_way(&self, mut s: u32, column: u32, bytes: Bytes) -> Time {
        let mut t = Time::ZERO;
        for _ in 0..64 {
            if s == self.edge_switches[column as usize] {
                return t;
            }
            let (start, n) = self.routes[s as usize * self.edge_switches.len() + column as usize];
            let p = if n == 1 { start } else { self.ecmp(s, start, n, 0) };
            let spec = &self.ports[p as usize];
            t += spec.rate.tx_time(bytes) + spec.delay;
            match spec.to {
                Node::Switch(next) => s = next,
                Node::Host(_) => unreachable!("a port between switches"),
            }
        }
        unreachable!("routing loop")
    }

    /// The largest `base_rtt` over ordered pairs of distinct hosts of `hosts` (`None` with fewer than two),
    /// in O(hosts + edge switches² × hops) instead of O(hosts² × hops). A pair's RTT is a share of the source
    /// (its NIC's data packet, the ACK's last hop to it), a share of the destination (the data's last hop, its
    /// NIC's ACK) and the fabric's between their two switches, so the worst pair between two switches joins
    /// the worst source under one with the worst destination under the other.
    pub fn max_base_rtt(&self, hosts: &[u32], data_bytes: Bytes, ack_bytes: Bytes) -> Option<Time> {
        if self.switches == 0 {
            // Hosts linked in pairs: no fabric to factor out.
            let pairs = hosts.iter().flat_map(|&s| hosts.iter().map(move |&d| (s, d)));
            return pairs.filter(|(s, d)| s != d).map(|(s, d)| self.base_rtt(s, d, data_bytes, ack_bytes)).max();
        }
        let port_time = |p: u32, bytes: Bytes| {
            let spec = &self.ports[p as usize];
            spec.rate.tx_time(bytes) + spec.delay
        };
        let columns = self.edge_switches.len();
        let (mut as_src, mut as_dst): (Vec<TopTwo>, Vec<TopTwo>) = (vec![[None; 2]; columns], vec![[None; 2]; columns]);
        for &h in hosts {
            let (a, nic) = (self.attachment[h as usize], self.host_port[h as usize]);
            keep_top_two(&mut as_src[a.column as usize], port_time(nic, data_bytes) + port_time(a.down, ack_bytes), h);
            keep_top_two(&mut as_dst[a.column as usize], port_time(a.down, data_bytes) + port_time(nic, ack_bytes), h);
        }
        let used: Vec<usize> = (0..columns).filter(|&c| as_src[c][0].is_some()).collect();
        let mut worst = None;
        for &c in &used {
            // Two hosts under one switch: no fabric; the worst source and destination must be two hosts.
            let ([s0, s1], [d0, d1]) = (as_src[c], as_dst[c]);
            if let (Some((src, sh)), Some((dst, dh))) = (s0, d0) {
                let under_one =
                    if sh != dh { Some(src + dst) } else { s1.map(|(v, _)| v + dst).max(d1.map(|(v, _)| src + v)) };
                worst = worst.max(under_one);
            }
            let Some((src, _)) = s0 else { continue };
            for &c2 in used.iter().filter(|&&c2| c2 != c) {
                let Some((dst, _)) = as_dst[c2][0] else { continue };
                let fabric = self.fabric_one_way(self.edge_switches[c], c2 as u32, data_bytes)
                    + self.fabric_one_way(self.edge_switches[c2], c as u32, ack_bytes);
                worst = worst.max(Some(src + fabric + dst));
            }
        }
        worst
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

    /// The topologies routing must agree on: a star, a dumbbell, two leaf-spines and two fat-trees, each with
    /// its host links' rates and delays varied per host so that a pair's RTT depends on both ends.
    fn networks() -> Vec<Network> {
        use crate::scenario::Topology;
        let (rate, delay) = (Rate::gbps(10), Time::from_us(1));
        let topologies = [
            Topology::Star { hosts: 5, rate, delay, host_links: vec![] },
            Topology::Dumbbell {
                left: 3,
                right: 2,
                rate,
                delay,
                bottleneck_rate: Rate::gbps(1),
                bottleneck_delay: Time::from_us(7),
                host_links: vec![],
            },
            Topology::LeafSpine {
                leaves: 4,
                spines: 3,
                hosts_per_leaf: 3,
                rate,
                delay,
                fabric_rate: Some(Rate::gbps(40)),
                fabric_delay: None,
                host_links: vec![],
            },
            Topology::LeafSpine {
                leaves: 2,
                spines: 1,
                hosts_per_leaf: 1,
                rate,
                delay,
                fabric_rate: None,
                fabric_delay: None,
                host_links: vec![],
            },
            Topology::FatTree { k: 4, rate, delay, host_links: vec![] },
            Topology::FatTree { k: 6, rate, delay, host_links: vec![] },
        ];
        topologies
            .iter()
            .map(|t| {
                let (switches, mut links) = t.links();
                for (h, l) in links.iter_mut().take(t.host_count() as usize).enumerate() {
                    l.rate_ab = Rate::gbps(10 + (h as u64 * 7) % 30);
                    l.delay_ab = Time::from_ns(1_000 + (h as u64 * 389) % 2_000);
                    l.delay_ba = Time::from_ns(1_000 + (h as u64 * 211) % 3_000);
                }
                Network::build(t.host_count() as usize, switches as usize, &links, Bytes(1500)).unwrap()
            })
            .collect()
    }

    /// Next hops by a BFS from every destination host over all nodes (the per-host table this module kept
    /// before routes were stored per destination switch): at `switch × hosts + host`, the ports one hop closer.
    fn per_host_next_hops(net: &Network) -> Vec<Vec<u32>> {
        let node = |n: Node| match n {
            Node::Host(h) => h as usize,
            Node::Switch(s) => net.hosts + s as usize,
        };
        let mut leaving = vec![Vec::new(); net.hosts + net.switches];
        for (p, spec) in net.ports.iter().enumerate() {
            leaving[node(spec.from)].push(p as u32);
        }
        let mut table = Vec::new();
        for s in 0..net.switches {
            for dst in 0..net.hosts {
                let mut dist = vec![u32::MAX; net.hosts + net.switches];
                dist[dst] = 0;
                let mut queue = VecDeque::from([dst]);
                while let Some(u) = queue.pop_front() {
                    for &p in &leaving[u] {
                        let v = node(net.ports[p as usize].to);
                        if v >= net.hosts && dist[v] == u32::MAX {
                            dist[v] = dist[u] + 1;
                            queue.push_back(v);
                        }
                    }
                }
                let here = dist[net.hosts + s];
                let closer = |&&p: &&u32| dist[node(net.ports[p as usize].to)].checked_add(1) == Some(here);
                table.push(leaving[net.hosts + s].iter().filter(closer).copied().collect());
            }
        }
        table
    }

    #[test]
    fn routes_per_destination_switch_give_each_hosts_next_hops_and_ecmp_choice() {
        for net in networks() {
            let expected = per_host_next_hops(&net);
            for s in 0..net.switches as u32 {
                for dst in 0..net.hosts as u32 {
                    let hops = &expected[s as usize * net.hosts + dst as usize];
                    assert!(!hops.is_empty(), "s{s} → h{dst}");
                    for f in 0..64u64 {
                        // The ECMP choice spelled out: the switch-salted hash's high half modulo the width.
                        let hash = f.wrapping_mul(0x2545_F491_4F6C_DD1D);
                        let h = hash ^ (s as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                        let h = (h ^ (h >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                        let pick = if hops.len() == 1 { 0 } else { ((h >> 32) % hops.len() as u64) as usize };
                        assert_eq!(net.route(s, dst, hash), hops[pick], "s{s} → h{dst}, hash {hash:#x}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_worst_base_rtt_equals_the_worst_over_every_pair() {
        for net in networks() {
            let everyone: Vec<u32> = (0..net.hosts as u32).collect();
            let some: Vec<u32> = everyone.iter().copied().filter(|h| h % 3 != 1).collect();
            for hosts in [&everyone[..], &some[..], &everyone[..2], &everyone[..1]] {
                let pairs = hosts.iter().flat_map(|&s| hosts.iter().map(move |&d| (s, d)));
                let each = pairs.filter(|(s, d)| s != d).map(|(s, d)| net.base_rtt(s, d, Bytes(1500), Bytes(40)));
                assert_eq!(net.max_base_rtt(hosts, Bytes(1500), Bytes(40)), each.max(), "{hosts:?}");
            }
        }
    }

    #[test]
    fn the_route_table_grows_with_switches_squared_plus_hosts() {
        // A star's one switch: one entry however many hosts; a fat-tree: switches × edge switches entries.
        let star: Vec<_> = (0..1_000).map(|h| link(Node::Host(h), Node::Switch(0), 10, 1)).collect();
        let net = Network::build(1_000, 1, &star, Bytes(1500)).unwrap();
        assert_eq!(net.route_table_bytes(), 8 + 8 * 1_000 + 4 + 8);
        let t =
            crate::scenario::Topology::FatTree { k: 8, rate: Rate::gbps(10), delay: Time::ZERO, host_links: vec![] };
        let (switches, links) = t.links();
        let net = Network::build(128, switches as usize, &links, Bytes(1500)).unwrap();
        // 80 switches, 32 of them edges; the ECMP sets: each edge's and each aggregation switch's uplinks.
        assert_eq!(net.next_ports.len(), 32 * 4 + 32 * 4);
        assert_eq!(net.route_table_bytes(), 8 * 80 * 32 + 8 * 128 + 4 * 256 + 4 * 32 + 8 * 5);
    }

    #[test]
    fn rejects_disconnected_hosts() {
        let links = vec![link(Node::Host(0), Node::Switch(0), 10, 1)];
        assert!(Network::build(2, 1, &links, Bytes(1500)).unwrap_err().contains("h1"));
    }
}
