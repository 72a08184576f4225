//! Property tests of the schedulers, driven by a tiny fake port that calls them exactly as `port::Port` does.

use super::*;
use std::collections::VecDeque;

/// 10 Gb/s: 800 ps per byte, so a 1500-B packet takes 1.2 us.
const PS_PER_BYTE: u64 = 800;
const PKT_1500: Time = Time(1500 * PS_PER_BYTE);

struct Fifos<'a>(&'a [VecDeque<u32>]);
impl QueueView for Fifos<'_> {
    fn n(&self) -> usize {
        self.0.len()
    }
    fn head(&self, q: usize) -> Option<u32> {
        self.0[q].front().copied()
    }
}

/// Per-queue FIFOs of packet sizes; `on_enqueue` after a packet joins, `pick` when the transmitter is free,
/// `on_dequeue` right after the head left; the clock advances by the packet's transmission time.
struct FakePort {
    sched: AnyScheduler,
    fifos: Vec<VecDeque<u32>>,
    now: Time,
    ev: Vec<RoundEvent>,
    log: Vec<RoundEvent>,
    sent_bytes: Vec<u64>,
}

impl FakePort {
    fn new(sched: AnyScheduler, n: usize) -> FakePort {
        let _ = sched.weights(n); // as Port::new: checks the queue count
        FakePort {
            sched,
            fifos: vec![VecDeque::new(); n],
            now: Time::ZERO,
            ev: vec![],
            log: vec![],
            sent_bytes: vec![0; n],
        }
    }

    fn push(&mut self, q: usize, size: u32) {
        self.fifos[q].push_back(size);
        self.sched.on_enqueue(q, size, self.now, &mut self.ev);
        self.log.append(&mut self.ev);
    }

    /// Sends one packet: (queue, size), or `None` when every queue is empty.
    fn step(&mut self) -> Option<(usize, u32)> {
        let picked = self.sched.pick(&Fifos(&self.fifos), self.now, &mut self.ev);
        self.log.append(&mut self.ev);
        let q = picked?;
        let size = self.fifos[q].pop_front().expect("scheduler picked an empty queue");
        self.sched.on_dequeue(q, size, self.fifos[q].is_empty(), self.now, &mut self.ev);
        self.log.append(&mut self.ev);
        self.sent_bytes[q] += size as u64;
        self.now += Time(size as u64 * PS_PER_BYTE);
        Some((q, size))
    }

    /// Byte shares served so far.
    fn shares(&self) -> Vec<f64> {
        let total: u64 = self.sent_bytes.iter().sum();
        self.sent_bytes.iter().map(|&b| b as f64 / total as f64).collect()
    }

    /// T_round samples (at − started) of the turns that ended, in order, with their queue.
    fn samples(&self) -> Vec<(usize, Time)> {
        self.log
            .iter()
            .filter_map(|e| match *e {
                RoundEvent::TurnEnded { queue, started, at } => Some((queue, at - started)),
                RoundEvent::Joined { .. } => None,
            })
            .collect()
    }
}

/// Packet sizes 64..=1500 B from a fixed LCG (Knuth's MMIX constants).
struct Lcg(u64);
impl Lcg {
    fn size(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        64 + ((self.0 >> 33) % 1437) as u32
    }
}

/// Keeps every queue backlogged (each sent packet is replaced by a new one of random size) for `steps` packets.
fn run_backlogged(sched: AnyScheduler, n: usize, steps: usize) -> FakePort {
    let mut rng = Lcg(7);
    let mut p = FakePort::new(sched, n);
    for q in 0..n {
        for _ in 0..20 {
            p.push(q, rng.size());
        }
    }
    for _ in 0..steps {
        let (q, _) = p.step().unwrap();
        p.push(q, rng.size());
    }
    p
}

fn assert_shares_within_1pct(shares: &[f64], weights: &[f64]) {
    let sum: f64 = weights.iter().sum();
    for (q, (&s, &w)) in shares.iter().zip(weights).enumerate() {
        let want = w / sum;
        assert!((s - want).abs() <= 0.01 * want, "queue {q}: share {s:.5}, want {want:.5} ± 1 %");
    }
}

/// Per queue, events alternate Joined, TurnEnded, Joined, …, and each TurnEnded's `started` is the time of
/// that queue's preceding Joined.
fn assert_alternating(log: &[RoundEvent], n: usize) {
    let mut joined: Vec<Option<Time>> = vec![None; n];
    for e in log {
        match *e {
            RoundEvent::Joined { queue, at } => {
                assert!(joined[queue].is_none(), "queue {queue} joined twice: {e:?}");
                joined[queue] = Some(at);
            }
            RoundEvent::TurnEnded { queue, started, at } => {
                assert_eq!(joined[queue].take(), Some(started), "turn without a matching join: {e:?}");
                assert!(at >= started);
            }
        }
    }
}

// ---------- a packet through an idle port ----------

/// Two copies of one scheduler see the same arrivals; where a packet finds every queue empty and the
/// transmitter free, one copy takes it by `on_enqueue`, `pick` and `on_dequeue` over its FIFOs, or by the
/// default `pass` (`pass_by_parts`, the three calls over a view of the lone packet), the other by the
/// scheduler's own `pass`. They must emit the same round events and then serve every later packet alike
/// (queues fill up between idle spells).
fn pass_is_enqueue_pick_dequeue(sched: AnyScheduler, n: usize) {
    let (mut full, mut short) = (FakePort::new(sched.clone(), n), FakePort::new(sched, n));
    let mut rng = Lcg(11);
    let mut passes = 0;
    for i in 0..20_000 {
        let size = rng.size();
        let q = (rng.size() as usize) % n;
        let idle = full.fifos.iter().all(VecDeque::is_empty);
        if idle && i % 3 != 0 {
            if i % 2 == 0 {
                full.push(q, size);
                assert_eq!(full.step(), Some((q, size)));
            } else {
                pass_by_parts(&mut full.sched, q, size, full.now, &mut full.ev);
                full.log.append(&mut full.ev);
                full.now += Time(size as u64 * PS_PER_BYTE);
            }
            short.sched.pass(q, size, short.now, &mut short.ev);
            short.log.append(&mut short.ev);
            short.now += Time(size as u64 * PS_PER_BYTE);
            passes += 1;
        } else {
            full.push(q, size);
            short.push(q, size);
            // Bursts build queues; every fourth arrival lets the port drain them.
            if i % 4 == 0 {
                while let Some(sent) = full.step() {
                    assert_eq!(short.step(), Some(sent));
                }
            }
        }
        assert_eq!(full.now, short.now);
        assert_eq!(full.log, short.log, "after arrival {i}");
        full.log.clear();
        short.log.clear();
    }
    assert!(passes > 1000, "the case passes packets through an idle port: {passes}");
}

/// Every registered scheduler, the ones with their own `pass` (the round robins, WFQ, SP over a group) and the
/// ones on the default (strict priority, the toy).
#[test]
fn pass_equals_the_three_calls_for_every_scheduler() {
    let dwrr = || AnyScheduler::dwrr(vec![1500, 3000, 600, 9000]);
    let toy: SchedulerConfig = toml::from_str(
        r#"kind = "toy"
packets = [1, 3, 2, 1]"#,
    )
    .expect("a toy table");
    for sched in [
        AnyScheduler::strict_priority(),
        AnyScheduler::wrr(vec![1500, 3000, 600, 9000]),
        dwrr(),
        // Quanta below most packets: several empty turns before one is sent.
        AnyScheduler::dwrr(vec![200, 100, 700, 64]),
        AnyScheduler::wfq(vec![1, 2, 5, 3]),
        AnyScheduler::sp_over(1, dwrr()),
        AnyScheduler::sp_over(1, AnyScheduler::wrr(vec![1500, 3000, 600])),
        AnyScheduler::sp_over(2, AnyScheduler::wfq(vec![1, 4, 2, 2])),
        toy.build(4),
    ] {
        let n = sched.queues().unwrap_or(4);
        pass_is_enqueue_pick_dequeue(sched, n);
    }
}

// ---------- long-run shares ----------

#[test]
fn wrr_backlogged_shares_follow_quanta_1_2_5() {
    // WRR forfeits the unused budget (< one packet) every turn, which favours large quanta unless Q ≫ MTU.
    let p = run_backlogged(AnyScheduler::wrr(vec![60_000, 120_000, 300_000]), 3, 200_000);
    assert_shares_within_1pct(&p.shares(), &[1.0, 2.0, 5.0]);
}

#[test]
fn dwrr_backlogged_shares_follow_quanta_1_2_5() {
    let p = run_backlogged(AnyScheduler::dwrr(vec![1500, 3000, 7500]), 3, 200_000);
    assert_shares_within_1pct(&p.shares(), &[1.0, 2.0, 5.0]);
}

#[test]
fn wfq_backlogged_shares_follow_weights_1_2_5() {
    let p = run_backlogged(AnyScheduler::wfq(vec![1, 2, 5]), 3, 200_000);
    assert_shares_within_1pct(&p.shares(), &[1.0, 2.0, 5.0]);
}

// ---------- progress with quanta smaller than packets ----------

fn drains_everything_without_starvation(sched: AnyScheduler, per_queue: usize) {
    let mut rng = Lcg(11);
    let mut p = FakePort::new(sched, 2);
    for _ in 0..per_queue {
        p.push(0, rng.size());
        p.push(1, rng.size());
    }
    let mut served = [0usize; 2];
    let mut first_quarter = [0usize; 2];
    for i in 0.. {
        let Some((q, _)) = p.step() else { break };
        served[q] += 1;
        if i < per_queue / 2 {
            first_quarter[q] += 1;
        }
    }
    assert_eq!(served, [per_queue, per_queue]);
    assert!(first_quarter.iter().all(|&c| c > per_queue / 8), "a queue starved early: {first_quarter:?}");
    assert_alternating(&p.log, 2);
}

#[test]
fn dwrr_quantum_below_packet_size_still_serves_every_queue() {
    drains_everything_without_starvation(AnyScheduler::dwrr(vec![500, 700]), 2000);
}

#[test]
fn dwrr_zero_quantum_still_makes_progress() {
    // Raised to 1 byte per turn: a 1500-B packet waits ~1500 turns, but it goes.
    drains_everything_without_starvation(AnyScheduler::dwrr(vec![0, 0]), 100);
}

#[test]
fn wrr_quantum_below_packet_size_sends_one_packet_per_turn() {
    drains_everything_without_starvation(AnyScheduler::wrr(vec![100, 100]), 2000);
}

// ---------- strict priority ----------

#[test]
fn strict_priority_serves_the_lowest_nonempty_index() {
    let mut sp = AnyScheduler::strict_priority();
    let mut ev = vec![];
    let view = |v: Vec<Option<u32>>| v.into_iter().map(|h| h.into_iter().collect()).collect::<Vec<VecDeque<u32>>>();
    assert_eq!(sp.pick(&Fifos(&view(vec![None, Some(1500), Some(64)])), Time::ZERO, &mut ev), Some(1));
    assert_eq!(sp.pick(&Fifos(&view(vec![Some(64), Some(1500)])), Time::ZERO, &mut ev), Some(0));
    assert_eq!(sp.pick(&Fifos(&view(vec![None, None])), Time::ZERO, &mut ev), None);
    assert!(ev.is_empty());
}

#[test]
fn strict_priority_starves_queue_1_while_queue_0_is_backlogged() {
    let mut p = FakePort::new(AnyScheduler::strict_priority(), 2);
    for _ in 0..10 {
        p.push(0, 1500);
        p.push(1, 1500);
    }
    for _ in 0..1000 {
        assert_eq!(p.step().unwrap().0, 0);
        p.push(0, 1500);
    }
    assert_eq!(p.sent_bytes[1], 0);
    let order: Vec<usize> = std::iter::from_fn(|| p.step().map(|(q, _)| q)).collect();
    assert_eq!(order, [[0; 10], [1; 10]].concat());
    assert!(p.log.is_empty(), "strict priority emits no round events");
}

#[test]
fn sp_over_dwrr_serves_the_strict_queue_first_then_shares_by_quantum() {
    let mut p = FakePort::new(AnyScheduler::sp_over(1, AnyScheduler::dwrr(vec![1500, 3000])), 3);
    let mut rng = Lcg(3);
    for _ in 0..50 {
        p.push(0, rng.size());
    }
    for q in 1..3 {
        for _ in 0..20 {
            p.push(q, rng.size());
        }
    }
    for _ in 0..50 {
        assert_eq!(p.step().unwrap().0, 0, "the strict queue goes first");
    }
    for _ in 0..100_000 {
        let (q, _) = p.step().unwrap();
        assert_ne!(q, 0);
        p.push(q, rng.size());
    }
    let (a, b) = (p.sent_bytes[1] as f64, p.sent_bytes[2] as f64);
    assert_shares_within_1pct(&[a / (a + b), b / (a + b)], &[1.0, 2.0]);
    assert_alternating(&p.log, 3);
    assert!(
        p.log
            .iter()
            .all(|e| matches!(e, RoundEvent::Joined { queue: 1 | 2, .. } | RoundEvent::TurnEnded { queue: 1 | 2, .. })),
        "group events carry absolute queue indices"
    );
}

#[test]
fn strict_queue_preempts_the_group_between_packets() {
    let mut p = FakePort::new(AnyScheduler::sp_over(1, AnyScheduler::wfq(vec![1, 1])), 3);
    for _ in 0..5 {
        p.push(1, 1500);
        p.push(2, 1500);
    }
    assert_eq!(p.step().unwrap().0, 1);
    p.push(0, 64);
    assert_eq!(p.step().unwrap().0, 0);
    assert_eq!(p.step().unwrap().0, 2);
    assert!(p.log.is_empty(), "WFQ and SP emit no round events");
}

// ---------- weights, round-robin flags, constructors ----------

#[test]
fn weights_and_round_robin_flags_per_scheduler() {
    assert_eq!(AnyScheduler::strict_priority().weights(3), [1, 1, 1]);
    assert_eq!(AnyScheduler::wrr(vec![1500, 3000]).weights(2), [1500, 3000]);
    assert_eq!(AnyScheduler::dwrr(vec![1500, 3000]).weights(2), [1500, 3000]);
    assert_eq!(AnyScheduler::wfq(vec![1, 4]).weights(2), [1, 4]);
    let sp = AnyScheduler::sp_over(2, AnyScheduler::dwrr(vec![1500, 4500]));
    assert_eq!(sp.weights(4), [1, 1, 1500, 4500]);
    assert_eq!((0..4).map(|q| sp.is_round_robin(q)).collect::<Vec<_>>(), [false, false, true, true]);
    assert!(AnyScheduler::wrr(vec![1500]).is_round_robin(0));
    assert!(!AnyScheduler::wfq(vec![1]).is_round_robin(0));
    assert!(!AnyScheduler::sp_over(1, AnyScheduler::wfq(vec![1, 2])).is_round_robin(1));
    assert!(!AnyScheduler::strict_priority().is_round_robin(0));
}

#[test]
fn sp_over_composes_by_adding_strict_prefixes() {
    let nested = AnyScheduler::sp_over(1, AnyScheduler::sp_over(2, AnyScheduler::wfq(vec![3, 5])));
    assert_eq!(nested.weights(5), [1, 1, 1, 3, 5]);
    assert!(matches!(&nested, AnyScheduler::SpOverWfq(s) if s.strict() == 3));
    assert!(matches!(AnyScheduler::sp_over(2, AnyScheduler::strict_priority()), AnyScheduler::StrictPriority(_)));
    assert!(matches!(AnyScheduler::sp_over(0, AnyScheduler::dwrr(vec![1500])), AnyScheduler::Dwrr(_)));
}

#[test]
#[should_panic(expected = "scheduler built for 2 queues, the port has 3")]
fn weights_reject_a_port_with_another_queue_count() {
    AnyScheduler::dwrr(vec![1500, 1500]).weights(3);
}

// ---------- round events (MQ-ECN T_round) ----------

#[test]
fn dwrr_round_samples_converge_to_n_quanta_over_rate() {
    let mut p = FakePort::new(AnyScheduler::dwrr(vec![1500; 3]), 3);
    for q in 0..3 {
        for _ in 0..100 {
            p.push(q, 1500);
        }
    }
    for _ in 0..150 {
        p.step();
    }
    let samples: Vec<Time> = p.samples().into_iter().map(|(_, s)| s).collect();
    // Round 1: all joined at 0, turns end after 1, 2, 3 packet times; from then on every sample is n·Q/C.
    assert_eq!(samples[..3], [PKT_1500, Time(2 * PKT_1500.0), Time(3 * PKT_1500.0)]);
    assert!(samples.len() > 100);
    assert!(samples[3..].iter().all(|&s| s == Time(3 * PKT_1500.0)), "{samples:?}");
    assert_alternating(&p.log, 3);
}

#[test]
fn a_queue_that_empties_ends_its_turn_and_rejoins_when_refilled() {
    let mut p = FakePort::new(AnyScheduler::dwrr(vec![1500; 3]), 3);
    for q in 0..2 {
        for _ in 0..100 {
            p.push(q, 1500);
        }
    }
    for _ in 0..3 {
        p.push(2, 1500);
    }
    // Queue 2 sends its last packet in round 3, at step 9 (t = 8 packet times); it re-joined when its
    // round-2 turn ended, at the pick after its round-2 packet (t = 6 packet times).
    for _ in 0..9 {
        p.step();
    }
    let emptied_at = Time(8 * PKT_1500.0);
    assert_eq!(p.log.last(), Some(&RoundEvent::TurnEnded { queue: 2, started: Time(6 * PKT_1500.0), at: emptied_at }));
    for _ in 0..40 {
        p.step();
    }
    assert!(!p.log.iter().any(|e| matches!(e, RoundEvent::Joined { queue: 2, at } if *at > emptied_at)));
    let two_queues = p.samples();
    assert!(two_queues[two_queues.len() - 10..].iter().all(|&(_, s)| s == Time(2 * PKT_1500.0)), "{two_queues:?}");

    p.push(2, 1500);
    assert_eq!(p.log.last(), Some(&RoundEvent::Joined { queue: 2, at: p.now }));
    for _ in 0..3 {
        p.push(2, 1500);
    }
    for _ in 0..20 {
        p.step();
    }
    assert_alternating(&p.log, 3);
}

#[test]
fn wrr_round_samples_count_whole_turns() {
    // Quantum 3000 = two 1500-B packets per turn; the third does not fit, so the turn ends there.
    let mut p = FakePort::new(AnyScheduler::wrr(vec![3000; 2]), 2);
    for q in 0..2 {
        for _ in 0..50 {
            p.push(q, 1500);
        }
    }
    for _ in 0..60 {
        p.step();
    }
    let samples = p.samples();
    assert_eq!(samples[0], (0, Time(2 * PKT_1500.0)));
    assert!(samples[2..].iter().all(|&(_, s)| s == Time(4 * PKT_1500.0)), "{samples:?}");
    assert_alternating(&p.log, 2);
}

#[test]
fn wrr_forfeits_unused_budget_but_dwrr_carries_it() {
    // Quantum 2000 with 1500-B packets: WRR sends one packet per turn (500 B forfeited each time); DWRR's
    // deficit keeps 500, 1000, 0 after successive turns, so every third turn it sends two.
    let order = |sched| {
        let mut p = FakePort::new(sched, 2);
        for q in 0..2 {
            for _ in 0..20 {
                p.push(q, 1500);
            }
        }
        (0..10).map(|_| p.step().unwrap().0).collect::<Vec<_>>()
    };
    assert_eq!(order(AnyScheduler::wrr(vec![2000, 2000])), [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(order(AnyScheduler::dwrr(vec![2000, 2000])), [0, 1, 0, 1, 0, 0, 1, 1, 0, 1]);
}

// ---------- WFQ ----------

#[test]
fn wfq_equal_tags_go_to_the_lower_queue() {
    let mut p = FakePort::new(AnyScheduler::wfq(vec![1, 2]), 2);
    p.push(1, 3000);
    p.push(0, 1500);
    assert_eq!(p.step().unwrap().0, 0);
}

#[test]
fn wfq_gives_no_credit_for_idle_time() {
    let mut p = FakePort::new(AnyScheduler::wfq(vec![1, 1]), 2);
    for _ in 0..10 {
        p.push(0, 1500);
    }
    for _ in 0..1000 {
        let (q, _) = p.step().unwrap();
        p.push(q, 1500);
    }
    // Queue 1 wakes up after queue 0 had the link alone for 1000 packets: from now on they alternate.
    for _ in 0..500 {
        p.push(1, 1500);
    }
    let mut served = [0u32; 2];
    for _ in 0..200 {
        let (q, _) = p.step().unwrap();
        served[q] += 1;
        if q == 0 {
            p.push(0, 1500);
        }
    }
    assert!(served[1].abs_diff(100) <= 1, "{served:?}");
}

/// SCFQ with one tag stored per packet, tagged at arrival (Golestani 1994 §III, literally).
struct ReferenceScfq {
    w: Vec<u64>,
    tags: Vec<VecDeque<u128>>,
    last_arrived: Vec<u128>,
    v: u128,
}

impl ReferenceScfq {
    fn enqueue(&mut self, q: usize, size: u32) {
        let tag = self.v.max(self.last_arrived[q]) + ((size as u128) << 32) / self.w[q] as u128;
        self.last_arrived[q] = tag;
        self.tags[q].push_back(tag);
    }
    fn dequeue(&mut self) -> Option<usize> {
        let q = (0..self.w.len()).filter(|&q| !self.tags[q].is_empty()).min_by_key(|&q| (self.tags[q][0], q))?;
        self.v = self.tags[q].pop_front().unwrap();
        Some(q)
    }
}

#[test]
fn wfq_per_queue_tags_match_per_packet_scfq() {
    let w = vec![1, 3, 7, 2];
    let mut p = FakePort::new(AnyScheduler::wfq(w.clone()), 4);
    let mut r = ReferenceScfq { tags: vec![VecDeque::new(); 4], last_arrived: vec![0; 4], v: 0, w };
    let mut rng = Lcg(5);
    for _ in 0..50_000 {
        let x = rng.size();
        if x % 5 < 3 {
            let (q, size) = ((x % 4) as usize, rng.size());
            p.push(q, size);
            r.enqueue(q, size);
        } else {
            assert_eq!(p.step().map(|(q, _)| q), r.dequeue());
        }
    }
}
