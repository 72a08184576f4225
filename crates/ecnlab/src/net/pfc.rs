//! Priority flow control (IEEE 802.1Qbb): per ingress port and priority, PAUSE upstream at XOFF, RESUME at XON.
//!
//! A switch counts, per ingress link and priority, the bytes that arrived on that link and still sit in its
//! buffers. When a count reaches XOFF the switch sends PAUSE for that priority to the upstream transmitter,
//! which stops serving it after the frame on the wire; at XON (on the way down) it sends RESUME. The packets
//! already in flight when PAUSE takes effect land in the headroom above XOFF; a lossless priority is never
//! dropped for lack of buffer, and the run fails if a count ever exceeds XOFF + headroom (headroom too small
//! for the link: 802.1Qbb Annex O's sizing is exactly this bound).

use crate::units::{Bytes, Rate, Time};
use serde::{Deserialize, Serialize};

/// PFC knows 8 priorities; a packet's priority is its class, capped at 7.
pub const PRIORITIES: usize = 8;

pub fn priority(class: u8) -> usize {
    (class as usize).min(PRIORITIES - 1)
}

/// PAUSE/RESUME frames are 64 B MAC control frames.
pub const PAUSE_FRAME: Bytes = Bytes(64);

/// `switch.pfc`: thresholds per ingress port and priority.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcConfig {
    /// Ingress bytes of one priority at which PAUSE is sent upstream.
    pub xoff: Bytes,
    /// Ingress bytes at which RESUME is sent (default: XOFF − 2 MTU, at least 0).
    #[serde(default)]
    pub xon: Option<Bytes>,
    /// Room above XOFF for what is in flight when PAUSE takes effect (default: per link, see `headroom_for`).
    #[serde(default)]
    pub headroom: Option<Bytes>,
    /// The lossless priorities (default: all 8).
    #[serde(default = "all_priorities")]
    pub priorities: Vec<u8>,
}

fn all_priorities() -> Vec<u8> {
    (0..PRIORITIES as u8).collect()
}

impl PfcConfig {
    pub fn xon(&self, mtu: Bytes) -> Bytes {
        self.xon.unwrap_or(Bytes(self.xoff.0.saturating_sub(2 * mtu.0)))
    }

    /// Headroom of a link of `rate` and one-way `delay`: PAUSE needs `delay` + its own serialization to reach
    /// the upstream port, which then finishes the frame it is sending (1 MTU), and the bytes on the wire
    /// (`rate × delay`) still arrive; plus one MTU for the frame that crossed XOFF and `upstream_backlog` that
    /// the upstream had already committed (a host NIC's backlog, `hosts.tsq_limit`).
    pub fn headroom_for(&self, rate: Rate, delay: Time, mtu: Bytes, upstream_backlog: Bytes) -> Bytes {
        if let Some(h) = self.headroom {
            return h;
        }
        let in_flight = rate.bytes_in(delay + delay + rate.tx_time(PAUSE_FRAME));
        Bytes(in_flight.0.saturating_add(2 * mtu.0).saturating_add(upstream_backlog.0))
    }

    pub fn lossless_mask(&self) -> u8 {
        self.priorities.iter().fold(0, |m, &p| m | 1 << p)
    }
}

/// The ingress side of one link direction (indexed by the upstream's egress port id).
#[derive(Clone, Debug, Default)]
pub struct Ingress {
    pub bytes: [u64; PRIORITIES],
    pub peak: [u64; PRIORITIES],
    /// Priorities for which PAUSE was sent and RESUME not yet.
    pub paused_upstream: u8,
    pub pauses_sent: u64,
}

/// What a change of an ingress count asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Pause,
    Resume,
}

/// The PFC state of every switch ingress.
#[derive(Clone, Debug)]
pub struct Pfc {
    pub xoff: u64,
    pub xon: u64,
    pub lossless: u8,
    /// Per upstream port id: XOFF + headroom.
    pub limit: Vec<u64>,
    pub ingress: Vec<Ingress>,
}

impl Pfc {
    pub fn is_lossless(&self, prio: usize) -> bool {
        self.lossless & (1 << prio) != 0
    }

    /// `wire` bytes of priority `prio` arrived on `link` and were buffered.
    pub fn arrive(&mut self, link: u32, prio: usize, wire: u64) -> Result<Option<Signal>, String> {
        let limit = self.limit[link as usize];
        let ing = &mut self.ingress[link as usize];
        ing.bytes[prio] += wire;
        ing.peak[prio] = ing.peak[prio].max(ing.bytes[prio]);
        if ing.bytes[prio] > limit {
            return Err(format!(
                "priority {prio} holds {} B from one ingress, above XOFF + headroom = {limit} B: raise switch.pfc.headroom",
                ing.bytes[prio]
            ));
        }
        if ing.bytes[prio] >= self.xoff && ing.paused_upstream & (1 << prio) == 0 {
            ing.paused_upstream |= 1 << prio;
            ing.pauses_sent += 1;
            return Ok(Some(Signal::Pause));
        }
        Ok(None)
    }

    /// `wire` bytes of priority `prio` that arrived on `link` left the switch (sent or dropped).
    pub fn depart(&mut self, link: u32, prio: usize, wire: u64) -> Option<Signal> {
        let ing = &mut self.ingress[link as usize];
        ing.bytes[prio] -= wire;
        if ing.bytes[prio] <= self.xon && ing.paused_upstream & (1 << prio) != 0 {
            ing.paused_upstream &= !(1 << prio);
            return Some(Signal::Resume);
        }
        None
    }
}

/// The egress side: which priorities the downstream paused, and for how long in total.
#[derive(Clone, Debug, Default)]
pub struct PauseState {
    pub paused: u8,
    since: [Time; PRIORITIES],
    pub total: [Time; PRIORITIES],
    pub pauses_received: u64,
}

impl PauseState {
    pub fn is_paused(&self, prio: usize) -> bool {
        self.paused & (1 << prio) != 0
    }

    /// Applies a PAUSE or RESUME; returns whether the state changed.
    pub fn apply(&mut self, now: Time, prio: usize, signal: Signal) -> bool {
        match signal {
            Signal::Pause if !self.is_paused(prio) => {
                self.paused |= 1 << prio;
                self.since[prio] = now;
                self.pauses_received += 1;
                true
            }
            Signal::Resume if self.is_paused(prio) => {
                self.paused &= !(1 << prio);
                self.total[prio] += now - self.since[prio];
                true
            }
            _ => false,
        }
    }

    /// Paused time per priority up to `now` (an ongoing pause counts so far).
    pub fn paused_time(&self, now: Time) -> [Time; PRIORITIES] {
        let mut t = self.total;
        for (p, t) in t.iter_mut().enumerate() {
            if self.is_paused(p) {
                *t += now - self.since[p];
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pfc(xoff: u64, xon: u64, limit: u64) -> Pfc {
        Pfc { xoff, xon, lossless: 0xFF, limit: vec![limit], ingress: vec![Ingress::default()] }
    }

    #[test]
    fn pauses_once_at_xoff_and_resumes_once_at_xon() {
        let mut p = pfc(3000, 1000, 10_000);
        assert_eq!(p.arrive(0, 3, 1500), Ok(None));
        assert_eq!(p.arrive(0, 3, 1500), Ok(Some(Signal::Pause)));
        assert_eq!(p.arrive(0, 3, 1500), Ok(None), "PAUSE is sent once");
        assert_eq!(p.arrive(0, 2, 1500), Ok(None), "other priorities count apart");
        assert_eq!(p.depart(0, 3, 1500), None);
        assert_eq!(p.depart(0, 3, 1500), None, "1500 B > XON");
        assert_eq!(p.depart(0, 3, 1500), Some(Signal::Resume));
        assert_eq!(p.ingress[0].peak[3], 4500);
        assert_eq!(p.ingress[0].pauses_sent, 1);
    }

    #[test]
    fn exceeding_the_headroom_is_an_error() {
        let mut p = pfc(3000, 1000, 4000);
        p.arrive(0, 0, 3000).unwrap();
        let e = p.arrive(0, 0, 1500).unwrap_err();
        assert!(e.contains("headroom"), "{e}");
    }

    #[test]
    fn pause_time_accumulates_per_priority() {
        let mut s = PauseState::default();
        assert!(s.apply(Time::from_us(10), 1, Signal::Pause));
        assert!(!s.apply(Time::from_us(11), 1, Signal::Pause));
        assert!(s.apply(Time::from_us(15), 1, Signal::Resume));
        assert!(s.apply(Time::from_us(20), 1, Signal::Pause));
        assert_eq!(s.paused_time(Time::from_us(22))[1], Time::from_us(7));
        assert_eq!(s.paused_time(Time::from_us(22))[0], Time::ZERO);
    }

    #[test]
    fn default_headroom_covers_two_link_delays_and_two_frames() {
        let c = PfcConfig { xoff: Bytes(20_000), xon: None, headroom: None, priorities: all_priorities() };
        // 10 Gb/s, 1 us: 2 × 1250 B on the wire + 64 B PAUSE time (80 B), + 2 × 1500 B.
        let h = c.headroom_for(Rate(10_000_000_000), Time::from_us(1), Bytes(1500), Bytes(0));
        assert_eq!(h, Bytes(2 * 1250 + 64 + 3000));
        assert_eq!(c.xon(Bytes(1500)), Bytes(17_000));
    }
}
