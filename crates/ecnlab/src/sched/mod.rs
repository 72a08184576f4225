//! Schedulers: pick which queue of a port sends next. They know nothing of ECN.
//!
//! Contract with the port (`port::Port`):
//! - `on_enqueue(q, wire, now, ev)` after a packet joined queue `q` (the queue held `wire` fewer bytes before);
//! - `pick(view, now, ev)` when the transmitter is free: the queue whose head packet goes next (`None` iff
//!   every queue is empty); it may end turns (deficit used up) and report them;
//! - `on_dequeue(q, wire, now_empty, now, ev)` after the picked head packet left queue `q`.
//! Round events go into `ev` for the marker (MQ-ECN's round-time estimate, DESIGN "MQ-ECN"): a queue
//! `Joined` the tail of the active list (on becoming non-empty, or re-queued after its turn), and a queue
//! `TurnEnded` (it emptied or used up its quantum/deficit) with `started` = the time it last joined.

use crate::units::Time;

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

#[derive(Clone, Debug)]
pub enum AnyScheduler {
    /// Strict priority: queue 0 first.
    StrictPriority,
}

impl AnyScheduler {
    pub fn on_enqueue(&mut self, _q: usize, _wire: u32, _now: Time, _ev: &mut Vec<RoundEvent>) {
        match self {
            AnyScheduler::StrictPriority => {}
        }
    }

    /// The queue to serve next, or `None` when every queue is empty.
    pub fn pick(&mut self, qs: &impl QueueView, _now: Time, _ev: &mut Vec<RoundEvent>) -> Option<usize> {
        match self {
            AnyScheduler::StrictPriority => (0..qs.n()).find(|&q| qs.head(q).is_some()),
        }
    }

    pub fn on_dequeue(&mut self, _q: usize, _wire: u32, _now_empty: bool, _now: Time, _ev: &mut Vec<RoundEvent>) {
        match self {
            AnyScheduler::StrictPriority => {}
        }
    }

    /// Per-queue weights as markers see them (PMSB's w_i, MQ-ECN's quantum): quantum bytes for (D)WRR,
    /// weight for WFQ, 1 for strict-priority queues.
    pub fn weights(&self, n: usize) -> Vec<u64> {
        match self {
            AnyScheduler::StrictPriority => vec![1; n],
        }
    }

    /// Whether queue `q` is served by round robin (MQ-ECN applies its dynamic threshold only there).
    pub fn is_round_robin(&self, _q: usize) -> bool {
        match self {
            AnyScheduler::StrictPriority => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(Vec<Option<u32>>);
    impl QueueView for Fake {
        fn n(&self) -> usize {
            self.0.len()
        }
        fn head(&self, q: usize) -> Option<u32> {
            self.0[q]
        }
    }

    #[test]
    fn strict_priority_serves_the_lowest_nonempty_index() {
        let mut sp = AnyScheduler::StrictPriority;
        let mut ev = vec![];
        assert_eq!(sp.pick(&Fake(vec![None, Some(1500), Some(64)]), Time::ZERO, &mut ev), Some(1));
        assert_eq!(sp.pick(&Fake(vec![Some(64), Some(1500)]), Time::ZERO, &mut ev), Some(0));
        assert_eq!(sp.pick(&Fake(vec![None, None]), Time::ZERO, &mut ev), None);
        assert!(ev.is_empty());
    }
}
