//! Large topologies build in bounded time and memory: routes are kept per destination switch, so a
//! fat-tree's route table grows with switches² and a star's with its hosts, not with hosts × switches.

use ecnlab::net::Network;
use ecnlab::scenario::Topology;
use ecnlab::units::{Bytes, Rate, Time};
use std::time::{Duration, Instant};

/// Builds `t`'s network, returning it with the time the build took.
fn build(t: &Topology) -> (Network, Duration) {
    let started = Instant::now();
    let (switches, links) = t.links();
    let net = Network::build(t.host_count() as usize, switches as usize, &links, Bytes(1500)).unwrap();
    (net, started.elapsed())
}

#[test]
fn a_fat_tree_of_k_24_routes_in_switches_squared_memory_and_seconds() {
    // k = 24: 3 456 hosts, 720 switches of which 288 edges. A table per host would be 3 456 × 720 × 8 B
    // = 19.9 MB; per edge switch it is 720 × 288 × 8 B = 1.7 MB, plus 8 B a host and the ECMP sets.
    let t = Topology::FatTree { k: 24, rate: Rate::gbps(10), delay: Time::from_us(1), host_links: vec![] };
    let (net, took) = build(&t);
    assert_eq!((net.hosts, net.switches), (3_456, 720));
    let switch_ports = (net.ports.len() - 2 * net.hosts) as u64;
    let bound = 8 * 720 * 720 + 8 * 3_456 + 4 * switch_ports + 4 * 720 + 8 * 65;
    assert!(net.route_table_bytes() <= bound, "{} B > {bound} B", net.route_table_bytes());
    assert!(net.route_table_bytes() < 3_456 * 720 * 8 / 10, "{} B", net.route_table_bytes());
    // Under a second in a release build; a debug build on a busy machine gets twenty times that.
    assert!(took < Duration::from_secs(20), "built in {took:?}");
    // Across pods: host → edge → aggregation → core → aggregation → edge → host, 6 links of 2.2 µs.
    assert_eq!(net.one_way(0, 3_455, Bytes(1500)), Time::from_ns(6 * 2_200));
}

#[test]
fn a_star_of_100_000_hosts_keeps_one_route_entry() {
    let t = Topology::Star { hosts: 100_000, rate: Rate::gbps(10), delay: Time::from_us(1), host_links: vec![] };
    let (net, took) = build(&t);
    // One switch with hosts: one entry, then each host's column and last hop (8 B) and one ECMP multiplier.
    assert_eq!(net.route_table_bytes(), 8 + 8 * 100_000 + 4 + 8);
    assert!(took < Duration::from_secs(20), "built in {took:?}");
    assert_eq!(net.ports[net.route(0, 99_999, 7) as usize].to, ecnlab::net::Node::Host(99_999));
}
