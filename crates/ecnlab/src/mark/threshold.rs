//! Instantaneous queue-length threshold marking, at enqueue or at dequeue (ECN* §3.1 and §4; DCTCP §3.1).
//!
//! Per-queue scope: the packet's queue length against K (the "per-queue standard" of MQ-ECN §2.1); port
//! scope: the port's total. Comparison is `≥` for ECN* and `>` ("exceeds") for DCTCP/MQ-ECN: a config option.

use super::{At, Build, Check, Compare, MarkReason, Marker, MarkerSpec, PortState, Queues, Verdict};
use crate::error::Error;
use crate::packet::Packet;
use crate::units::{Bytes, QueueLen};

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
        c.threshold("threshold", self.threshold)
    }
    fn build(&self, b: Build) -> Result<Threshold, Error> {
        let threshold = b.bytes(self.threshold);
        b.fits(threshold)?;
        Ok(Threshold { threshold, at: self.at, compare: self.compare, scope: self.scope })
    }
}

impl Threshold {
    fn decide(&self, st: &PortState<impl Queues>, q: usize) -> Verdict {
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
        self.at.only(At::Enqueue, || self.decide(st, q))
    }
    fn on_dequeue(
        &mut self,
        st: &PortState<impl Queues>,
        q: usize,
        _p: &Packet,
        _sojourn: crate::units::Time,
    ) -> Verdict {
        self.at.only(At::Dequeue, || self.decide(st, q))
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
        let mut ge = Threshold { threshold: k, at: At::Enqueue, compare: Compare::Ge, scope: Scope::Queue };
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
        let mut m = Threshold { threshold: Bytes(0), at: At::Dequeue, compare: Compare::Ge, scope: Scope::Queue };
        assert_eq!(m.on_dequeue(&state(&[0], Time::ZERO), 0, &pkt(), Time::ZERO), Verdict::Mark(MarkReason::Threshold));
    }

    #[test]
    fn per_queue_minimum_is_the_weighted_share_of_k() {
        // MQ-ECN Eq. 2: K = 16 packets over 8 equal queues gives 2 packets per queue (PMSB §II).
        let mut m =
            Threshold { threshold: Bytes(24_000), at: At::Enqueue, compare: Compare::Gt, scope: Scope::QueueWeighted };
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
    fn port_scope_sums_queues() {
        let mut m = Threshold { threshold: Bytes(4000), at: At::Enqueue, compare: Compare::Gt, scope: Scope::Port };
        assert_eq!(m.on_enqueue(&state(&[3000, 1500], Time::ZERO), 0, &pkt()), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(m.on_enqueue(&state(&[3000, 0], Time::ZERO), 0, &pkt()), Verdict::Pass);
    }
}
