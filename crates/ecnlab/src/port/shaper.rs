//! A token-bucket shaper on a port's transmitter, as a software switch rate-limits its qdisc below line rate.
//!
//! MQ-ECN's testbed switch (§4.2) is a server whose qdisc releases packets through a token bucket at 995 Mb/s
//! with a 2.5 KB bucket, so that packets wait in the qdisc (where ECN reads the backlog) rather than in the
//! NIC. Here the bucket gates when a packet the port took from its queues starts onto the wire: it starts
//! once the transmitter is free *and* the bucket holds the packet's size in tokens, then serializes at the
//! line rate. Tokens accrue at the shaping rate up to the bucket; the bucket starts full.
//!
//! DESIGN: the scheduler's pick (and the marker at dequeue) are made when the transmitter frees, the packet
//! then waiting at the bucket as if in transmission — as the authors' qdisc commits to a DWRR queue before it
//! checks the tokens. The wait is short: a full bucket passes back-to-back MTUs until its surplus is spent,
//! then each waits (L/r − L/C) for the shaping rate r below the line rate C (60 ns for 1 500 B at 995 Mb/s
//! on 1 Gb/s). The port's transmission then ends later, so its wake-up or deferred departure (`clock`) falls
//! at the right instant without any other event.

use crate::units::{Bytes, Rate, Time, PS_PER_S};

/// A port's shaper, as configured: the rate tokens accrue at and the bucket that holds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shaper {
    pub rate: Rate,
    pub bucket: Bytes,
}

/// The bucket's state. Tokens are counted exactly, in bit·ps/s: a bit costs `PS_PER_S` of them and the rate
/// r adds r per picosecond, so no rounding ever drifts the long-run rate.
#[derive(Clone, Debug)]
pub(super) struct TokenBucket {
    rate: u128,
    cap: u128,
    tokens: u128,
    /// The instant `tokens` was counted at.
    at: Time,
}

/// The tokens a packet of `wire` bytes takes.
fn cost(wire: Bytes) -> u128 {
    wire.0 as u128 * 8 * PS_PER_S as u128
}

impl TokenBucket {
    /// A full bucket (validation ensures a positive rate and a bucket of at least one MTU).
    pub(super) fn new(s: Shaper) -> TokenBucket {
        debug_assert!(s.rate.0 > 0);
        let cap = cost(s.bucket);
        TokenBucket { rate: s.rate.0 as u128, cap, tokens: cap, at: Time::ZERO }
    }

    /// When a packet of `wire` bytes, ready to start at `now`, may start: `now` if the bucket holds its size,
    /// else the first instant it will. Its tokens are taken.
    pub(super) fn start(&mut self, now: Time, wire: Bytes) -> Time {
        debug_assert!(now >= self.at, "a packet offered to the shaper before the previous one started");
        let held = self.cap.min(self.tokens + self.rate * (now - self.at).0 as u128);
        let need = cost(wire);
        // The wait to gather the shortfall, rounded up to the next picosecond (never early).
        let wait = need.saturating_sub(held).div_ceil(self.rate);
        let start = now + Time(wait as u64);
        // A packet larger than the bucket (validation keeps the bucket ≥ one MTU) leaves it empty.
        self.tokens = self.cap.min(held + self.rate * wait).saturating_sub(need);
        self.at = start;
        start
    }
}
