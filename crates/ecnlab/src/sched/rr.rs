//! The round-robin engine WRR and DWRR share: the active list, service turns and their round events.
//!
//! Follows the MQ-ECN prototype's DWRR qdisc (MQ-ECN §4.2, DESIGN "MQ-ECN"): a linked list of active
//! queues; an empty queue that receives a packet joins the tail; the scheduler serves the head; a queue
//! whose turn ends with packets left re-joins the tail. A queue's `started` is MQ-ECN's T_start (when it
//! last joined); a `TurnEnded` event carries it so the marker can sample T_round = now − T_start (§3.3.2).
//! What a turn may send is the `TurnBudget`'s rule over the queue's credit (WRR and DWRR differ only there).

use super::{QueueView, RoundEvent};
use crate::units::Time;
use std::collections::VecDeque;

/// The per-turn byte budget rule of one round-robin discipline, over the queue's credit counter (bytes it may
/// still send; kept in the queue's record so one cache line holds all a turn touches).
pub trait TurnBudget: Clone + std::fmt::Debug {
    /// Queue's turn begins: credit its quantum.
    fn start_turn(credit: &mut u64, quantum: u64);
    /// Whether the head packet of `size` bytes may go now; `first` = nothing sent yet in this turn.
    fn fits(credit: u64, size: u32, first: bool) -> bool;
    /// The queue sent `wire` bytes in its turn.
    fn charge(credit: &mut u64, wire: u32) {
        *credit = credit.saturating_sub(wire as u64);
    }
    /// The queue's turn is over; `emptied` = it ended because the queue emptied.
    fn end_turn(credit: &mut u64, emptied: bool);
}

/// What the round robin keeps per queue, together.
#[derive(Clone, Copy, Debug)]
struct Slot {
    quantum: u64,
    credit: u64,
    /// T_start: when the queue last joined the tail.
    started: Time,
    /// On the active list.
    listed: bool,
}

#[derive(Clone, Debug)]
pub struct RoundRobin<B> {
    slots: Vec<Slot>,
    /// The active list: each non-empty queue exactly once, in service order (capacity n: never reallocates).
    ring: VecDeque<usize>,
    /// The head of `ring` is in its turn (quantum credited) / has sent something in it.
    in_turn: bool,
    sent_in_turn: bool,
    budget: std::marker::PhantomData<B>,
}

impl<B: TurnBudget> RoundRobin<B> {
    /// One queue per quantum; quanta of 0 are raised to 1 byte so every turn can make progress.
    pub fn new(quanta: Vec<u64>) -> Self {
        let n = quanta.len();
        RoundRobin {
            slots: quanta
                .into_iter()
                .map(|q| Slot { quantum: q.max(1), credit: 0, started: Time::ZERO, listed: false })
                .collect(),
            ring: VecDeque::with_capacity(n),
            in_turn: false,
            sent_in_turn: false,
            budget: std::marker::PhantomData,
        }
    }

    pub fn n(&self) -> usize {
        self.slots.len()
    }

    pub fn quanta(&self) -> Vec<u64> {
        self.slots.iter().map(|s| s.quantum).collect()
    }

    pub fn on_enqueue(&mut self, q: usize, now: Time, ev: &mut Vec<RoundEvent>) {
        if !self.slots[q].listed {
            self.join(q, now, ev);
        }
    }

    /// Serves the head of the active list while its budget allows; otherwise ends its turn, re-queues it
    /// and moves on (the loop terminates: every pass credits a quantum ≥ 1 byte).
    pub fn pick(&mut self, qs: &impl QueueView, now: Time, ev: &mut Vec<RoundEvent>) -> Option<usize> {
        loop {
            let h = *self.ring.front()?;
            if !self.in_turn {
                self.begin_turn(h);
            }
            let Some(size) = qs.head(h) else {
                debug_assert!(false, "queue {h} is on the active list but empty");
                self.finish_turn(now, ev, true);
                continue;
            };
            if B::fits(self.slots[h].credit, size, !self.sent_in_turn) {
                return Some(h);
            }
            self.finish_turn(now, ev, false);
            self.join(h, now, ev);
        }
    }

    pub fn on_dequeue(&mut self, q: usize, wire: u32, now_empty: bool, now: Time, ev: &mut Vec<RoundEvent>) {
        debug_assert_eq!(self.ring.front(), Some(&q), "dequeued a queue that is not in its turn");
        B::charge(&mut self.slots[q].credit, wire);
        self.sent_in_turn = true;
        if now_empty {
            self.finish_turn(now, ev, true);
        }
    }

    fn begin_turn(&mut self, h: usize) {
        let s = &mut self.slots[h];
        B::start_turn(&mut s.credit, s.quantum);
        self.in_turn = true;
        self.sent_in_turn = false;
    }

    /// Puts `q` at the tail of the active list.
    fn join(&mut self, q: usize, now: Time, ev: &mut Vec<RoundEvent>) {
        self.ring.push_back(q);
        let s = &mut self.slots[q];
        s.listed = true;
        s.started = now;
        ev.push(RoundEvent::Joined { queue: q, at: now });
    }

    /// Ends the head's turn and takes it off the active list.
    fn finish_turn(&mut self, now: Time, ev: &mut Vec<RoundEvent>, emptied: bool) {
        let Some(h) = self.ring.pop_front() else { return };
        let s = &mut self.slots[h];
        s.listed = false;
        self.in_turn = false;
        B::end_turn(&mut s.credit, emptied);
        ev.push(RoundEvent::TurnEnded { queue: h, started: s.started, at: now });
    }
}
