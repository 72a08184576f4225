//! MQ-ECN (Bai et al., NSDI 2016, §3.3 and §4.2): a per-queue threshold that follows the round time of a
//! round-robin scheduler, K_i = K_std · min(quantum_i / (C · T_round), 1), marked at enqueue with "exceeds".
//!
//! T_round is per port: each `TurnEnded` round event gives a sample `now − started` (the time since the queue
//! last joined the active list), folded in as `T_round ← β·T_round + (1−β)·sample` (Eq. 6). While the port
//! is idle, `T_round ← β·T_round` once per elapsed T_idle, applied lazily at the next enqueue. T_round starts
//! at 0, so K_i starts at K_std. Queues not served by round robin (strict-priority queues) use K_std.
//! The probabilistic variant scales K_min and K_max by the same factor and keeps P_max (§3.3).

use super::{MarkReason, PortState, Verdict};
use crate::engine::Rng;
use crate::sched::RoundEvent;
use crate::units::{Bytes, Time};

/// Deterministic step at K_i, or RED-like probability between scaled K_min and K_max.
#[derive(Clone, Debug)]
pub enum Shape {
    Step { k_std: Bytes },
    Linear { k_min: Bytes, k_max: Bytes, p_max: f64, rng: Rng },
}

/// `repr(C)`, what every enqueue reads first and the shape last: with a step shape the fields an enqueue
/// touches fill 56 bytes, one line of the port's record.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct MqEcn {
    /// The round-time estimate, in picoseconds (f64: it is an EWMA).
    pub t_round: f64,
    /// When the port went idle (`Time::MAX`: it is busy, or its idle time was already folded in).
    idle_since: Time,
    /// Bit q set: queue q is served by round robin (else K_std applies). A mask, not a vector: it lives in
    /// the port's own lines rather than in an allocation of its own.
    round_robin: u64,
    pub beta: f64,
    /// Idle decay period (one MTU time by default).
    pub t_idle: Time,
    pub shape: Shape,
}

impl MqEcn {
    /// `round_robin[q]`: queue q is served by round robin (at most 64 queues; ports have at most 32).
    pub fn new(shape: Shape, beta: f64, t_idle: Time, round_robin: &[bool]) -> MqEcn {
        assert!(round_robin.len() <= 64, "MQ-ECN supports at most 64 queues per port");
        let mask = round_robin.iter().enumerate().fold(0u64, |m, (q, &rr)| m | (rr as u64) << q);
        MqEcn { shape, beta, t_idle, round_robin: mask, t_round: 0.0, idle_since: Time::MAX }
    }

    fn is_round_robin(&self, q: usize) -> bool {
        q < 64 && self.round_robin >> q & 1 != 0
    }

    /// Eq. 6 on a finished turn.
    pub fn on_round(&mut self, ev: &RoundEvent) {
        if let RoundEvent::TurnEnded { queue, started, at } = *ev {
            if self.is_round_robin(queue) {
                let sample = at.saturating_sub(started).0 as f64;
                self.t_round = self.beta * self.t_round + (1.0 - self.beta) * sample;
            }
        }
    }

    pub fn on_idle(&mut self, now: Time) {
        self.idle_since = now;
    }

    /// The scale factor min(quantum_i / (C · T_round), 1) of queue q; 1 before any round was measured
    /// (T_round = 0: the quotient is +∞, or NaN for a zero quantum, and `min` gives 1 for both) and for a
    /// queue outside round robin. T_round is never negative (Eq. 6 averages non-negative samples), so no
    /// branch tests it: whether a port's estimate has decayed to 0 is a coin toss to the branch predictor.
    pub fn scale(&self, st: &PortState, q: usize) -> f64 {
        if !self.is_round_robin(q) {
            return 1.0;
        }
        let bytes_per_round = st.rate.0 as f64 / 8.0 * self.t_round / 1e12;
        (st.weight(q) as f64 / bytes_per_round).min(1.0)
    }

    fn decay_idle(&mut self, now: Time) {
        let since = std::mem::replace(&mut self.idle_since, Time::MAX);
        if since != Time::MAX && self.t_idle > Time::ZERO {
            let periods = now.saturating_sub(since).0 / self.t_idle.0;
            // β^0 = 1 and 0·β^n = 0: skip the power when it cannot change T_round.
            if periods > 0 && self.t_round != 0.0 {
                self.t_round *= self.beta.powi(periods.min(i32::MAX as u64) as i32);
            }
        }
    }

    /// At enqueue: the arriving packet counts in the queue length (DESIGN "Occupancy").
    pub fn on_enqueue(&mut self, st: &PortState, q: usize) -> Verdict {
        self.decay_idle(st.now);
        let s = self.scale(st, q);
        let len = st.queue_bytes(q) as f64;
        let mark = match &mut self.shape {
            Shape::Step { k_std } => len > k_std.0 as f64 * s,
            Shape::Linear { k_min, k_max, p_max, rng } => {
                let (lo, hi) = (k_min.0 as f64 * s, k_max.0 as f64 * s);
                if len <= lo {
                    false
                } else if len > hi {
                    true
                } else {
                    rng.uniform() < *p_max * (len - lo) / (hi - lo).max(1e-9)
                }
            }
        };
        if mark {
            Verdict::Mark(MarkReason::Threshold)
        } else {
            Verdict::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::test_util::weighted;

    fn step(k: u64, n: usize) -> MqEcn {
        MqEcn::new(Shape::Step { k_std: Bytes(k) }, 0.75, Time::from_ns(1200), &vec![true; n])
    }

    fn turn(q: usize, started_us: u64, at_us: u64) -> RoundEvent {
        RoundEvent::TurnEnded { queue: q, started: Time::from_us(started_us), at: Time::from_us(at_us) }
    }

    #[test]
    fn starts_at_the_standard_threshold() {
        let mut m = step(97_500, 2);
        let w = [1500, 1500];
        assert_eq!(m.on_enqueue(&weighted(&[97_500, 0], &w, Time::ZERO), 0), Verdict::Pass);
        assert_eq!(m.on_enqueue(&weighted(&[97_501, 0], &w, Time::ZERO), 0), Verdict::Mark(MarkReason::Threshold));
        // No round measured yet (T_round = 0): the scale is 1 whatever the quantum, 0 included.
        assert_eq!(m.scale(&weighted(&[0, 0], &[0, 1500], Time::ZERO), 0), 1.0);
    }

    #[test]
    fn round_time_follows_eq6_and_scales_k() {
        let mut m = step(97_500, 4);
        // Four equal DWRR queues of 1500 B at 10 Gb/s: a round takes 4 × 1.2 us = 4.8 us.
        for _ in 0..200 {
            m.on_round(&RoundEvent::TurnEnded { queue: 0, started: Time::ZERO, at: Time::from_ns(4800) });
        }
        assert!((m.t_round - 4.8e6).abs() < 1.0, "converges to the sample: {}", m.t_round);
        // K_i = K · Q / (C · T_round) = 97 500 · 1500 / 6000 = K/4.
        let w = [1500; 4];
        let st = weighted(&[0; 4], &w, Time::ZERO);
        assert!((m.scale(&st, 0) - 0.25).abs() < 1e-9);
        let mut one = step(97_500, 1);
        one.on_round(&turn(0, 0, 8));
        assert!((one.t_round - 0.25 * 8e6).abs() < 1e-6, "β = 0.75: first sample weighs 1 − β");
    }

    #[test]
    fn idle_port_decays_round_time_by_beta_per_t_idle() {
        let mut m = step(97_500, 2);
        m.t_round = 1e6;
        m.on_idle(Time::from_us(10));
        // 3 full T_idle periods (1.2 us each) elapse before the next arrival.
        let w = [1500, 1500];
        m.on_enqueue(&weighted(&[1500, 0], &w, Time::from_ns(10_000 + 3_700)), 0);
        assert!((m.t_round - 1e6 * 0.75f64.powi(3)).abs() < 1e-6);
    }

    #[test]
    fn strict_priority_queues_keep_the_standard_threshold() {
        let mut m = MqEcn::new(Shape::Step { k_std: Bytes(15_000) }, 0.75, Time::from_ns(1200), &[false, true]);
        m.t_round = 1e9;
        let w = [1, 1500];
        let st = weighted(&[15_001, 0], &w, Time::ZERO);
        assert_eq!(m.scale(&st, 0), 1.0);
        assert!(m.scale(&st, 1) < 0.01);
    }
}
