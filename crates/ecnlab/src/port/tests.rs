//! The port against hand-computed traces and against itself driven another way.

use super::*;
use crate::mark::mqecn::{MqEcn, Shape};

/// One 10 Gb/s queue with MQ-ECN (β = 0.5, T_idle = 10 us) whose round-time estimate starts at 8 us.
fn mqecn_port() -> Port {
    let cfg = PortConfig {
        rate: Rate::gbps(10),
        delay: Time::from_us(1),
        mtu: Bytes(1500),
        buffer: Bytes(1 << 20),
        queue_limits: vec![],
        queues: 1,
        non_ect: NonEct::Pass,
    };
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
/// 30 KB buffer, so that this test's bursts are marked and dropped.
fn dwrr_mqecn_port(pass_idle: bool) -> Port {
    let cfg = PortConfig {
        rate: Rate::gbps(10),
        delay: Time::from_us(1),
        mtu: Bytes(1500),
        buffer: Bytes(30_000),
        queue_limits: vec![],
        queues: 3,
        non_ect: NonEct::Pass,
    };
    let m = MqEcn::new(Shape::Step { k_std: Bytes(6_000) }, 0.5, Time::from_ns(1200), &[true; 3]);
    let mut p = Port::new(cfg, AnyScheduler::dwrr(vec![1500, 3000, 700]), AnyMarker::MqEcn(m), true);
    p.set_pass_idle(pass_idle);
    p
}

#[test]
fn packets_through_an_idle_port_leave_it_as_the_queue_path_would() {
    // Two ports, one passing packets that find it idle straight through, take the same arrivals (bursts
    // and lone packets, as `Sim` drives a port: departures due by an arrival go first). Every departure,
    // counter, occupancy statistic and the round-time estimate must match.
    let mut ports = [dwrr_mqecn_port(false), dwrr_mqecn_port(true)];
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
    assert!(passed > 500, "the case passes packets through: {passed}");
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
    // The same arrivals (bursts that queue, lone packets that pass) at two ports: one asks for a wake-up at
    // each transmission's end and gets it on time, as the event loop does; the other defers its departures
    // and is looked at only when a packet arrives and at irregular instants between, late by up to 40 us, as
    // a busy-polling thread that the machine deschedules. Every departure must be made at the same instant
    // (its predecessor's last bit), with the same packet, marks, counters and occupancy statistics.
    let mut on_time = dwrr_mqecn_port(true);
    let mut polled = dwrr_mqecn_port(true);
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
