//! Instantaneous queue-length threshold marking, at enqueue or at dequeue (ECN* §3.1 and §4; DCTCP §3.1).
//!
//! Per-queue scope: the packet's queue length against K (the "per-queue standard" of MQ-ECN §2.1); port
//! scope: the port's total. Comparison is `≥` for ECN* and `>` ("exceeds") for DCTCP/MQ-ECN: a config option.

use super::{At, Compare, MarkReason, PortState, Verdict};
use crate::units::Bytes;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Queue,
    Port,
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
        let len = match self.scope {
            Scope::Queue => st.queue_bytes[q],
            Scope::Port => st.port_bytes,
        };
        if self.compare.holds(len, self.threshold.0) {
            Verdict::Mark(MarkReason::Threshold)
        } else {
            Verdict::Pass
        }
    }
    pub fn on_enqueue(&self, st: &PortState, q: usize) -> Verdict {
        if self.at == At::Enqueue {
            self.decide(st, q)
        } else {
            Verdict::Pass
        }
    }
    pub fn on_dequeue(&self, st: &PortState, q: usize) -> Verdict {
        if self.at == At::Dequeue {
            self.decide(st, q)
        } else {
            Verdict::Pass
        }
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
        let at_k = state(&[3000], &[2], Time::ZERO);
        assert_eq!(ge.on_enqueue(&at_k, 0), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(gt.on_enqueue(&at_k, 0), Verdict::Pass);
        let above = state(&[3001], &[3], Time::ZERO);
        assert_eq!(gt.on_enqueue(&above, 0), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(ge.on_dequeue(&above, 0), Verdict::Pass, "enqueue marker ignores dequeues");
    }

    #[test]
    fn zero_threshold_with_ge_marks_everything() {
        // ECN*'s h = 0: every packet, even into an empty queue... the arriving packet itself counts.
        let m = Threshold { threshold: Bytes(0), at: At::Dequeue, compare: Compare::Ge, scope: Scope::Queue };
        assert_eq!(m.on_dequeue(&state(&[0], &[0], Time::ZERO), 0), Verdict::Mark(MarkReason::Threshold));
    }

    #[test]
    fn port_scope_sums_queues() {
        let m = Threshold { threshold: Bytes(4000), at: At::Enqueue, compare: Compare::Gt, scope: Scope::Port };
        assert_eq!(m.on_enqueue(&state(&[3000, 1500], &[2, 1], Time::ZERO), 0), Verdict::Mark(MarkReason::Threshold));
        assert_eq!(m.on_enqueue(&state(&[3000, 0], &[2, 0], Time::ZERO), 0), Verdict::Pass);
    }
}
