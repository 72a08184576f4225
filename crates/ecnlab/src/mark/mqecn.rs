//! MQ-ECN (Bai et al., NSDI 2016, §3.3 and §4.2): a per-queue threshold that follows the round time of a
//! round-robin scheduler, K_i = K_std · min(quantum_i / (C · T_round), 1), marked at enqueue with "exceeds".
//!
//! T_round is per port: each `TurnEnded` round event gives a sample `now − started` (the time since the queue
//! last joined the active list), folded in as `T_round ← β·T_round + (1−β)·sample` (Eq. 6). While the port
//! is idle, `T_round ← β·T_round` once per elapsed T_idle, applied lazily at the next enqueue. T_round starts
//! at 0, so K_i starts at K_std. Queues not served by round robin (strict-priority queues) use K_std.
//! The probabilistic variant scales K_min and K_max by the same factor and keeps P_max (§3.3).

use super::{Build, Check, MarkReason, Marker, MarkerSpec, PortState, Queues, Verdict};
use crate::engine::Rng;
use crate::error::Error;
use crate::packet::Packet;
use crate::sched::RoundEvent;
use crate::units::{Bytes, QueueLen, Time};

/// `marker = { kind = "mqecn", threshold, beta = 0.75, t_idle }`: MQ-ECN (NSDI'16 §3.3), K_i = K · min(quantum_i /
/// (C · T_round), 1) at enqueue, `>`; needs a round-robin scheduler (wrr, dwrr, or sp_over one of them).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqecnConfig {
    pub threshold: QueueLen,
    #[serde(default = "beta")]
    pub beta: f64,
    /// Idle decay period; default one MTU time at the port rate.
    pub t_idle: Option<Time>,
}

/// `kind = "mqecn_red"`: MQ-ECN's probabilistic variant, RED between K_min and K_max, both scaled like K_i;
/// P_max unchanged.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqecnRedConfig {
    pub min: QueueLen,
    pub max: QueueLen,
    pub max_p: f64,
    #[serde(default = "beta")]
    pub beta: f64,
    pub t_idle: Option<Time>,
}

fn beta() -> f64 {
    0.75
}

/// MQ-ECN is defined for round-robin schedulers (its paper, §3.3): WRR or DWRR, possibly under SP.
fn check_round(c: &Check, beta: f64, t_idle: Option<Time>) -> Result<(), Error> {
    if !(beta > 0.0 && beta < 1.0) {
        return c.fail("beta", format!("must be in (0, 1), got {beta}"));
    }
    if t_idle == Some(Time::ZERO) {
        return c.fail("t_idle", "must be > 0");
    }
    if !c.round_robin {
        return c.fail(
            "",
            "MQ-ECN needs a round-robin scheduler: scheduler.kind = wrr, dwrr, or sp_over with a wrr/dwrr group",
        );
    }
    Ok(())
}

impl MarkerSpec for MqecnConfig {
    type Marker = MqEcn;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        c.threshold("threshold", self.threshold)?;
        check_round(c, self.beta, self.t_idle)
    }
    fn build(&self, b: Build) -> Result<MqEcn, Error> {
        let k_std = b.bytes(self.threshold);
        b.fits(k_std)?;
        let t_idle = self.t_idle.unwrap_or_else(|| b.rate.tx_time(b.mtu));
        Ok(MqEcn::new(Shape::Step { k_std }, self.beta, t_idle, &b.round_robin()))
    }
}

impl MarkerSpec for MqecnRedConfig {
    type Marker = MqEcn;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        c.band(self.min, self.max)?;
        c.probability("max_p", self.max_p)?;
        check_round(c, self.beta, self.t_idle)
    }
    fn build(&self, b: Build) -> Result<MqEcn, Error> {
        let (k_min, k_max) = (b.bytes(self.min), b.bytes(self.max));
        b.fits(k_max)?;
        let t_idle = self.t_idle.unwrap_or_else(|| b.rate.tx_time(b.mtu));
        let round_robin = b.round_robin();
        Ok(MqEcn::new(Shape::Linear { k_min, k_max, p_max: self.max_p, rng: b.rng }, self.beta, t_idle, &round_robin))
    }
}

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

    /// The scale factor min(quantum_i / (C · T_round), 1) of queue q; 1 before any round was measured
    /// (T_round = 0: the quotient is +∞, or NaN for a zero quantum, and `min` gives 1 for both) and for a
    /// queue outside round robin. T_round is never negative (Eq. 6 averages non-negative samples), so no
    /// branch tests it: whether a port's estimate has decayed to 0 is a coin toss to the branch predictor.
    pub fn scale(&self, st: &PortState<impl Queues>, q: usize) -> f64 {
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
}

impl Marker for MqEcn {
    const ACTS: super::Acts = super::Acts::ENQUEUE;

    /// Eq. 6 on a finished turn.
    fn on_round(&mut self, ev: &RoundEvent) {
        if let RoundEvent::TurnEnded { queue, started, at } = *ev {
            if self.is_round_robin(queue) {
                let sample = at.saturating_sub(started).0 as f64;
                self.t_round = self.beta * self.t_round + (1.0 - self.beta) * sample;
            }
        }
    }

    fn on_idle(&mut self, now: Time) {
        self.idle_since = now;
    }

    /// At enqueue: the arriving packet counts in the queue length (DESIGN "Occupancy").
    fn on_enqueue(&mut self, st: &PortState<impl Queues>, q: usize, _p: &Packet) -> Verdict {
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
    use crate::mark::test_util::{pkt, weighted};

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
        assert_eq!(m.on_enqueue(&weighted(&[97_500, 0], &w, Time::ZERO), 0, &pkt()), Verdict::Pass);
        assert_eq!(
            m.on_enqueue(&weighted(&[97_501, 0], &w, Time::ZERO), 0, &pkt()),
            Verdict::Mark(MarkReason::Threshold)
        );
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
        m.on_enqueue(&weighted(&[1500, 0], &w, Time::from_ns(10_000 + 3_700)), 0, &pkt());
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
