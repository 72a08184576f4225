//! RED (Floyd & Jacobson 1993) with ECN: EWMA average queue, linear probability between min and max, the
//! count-based spacing of marks, optional "gentle" region; with min = max and weight 1 it is DCTCP-RED.
//!
//! Comparisons follow "exceeds": avg > max ⇒ mark (or drop, per `above_max`); min < avg ≤ max ⇒ probabilistic.

use super::threshold::Scope;
use super::{Build, Check, MarkReason, Marker, MarkerSpec, PortState, Queues, Verdict};
use crate::engine::Rng;
use crate::error::Error;
use crate::packet::Packet;
use crate::units::{Bytes, QueueLen, Time};

/// `marker = { kind = "red", min, max, max_p = 1, weight = 1, gentle = false, drop_above_max = false,
/// scope = "queue" }`: RED on the EWMA queue; `min = max`, `weight = 1` is DCTCP-RED.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    pub min: QueueLen,
    pub max: QueueLen,
    #[serde(default = "one")]
    pub max_p: f64,
    #[serde(default = "one")]
    pub weight: f64,
    #[serde(default)]
    pub gentle: bool,
    #[serde(default)]
    pub drop_above_max: bool,
    #[serde(default = "super::threshold::queue_scope")]
    pub scope: Scope,
}

fn one() -> f64 {
    1.0
}

impl MarkerSpec for RedConfig {
    type Marker = Red;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        super::threshold::check_scope(c, self.scope)?;
        c.band(self.min, self.max)?;
        c.probability("max_p", self.max_p)?;
        let weight = self.weight;
        if !(weight > 0.0 && weight <= 1.0) {
            return c.fail("weight", format!("must be in (0, 1], got {weight}"));
        }
        Ok(())
    }
    fn build(&self, b: Build) -> Result<Red, Error> {
        let (min, max) = (b.bytes(self.min), b.bytes(self.max));
        b.fits(max)?;
        let RedConfig { max_p, weight, gentle, drop_above_max, scope, .. } = *self;
        Ok(Red::new(min, max, max_p, weight, gentle, drop_above_max, scope, b.rng))
    }
}

#[derive(Clone, Debug)]
pub struct Red {
    pub min: Bytes,
    pub max: Bytes,
    pub max_p: f64,
    /// EWMA weight w_q; 1 = instantaneous queue.
    pub weight: f64,
    pub gentle: bool,
    /// Above max (or 2·max when gentle): drop instead of mark.
    pub drop_above_max: bool,
    pub scope: Scope,
    avg: f64,
    count: i64,
    idle_since: Option<Time>,
    rng: Rng,
}

impl Red {
    /// One argument per RED parameter (RFC 2309 / Floyd and Jacobson 1993, plus ecnlab's scope and rng).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        min: Bytes,
        max: Bytes,
        max_p: f64,
        weight: f64,
        gentle: bool,
        drop_above_max: bool,
        scope: Scope,
        rng: Rng,
    ) -> Red {
        Red { min, max, max_p, weight, gentle, drop_above_max, scope, avg: 0.0, count: -1, idle_since: None, rng }
    }
}

impl Marker for Red {
    const ACTS: super::Acts = super::Acts::ENQUEUE;

    fn on_idle(&mut self, now: Time) {
        self.idle_since = Some(now);
    }

    fn on_enqueue(&mut self, st: &PortState<impl Queues>, q: usize, _p: &Packet) -> Verdict {
        let qlen = match self.scope {
            Scope::Queue => st.queue_bytes(q),
            Scope::Port => st.port_bytes,
            Scope::Pool => st.pool_bytes,
            Scope::QueueWeighted => {
                // The queue scaled up by Σw / w_i, so min and max act as the weighted shares w_i / Σw · K.
                let sum = st.weight_sum;
                st.queue_bytes(q) * sum / st.weight(q).max(1)
            }
        };
        // DESIGN pins occupancy at enqueue to include the arriving packet, for RED as for every marker.
        let qlen = qlen as f64;
        if let Some(since) = self.idle_since.take() {
            // Age the average as if m small packets had departed during the idle period (Floyd & Jacobson §4).
            let m = (st.now.saturating_sub(since).0 / st.rate.tx_time(st.mtu).0.max(1)) as i32;
            self.avg *= (1.0 - self.weight).powi(m);
        }
        self.avg = (1.0 - self.weight) * self.avg + self.weight * qlen;
        let (min, max) = (self.min.0 as f64, self.max.0 as f64);
        let pb = if self.avg <= min {
            self.count = -1;
            return Verdict::Pass;
        } else if self.avg <= max && max > min {
            self.max_p * (self.avg - min) / (max - min)
        } else if self.gentle && self.avg <= 2.0 * max {
            self.max_p + (1.0 - self.max_p) * (self.avg - max) / max
        } else {
            self.count = 0;
            return if self.drop_above_max {
                Verdict::Drop(super::DropReason::Aqm)
            } else {
                Verdict::Mark(MarkReason::Red)
            };
        };
        self.count += 1;
        let pa = if self.count as f64 * pb >= 1.0 { 1.0 } else { pb / (1.0 - self.count as f64 * pb) };
        if self.rng.uniform() < pa {
            self.count = 0;
            Verdict::Mark(MarkReason::Red)
        } else {
            Verdict::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::test_util::state;

    fn pkt() -> Packet {
        Packet { wire: 1500, ..Packet::default() }
    }

    #[test]
    fn dctcp_red_is_a_step_on_the_instantaneous_queue() {
        // min = max = K, weight 1: marks exactly when the queue (arrival included) exceeds K.
        let k = Bytes(15_000);
        let mut red = Red::new(k, k, 1.0, 1.0, false, false, Scope::Queue, Rng::stream(1, 1));
        assert_eq!(red.on_enqueue(&state(&[15_000], Time::ZERO), 0, &pkt()), Verdict::Pass);
        assert_eq!(red.on_enqueue(&state(&[16_500], Time::ZERO), 0, &pkt()), Verdict::Mark(MarkReason::Red));
        assert_eq!(red.on_enqueue(&state(&[1_500], Time::ZERO), 0, &pkt()), Verdict::Pass);
    }

    #[test]
    fn marking_rate_between_thresholds_tracks_max_p() {
        // Hold avg at the midpoint: p_b = max_p / 2 = 0.05; count-spacing makes marks uniform with mean 1/(2·p_b)
        // gaps... the long-run marking fraction for count-based RED is 2·p_b/(1+p_b) ≈ 0.095.
        let mut red = Red::new(Bytes(10_000), Bytes(30_000), 0.1, 1.0, false, false, Scope::Queue, Rng::stream(3, 3));
        let n = 100_000;
        let marks =
            (0..n).filter(|_| red.on_enqueue(&state(&[20_000], Time::ZERO), 0, &pkt()) != Verdict::Pass).count();
        let frac = marks as f64 / n as f64;
        let expect = 2.0 * 0.05 / (1.0 + 0.05);
        assert!((frac - expect).abs() < 0.01, "marked {frac}, expected ≈ {expect}");
    }
}
