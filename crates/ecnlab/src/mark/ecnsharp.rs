//! ECN♯: instantaneous plus persistent-queue marking at dequeue, per queue (Zhang, Bai, Chen; §3.2, Algorithm 1).
//!
//! Both parts run on every packet (no short-circuit) and the packet is marked when either says so (DESIGN,
//! "ECN♯"). Instantaneous: `signal > ins_target`. Persistent (Algorithm 1): detection resets when
//! `signal < pst_target`, else starts at the first packet above and confirms once `now > first_above_time +
//! pst_interval`; marking enters with `count = 1, next = now + pst_interval` and, while detection holds, marks
//! when `now > next`, then `count += 1, next += pst_interval / count` (integer ps division, rounded down; no
//! square root, unlike CoDel). `first_above_time` is an `Option`, so `now = 0` is not the paper's "unset" 0.
//!
//! Signals (§3.5 "Sojourn time vs queue length"): the packet's sojourn time (the paper's design), or the
//! queue's bytes after the departure (the queue-length version §3.5 mentions without spelling out; we
//! substitute queue length for sojourn in the same comparisons: instantaneous `queue > ins`, persistent "above"
//! iff `queue ≥ pst`). Probabilistic instantaneous marking for DCQCN (§3.5, §5.1): DCQCN's ramp, `0` up to
//! `K_min`, `P_max·(x − K_min)/(K_max − K_min)` on `(K_min, K_max]`, `1` above `K_max`; the paper states it on
//! queue length, any signal is accepted; the persistent part is unchanged.

use super::{Build, Check, MarkReason, Marker, MarkerSpec, PortState, Queues, Verdict};
use crate::engine::Rng;
use crate::error::Error;
use crate::packet::Packet;
use crate::units::{Bytes, QueueLen, Time};

/// A threshold on one of ECN♯'s two congestion signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Compared with the departing packet's sojourn time.
    Sojourn(Time),
    /// Compared with the queue's bytes after the departure (DESIGN, "Occupancy").
    Queue(Bytes),
}

impl Level {
    /// This level's signal for the departing packet, in its unit (ps or bytes).
    fn signal(self, st: &PortState<impl Queues>, q: usize, sojourn: Time) -> u64 {
        match self {
            Level::Sojourn(_) => sojourn.0,
            Level::Queue(_) => st.queue_bytes(q),
        }
    }
    fn value(self) -> u64 {
        match self {
            Level::Sojourn(t) => t.0,
            Level::Queue(b) => b.0,
        }
    }
    fn same_signal(self, o: Level) -> bool {
        matches!((self, o), (Level::Sojourn(_), Level::Sojourn(_)) | (Level::Queue(_), Level::Queue(_)))
    }
}

/// The instantaneous part: a cut-off (the paper's design) or DCQCN's probabilistic ramp (§3.5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Instantaneous {
    /// Mark when the signal exceeds the level.
    Cutoff(Level),
    /// k_min and k_max on the same signal, k_min ≤ k_max; p_max in [0, 1].
    Ramp { k_min: Level, k_max: Level, p_max: f64 },
}

/// Which part marked; the integrator maps them to `MarkReason`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnSharpPart {
    Instantaneous,
    Persistent,
    /// Both parts said mark on the same packet.
    Both,
}

/// Algorithm 1's per-queue variables (Table 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Persistent {
    first_above_time: Option<Time>,
    marking: bool,
    marking_count: u32,
    marking_next: Time,
}

/// `marker = { kind = "ecnsharp", ins_target, pst_target, pst_interval }`: ECN♯ (its paper §3, Algorithm 1)
/// on sojourn times: instantaneous `sojourn > ins_target`, plus the persistent-queue part.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnsharpConfig {
    pub ins_target: Time,
    pub pst_target: Time,
    pub pst_interval: Time,
}

/// `kind = "ecnsharp_queue"`: ECN♯ on queue lengths, instantaneous `queue > ins_threshold`, persistent
/// "above" = `queue ≥ pst_threshold`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnsharpQueueConfig {
    pub ins_threshold: QueueLen,
    pub pst_threshold: QueueLen,
    pub pst_interval: Time,
}

/// `kind = "ecnsharp_red"`: ECN♯ with DCQCN (§3.5), a RED-like probability on the queue between K_min and
/// K_max; the persistent part on sojourn times unchanged.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnsharpRedConfig {
    pub min: QueueLen,
    pub max: QueueLen,
    pub max_p: f64,
    pub pst_target: Time,
    pub pst_interval: Time,
}

impl MarkerSpec for EcnsharpConfig {
    type Marker = EcnSharp;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        c.positive("ins_target", self.ins_target)?;
        c.positive("pst_interval", self.pst_interval)
    }
    fn build(&self, b: Build) -> Result<EcnSharp, Error> {
        Ok(EcnSharp::new(b.queues, self.ins_target, self.pst_target, self.pst_interval))
    }
}

impl MarkerSpec for EcnsharpQueueConfig {
    type Marker = EcnSharp;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        c.threshold("ins_threshold", self.ins_threshold)?;
        c.threshold("pst_threshold", self.pst_threshold)?;
        c.positive("pst_interval", self.pst_interval)
    }
    fn build(&self, b: Build) -> Result<EcnSharp, Error> {
        let (ins, pst) = (b.bytes(self.ins_threshold), b.bytes(self.pst_threshold));
        Ok(EcnSharp::queue_based(b.queues, ins, pst, self.pst_interval))
    }
}

impl MarkerSpec for EcnsharpRedConfig {
    type Marker = EcnSharp;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        c.band(self.min, self.max)?;
        c.probability("max_p", self.max_p)?;
        c.positive("pst_interval", self.pst_interval)
    }
    fn build(&self, b: Build) -> Result<EcnSharp, Error> {
        let (min, max) = (Level::Queue(b.bytes(self.min)), Level::Queue(b.bytes(self.max)));
        let pst = Level::Sojourn(self.pst_target);
        Ok(EcnSharp::probabilistic(b.queues, min, max, self.max_p, pst, self.pst_interval, b.rng))
    }
}

#[derive(Clone, Debug)]
pub struct EcnSharp {
    ins: Instantaneous,
    pst_target: Level,
    pst_interval: Time,
    queues: Vec<Persistent>,
    /// Draws for the probabilistic ramp only.
    rng: Option<Rng>,
}

impl EcnSharp {
    /// The paper's design: sojourn-time thresholds (§3.4 rule of thumb: ins_target = λ·RTT_p90,
    /// pst_target ≥ λ·RTT_avg, pst_interval ≈ a high-percentile RTT).
    pub fn new(n_queues: usize, ins_target: Time, pst_target: Time, pst_interval: Time) -> EcnSharp {
        Self::build(
            n_queues,
            Instantaneous::Cutoff(Level::Sojourn(ins_target)),
            Level::Sojourn(pst_target),
            pst_interval,
            None,
        )
    }

    /// The queue-length version (§3.5): thresholds in bytes on the queue left behind by the departure.
    pub fn queue_based(n_queues: usize, ins_bytes: Bytes, pst_bytes: Bytes, pst_interval: Time) -> EcnSharp {
        Self::build(
            n_queues,
            Instantaneous::Cutoff(Level::Queue(ins_bytes)),
            Level::Queue(pst_bytes),
            pst_interval,
            None,
        )
    }

    /// ECN♯ + DCQCN (§3.5): the instantaneous part becomes DCQCN's ramp; the persistent part is unchanged.
    /// Panics when k_min and k_max are on different signals, k_min > k_max, or p_max is outside [0, 1].
    pub fn probabilistic(
        n_queues: usize,
        k_min: Level,
        k_max: Level,
        p_max: f64,
        pst_target: Level,
        pst_interval: Time,
        rng: Rng,
    ) -> EcnSharp {
        assert!(k_min.same_signal(k_max), "ECN♯ ramp: K_min and K_max must be on the same signal");
        assert!(k_min.value() <= k_max.value(), "ECN♯ ramp: K_min > K_max");
        assert!((0.0..=1.0).contains(&p_max), "ECN♯ ramp: P_max outside [0, 1]");
        Self::build(n_queues, Instantaneous::Ramp { k_min, k_max, p_max }, pst_target, pst_interval, Some(rng))
    }

    fn build(n: usize, ins: Instantaneous, pst_target: Level, pst_interval: Time, rng: Option<Rng>) -> EcnSharp {
        EcnSharp { ins, pst_target, pst_interval, queues: vec![Persistent::default(); n], rng }
    }

    /// Runs both parts for one departing packet from queue `q`; which of them mark it, if any.
    pub fn decide(&mut self, st: &PortState<impl Queues>, q: usize, sojourn: Time) -> Option<EcnSharpPart> {
        let ins = self.instantaneous(st, q, sojourn);
        let pst = self.persistent(st, q, sojourn);
        match (ins, pst) {
            (true, true) => Some(EcnSharpPart::Both),
            (true, false) => Some(EcnSharpPart::Instantaneous),
            (false, true) => Some(EcnSharpPart::Persistent),
            (false, false) => None,
        }
    }

    fn instantaneous(&mut self, st: &PortState<impl Queues>, q: usize, sojourn: Time) -> bool {
        match self.ins {
            Instantaneous::Cutoff(k) => k.signal(st, q, sojourn) > k.value(),
            Instantaneous::Ramp { k_min, k_max, p_max } => {
                let x = k_min.signal(st, q, sojourn);
                let (lo, hi) = (k_min.value(), k_max.value());
                if x <= lo {
                    false
                } else if x > hi {
                    true
                } else {
                    // lo < x ≤ hi implies hi > lo: no division by zero.
                    let p = p_max * (x - lo) as f64 / (hi - lo) as f64;
                    self.rng.as_mut().expect("a ramp is built with an Rng").uniform() < p
                }
            }
        }
    }

    /// Algorithm 1, `ShouldPersistentMark`.
    fn persistent(&mut self, st: &PortState<impl Queues>, q: usize, sojourn: Time) -> bool {
        let above = self.pst_target.signal(st, q, sojourn) >= self.pst_target.value();
        let s = &mut self.queues[q];
        let detected = s.detect(st.now, above, self.pst_interval);
        s.mark(st.now, detected, self.pst_interval)
    }
}

impl Marker for EcnSharp {
    const ACTS: super::Acts = super::Acts::DEQUEUE;

    /// `sojourn` = now − the packet's enqueue time. The port's `non_ect` option handles non-ECT packets.
    fn on_dequeue(&mut self, st: &PortState<impl Queues>, q: usize, _p: &Packet, sojourn: Time) -> Verdict {
        match self.decide(st, q, sojourn) {
            Some(EcnSharpPart::Persistent) => Verdict::Mark(MarkReason::Persistent),
            Some(_) => Verdict::Mark(match self.ins {
                Instantaneous::Cutoff(Level::Sojourn(_)) => MarkReason::Sojourn,
                Instantaneous::Cutoff(Level::Queue(_)) => MarkReason::Threshold,
                Instantaneous::Ramp { .. } => MarkReason::Red,
            }),
            None => Verdict::Pass,
        }
    }
}

impl Persistent {
    /// Algorithm 1, `IsPersistentQueueBuildups` (lines 21–33); `above` = not (signal < pst_target).
    fn detect(&mut self, now: Time, above: bool, interval: Time) -> bool {
        if !above {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now);
                false
            }
            Some(t) => now > t + interval,
        }
    }

    /// Algorithm 1, lines 3–19: conservative marking once a persistent queue is detected.
    fn mark(&mut self, now: Time, detected: bool, interval: Time) -> bool {
        if self.marking {
            if !detected {
                self.marking = false;
                return false;
            }
            if now <= self.marking_next {
                return false;
            }
            self.marking_count = self.marking_count.saturating_add(1);
            self.marking_next += Time(interval.0 / self.marking_count as u64);
            true
        } else if detected {
            self.marking = true;
            self.marking_count = 1;
            self.marking_next = now + interval;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::test_util::state;

    const US: u64 = 1_000_000;
    const INS: Time = Time::from_us(50);
    const PST: Time = Time::from_us(10);
    const ITV: Time = Time::from_us(100);
    /// Above pst_target, below ins_target.
    const MID: Time = Time::from_us(20);
    const LOW: Time = Time::from_us(5);
    const HIGH: Time = Time::from_us(60);

    fn pkt() -> Packet {
        Packet { wire: 1500, ..Packet::default() }
    }

    /// One dequeue from queue 0 at `now_ps` (queue 1 stays idle).
    fn at(m: &mut EcnSharp, now_ps: u64, sojourn: Time) -> Option<EcnSharpPart> {
        m.decide(&state(&[15_000, 0], Time(now_ps)), 0, sojourn)
    }

    fn sharp() -> EcnSharp {
        EcnSharp::new(2, INS, PST, ITV)
    }

    #[test]
    fn algorithm_1_trace_entry_spacing_exit_and_redetection() {
        use EcnSharpPart::Persistent as P;
        let mut m = sharp();
        // Detection: first packet above sets first_above_time (even at now = 0).
        assert_eq!(at(&mut m, 0, MID), None);
        assert_eq!(m.queues[0].first_above_time, Some(Time::ZERO));
        assert_eq!(at(&mut m, 50 * US, MID), None);
        assert_eq!(at(&mut m, 100 * US, MID), None, "now = first_above_time + pst_interval: not yet (strict >)");
        // Entry: count 1, next = now + pst_interval.
        assert_eq!(at(&mut m, 100 * US + 1, MID), Some(P));
        let s = m.queues[0];
        assert!(s.marking);
        assert_eq!((s.marking_count, s.marking_next), (1, Time(200 * US + 1)));
        assert_eq!(at(&mut m, 150 * US, MID), None);
        assert_eq!(at(&mut m, 200 * US + 1, MID), None, "now = marking_next: not yet (strict >)");
        // count 2: next += 100 us / 2.
        assert_eq!(at(&mut m, 200 * US + 2, MID), Some(P));
        assert_eq!((m.queues[0].marking_count, m.queues[0].marking_next), (2, Time(250 * US + 1)));
        // count 3: next += ⌊100 000 000 / 3⌋ = 33 333 333 ps.
        assert_eq!(at(&mut m, 251 * US, MID), Some(P));
        assert_eq!((m.queues[0].marking_count, m.queues[0].marking_next), (3, Time(283_333_334)));
        // count 4: next += 25 us.
        assert_eq!(at(&mut m, 284 * US, MID), Some(P));
        assert_eq!((m.queues[0].marking_count, m.queues[0].marking_next), (4, Time(308_333_334)));
        assert_eq!(at(&mut m, 300 * US, MID), None);
        // Exit: sojourn < pst_target fails detection; leave the marking state without marking.
        assert_eq!(at(&mut m, 310 * US, LOW), None);
        assert!(!m.queues[0].marking);
        assert_eq!(m.queues[0].first_above_time, None);
        // Re-detection needs a fresh pst_interval from the next packet above.
        assert_eq!(at(&mut m, 320 * US, MID), None);
        assert_eq!(at(&mut m, 400 * US, MID), None, "past the old marking_next, but not re-detected");
        assert_eq!(at(&mut m, 420 * US, MID), None);
        assert_eq!(at(&mut m, 420 * US + 1, MID), Some(P));
        assert_eq!((m.queues[0].marking_count, m.queues[0].marking_next), (1, Time(520 * US + 1)));
        assert_eq!(m.queues[1], Persistent::default(), "queue 1 untouched");
    }

    #[test]
    fn sojourn_exactly_pst_target_counts_as_above() {
        let mut m = sharp();
        assert_eq!(at(&mut m, 0, PST), None);
        assert_eq!(at(&mut m, 100 * US + 1, PST), Some(EcnSharpPart::Persistent));
        assert_eq!(at(&mut m, 150 * US, Time(PST.0 - 1)), None);
        assert!(!m.queues[0].marking);
    }

    #[test]
    fn instantaneous_part_alone_marks_bursts_above_ins_target() {
        let mut m = sharp();
        assert_eq!(at(&mut m, 0, INS), None, "sojourn = ins_target: not above (strict >)");
        assert_eq!(at(&mut m, 1, Time(INS.0 + 1)), Some(EcnSharpPart::Instantaneous));
        // Bursts interleaved with short sojourns never build a persistent detection.
        for i in 0..20u64 {
            let t = (i + 1) * 60 * US;
            let (soj, want) = if i % 2 == 0 { (HIGH, Some(EcnSharpPart::Instantaneous)) } else { (LOW, None) };
            assert_eq!(at(&mut m, t, soj), want, "packet {i}");
        }
        assert!(!m.queues[0].marking);
    }

    #[test]
    fn both_parts_run_on_every_packet() {
        use EcnSharpPart::*;
        let mut m = sharp();
        // Every packet above ins_target: each is marked, and the persistent state still advances.
        assert_eq!(at(&mut m, 0, HIGH), Some(Instantaneous));
        assert_eq!(m.queues[0].first_above_time, Some(Time::ZERO));
        assert_eq!(at(&mut m, 100 * US + 1, HIGH), Some(Both));
        assert_eq!((m.queues[0].marking_count, m.queues[0].marking_next), (1, Time(200 * US + 1)));
        assert_eq!(at(&mut m, 150 * US, HIGH), Some(Instantaneous));
        // The burst subsides to MID: the persistent schedule set during the burst holds.
        assert_eq!(at(&mut m, 200 * US + 2, MID), Some(Persistent));
        assert_eq!((m.queues[0].marking_count, m.queues[0].marking_next), (2, Time(250 * US + 1)));
        // On the verdict level, any part marks.
        let st = state(&[15_000, 0], Time(260 * US));
        assert_eq!(m.on_dequeue(&st, 0, &pkt(), MID), Verdict::Mark(MarkReason::Persistent));
        assert_eq!(m.on_dequeue(&st, 0, &pkt(), LOW), Verdict::Pass);
    }

    #[test]
    fn queue_length_variant_compares_bytes_left_behind() {
        let mut m = EcnSharp::queue_based(1, Bytes(30_000), Bytes(6_000), ITV);
        let mut q = |now: u64, bytes: u64| m.decide(&state(&[bytes], Time(now)), 0, HIGH);
        // The sojourn (HIGH) is ignored; queue = ins is not above (strict >), one byte more is.
        assert_eq!(q(0, 30_000), None);
        assert_eq!(q(1, 30_001), Some(EcnSharpPart::Instantaneous));
        // Persistent "above" is queue ≥ pst_bytes; first_above_time was set at t = 0.
        assert_eq!(q(100 * US, 6_000), None);
        assert_eq!(q(100 * US + 1, 6_000), Some(EcnSharpPart::Persistent));
        assert_eq!(q(150 * US, 5_999), None);
        assert!(!m.queues[0].marking);
    }

    #[test]
    fn dcqcn_ramp_marks_at_half_p_max_midway_and_keeps_the_persistent_part() {
        let rng = Rng::stream(11, 4);
        let (k_min, k_max) = (Level::Queue(Bytes(10_000)), Level::Queue(Bytes(30_000)));
        let mut m = EcnSharp::probabilistic(1, k_min, k_max, 0.2, Level::Sojourn(PST), ITV, rng);
        let mut frac = |bytes: u64| {
            let n = 100_000;
            let qb = [bytes];
            let st = state(&qb, Time::ZERO);
            // LOW sojourn: the persistent part never detects, only the ramp decides.
            (0..n).filter(|_| m.decide(&st, 0, LOW).is_some()).count() as f64 / n as f64
        };
        assert_eq!(frac(10_000), 0.0, "at K_min: never");
        let mid = frac(20_000);
        assert!((mid - 0.1).abs() < 0.005, "midpoint marked {mid}, expected P_max / 2 = 0.1");
        let top = frac(30_000);
        assert!((top - 0.2).abs() < 0.007, "at K_max marked {top}, expected P_max = 0.2");
        assert_eq!(frac(30_001), 1.0, "above K_max: always");
        // Persistent part unchanged: sojourn above pst_target for an interval, queue below K_min.
        let mut p = |now: u64| m.decide(&state(&[5_000], Time(now)), 0, MID);
        assert_eq!(p(0), None);
        assert_eq!(p(100 * US + 1), Some(EcnSharpPart::Persistent));
    }

    #[test]
    fn sojourn_ramp_with_equal_thresholds_is_a_cutoff() {
        let (k, rng) = (Level::Sojourn(INS), Rng::stream(1, 1));
        let mut m = EcnSharp::probabilistic(1, k, k, 0.5, Level::Sojourn(PST), ITV, rng);
        let st = state(&[0], Time::ZERO);
        assert_eq!(m.decide(&st, 0, INS), None);
        assert_eq!(m.decide(&st, 0, Time(INS.0 + 1)), Some(EcnSharpPart::Instantaneous));
    }

    #[test]
    #[should_panic(expected = "same signal")]
    fn ramp_on_mixed_signals_is_rejected() {
        let rng = Rng::stream(1, 1);
        EcnSharp::probabilistic(1, Level::Sojourn(INS), Level::Queue(Bytes(1)), 0.1, Level::Sojourn(PST), ITV, rng);
    }
}
