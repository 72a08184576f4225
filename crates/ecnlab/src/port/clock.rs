//! The port's own time: its transmitter, the departure each transmission's end owes, and when the owner
//! must look at the port again. The owner (the simulation's event loop, or a wall clock) only offers packets,
//! asks for departures, and wakes the port when asked; the port decides what each instant owes.
//!
//! DESIGN: a departure is processed at the instant the last bit of the previous packet leaves. Ending a
//! transmission matters only if a packet waits to be sent next, so a port asks its owner for a wake-up only
//! then (`Departure::wake`, `Admit::Queued::wake`); a port that falls idle tells its marker when it is next
//! used (`settle`). Where nothing but the port and its own link's line of arrivals can see a departure, the
//! port does not even ask: it defers the departure (`may_defer_departures`), and the owner makes it, at its
//! own instant, the next time it looks (`advance_to`) — which it must do before reading anything of the
//! port (`sim::Sim::port` does both in one accessor).

use super::{Departure, FifoPool, Port, SharedBuffer};
use crate::mark::DropReason;
use crate::packet::{PacketId, PacketPool};
use crate::units::{Bytes, Time};

/// What the end of a port's transmission (at `tx_end`) still owes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TxEnd {
    /// Nothing: no transmission yet, or its end was handled.
    Nothing,
    /// The queues were empty when it started and have stayed so: the marker's `on_idle(tx_end)` is owed.
    IdleNotice,
    /// The next departure, and the owner was asked to wake the port at `tx_end` for it.
    Wake,
    /// The next departure, deferred: made by `advance_to` when the owner next looks at the port.
    Deferred,
}

/// What around a port decides whether it may defer its departures (`may_defer_departures`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Surroundings {
    /// It draws from a switch's shared buffer pool, which other ports' admissions read.
    pub shared_buffer: bool,
    /// PFC is on: its departures release ingress counts and may send RESUME frames to other ports.
    pub pfc: bool,
    /// A packet trace is recorded: its records must come in the order of their instants.
    pub traced: bool,
    /// Packets that find the port idle pass straight through (`Port::pass_idle`).
    pub passes_idle: bool,
    /// A host's egress port: whether a flow of the host can wait for it to drain (its buffer is larger than
    /// the host's `tsq_limit`), and whether packets leave it into a delay line (RTT variation) rather than
    /// straight onto its link.
    pub host: Option<HostSide>,
}

/// A host egress port's relations to its host (`Surroundings::host`).
#[derive(Clone, Copy, Debug)]
pub struct HostSide {
    pub senders_may_wait: bool,
    pub delay_line: bool,
}

/// Whether a port may defer its departures: only where a departure touches nothing but the port itself and
/// its own link's line of arrivals, so that making it late, at its own instant, when the next event that
/// could see it comes (a packet offered to the port, the previous packet reaching the link's far end, a
/// sample, the window's start, the run's end), gives the same run as making it on time.
pub fn may_defer_departures(s: &Surroundings) -> bool {
    let alone = match s.host {
        None => !s.shared_buffer,
        Some(h) => !h.senders_may_wait && !h.delay_line,
    };
    alone && s.passes_idle && !s.pfc && !s.traced
}

impl Port {
    /// Defer departures (only where `may_defer_departures` says so), or ask for a wake-up for each.
    pub fn set_deferred_departures(&mut self, on: bool) {
        self.defers = on;
    }

    /// Whether the transmitter is free at `now`.
    #[inline(always)]
    pub fn is_free(&self, now: Time) -> bool {
        self.tx_end <= now
    }

    /// A departure is owed at `tx_end`: deferred, or a wake-up the owner must schedule then.
    #[inline(always)]
    fn owe_departure(&mut self) -> Option<Time> {
        if self.defers {
            self.tx_owes = TxEnd::Deferred;
            None
        } else {
            self.tx_owes = TxEnd::Wake;
            Some(self.tx_end)
        }
    }

    /// Puts a packet the port took from its queues on the wire at `now` (the transmitter is free), or as soon
    /// after as a shaper's bucket holds its tokens: when its last bit reaches the far end, and the wake-up its
    /// transmission's end needs (only if packets still wait; otherwise the end owes the marker an idle
    /// notice, given when the port is next used).
    #[inline(always)]
    pub(super) fn put_on_wire(&mut self, now: Time, d: &mut Departure) {
        debug_assert!(self.tx_end <= now, "transmitter busy");
        let start = match &mut self.shaper {
            None => now,
            Some(bucket) => bucket.start(now, d.wire),
        };
        let tx = self.tx_time(d.wire);
        self.tx_end = start + tx;
        self.tx_wire = d.wire.0 as u32;
        self.busy_time += tx;
        d.arrives = self.tx_end + self.cfg.delay;
        d.wake = if self.port_bytes > 0 {
            self.owe_departure()
        } else {
            self.tx_owes = TxEnd::IdleNotice;
            None
        };
    }

    /// A packet was queued at `now` behind a transmission: its end now owes a departure (the wake-up to
    /// schedule, if it was not owed already and the port does not defer it).
    #[inline(always)]
    pub(super) fn queued_behind(&mut self, now: Time) -> Option<Time> {
        debug_assert!(self.tx_end > now);
        if self.tx_owes == TxEnd::IdleNotice {
            self.owe_departure()
        } else {
            None
        }
    }

    /// The wake-up the port asked for fired at `now` (its transmission's end): the owner calls `depart` next.
    pub fn wake(&mut self, now: Time) {
        debug_assert!(self.tx_owes == TxEnd::Wake && self.tx_end == now, "a wake-up the port did not ask for");
        self.tx_owes = TxEnd::Nothing;
    }

    /// Whether a deferred departure is owed (due or not): the owner's one-byte test before `advance_to`.
    #[inline(always)]
    pub fn owes_deferred(&self) -> bool {
        self.tx_owes == TxEnd::Deferred
    }

    /// Whether the port is up to date at `now`: no deferred departure is due. Everything read of a port
    /// (its queues, counters, statistics) is what it would be had every departure been made on time only then.
    #[inline(always)]
    pub fn is_settled(&self, now: Time) -> bool {
        !(self.tx_owes == TxEnd::Deferred && self.tx_end <= now)
    }

    /// The instant of the next deferred departure due by `now`, which the owner must then make by `depart`
    /// at that instant (`advance_to` does both); `None` once the port is settled at `now`.
    #[inline]
    pub fn take_due(&mut self, now: Time) -> Option<Time> {
        if self.is_settled(now) {
            return None;
        }
        self.tx_owes = TxEnd::Nothing;
        Some(self.tx_end)
    }

    /// If a transmission ended with nothing queued and no wake-up, tells the marker now (before it sees
    /// anything else) that the port went idle when it ended, as a wake-up would have then.
    #[inline]
    pub(super) fn settle(&mut self, now: Time) {
        if self.tx_owes == TxEnd::IdleNotice && self.tx_end <= now {
            self.tx_owes = TxEnd::Nothing;
            self.marker.on_idle(self.tx_end);
        }
    }

    /// The next packet onto the wire at `now`, if the transmitter is free and a servable packet waits (the
    /// scheduler's pick, then the marker at dequeue; what it drops there is in `dropped`). With nothing to
    /// send, the marker is told the port is idle.
    pub fn depart(
        &mut self,
        now: Time,
        pool: &mut PacketPool,
        fifos: &mut FifoPool,
        shared: Option<&mut SharedBuffer>,
        dropped: &mut Vec<(PacketId, usize, DropReason)>,
    ) -> Option<Departure> {
        if !self.is_free(now) {
            return None;
        }
        match self.dequeue(now, pool, fifos, shared, dropped) {
            Some(mut d) => {
                self.put_on_wire(now, &mut d);
                Some(d)
            }
            None => {
                self.marker.on_idle(now);
                None
            }
        }
    }

    /// Makes the next deferred departure due by `now`, at its own instant: that instant and the packet (or
    /// `None` if what was due were drops at dequeue, in `dropped`, or nothing servable). A port driven by a
    /// wall clock calls it in a loop each time it looks; `None` from `take_due` ends the loop.
    pub fn advance_to(
        &mut self,
        now: Time,
        pool: &mut PacketPool,
        fifos: &mut FifoPool,
        shared: Option<&mut SharedBuffer>,
        dropped: &mut Vec<(PacketId, usize, DropReason)>,
    ) -> Option<(Time, Option<Departure>)> {
        let at = self.take_due(now)?;
        Some((at, self.depart(at, pool, fifos, shared, dropped)))
    }

    /// The time to serialize `wire` bytes at the port's rate.
    #[inline]
    pub fn tx_time(&self, wire: Bytes) -> Time {
        super::serialization(self.ps_per_byte, self.cfg.rate, wire)
    }
}
