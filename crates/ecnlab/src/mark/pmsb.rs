//! PMSB, per-Port Marking with Selective Blindness (PMSB paper, Algorithm 1): mark iff the port holds at least
//! the port threshold AND the packet's queue holds at least its weighted share of it,
//! `port_bytes ≥ K_port` and `queue_bytes ≥ w_i / Σw · K_port` (Σw over all of the port's queues), at
//! enqueue or at dequeue.

use super::{At, Build, Check, MarkReason, Marker, MarkerSpec, PortState, Queues, Verdict};
use crate::error::Error;
use crate::packet::Packet;
use crate::units::{Bytes, QueueLen, Time};

/// `marker = { kind = "pmsb", threshold = "12pkt", at = "enqueue" }`: PMSB (Algorithm 1), port ≥ K_port and
/// queue ≥ w_i/Σw · K_port.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PmsbConfig {
    pub threshold: QueueLen,
    #[serde(default = "super::threshold::enqueue")]
    pub at: At,
}

impl MarkerSpec for PmsbConfig {
    type Marker = Pmsb;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        c.threshold("threshold", self.threshold)
    }
    fn build(&self, b: Build) -> Result<Pmsb, Error> {
        let port_threshold = b.bytes(self.threshold);
        b.fits(port_threshold)?;
        Ok(Pmsb { port_threshold, at: self.at })
    }
}

#[derive(Clone, Debug)]
pub struct Pmsb {
    pub port_threshold: Bytes,
    pub at: At,
}

impl Pmsb {
    fn decide(&self, st: &PortState<impl Queues>, q: usize) -> Verdict {
        // Algorithm 1 lines 1–3: below the port threshold nothing is marked.
        if st.port_bytes < self.port_threshold.0 {
            return Verdict::Pass;
        }
        // Lines 4–7: the per-queue filter threshold, compared with `≥` (in integers: q·Σw ≥ w_i·K).
        let sum = st.weight_sum;
        let lhs = st.queue_bytes(q) as u128 * sum as u128;
        let rhs = st.weight(q) as u128 * self.port_threshold.0 as u128;
        if lhs >= rhs {
            Verdict::Mark(MarkReason::Threshold)
        } else {
            Verdict::Pass
        }
    }
}

/// `at` picks the point per instance, so the type may act at both.
impl Marker for Pmsb {
    const ACTS: super::Acts = super::Acts::BOTH;
    fn on_enqueue(&mut self, st: &PortState<impl Queues>, q: usize, _p: &Packet) -> Verdict {
        self.at.only(At::Enqueue, || self.decide(st, q))
    }
    fn on_dequeue(&mut self, st: &PortState<impl Queues>, q: usize, _p: &Packet, _sojourn: Time) -> Verdict {
        self.at.only(At::Dequeue, || self.decide(st, q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::test_util::{pkt, weighted};

    const K: u64 = 18_000; // 12 packets

    fn pmsb() -> Pmsb {
        Pmsb { port_threshold: Bytes(K), at: At::Enqueue }
    }

    #[test]
    fn needs_the_port_condition() {
        // The queue alone is far over its share, but the port is below K: no mark (line 1).
        let w = [1, 1];
        let st = weighted(&[16_500, 0], &w, Time::ZERO);
        assert_eq!(pmsb().on_enqueue(&st, 0, &pkt()), Verdict::Pass);
    }

    #[test]
    fn a_queue_under_its_share_is_blind_to_port_congestion() {
        // Port at K (≥ holds), queue 1 holds 1 packet < its share K/2: the victim is not marked.
        let w = [1, 1];
        let st = weighted(&[16_500, 1_500], &w, Time::ZERO);
        assert_eq!(pmsb().on_enqueue(&st, 1, &pkt()), Verdict::Pass);
        assert_eq!(pmsb().on_enqueue(&st, 0, &pkt()), Verdict::Mark(MarkReason::Threshold));
    }

    #[test]
    fn queue_share_uses_ge_and_weights() {
        // Weights 1:2: queue 1's share is 2/3 · K = 12 000 B; exactly at the share marks (line 5 is ≥).
        let w = [1, 2];
        let st = weighted(&[6_000, 12_000], &w, Time::ZERO);
        assert_eq!(pmsb().on_enqueue(&st, 1, &pkt()), Verdict::Mark(MarkReason::Threshold));
        let st = weighted(&[7_500, 10_500], &w, Time::ZERO);
        assert_eq!(pmsb().on_enqueue(&st, 1, &pkt()), Verdict::Pass);
        assert_eq!(pmsb().on_enqueue(&st, 0, &pkt()), Verdict::Mark(MarkReason::Threshold), "6 000 ≤ 7 500");
    }

    #[test]
    fn dequeue_variant_ignores_enqueues() {
        let mut p = Pmsb { at: At::Dequeue, ..pmsb() };
        let w = [1, 1];
        let st = weighted(&[18_000, 0], &w, Time::ZERO);
        assert_eq!(p.on_enqueue(&st, 0, &pkt()), Verdict::Pass);
        assert_eq!(p.on_dequeue(&st, 0, &pkt(), Time::ZERO), Verdict::Mark(MarkReason::Threshold));
    }
}
