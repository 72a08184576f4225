//! Schedulers: pick which queue of a port sends next. They know nothing of ECN.
//!
//! Contract with the port (`port::Port`):
//! - `on_enqueue(q, wire, now, ev)` after a packet joined queue `q` (the queue held `wire` fewer bytes before);
//! - `pick(view, now, ev)` when the transmitter is free: the queue whose head packet goes next (`None` iff
//!   every queue is empty); it may end turns (deficit used up) and report them;
//! - `on_dequeue(q, wire, now_empty, now, ev)` after the picked head packet left queue `q`;
//! - `pass(q, wire, now, ev)` in place of the three for a packet that finds every queue empty and the
//!   transmitter free, and leaves at once (most arrivals at a switch).
//!
//! Round events go to `ev`, a `RoundSink` (the port passes its marker, so they reach it as they happen), for
//! MQ-ECN's round-time estimate (DESIGN "MQ-ECN"): a queue `Joined` the tail of the active list (on becoming
//! non-empty, or re-queued after its turn), and a queue `TurnEnded` (it emptied or used up its
//! quantum/deficit) with `started` = the time it last joined.
//! WRR and DWRR emit them (`rr`); strict priority and WFQ have no rounds and emit none.
//!
//! Disciplines, one file each: `wrr`, `dwrr` (on the shared round-robin engine `rr`), `wfq`, `sp_over`;
//! strict priority is inline. None allocates per packet.

use crate::units::Time;

pub mod dwrr;
pub mod rr;
pub mod sp_over;
#[cfg(test)]
mod tests;
pub mod wfq;
pub mod wrr;

pub use dwrr::Dwrr;
pub use sp_over::{Group, SpOver};
pub use wfq::Wfq;
pub use wrr::Wrr;

/// A read-only view of a port's queues for the scheduler.
pub trait QueueView {
    fn n(&self) -> usize;
    /// Wire bytes of the head packet of queue `q`, or `None` when it is empty.
    fn head(&self, q: usize) -> Option<u32>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundEvent {
    Joined { queue: usize, at: Time },
    TurnEnded { queue: usize, started: Time, at: Time },
}

impl RoundEvent {
    /// The same event about queue `queue + by`.
    pub fn shifted(self, by: usize) -> RoundEvent {
        match self {
            RoundEvent::Joined { queue, at } => RoundEvent::Joined { queue: queue + by, at },
            RoundEvent::TurnEnded { queue, started, at } => RoundEvent::TurnEnded { queue: queue + by, started, at },
        }
    }
}

/// Where a scheduler reports round events as they happen: the port's marker, or a list in tests.
pub trait RoundSink {
    fn round(&mut self, ev: RoundEvent);
}

impl RoundSink for Vec<RoundEvent> {
    fn round(&mut self, ev: RoundEvent) {
        self.push(ev);
    }
}

/// Every scheduler, dispatched by enum. Build them with the constructors below. Line-aligned, so in a port's
/// record the tag and a round robin's state share one cache line.
#[derive(Clone, Debug)]
#[repr(align(64))]
pub enum AnyScheduler {
    /// Strict priority: queue 0 first.
    StrictPriority,
    /// Weighted round robin with byte quanta (see `wrr`).
    Wrr(Wrr),
    /// Deficit weighted round robin (see `dwrr`).
    Dwrr(Dwrr),
    /// Weighted fair queueing, self-clocked (see `wfq`).
    Wfq(Wfq),
    /// Strict priority over a WRR/DWRR/WFQ group (see `sp_over`).
    SpOver(SpOver),
}

impl AnyScheduler {
    /// Strict priority over any number of queues (queue 0 first).
    pub fn strict_priority() -> AnyScheduler {
        AnyScheduler::StrictPriority
    }

    /// WRR over `quanta.len()` queues; `quanta[i]` = bytes queue i may send per turn (≥ MTU is validated
    /// by the caller; 0 is raised to 1).
    pub fn wrr(quanta: Vec<u64>) -> AnyScheduler {
        AnyScheduler::Wrr(Wrr::new(quanta))
    }

    /// DWRR over `quanta.len()` queues; `quanta[i]` = bytes credited to queue i's deficit per turn.
    pub fn dwrr(quanta: Vec<u64>) -> AnyScheduler {
        AnyScheduler::Dwrr(Dwrr::new(quanta))
    }

    /// WFQ (SCFQ) over `weights.len()` queues with these relative weights (0 is raised to 1).
    pub fn wfq(weights: Vec<u64>) -> AnyScheduler {
        AnyScheduler::Wfq(Wfq::new(weights))
    }

    /// Queues 0..strict in strict priority before `inner`, which schedules the queues after them (its queue
    /// 0 is the port's queue `strict`). Over strict priority it is strict priority; over another SP-over
    /// group the strict prefixes add up; with `strict == 0` it is `inner` itself.
    pub fn sp_over(strict: usize, inner: AnyScheduler) -> AnyScheduler {
        if strict == 0 {
            return inner;
        }
        let group = match inner {
            AnyScheduler::StrictPriority => return AnyScheduler::StrictPriority,
            AnyScheduler::SpOver(s) => return AnyScheduler::SpOver(s.behind(strict)),
            AnyScheduler::Wrr(s) => Group::Wrr(s),
            AnyScheduler::Dwrr(s) => Group::Dwrr(s),
            AnyScheduler::Wfq(s) => Group::Wfq(s),
        };
        AnyScheduler::SpOver(SpOver::new(strict, group))
    }

    /// The number of queues the scheduler was built for (`None`: any).
    pub fn queues(&self) -> Option<usize> {
        match self {
            AnyScheduler::StrictPriority => None,
            AnyScheduler::Wrr(s) => Some(s.n()),
            AnyScheduler::Dwrr(s) => Some(s.n()),
            AnyScheduler::Wfq(s) => Some(s.n()),
            AnyScheduler::SpOver(s) => Some(s.n()),
        }
    }

    pub fn on_enqueue(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        match self {
            AnyScheduler::StrictPriority => {}
            AnyScheduler::Wrr(s) => s.on_enqueue(q, now, ev),
            AnyScheduler::Dwrr(s) => s.on_enqueue(q, now, ev),
            AnyScheduler::Wfq(s) => s.on_enqueue(q, wire),
            AnyScheduler::SpOver(s) => s.on_enqueue(q, wire, now, ev),
        }
    }

    /// The queue to serve next, or `None` when every queue is empty.
    pub fn pick(&mut self, qs: &impl QueueView, now: Time, ev: &mut impl RoundSink) -> Option<usize> {
        match self {
            AnyScheduler::StrictPriority => (0..qs.n()).find(|&q| qs.head(q).is_some()),
            AnyScheduler::Wrr(s) => s.pick(qs, now, ev),
            AnyScheduler::Dwrr(s) => s.pick(qs, now, ev),
            AnyScheduler::Wfq(s) => s.pick(qs),
            AnyScheduler::SpOver(s) => s.pick(qs, now, ev),
        }
    }

    /// A packet of `wire` bytes reaches queue `q` while every queue is empty and the transmitter is free, and
    /// goes straight into service: the same state and round events as `on_enqueue`, `pick` (which can only
    /// pick `q`) and `on_dequeue` with `now_empty`, without looking at the queues.
    pub fn pass(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        match self {
            AnyScheduler::StrictPriority => {}
            AnyScheduler::Wrr(s) => s.pass(q, wire, now, ev),
            AnyScheduler::Dwrr(s) => s.pass(q, wire, now, ev),
            AnyScheduler::Wfq(s) => s.pass(q, wire),
            AnyScheduler::SpOver(s) => s.pass(q, wire, now, ev),
        }
    }

    pub fn on_dequeue(&mut self, q: usize, wire: u32, now_empty: bool, now: Time, ev: &mut impl RoundSink) {
        match self {
            AnyScheduler::StrictPriority => {}
            AnyScheduler::Wrr(s) => s.on_dequeue(q, wire, now_empty, now, ev),
            AnyScheduler::Dwrr(s) => s.on_dequeue(q, wire, now_empty, now, ev),
            AnyScheduler::Wfq(s) => s.on_dequeue(q, now_empty),
            AnyScheduler::SpOver(s) => s.on_dequeue(q, wire, now_empty, now, ev),
        }
    }

    /// Per-queue weights as markers see them (PMSB's w_i, MQ-ECN's quantum): quantum bytes for (D)WRR,
    /// weight for WFQ, 1 for strict-priority queues. Panics if the scheduler was built for another number
    /// of queues than the port's `n` (a builder bug; configs are validated before).
    pub fn weights(&self, n: usize) -> Vec<u64> {
        if let Some(m) = self.queues() {
            assert_eq!(m, n, "scheduler built for {m} queues, the port has {n}");
        }
        match self {
            AnyScheduler::StrictPriority => vec![1; n],
            AnyScheduler::Wrr(s) => s.quanta(),
            AnyScheduler::Dwrr(s) => s.quanta(),
            AnyScheduler::Wfq(s) => s.weights().to_vec(),
            AnyScheduler::SpOver(s) => s.weights(),
        }
    }

    /// Whether queue `q` is served by round robin (MQ-ECN applies its dynamic threshold only there).
    pub fn is_round_robin(&self, q: usize) -> bool {
        match self {
            AnyScheduler::StrictPriority | AnyScheduler::Wfq(_) => false,
            AnyScheduler::Wrr(_) | AnyScheduler::Dwrr(_) => true,
            AnyScheduler::SpOver(s) => s.is_round_robin(q),
        }
    }
}
