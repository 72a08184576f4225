//! Strict priority over a group: queues 0..strict first (lower index first), then a WRR/DWRR/WFQ group.
//!
//! The hierarchy of PMSB's "SP+WFQ" and MQ-ECN §3.4 (high-priority queues served by strict priority, the
//! rest by round robin in the lowest priority). The group scheduler sees its queues as 0..n−strict; its
//! round events are shifted back to absolute queue indices. A strict queue preempts between packets only:
//! the group's turn in progress simply pauses. `SpOver` is generic over the group's scheduler, so each
//! registry entry with `under_sp` gets its own `AnyScheduler` variant and its hooks are called directly (no
//! second dispatch).

use super::{AnyScheduler, Check, QueueView, RoundEvent, RoundSink, Scheduler, SchedulerConfig};
use crate::error::Error;
use crate::units::Time;

#[derive(Clone, Debug)]
pub struct SpOver<I> {
    strict: usize,
    inner: I,
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

impl<I: Scheduler> SpOver<I> {
    pub fn new(strict: usize, inner: I) -> SpOver<I> {
        SpOver { strict, inner }
    }

    pub fn strict(&self) -> usize {
        self.strict
    }

    pub fn inner(&self) -> &I {
        &self.inner
    }

    /// The same group under `more` additional strict queues in front.
    pub(super) fn behind(self, more: usize) -> SpOver<I> {
        SpOver { strict: self.strict + more, ..self }
    }
}

impl<I: Scheduler> Scheduler for SpOver<I> {
    fn queues(&self) -> Option<usize> {
        self.inner.queues().map(|n| self.strict + n)
    }

    /// 1 for the strict queues, the group's quanta or weights for the rest.
    fn weights(&self, n: usize) -> Vec<u64> {
        let mut w = vec![1; self.strict];
        w.extend(self.inner.weights(n - self.strict));
        w
    }

    fn is_round_robin(&self, q: usize) -> bool {
        q >= self.strict && self.inner.is_round_robin(q - self.strict)
    }

    fn on_enqueue(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        if let Some(g) = q.checked_sub(self.strict) {
            self.inner.on_enqueue(g, wire, now, &mut Absolute { sink: ev, by: self.strict });
        }
    }

    fn pick(&mut self, qs: &impl QueueView, now: Time, ev: &mut impl RoundSink) -> Option<usize> {
        if let Some(q) = (0..self.strict).find(|&q| qs.head(q).is_some()) {
            return Some(q);
        }
        let picked =
            self.inner.pick(&Shifted { qs, by: self.strict }, now, &mut Absolute { sink: ev, by: self.strict });
        picked.map(|g| g + self.strict)
    }

    /// A strict queue's packet passes without the group; a group queue's passes through the group's own
    /// `pass` (the default would take the group's queue path: a round robin's active list and slots).
    fn pass(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        if let Some(g) = q.checked_sub(self.strict) {
            self.inner.pass(g, wire, now, &mut Absolute { sink: ev, by: self.strict });
        }
    }

    fn on_dequeue(&mut self, q: usize, wire: u32, now_empty: bool, now: Time, ev: &mut impl RoundSink) {
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

/// `scheduler = { kind = "sp_over", strict = 1, group = { kind = "dwrr" } }`: queues 0..strict in strict
/// priority above the remaining queues, scheduled by `group` (a kind whose registry entry has `under_sp`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpOverConfig {
    pub strict: u32,
    pub group: Box<SchedulerConfig>,
}

impl SpOverConfig {
    /// 1 ≤ strict < queues, and a group that may run under strict priority, valid over the queues left.
    pub fn validate(&self, c: &Check) -> Result<(), Error> {
        let strict = self.strict as usize;
        if strict == 0 || strict >= c.queues {
            let hi = c.queues.saturating_sub(1);
            return c.fail("strict", format!("must be in [1, queues − 1] = [1, {hi}]"));
        }
        if !self.group.can_be_grouped() {
            let kinds = SchedulerConfig::groupable_kinds();
            let list = match kinds.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => "no kind".into(),
            };
            return c.fail("group.kind", format!("the group is scheduled by {list}"));
        }
        let path = format!("{}.group", c.path);
        self.group.validate(&Check { path: &path, mtu: c.mtu, queues: c.queues - strict })
    }

    pub fn build(&self, queues: usize) -> AnyScheduler {
        let strict = self.strict as usize;
        AnyScheduler::sp_over(strict, self.group.build(queues - strict))
    }
}
