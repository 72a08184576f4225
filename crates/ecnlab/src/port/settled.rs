//! What a reader sees of a port: its backlog, counters and statistics, readable only at an instant the port
//! is settled at (no deferred departure due), so that a reader cannot see a port its owner forgot to catch up.

use super::{Counters, OccupancyStats, Port};
use crate::units::{Bytes, Time};

/// A port read at `now`, where every departure due by then has been made (`Port::settled`). The only way
/// to read a port's backlog, counters and statistics.
pub struct Settled<'a> {
    port: &'a mut Port,
    now: Time,
}

impl Port {
    /// The port for reading at `now`. Panics if a deferred departure is due: the owner must make it first
    /// (`advance_to`; the simulation's `Sim::port` does), or the reader would see a backlog the port no
    /// longer has.
    #[inline(always)]
    pub fn settled(&mut self, now: Time) -> Settled<'_> {
        assert!(self.is_settled(now), "a port read at {now} before its deferred departures were made");
        Settled { port: self, now }
    }
}

impl Settled<'_> {
    /// Bytes waiting in the port's queues (not counting the packet being sent).
    #[inline(always)]
    pub fn port_bytes(&self) -> u64 {
        self.port.port_bytes
    }

    /// Bytes waiting in queue `q`.
    #[inline(always)]
    pub fn queue_bytes(&self, q: usize) -> u64 {
        self.port.queues[q].bytes
    }

    /// Every queue's backlog, bytes.
    pub fn queue_backlogs(&self) -> impl Iterator<Item = u64> + '_ {
        self.port.queues.iter().map(|q| q.bytes)
    }

    /// Packets waiting in the queues (not counting the one being sent).
    pub fn queued_pkts(&self) -> u64 {
        self.port.queued_pkts()
    }

    /// Packets offered to the port, counted on their own (the conservation check compares them with the
    /// queues' derived arrivals).
    pub fn arrived_pkts(&self) -> u64 {
        self.port.arrived_pkts()
    }

    /// The port's counters since the run began.
    pub fn counters(&self) -> Counters {
        self.port.counters()
    }

    /// The port's counters since the statistics window opened.
    pub fn window_counters(&self) -> Counters {
        self.port.counters().since(&self.port.at_window_start.0)
    }

    /// Per queue: its counters and its occupancy over the window.
    pub fn queue_reports(&mut self) -> Vec<(Counters, OccupancyStats)> {
        let now = self.now;
        self.port.queues.iter_mut().map(|q| (q.counters(), q.occupancy.stats(now))).collect()
    }

    /// The whole port's occupancy over the window (with one queue, the queue's own).
    pub fn port_occupancy(&mut self) -> OccupancyStats {
        let now = self.now;
        self.port.port_occupancy().stats(now)
    }

    /// Fraction of the window, of length `window`, the transmitter was busy.
    pub fn utilization(&self, window: Time) -> f64 {
        self.port.utilization(self.now, window)
    }

    /// Over the window: the smallest backlog an arriving packet found, bytes (`None` if none arrived).
    pub fn arrival_backlog_min(&self) -> Option<u64> {
        self.port.arrival_backlog_min()
    }

    /// The first packet marked: when, and the congestion window its sender had then (segments).
    pub fn first_mark(&self) -> Option<(Time, u32)> {
        self.port.first_mark
    }

    /// Whether the port holds more than `limit` bytes not yet sent: a NIC, bytes not yet on the wire; a
    /// queueing port, bytes in its queues (TCP small queues hold a host's flows back then).
    #[inline(always)]
    pub fn holds_more_than(&self, limit: Bytes) -> bool {
        if self.port.is_nic() {
            self.port.nic_excess(self.now, limit) > Time::ZERO
        } else {
            self.port.port_bytes > limit.0
        }
    }

    /// When the port will hold no more than `limit` bytes, if that is known now: a NIC's line rate says when;
    /// a queueing port's scheduler does not (the owner learns it at the departure that brings it there).
    #[inline(always)]
    pub fn drained_to(&self, limit: Bytes) -> Option<Time> {
        self.port.is_nic().then(|| self.now + self.port.nic_excess(self.now, limit))
    }
}
