//! Two hosts through the switch: a TCP transfer arrives intact, no faster than the port's rate allows.

use super::common::{connect, emulate, exclusive, off_switch_core, star, PORT};
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
    let (tb, sw) = emulate(&sc, &[]).expect("testbed");
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
    eprintln!(
        "late {} loops {} stalls {:?} lateness {:?}",
        report.late_offers, report.loops, report.stalls_ns, down.lateness_ns
    );
    assert!(down.tx_frames as usize >= segments, "{} frames sent to h1 for {segments} segments", down.tx_frames);
    assert_eq!(down.counters.total_drops(), 0);
    assert_eq!(report.totals().3, 0, "nothing dropped before the ports: {report:?}");
    eprintln!(
        "2 MB in {took:.4} s (bound {bound:.4} s); h1's port: gap p50 {:.0} ns (ideal {:.0}), lateness p50 {:.0} \
         p99 {:.0} ns, late offers {}",
        down.gap_ns.p50, down.ideal_gap_ns.p50, down.lateness_ns.p50, down.lateness_ns.p99, report.late_offers
    );
}
