//! Two hosts through the switch: a TCP transfer arrives intact, no faster than the port's rate allows.

use super::common::{connect, emulate_with, exclusive, off_switch_core, star, PORT};
use ecnlab_switch::dataplane::{Capture, Direction};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Instant;

/// The byte at offset i of the transfer: a pattern a reordering or a corrupted frame would break.
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 13) as u8
}

#[test]
fn a_tcp_transfer_through_the_switch_arrives_intact_at_no_more_than_the_port_rate() {
    let Some(_guard) = exclusive() else { return };
    let sc = star(2, "buffer = \"1MB\"");
    let dir = std::env::temp_dir().join(format!("ecnlab-switch-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let captures = vec![
        Capture { link: 0, direction: Direction::Ingress, path: dir.join("h0-in.pcap") },
        Capture { link: 1, direction: Direction::Egress, path: dir.join("h1-out.pcap") },
    ];
    let (tb, sw) = emulate_with(&sc, &[], captures).expect("testbed");
    const SIZE: usize = 2_000_000;
    let (h0, h1) = (tb.host(0).clone(), tb.host(1).clone());
    let receiver = h1
        .ns
        .spawn("receiver", move || {
            off_switch_core();
            let l = TcpListener::bind(("0.0.0.0", PORT)).expect("bind");
            let (mut c, _) = l.accept().expect("accept");
            let mut got = Vec::with_capacity(SIZE);
            c.read_to_end(&mut got).expect("read");
            (got, Instant::now())
        })
        .expect("receiver thread");
    let (t0, info) = h0
        .ns
        .run(move || {
            off_switch_core();
            let data: Vec<u8> = (0..SIZE).map(pattern).collect();
            let mut s = connect(h1.addr);
            let t0 = Instant::now();
            s.write_all(&data).expect("write");
            let info = super::common::tcp_info(&s);
            (t0, info)
        })
        .expect("sender");
    let (got, t1) = receiver.join().expect("receiver");
    let report = sw.stop().expect("switch report");
    assert_eq!(got.len(), SIZE, "every byte arrives");
    assert!(got.iter().enumerate().all(|(i, &b)| b == pattern(i)), "in order and uncorrupted");
    // The transfer's data crossed port s0->h1 (100 Mb/s): at least its payload plus 52 B of TCP/IP headers
    // per MSS-sized segment, serialized at the port's rate.
    let segments = SIZE.div_ceil(info.snd_mss as usize);
    let wire_bits = ((SIZE + segments * 52) * 8) as f64;
    let bound = wire_bits / 100e6;
    let took = (t1 - t0).as_secs_f64();
    assert!(took >= bound * 0.999, "took {took:.4} s, faster than the port allows ({bound:.4} s)");
    let down = &report.links[1];
    // The captures hold every frame h0 sent and every frame sent to h1, in order of their stamps.
    let (h0_in, h1_out) = (records(&dir.join("h0-in.pcap")), records(&dir.join("h1-out.pcap")));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!((h0_in.len() as u64, h1_out.len() as u64), (report.links[0].rx_frames, down.tx_frames));
    assert!(h1_out.windows(2).all(|w| w[0] <= w[1]), "egress stamps in order");
    assert!(down.tx_frames as usize >= segments, "{} frames sent to h1 for {segments} segments", down.tx_frames);
    assert_eq!(down.counters.total_drops(), 0);
    assert_eq!(report.totals().3, 0, "nothing dropped before the ports: {report:?}");
    eprintln!(
        "2 MB in {took:.4} s (bound {bound:.4} s); h1's port: gap p50 {:.0} ns (ideal {:.0}), lateness p50 {:.0} \
         p99 {:.0} ns, late offers {}",
        down.gap_ns.p50, down.ideal_gap_ns.p50, down.lateness_ns.p50, down.lateness_ns.p99, report.late_offers
    );
}

/// The timestamps (ns) of a pcap file's records, read by its format's definition.
fn records(path: &std::path::Path) -> Vec<u64> {
    let b = std::fs::read(path).unwrap();
    let u32_at = |k: usize| u32::from_ne_bytes(b[k..k + 4].try_into().unwrap()) as u64;
    assert_eq!(u32_at(0), 0xa1b2_3c4d);
    let (mut k, mut stamps) = (24, vec![]);
    while k < b.len() {
        stamps.push(u32_at(k) * 1_000_000_000 + u32_at(k + 4));
        k += 16 + u32_at(k + 8) as usize;
    }
    assert_eq!(k, b.len(), "whole records");
    stamps
}

/// The forwarding benchmark (`cargo test -p ecnlab-switch --test emu -- --ignored bench --nocapture`):
/// prints its figures at 100 Mb/s and 1 Gb/s; asserts nothing (the machine's load decides them).
#[test]
#[ignore = "a measurement, not a check"]
fn bench_forwarding_rate() {
    let Some(_guard) = exclusive() else { return };
    for rate in [ecnlab::units::Rate(100_000_000), ecnlab::units::Rate(1_000_000_000)] {
        let b = ecnlab_switch::bench::forwarding(rate, std::time::Duration::from_secs(3)).expect("bench");
        let p = &b.port;
        eprintln!(
            "{:>5} Mb/s: received {:.2} Mb/s ({:.0} pkt/s) = {:.4} of the rate; port utilization {:.4}; gap p50 \
             {:.0} ns p99 {:.0} (ideal p50 {:.0}); lateness p50 {:.0} p99 {:.0} ns; ring drops {}; stalls {:?}",
            rate.0 / 1_000_000,
            b.received_bps / 1e6,
            b.received_pps,
            b.achieved,
            p.utilization,
            p.gap_ns.p50,
            p.gap_ns.p99,
            p.ideal_gap_ns.p50,
            p.lateness_ns.p50,
            p.lateness_ns.p99,
            b.switch.links.iter().map(|l| l.ring_drops).sum::<u64>(),
            b.switch.stalls_ns,
        );
    }
}
