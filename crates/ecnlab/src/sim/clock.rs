//! The simulation's clock: the current instant, the events still to come, and where the traffic has reached.

use crate::engine::{Event, EventQueue};
use crate::units::Time;

/// Every part of a `Sim` reads the instant and schedules its events here; only the event loop (and a port's
/// departures made late, each at its own instant) moves it.
#[derive(Default)]
pub(super) struct Clock {
    now: Time,
    events: EventQueue,
    /// When the last packet, timer or workload event happened (sampling, phases and the window start aside):
    /// the end of the traffic, where `duration` may lie far beyond it.
    traffic_end: Time,
}

impl Clock {
    #[inline(always)]
    pub(super) fn now(&self) -> Time {
        self.now
    }

    /// Moves the clock to `at`: the next event's instant, or a deferred departure's (`Fabric::catch_up`),
    /// which puts it back afterwards.
    #[inline(always)]
    pub(super) fn set(&mut self, at: Time) {
        self.now = at;
    }

    #[inline]
    pub(super) fn schedule(&mut self, at: Time, ev: Event) {
        self.events.push(at, ev);
    }

    /// A packet's arrival joins its link's line of arrivals (`EventQueue::push_in_line`).
    #[inline(always)]
    pub(super) fn push_in_line(&mut self, at: Time, ev: Event) {
        self.events.push_in_line(at, ev);
    }

    #[inline(always)]
    pub(super) fn pop_until(&mut self, end: Time) -> Option<(Time, Event)> {
        self.events.pop_until(end)
    }

    #[inline(always)]
    pub(super) fn peek_near(&self) -> Option<Event> {
        self.events.peek_near()
    }

    /// Traffic happened at `t` (a packet, timer or workload event, or a departure made late).
    #[inline(always)]
    pub(super) fn traffic_at(&mut self, t: Time) {
        self.traffic_end = self.traffic_end.max(t);
    }

    pub(super) fn traffic_end(&self) -> Time {
        self.traffic_end
    }
}
