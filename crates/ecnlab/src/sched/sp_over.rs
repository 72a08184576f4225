//! Strict priority over a group: queues 0..strict first (lower index first), then a WRR/DWRR/WFQ group.
//!
//! The hierarchy of PMSB's "SP+WFQ" and MQ-ECN §3.4 (high-priority queues served by strict priority, the
//! rest by round robin in the lowest priority). The group scheduler sees its queues as 0..n−strict; its
//! round events are shifted back to absolute queue indices. A strict queue preempts between packets only:
//! the group's turn in progress simply pauses.

use super::{Dwrr, QueueView, RoundEvent, RoundSink, Wfq, Wrr};
use crate::units::Time;

/// The schedulers that can run under strict priority (a flat enum: no recursion, no boxing).
#[derive(Clone, Debug)]
pub enum Group {
    Wrr(Wrr),
    Dwrr(Dwrr),
    Wfq(Wfq),
}

impl Group {
    pub fn n(&self) -> usize {
        match self {
            Group::Wrr(s) => s.n(),
            Group::Dwrr(s) => s.n(),
            Group::Wfq(s) => s.n(),
        }
    }

    pub fn weights(&self) -> Vec<u64> {
        match self {
            Group::Wrr(s) => s.quanta(),
            Group::Dwrr(s) => s.quanta(),
            Group::Wfq(s) => s.weights().to_vec(),
        }
    }

    pub fn is_round_robin(&self) -> bool {
        !matches!(self, Group::Wfq(_))
    }

    fn on_enqueue(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        match self {
            Group::Wrr(s) => s.on_enqueue(q, now, ev),
            Group::Dwrr(s) => s.on_enqueue(q, now, ev),
            Group::Wfq(s) => s.on_enqueue(q, wire),
        }
    }

    fn pick(&mut self, qs: &impl QueueView, now: Time, ev: &mut impl RoundSink) -> Option<usize> {
        match self {
            Group::Wrr(s) => s.pick(qs, now, ev),
            Group::Dwrr(s) => s.pick(qs, now, ev),
            Group::Wfq(s) => s.pick(qs),
        }
    }

    fn pass(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        match self {
            Group::Wrr(s) => s.pass(q, wire, now, ev),
            Group::Dwrr(s) => s.pass(q, wire, now, ev),
            Group::Wfq(s) => s.pass(q, wire),
        }
    }

    fn on_dequeue(&mut self, q: usize, wire: u32, now_empty: bool, now: Time, ev: &mut impl RoundSink) {
        match self {
            Group::Wrr(s) => s.on_dequeue(q, wire, now_empty, now, ev),
            Group::Dwrr(s) => s.on_dequeue(q, wire, now_empty, now, ev),
            Group::Wfq(s) => s.on_dequeue(q, now_empty),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SpOver {
    strict: usize,
    inner: Group,
}

/// The port's queues strict.. seen as the group's 0..
struct Shifted<'a, V> {
    qs: &'a V,
    by: usize,
}

impl<V: QueueView> QueueView for Shifted<'_, V> {
    fn n(&self) -> usize {
        self.qs.n() - self.by
    }
    fn head(&self, q: usize) -> Option<u32> {
        self.qs.head(q + self.by)
    }
}

impl SpOver {
    pub fn new(strict: usize, inner: Group) -> SpOver {
        SpOver { strict, inner }
    }

    pub fn strict(&self) -> usize {
        self.strict
    }

    pub fn inner(&self) -> &Group {
        &self.inner
    }

    /// The same group under `more` additional strict queues in front.
    pub(super) fn behind(self, more: usize) -> SpOver {
        SpOver { strict: self.strict + more, ..self }
    }

    pub fn n(&self) -> usize {
        self.strict + self.inner.n()
    }

    /// 1 for the strict queues, the group's quanta or weights for the rest.
    pub fn weights(&self) -> Vec<u64> {
        let mut w = vec![1; self.strict];
        w.extend(self.inner.weights());
        w
    }

    pub fn is_round_robin(&self, q: usize) -> bool {
        q >= self.strict && self.inner.is_round_robin()
    }

    pub fn on_enqueue(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        if let Some(g) = q.checked_sub(self.strict) {
            self.inner.on_enqueue(g, wire, now, &mut Absolute { sink: ev, by: self.strict });
        }
    }

    pub fn pick(&mut self, qs: &impl QueueView, now: Time, ev: &mut impl RoundSink) -> Option<usize> {
        if let Some(q) = (0..self.strict).find(|&q| qs.head(q).is_some()) {
            return Some(q);
        }
        let picked =
            self.inner.pick(&Shifted { qs, by: self.strict }, now, &mut Absolute { sink: ev, by: self.strict });
        picked.map(|g| g + self.strict)
    }

    /// A strict queue's packet passes without the group; a group queue's passes through the group.
    pub fn pass(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        if let Some(g) = q.checked_sub(self.strict) {
            self.inner.pass(g, wire, now, &mut Absolute { sink: ev, by: self.strict });
        }
    }

    pub fn on_dequeue(&mut self, q: usize, wire: u32, now_empty: bool, now: Time, ev: &mut impl RoundSink) {
        if let Some(g) = q.checked_sub(self.strict) {
            self.inner.on_dequeue(g, wire, now_empty, now, &mut Absolute { sink: ev, by: self.strict });
        }
    }
}

/// Passes the group's round events on with absolute queue indices.
struct Absolute<'a, S> {
    sink: &'a mut S,
    by: usize,
}

impl<S: RoundSink> RoundSink for Absolute<'_, S> {
    fn round(&mut self, ev: RoundEvent) {
        self.sink.round(ev.shifted(self.by));
    }
}
