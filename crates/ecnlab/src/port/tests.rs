//! The port against hand-computed traces and against itself driven another way.

use super::*;
use crate::mark::mqecn::{MqEcn, Shape};

/// A port of `queues` queues at `rate` with a `buffer`, a 1 us link and 1 500 B MTU.
fn config(rate: Rate, buffer: Bytes, queues: u32) -> PortConfig {
    let (delay, mtu, non_ect) = (Time::from_us(1), Bytes(1500), NonEct::Pass);
    PortConfig { rate, delay, mtu, buffer, queue_limits: vec![], queues, non_ect }
}

/// One 10 Gb/s queue with MQ-ECN (β = 0.5, T_idle = 10 us) whose round-time estimate starts at 8 us.
fn mqecn_port() -> Port {
    let cfg = config(Rate::gbps(10), Bytes(1 << 20), 1);
    let mut m = MqEcn::new(Shape::Step { k_std: Bytes(1 << 20) }, 0.5, Time::from_us(10), &[true]);
    m.t_round = 8e6;
    Port::new(cfg, AnyScheduler::strict_priority(), AnyMarker::MqEcn(m), false)
}

fn t_round(p: &Port) -> f64 {
    match &p.marker {
        AnyMarker::MqEcn(m) => m.t_round,
        _ => unreachable!(),
    }
}

/// Offers a 1500 B packet and sends it: when its last bit leaves, and the wake-up it asks for.
fn send_one(p: &mut Port, pool: &mut PacketPool, fifos: &mut FifoPool, now: Time) -> (Time, Option<Time>) {
    let id = pool.alloc(Packet { wire: 1500, ..Packet::default() });
    assert!(matches!(p.offer(now, id, 0, pool, fifos, None), Admit::Queued { .. }));
    let d = p.depart(now, pool, fifos, None, &mut vec![]).expect("queued");
    pool.free(d.id);
    (d.arrives - p.cfg.delay, d.wake)
}

#[test]
fn a_transmission_with_nothing_behind_it_needs_no_event_and_idles_from_its_last_bit() {
    let (mut p, mut pool, mut fifos) = (mqecn_port(), PacketPool::default(), FifoPool::new());
    let (end, wake) = send_one(&mut p, &mut pool, &mut fifos, Time::ZERO);
    assert_eq!(end, Time::from_ns(1200), "1500 B at 10 Gb/s");
    assert_eq!(wake, None, "nothing waits behind it");
    // The next packet arrives 19.5 us after the last bit left (20.7 us after the transmission started):
    // one whole T_idle of idleness counted from the end, so T_round halves once (two periods from the start).
    let id = pool.alloc(Packet { wire: 1500, ..Packet::default() });
    p.offer(end + Time::from_ns(19_500), id, 0, &mut pool, &mut fifos, None);
    assert_eq!(t_round(&p), 4e6);
}

#[test]
fn a_packet_queued_during_a_transmission_asks_for_its_end_event_once() {
    let (mut p, mut pool, mut fifos) = (mqecn_port(), PacketPool::default(), FifoPool::new());
    let (end, _) = send_one(&mut p, &mut pool, &mut fifos, Time::ZERO);
    let mut wakes = vec![];
    for i in 0..2 {
        let id = pool.alloc(Packet { wire: 1500, ..Packet::default() });
        match p.offer(Time::from_ns(100 * (i + 1)), id, 0, &mut pool, &mut fifos, None) {
            Admit::Queued { wake, .. } => wakes.push(wake),
            other => panic!("queued behind the transmission: {other:?}"),
        }
    }
    assert_eq!(wakes, [Some(end), None], "the first packet behind the transmission asks for it, once");
    p.wake(end);
    // The port was never idle: no decay.
    let (end2, wake) = send_one(&mut p, &mut pool, &mut fifos, end);
    assert_eq!(t_round(&p), 8e6);
    assert_eq!(wake, Some(end2), "two packets still wait");
    assert_eq!(end2, end + Time::from_ns(1200));
}

/// A 10 Gb/s port of three DWRR queues (quanta 1500, 3000, 700 B) with MQ-ECN at K_std = 6 000 B and a
/// 30 KB buffer, so that this test's bursts are marked and dropped; its transmissions shaped by `shaper` if given.
fn dwrr_mqecn_port_shaped(pass_idle: bool, shaper: Option<Shaper>) -> Port {
    let cfg = config(Rate::gbps(10), Bytes(30_000), 3);
    let m = MqEcn::new(Shape::Step { k_std: Bytes(6_000) }, 0.5, Time::from_ns(1200), &[true; 3]);
    let mut p = Port::new(cfg, AnyScheduler::dwrr(vec![1500, 3000, 700]), AnyMarker::MqEcn(m), true);
    p.set_pass_idle(pass_idle);
    p.set_shaper(shaper);
    p
}

/// A shaper slow enough for the tests' bursts to wait at its bucket: 7 Gb/s on the 10 Gb/s port, 4 KB.
const SHAPED: Option<Shaper> = Some(Shaper { rate: Rate(7_000_000_000), bucket: Bytes(4_000) });

#[test]
fn packets_through_an_idle_port_leave_it_as_the_queue_path_would() {
    idle_pass_matches_queue_path(None);
}

#[test]
fn packets_through_an_idle_shaped_port_leave_it_as_the_queue_path_would() {
    idle_pass_matches_queue_path(SHAPED);
}

fn idle_pass_matches_queue_path(shaper: Option<Shaper>) {
    // Two ports, one passing packets that find it idle straight through, take the same arrivals (bursts
    // and lone packets, as `Sim` drives a port: departures due by an arrival go first). Every departure,
    // counter, occupancy statistic and the round-time estimate must match.
    let mut ports = [dwrr_mqecn_port_shaped(false, shaper), dwrr_mqecn_port_shaped(true, shaper)];
    let mut pools = [(PacketPool::default(), FifoPool::new()), (PacketPool::default(), FifoPool::new())];
    let mut sent = [vec![], vec![]];
    let mut x = 5u64;
    let mut now = Time::ZERO;
    let mut passed = 0;
    let same_statistics = |ports: &mut [Port; 2], now: Time| {
        let [a, b] = ports;
        assert_eq!(format!("{:?}", a.counters()), format!("{:?}", b.counters()));
        assert_eq!(t_round(a), t_round(b));
        for q in 0..3 {
            let (sa, sb) = (a.queues[q].occupancy.stats(now), b.queues[q].occupancy.stats(now));
            assert_eq!(format!("{sa:?}"), format!("{sb:?}"), "queue {q} at {now}");
        }
        assert_eq!(format!("{:?}", a.occupancy.stats(now)), format!("{:?}", b.occupancy.stats(now)));
    };
    for i in 0..5_000u64 {
        if i % 100 == 39 {
            // Before a burst: the maxima are those of lone packets.
            same_statistics(&mut ports, now);
        }
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        // Spaced arrivals, then a burst of 60 arrivals 50 ns apart, in every 100.
        now += if i % 100 >= 40 { Time::from_ns(50) } else { Time::from_ns(200 + (x >> 20) % 3000) };
        let pkt = Packet {
            wire: 64 + (x >> 33) as u32 % 1437,
            class: (x >> 8) as u8 % 3,
            ecn: Ecn::Ect,
            ..Packet::default()
        };
        for (k, p) in ports.iter_mut().enumerate() {
            let (pool, fifos) = &mut pools[k];
            // The transmissions that end by now, each followed by the next departure.
            while p.tx_end <= now && !p.is_empty() {
                let at = p.tx_end;
                let d = p.depart(at, pool, fifos, None, &mut vec![]).expect("a packet waits");
                sent[k].push((at, d));
            }
            let id = pool.alloc(pkt);
            match p.offer(now, id, i as u32, pool, fifos, None) {
                Admit::Sent(d) => {
                    sent[k].push((now, d));
                    passed += 1;
                }
                Admit::Queued { .. } if p.is_free(now) => {
                    let d = p.depart(now, pool, fifos, None, &mut vec![]).expect("just queued");
                    sent[k].push((now, d));
                }
                Admit::Queued { .. } => {}
                Admit::Dropped(_) => pool.free(id),
            }
        }
    }
    // A shaped port is idle less often (its transmissions wait for tokens), so fewer packets find it idle.
    let enough = if shaper.is_some() { 100 } else { 500 };
    assert!(passed > enough, "the case passes packets through: {passed}");
    assert_eq!(sent[0], sent[1]);
    same_statistics(&mut ports, now);
    let c = ports[0].counters();
    assert!(c.total_marks() > 0 && c.total_drops() > 0, "the case marks and drops: {c:?}");
}

#[test]
fn derived_arrivals_equal_what_was_offered() {
    // A 4 500 B buffer offered six packets of 1 000–2 000 B: some are dropped, two are sent, the rest wait.
    let mut p = mqecn_port();
    p.cfg.buffer = Bytes(4_500);
    let (mut pool, mut fifos) = (PacketPool::default(), FifoPool::new());
    let sizes = [1_000u32, 2_000, 1_500, 2_000, 1_000, 1_200];
    for (i, &wire) in sizes.iter().enumerate() {
        let id = pool.alloc(Packet { wire, ..Packet::default() });
        if let Admit::Dropped(_) = p.offer(Time::from_ns(10 * i as u64), id, 0, &mut pool, &mut fifos, None) {
            pool.free(id);
        }
        if i == 1 || i == 3 {
            let sent =
                p.dequeue(Time::from_ns(10 * i as u64 + 5), &mut pool, &mut fifos, None, &mut vec![]).expect("queued");
            pool.free(sent.id);
        }
    }
    let c = p.counters();
    assert_eq!((c.arrived_pkts, c.arrived_bytes), (6, sizes.iter().map(|&w| w as u64).sum()));
    assert_eq!(c.arrived_pkts, p.arrived_pkts(), "the port's own count");
    assert_eq!(c.sent_pkts + c.total_drops() + p.queued_pkts(), 6);
    assert!(c.total_drops() > 0 && p.queued_pkts() > 0, "the case covers drops and waiting packets");
}

/// Offers a packet of `wire` bytes to a port at `now`, which sends it at once (a NIC): when its last bit
/// reaches the far end.
fn offer_sent(p: &mut Port, pool: &mut PacketPool, fifos: &mut FifoPool, now: Time, wire: u32) -> Time {
    let id = pool.alloc(Packet { wire, ..Packet::default() });
    match p.offer(now, id, 7, pool, fifos, None) {
        Admit::Sent(d) => {
            assert_eq!((d.id, d.wire, d.hop, d.marked, d.wake), (id, Bytes(wire as u64), 7, false, None));
            pool.free(id);
            d.arrives
        }
        other => panic!("a NIC sends what it is offered: {other:?}"),
    }
}

#[test]
fn a_nic_sends_back_to_back_at_line_rate_and_counts_what_it_sent() {
    // 10 Gb/s: 1500 B take 1.2 us; the link adds 1 us.
    let mut p = Port::nic(Rate::gbps(10), Time::from_us(1), Bytes(1500));
    let (mut pool, mut fifos) = (PacketPool::default(), FifoPool::new());
    let t0 = Time::from_us(5);
    assert_eq!(offer_sent(&mut p, &mut pool, &mut fifos, t0, 1500), t0 + Time::from_ns(1200) + Time::from_us(1));
    // Sent at once, before the first is out: it waits for it.
    assert_eq!(offer_sent(&mut p, &mut pool, &mut fifos, t0, 1500), t0 + Time::from_ns(2400) + Time::from_us(1));
    // The NIC holds 2.4 us of bytes, 1.2 us beyond a 1500-byte limit, which it has drained 1.2 us later.
    assert_eq!(p.nic_excess(t0, Bytes(1500)), Time::from_ns(1200));
    assert_eq!(p.nic_excess(t0 + Time::from_ns(1200), Bytes(1500)), Time::ZERO);
    // Idle from 7.4 us: one sent at 10 us starts at once.
    let t1 = Time::from_us(10);
    assert_eq!(offer_sent(&mut p, &mut pool, &mut fifos, t1, 64), t1 + Time::from_ps(64 * 800) + Time::from_us(1));
    let c = p.counters();
    assert_eq!((c.arrived_pkts, c.sent_pkts, c.sent_bytes), (3, 3, 3064));
    assert_eq!(p.arrived_pkts(), 3, "a NIC counts what it was offered as sent");
    assert_eq!(p.busy_time(), Time::from_ns(2400) + Time::from_ps(64 * 800));
    assert!(p.is_settled(t1) && p.is_empty(), "a NIC never owes a departure nor queues");
}

/// The owner of a port that asks for wake-ups: makes each departure at the transmission's end it was asked
/// for, up to `now`.
fn wake_until(
    p: &mut Port,
    wake: &mut Option<Time>,
    now: Time,
    io: &mut (PacketPool, FifoPool),
    out: &mut Vec<(Time, Departure)>,
) {
    while let Some(t) = wake.filter(|&t| t <= now) {
        p.wake(t);
        *wake = None;
        if let Some(d) = p.depart(t, &mut io.0, &mut io.1, None, &mut vec![]) {
            *wake = d.wake;
            out.push((t, Departure { wake: None, ..d }));
        }
    }
}

#[test]
fn a_port_looked_at_by_a_wall_clock_departs_as_one_woken_on_time() {
    wall_clock_matches_wake_ups(None);
}

#[test]
fn a_shaped_port_looked_at_by_a_wall_clock_departs_as_one_woken_on_time() {
    wall_clock_matches_wake_ups(SHAPED);
}

fn wall_clock_matches_wake_ups(shaper: Option<Shaper>) {
    // The same arrivals (bursts that queue, lone packets that pass) at two ports: one asks for a wake-up at
    // each transmission's end and gets it on time, as the event loop does; the other defers its departures
    // and is looked at only when a packet arrives and at irregular instants between, late by up to 40 us, as
    // a busy-polling thread that the machine deschedules. Every departure must be made at the same instant
    // (its predecessor's last bit), with the same packet, marks, counters and occupancy statistics.
    let mut on_time = dwrr_mqecn_port_shaped(true, shaper);
    let mut polled = dwrr_mqecn_port_shaped(true, shaper);
    polled.set_deferred_departures(true);
    let mut io = [(PacketPool::default(), FifoPool::new()), (PacketPool::default(), FifoPool::new())];
    let mut sent = [vec![], vec![]];
    let mut wake = None;
    let mut x = 11u64;
    let mut now = Time::ZERO;
    let mut looks = 0;
    for i in 0..5_000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let gap = if i % 100 >= 40 { Time::from_ns(50) } else { Time::from_ns(200 + (x >> 20) % 3000) };
        // The poller looks at a few instants between arrivals, whatever the port owes then.
        if x.is_multiple_of(7) {
            let look = now + Time::from_ns((x >> 40) % 40_000).min(gap);
            while let Some((at, d)) = polled.advance_to(look, &mut io[1].0, &mut io[1].1, None, &mut vec![]) {
                sent[1].extend(d.map(|d| (at, d)));
            }
            looks += 1;
        }
        now += gap;
        let pkt = Packet {
            wire: 64 + (x >> 33) as u32 % 1437,
            class: (x >> 8) as u8 % 3,
            ecn: Ecn::Ect,
            ..Packet::default()
        };
        wake_until(&mut on_time, &mut wake, now, &mut io[0], &mut sent[0]);
        while let Some((at, d)) = polled.advance_to(now, &mut io[1].0, &mut io[1].1, None, &mut vec![]) {
            sent[1].extend(d.map(|d| (at, d)));
        }
        for (k, p) in [&mut on_time, &mut polled].into_iter().enumerate() {
            let (pool, fifos) = &mut io[k];
            let id = pool.alloc(pkt);
            match p.offer(now, id, i as u32, pool, fifos, None) {
                Admit::Sent(d) => sent[k].push((now, d)),
                Admit::Queued { wake: w, .. } => {
                    assert!(k == 0 || w.is_none(), "a deferring port asks for no wake-up");
                    if k == 0 && w.is_some() {
                        wake = w;
                    } else if let Some(d) = p.depart(now, pool, fifos, None, &mut vec![]) {
                        if k == 0 {
                            wake = d.wake;
                        }
                        sent[k].push((now, Departure { wake: None, ..d }));
                    }
                }
                Admit::Dropped(_) => pool.free(id),
            }
        }
    }
    let end = now + Time::from_ms(1);
    wake_until(&mut on_time, &mut wake, end, &mut io[0], &mut sent[0]);
    while let Some((at, d)) = polled.advance_to(end, &mut io[1].0, &mut io[1].1, None, &mut vec![]) {
        sent[1].extend(d.map(|d| (at, d)));
    }
    assert!(looks > 500, "the poller looks between arrivals: {looks}");
    assert_eq!(sent[0].len(), sent[1].len());
    assert_eq!(sent[0], sent[1]);
    assert!(on_time.is_empty() && polled.is_empty());
    assert_eq!(format!("{:?}", on_time.counters()), format!("{:?}", polled.counters()));
    for q in 0..3 {
        let (a, b) = (on_time.queues[q].occupancy.stats(end), polled.queues[q].occupancy.stats(end));
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "queue {q}");
    }
    assert_eq!(t_round(&on_time), t_round(&polled));
    assert!(on_time.counters().total_marks() > 0, "the case marks");
}

/// One 1 Gb/s queue (1 us link), drop-tail, shaped at `rate` with a bucket of `bucket`; packets that find it
/// idle pass straight through or not, departures deferred or woken.
fn shaped_port(rate: Rate, bucket: Bytes, pass_idle: bool, defers: bool) -> Port {
    let cfg = config(Rate::gbps(1), Bytes(1 << 20), 1);
    let mut p = Port::new(cfg, AnyScheduler::strict_priority(), AnyMarker::None, false);
    p.set_pass_idle(pass_idle);
    p.set_deferred_departures(defers);
    p.set_shaper(Some(Shaper { rate, bucket }));
    p
}

/// When a departed packet's first bit went onto the 1 Gb/s wire (its last bit's arrival less the link and
/// its serialization).
fn start_of(d: &Departure) -> Time {
    d.arrives - Time::from_us(1) - Rate::gbps(1).tx_time(d.wire)
}

/// What a port owes up to `now`, made as its owner would: the wake-up it asked for, or its deferred departures.
fn look(p: &mut Port, now: Time, wake: &mut Option<Time>, io: &mut (PacketPool, FifoPool), out: &mut Vec<Time>) {
    while let Some(t) = wake.filter(|&t| t <= now) {
        p.wake(t);
        *wake = None;
        if let Some(d) = p.depart(t, &mut io.0, &mut io.1, None, &mut vec![]) {
            *wake = d.wake;
            out.push(start_of(&d));
        }
    }
    while let Some((_, d)) = p.advance_to(now, &mut io.0, &mut io.1, None, &mut vec![]) {
        out.extend(d.map(|d| start_of(&d)));
    }
}

/// Drives a port as `Sim` does (wake-ups on time, or deferred departures made when it is next looked at)
/// through `arrivals` (instant, wire bytes), then to `end`: each packet's start onto the wire, in order.
fn starts_through(p: &mut Port, arrivals: &[(Time, u32)], end: Time) -> Vec<Time> {
    let mut io = (PacketPool::default(), FifoPool::new());
    let mut wake: Option<Time> = None;
    let mut out = vec![];
    for &(at, wire) in arrivals {
        look(p, at, &mut wake, &mut io, &mut out);
        let (pool, fifos) = &mut io;
        let id = pool.alloc(Packet { wire, ..Packet::default() });
        match p.offer(at, id, 0, pool, fifos, None) {
            Admit::Sent(d) => {
                wake = d.wake;
                out.push(start_of(&d));
            }
            Admit::Queued { wake: Some(w), .. } => wake = Some(w),
            Admit::Queued { .. } if p.is_free(at) => {
                let d = p.depart(at, pool, fifos, None, &mut vec![]).expect("just queued");
                wake = d.wake;
                out.push(start_of(&d));
            }
            Admit::Queued { .. } => {}
            Admit::Dropped(r) => panic!("a 1 MB buffer drops nothing: {r:?}"),
        }
    }
    look(p, end, &mut wake, &mut io, &mut out);
    assert!(p.is_empty() && p.is_settled(end), "everything left by {end}");
    out
}

#[test]
fn a_burst_through_a_shaped_port_starts_when_the_bucket_holds_each_packet() {
    // Line 1 Gb/s: 1 500 B take 12 us on the wire. Shaper 500 Mb/s = 62.5 B/us, bucket 3 000 B, full at 0.
    // Five 1 500 B packets offered at 0, then one at 200 us, then a 64 B one at 212 us. By hand:
    //   #1 at 0:   bucket 3 000 ≥ 1 500 → starts 0, ends 12;      bucket 1 500
    //   #2 at 12:  1 500 + 12·62.5 = 2 250 → starts 12, ends 24;   bucket 750
    //   #3 at 24:  750 + 750 = 1 500 → starts 24, ends 36;         bucket 0
    //   #4 at 36:  0 + 750 = 750, short 750 B = 12 us → starts 48, ends 60; bucket 0
    //   #5 at 60:  0 + 750 (since 48) = 750, short 750 → starts 72, ends 84; bucket 0
    //   #6 at 200: 128 us since 72 refill 8 000 B, capped at 3 000 → starts 200, ends 212; bucket 1 500
    //   #7 (64 B) at 212 (the line just freed): 1 500 + 750 = 2 250 → starts 212.
    let mut arrivals = vec![(Time::ZERO, 1500); 5];
    arrivals.push((Time::from_us(200), 1500));
    arrivals.push((Time::from_us(212), 64));
    let us = Time::from_us;
    let hand = [us(0), us(12), us(24), us(48), us(72), us(200), us(212)];
    let (rate, bucket) = (Rate(500_000_000), Bytes(3_000));
    // Every way of driving the port gives the hand trace: wake-ups, pass-through of an idle port, deferred
    // departures (the fast paths `--no-fast-paths` turns off).
    for (pass_idle, defers) in [(false, false), (true, false), (true, true), (false, true)] {
        let mut p = shaped_port(rate, bucket, pass_idle, defers);
        assert_eq!(starts_through(&mut p, &arrivals, us(1_000)), hand, "pass_idle {pass_idle}, defers {defers}");
        // Busy time is serialization only, not the waits at the bucket: 6 × 12 us + 64 B at 1 Gb/s.
        assert_eq!(p.busy_time(), us(72) + Time::from_ns(512));
    }
}

#[test]
fn a_backlogged_shaped_port_sends_at_the_shaping_rate() {
    // MQ-ECN's software switch: 995 Mb/s with a 2.5 KB bucket on 1 Gb/s. A queue kept backlogged for 200 ms
    // with packets of mixed sizes (64–1 500 B): what has left by t obeys the bucket's arrival curve,
    // sent(t) ≤ bucket + r·t, and the long-run rate is r within 0.5 %.
    let rate = Rate(995_000_000);
    let bucket = Bytes(2_500);
    let mut p = shaped_port(rate, bucket, false, false);
    let (mut pool, mut fifos) = (PacketPool::default(), FifoPool::new());
    let mut x = 3u64;
    let mut sent = 0u64;
    let mut now = Time::ZERO;
    // Keep 20 packets queued; make each departure at its predecessor's end, checking the curve at each start.
    while now < Time::from_ms(200) {
        while p.queued_pkts() < 20 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let id = pool.alloc(Packet { wire: 64 + (x >> 33) as u32 % 1437, ..Packet::default() });
            assert!(!matches!(p.offer(now, id, 0, &mut pool, &mut fifos, None), Admit::Dropped(_)));
        }
        let d = p.depart(now, &mut pool, &mut fifos, None, &mut vec![]).expect("backlogged");
        let start = start_of(&d);
        sent += d.wire.0;
        // Bytes started by `start` (this one's included) against the tokens that can have accrued by then.
        let allowed = bucket.0 as f64 + rate.0 as f64 / 8.0 * start.as_secs_f64();
        assert!(sent as f64 <= allowed + 1e-6, "{sent} B started by {start} > {allowed}");
        pool.free(d.id);
        now = p.tx_end;
        if d.wake.is_some() {
            p.wake(now);
        }
    }
    let achieved = sent as f64 * 8.0 / now.as_secs_f64();
    let err = (achieved / rate.0 as f64 - 1.0).abs();
    assert!(err < 0.005, "{achieved} b/s against {rate}: {:.3} %", err * 100.0);
}
