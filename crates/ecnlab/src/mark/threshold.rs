//! Instantaneous queue-length threshold marking, at enqueue or at dequeue (ECN* §3.1 and §4; DCTCP §3.1).
//!
//! Per-queue scope: the packet's queue length against K (the "per-queue standard" of MQ-ECN §2.1); port
//! scope: the port's total. Comparison is `≥` for ECN* and `>` ("exceeds") for DCTCP/MQ-ECN: a config option.
//!
//! `lag` (dequeue marking only): the length compared is the one the queue had `lag` earlier, as on ECN*'s
//! Broadcom prototype, where a software thread reads the queue length and "queue length reading costs about
//! 6 us ... the first packet to get a CE mark is 6us behind the time when the queue length is over the ECN
//! threshold" (ECN* §4.3). The marker keeps the lengths it saw at each arrival and departure of its port (every
//! change of a queue's or the port's length passes through it) for the last `lag`.

use super::{At, Build, Check, Compare, MarkReason, Marker, MarkerSpec, PortState, Queues, Verdict};
use crate::error::Error;
use crate::packet::Packet;
use crate::units::{Bytes, QueueLen, Time};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The packet's queue against K (MQ-ECN §2.1 "per-queue standard").
    Queue,
    /// The port's total against K ("per-port").
    Port,
    /// The packet's queue against its weighted share K_i = w_i / Σw · K (MQ-ECN Eq. 2, "per-queue minimum").
    QueueWeighted,
    /// The switch's shared buffer pool against K ("per service pool", MQ-ECN §2.1).
    Pool,
}

#[derive(Clone, Debug)]
pub struct Threshold {
    pub threshold: Bytes,
    pub at: At,
    pub compare: Compare,
    pub scope: Scope,
    /// Reading delay of the length compared at dequeue (0: the current length).
    pub lag: Time,
    /// With a lag: per queue (one entry for port scope), the (time, length) of every change in the last `lag`,
    /// oldest first; the front is the length in force at `now − lag`.
    history: Vec<VecDeque<(Time, u64)>>,
}

/// `marker = { kind = "threshold", threshold = "65pkt", at = "enqueue", compare = "gt", scope = "queue" }`:
/// instantaneous queue-length threshold (ECN* §3.1 / §4; DCTCP's K).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdConfig {
    pub threshold: QueueLen,
    #[serde(default = "enqueue")]
    pub at: At,
    #[serde(default = "gt")]
    pub compare: Compare,
    #[serde(default = "queue_scope")]
    pub scope: Scope,
    /// ECN* §4.3's queue-length reading delay at dequeue (`"6us"`); 0 by default.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lag: Time,
}

fn is_zero(t: &Time) -> bool {
    *t == Time::ZERO
}

pub(super) fn enqueue() -> At {
    At::Enqueue
}
fn gt() -> Compare {
    Compare::Gt
}
pub(super) fn queue_scope() -> Scope {
    Scope::Queue
}

/// `scope = "pool"` reads the switch's shared pool, which must exist (also RED's).
pub(super) fn check_scope(c: &Check, scope: Scope) -> Result<(), Error> {
    if scope == Scope::Pool && !c.pool {
        return c.fail("scope", "scope = \"pool\" needs a shared buffer: set switch.pool");
    }
    Ok(())
}

impl MarkerSpec for ThresholdConfig {
    type Marker = Threshold;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        check_scope(c, self.scope)?;
        if self.lag > Time::ZERO && self.at != At::Dequeue {
            return c.fail("lag", "a reading delay applies to dequeue marking only: set at = \"dequeue\"");
        }
        if self.lag > Time::ZERO && !matches!(self.scope, Scope::Queue | Scope::Port) {
            return c.fail("lag", "a reading delay needs scope = \"queue\" or \"port\"");
        }
        c.threshold("threshold", self.threshold)
    }
    fn build(&self, b: Build) -> Result<Threshold, Error> {
        let threshold = b.bytes(self.threshold);
        b.fits(threshold)?;
        let mut t = Threshold::new(threshold, self.at, self.compare, self.scope);
        t.set_lag(self.lag, b.queues);
        Ok(t)
    }
}

impl Threshold {
    pub fn new(threshold: Bytes, at: At, compare: Compare, scope: Scope) -> Threshold {
        Threshold { threshold, at, compare, scope, lag: Time::ZERO, history: Vec::new() }
    }

    /// A reading delay at dequeue, for a port of `queues` queues.
    pub fn set_lag(&mut self, lag: Time, queues: usize) {
        self.lag = lag;
        let n = if lag == Time::ZERO {
            0
        } else if self.scope == Scope::Port {
            1
        } else {
            queues
        };
        self.history = (0..n).map(|_| VecDeque::from([(Time::ZERO, 0)])).collect();
    }

    /// Records the length `st` shows for queue `q` (or the port) at `st.now`, dropping what is older than needed.
    fn record(&mut self, st: &PortState<impl Queues>, q: usize) {
        let (i, len) = if self.scope == Scope::Port { (0, st.port_bytes) } else { (q, st.queue_bytes(q)) };
        let h = &mut self.history[i];
        h.push_back((st.now, len));
        let horizon = st.now.saturating_sub(self.lag);
        while h.len() > 1 && h[1].0 <= horizon {
            h.pop_front();
        }
    }

    /// The length queue `q` (or the port) had at `now − lag`: the last change at or before it.
    fn lagged(&self, q: usize, now: Time) -> u64 {
        let h = &self.history[if self.scope == Scope::Port { 0 } else { q }];
        let horizon = now.saturating_sub(self.lag);
        h.iter().take_while(|(t, _)| *t <= horizon).last().map_or(0, |&(_, len)| len)
    }

    fn decide(&self, st: &PortState<impl Queues>, q: usize) -> Verdict {
        if !self.history.is_empty() {
            let k = self.threshold.0;
            return if self.compare.holds(self.lagged(q, st.now), k) {
                Verdict::Mark(MarkReason::Threshold)
            } else {
                Verdict::Pass
            };
        }
        let (len, k) = match self.scope {
            Scope::Queue => (st.queue_bytes(q), self.threshold.0),
            Scope::Port => (st.port_bytes, self.threshold.0),
            Scope::Pool => (st.pool_bytes, self.threshold.0),
            Scope::QueueWeighted => {
                let sum = st.weight_sum;
                (st.queue_bytes(q), (st.weight(q) as u128 * self.threshold.0 as u128 / sum.max(1) as u128) as u64)
            }
        };
        if self.compare.holds(len, k) {
            Verdict::Mark(MarkReason::Threshold)
        } else {
            Verdict::Pass
        }
    }
}

/// `at` picks the point per instance, so the type may act at both.
impl Marker for Threshold {
    const ACTS: super::Acts = super::Acts::BOTH;
    fn on_enqueue(&mut self, st: &PortState<impl Queues>, q: usize, _p: &Packet) -> Verdict {
        if !self.history.is_empty() {
            self.record(st, q);
        }
        self.at.only(At::Enqueue, || self.decide(st, q))
    }
    fn on_dequeue(&mut self, st: &PortState<impl Queues>, q: usize, _p: &Packet, _sojourn: Time) -> Verdict {
        if self.history.is_empty() {
            return self.at.only(At::Dequeue, || self.decide(st, q));
        }
        // Judged on the length `lag` ago (this departure's own change is not yet `lag` old unless lag = 0).
        let v = self.at.only(At::Dequeue, || self.decide(st, q));
        self.record(st, q);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::test_util::{pkt, state};
    use crate::units::Time;

    #[test]
    fn ge_marks_at_the_threshold_and_gt_only_above() {
        let k = Bytes(3000);
        let mut ge = Threshold::new(k, At::Enqueue, Compare::Ge, Scope::Queue);
        let mut gt = Threshold { compare: Compare::Gt, ..ge.clone() };
        let at_k = state(&[3000], Time::ZERO);
        assert_eq!(ge.on_enqueue(&at_k, 0, &pkt()), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(gt.on_enqueue(&at_k, 0, &pkt()), Verdict::Pass);
        let above = state(&[3001], Time::ZERO);
        assert_eq!(gt.on_enqueue(&above, 0, &pkt()), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(ge.on_dequeue(&above, 0, &pkt(), Time::ZERO), Verdict::Pass, "enqueue marker ignores dequeues");
    }

    #[test]
    fn zero_threshold_with_ge_marks_everything() {
        // ECN*'s h = 0: every packet, even into an empty queue... the arriving packet itself counts.
        let mut m = Threshold::new(Bytes(0), At::Dequeue, Compare::Ge, Scope::Queue);
        assert_eq!(m.on_dequeue(&state(&[0], Time::ZERO), 0, &pkt(), Time::ZERO), Verdict::Mark(MarkReason::Threshold));
    }

    #[test]
    fn per_queue_minimum_is_the_weighted_share_of_k() {
        // MQ-ECN Eq. 2: K = 16 packets over 8 equal queues gives 2 packets per queue (PMSB §II).
        let mut m = Threshold::new(Bytes(24_000), At::Enqueue, Compare::Gt, Scope::QueueWeighted);
        let w = [1u64; 8];
        let mut q = [0u64; 8];
        q[3] = 3_000;
        assert_eq!(m.on_enqueue(&crate::mark::test_util::weighted(&q, &w, Time::ZERO), 3, &pkt()), Verdict::Pass);
        q[3] = 3_001;
        assert_eq!(
            m.on_enqueue(&crate::mark::test_util::weighted(&q, &w, Time::ZERO), 3, &pkt()),
            Verdict::Mark(MarkReason::Threshold)
        );
    }

    #[test]
    fn lagged_dequeue_marking_reads_the_length_lag_ago() {
        // K = 2 packets (3000 B), `≥`, dequeue, lag 6 us. Arrivals at 0, 1 and 2 us take the queue to 1500,
        // 3000, 4500 B; departures at 3, 7, 8.5 and 14 us leave 3000, 1500, 0 and (after an arrival at 9.5 us)
        // 0 B. Each departure is judged on the length at now − 6 us: -3 us → 0 (pass, where an unlagged marker
        // sees 3000 and marks), 1 us → 3000 (mark), 2.5 us → 4500 (mark), 8 us → 1500 (pass).
        const US: u64 = 1_000_000;
        let mut m = Threshold::new(Bytes(3000), At::Dequeue, Compare::Ge, Scope::Queue);
        m.set_lag(Time::from_us(6), 1);
        let mark = Verdict::Mark(MarkReason::Threshold);
        let at = |len: u64, ps: u64| state(&[len], Time(ps));
        for (i, len) in [1500, 3000, 4500].into_iter().enumerate() {
            assert_eq!(m.on_enqueue(&at(len, i as u64 * US), 0, &pkt()), Verdict::Pass, "dequeue marker");
        }
        let mut unlagged = Threshold::new(Bytes(3000), At::Dequeue, Compare::Ge, Scope::Queue);
        assert_eq!(unlagged.on_dequeue(&at(3000, 3 * US), 0, &pkt(), Time::ZERO), mark);
        assert_eq!(m.on_dequeue(&at(3000, 3 * US), 0, &pkt(), Time::ZERO), Verdict::Pass);
        assert_eq!(m.on_dequeue(&at(1500, 7 * US), 0, &pkt(), Time::ZERO), mark);
        assert_eq!(m.on_dequeue(&at(0, 8_500_000), 0, &pkt(), Time::ZERO), mark);
        assert_eq!(m.on_enqueue(&at(1500, 9_500_000), 0, &pkt()), Verdict::Pass);
        assert_eq!(m.on_dequeue(&at(0, 14 * US), 0, &pkt(), Time::ZERO), Verdict::Pass);
        // Only what is needed is kept: the change in force at 14 − 6 = 8 us (1500 B at 7 us) and the later ones.
        assert_eq!(m.history[0].front(), Some(&(Time(7 * US), 1500)));
        assert_eq!(m.history[0].len(), 4);
    }

    #[test]
    fn port_scope_sums_queues() {
        let mut m = Threshold::new(Bytes(4000), At::Enqueue, Compare::Gt, Scope::Port);
        assert_eq!(m.on_enqueue(&state(&[3000, 1500], Time::ZERO), 0, &pkt()), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(m.on_enqueue(&state(&[3000, 0], Time::ZERO), 0, &pkt()), Verdict::Pass);
    }
}
