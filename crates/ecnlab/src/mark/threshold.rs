//! Instantaneous queue-length threshold marking, at enqueue or at dequeue (ECN* §3.1 and §4; DCTCP §3.1).
//!
//! Per-queue scope: the packet's queue length against K (the "per-queue standard" of MQ-ECN §2.1); port
//! scope: the port's total. Comparison is `≥` for ECN* and `>` ("exceeds") for DCTCP/MQ-ECN: a config option.

use super::{At, Compare, MarkReason, PortState, Verdict};
use crate::units::Bytes;

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

impl Threshold {
    fn decide(&self, st: &PortState, q: usize) -> Verdict {
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
    pub fn on_enqueue(&self, st: &PortState, q: usize) -> Verdict {
        self.at.only(At::Enqueue, || self.decide(st, q))
    }
    pub fn on_dequeue(&self, st: &PortState, q: usize) -> Verdict {
        self.at.only(At::Dequeue, || self.decide(st, q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::test_util::state;
    use crate::units::Time;

    #[test]
    fn ge_marks_at_the_threshold_and_gt_only_above() {
        let k = Bytes(3000);
        let ge = Threshold { threshold: k, at: At::Enqueue, compare: Compare::Ge, scope: Scope::Queue };
        let gt = Threshold { compare: Compare::Gt, ..ge.clone() };
        let at_k = state(&[3000], Time::ZERO);
        assert_eq!(ge.on_enqueue(&at_k, 0), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(gt.on_enqueue(&at_k, 0), Verdict::Pass);
        let above = state(&[3001], Time::ZERO);
        assert_eq!(gt.on_enqueue(&above, 0), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(ge.on_dequeue(&above, 0), Verdict::Pass, "enqueue marker ignores dequeues");
    }

    #[test]
    fn zero_threshold_with_ge_marks_everything() {
        // ECN*'s h = 0: every packet, even into an empty queue... the arriving packet itself counts.
        let m = Threshold { threshold: Bytes(0), at: At::Dequeue, compare: Compare::Ge, scope: Scope::Queue };
        assert_eq!(m.on_dequeue(&state(&[0], Time::ZERO), 0), Verdict::Mark(MarkReason::Threshold));
    }

    #[test]
    fn per_queue_minimum_is_the_weighted_share_of_k() {
        // MQ-ECN Eq. 2: K = 16 packets over 8 equal queues gives 2 packets per queue (PMSB §II).
        let m =
            Threshold { threshold: Bytes(24_000), at: At::Enqueue, compare: Compare::Gt, scope: Scope::QueueWeighted };
        let w = [1u64; 8];
        let mut q = [0u64; 8];
        q[3] = 3_000;
        assert_eq!(m.on_enqueue(&crate::mark::test_util::weighted(&q, &w, Time::ZERO), 3), Verdict::Pass);
        q[3] = 3_001;
        assert_eq!(
            m.on_enqueue(&crate::mark::test_util::weighted(&q, &w, Time::ZERO), 3),
            Verdict::Mark(MarkReason::Threshold)
        );
    }

    #[test]
    fn port_scope_sums_queues() {
        let m = Threshold { threshold: Bytes(4000), at: At::Enqueue, compare: Compare::Gt, scope: Scope::Port };
        assert_eq!(m.on_enqueue(&state(&[3000, 1500], Time::ZERO), 0), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(m.on_enqueue(&state(&[3000, 0], Time::ZERO), 0), Verdict::Pass);
    }
}
