//! TCN: mark a departing packet whose sojourn time exceeds T (Bai et al., CoNEXT 2016; restated in PMSB §II Eq. 4).
//!
//! Stateless and per packet, evaluated at dequeue only. The comparison is strict, `sojourn > T` (DESIGN,
//! "Occupancy"); T is a time compared with the measured sojourn, never converted to bytes (DESIGN, "Two kinds
//! of threshold"), so a queue drained slowly by its scheduler marks on its real delay.

use super::{Build, Check, MarkReason, Marker, MarkerSpec, PortState, Queues, Verdict};
use crate::error::Error;
use crate::packet::Packet;
use crate::units::Time;

/// Which rule fired. TCN has one; the integrator maps it to a precise `MarkReason` (`Sojourn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcnPart {
    /// The packet's sojourn time exceeded T.
    Sojourn,
}

/// `marker = { kind = "tcn", threshold = "78us" }`: TCN (Bai et al., CoNEXT'16), mark at dequeue when the
/// sojourn time exceeds `threshold`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcnConfig {
    pub threshold: Time,
}

impl MarkerSpec for TcnConfig {
    type Marker = Tcn;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        c.positive("threshold", self.threshold)
    }
    fn build(&self, _b: Build) -> Result<Tcn, Error> {
        Ok(Tcn::new(self.threshold))
    }
}

#[derive(Clone, Debug)]
pub struct Tcn {
    /// T: the sojourn-time threshold (TCN uses λ·RTT, PMSB Eq. 4).
    pub threshold: Time,
}

impl Tcn {
    pub fn new(threshold: Time) -> Tcn {
        Tcn { threshold }
    }

    /// The rule that marks this packet, if any.
    pub fn decide(&self, sojourn: Time) -> Option<TcnPart> {
        (sojourn > self.threshold).then_some(TcnPart::Sojourn)
    }
}

impl Marker for Tcn {
    const ACTS: super::Acts = super::Acts::DEQUEUE;

    /// `sojourn` = now − the packet's enqueue time. The port's `non_ect` option handles non-ECT packets.
    fn on_dequeue(&mut self, _st: &PortState<impl Queues>, _q: usize, _p: &Packet, sojourn: Time) -> Verdict {
        match self.decide(sojourn) {
            Some(_) => Verdict::Mark(MarkReason::Sojourn),
            None => Verdict::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::test_util::state;
    use crate::packet::Ecn;

    fn pkt() -> Packet {
        Packet { wire: 1500, ecn: Ecn::Ect, ..Packet::default() }
    }

    #[test]
    fn sojourn_equal_to_t_passes_one_ps_more_marks() {
        let t = Time::from_us(78);
        let mut tcn = Tcn::new(t);
        let st = state(&[30_000], Time::from_us(500));
        assert_eq!(tcn.on_dequeue(&st, 0, &pkt(), t), Verdict::Pass);
        assert_eq!(tcn.on_dequeue(&st, 0, &pkt(), Time(t.0 + 1)), Verdict::Mark(MarkReason::Sojourn));
        assert_eq!(tcn.decide(Time(t.0 + 1)), Some(TcnPart::Sojourn));
        assert_eq!(tcn.decide(t), None);
    }

    #[test]
    fn queue_length_is_ignored_only_sojourn_counts() {
        let mut tcn = Tcn::new(Time::from_us(10));
        // A long queue with a short sojourn passes; an empty queue behind a delayed packet marks.
        let long = state(&[900_000, 0], Time::from_us(1));
        assert_eq!(tcn.on_dequeue(&long, 0, &pkt(), Time::from_us(5)), Verdict::Pass);
        let empty = state(&[0, 0], Time::from_us(1));
        assert_eq!(tcn.on_dequeue(&empty, 1, &pkt(), Time::from_us(11)), Verdict::Mark(MarkReason::Sojourn));
    }
}
