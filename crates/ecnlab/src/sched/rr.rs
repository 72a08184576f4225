//! The round-robin engine WRR and DWRR share: the active list, service turns and their round events.
//!
//! Follows the MQ-ECN prototype's DWRR qdisc (MQ-ECN §4.2, DESIGN "MQ-ECN"): a linked list of active
//! queues; an empty queue that receives a packet joins the tail; the scheduler serves the head; a queue
//! whose turn ends with packets left re-joins the tail. `started[q]` is MQ-ECN's T_start (the last time `q`
//! joined); a `TurnEnded` event carries it so the marker can sample T_round = now − T_start (§3.3.2).
//! What a turn may send is the `TurnBudget`'s business (WRR and DWRR differ only there).

use super::{QueueView, RoundEvent};
use crate::units::Time;
use std::collections::VecDeque;

/// The per-turn byte budget rule of one round-robin discipline.
pub trait TurnBudget: Clone + std::fmt::Debug {
    fn new(n: usize) -> Self;
    /// Queue `q`'s turn begins: credit its quantum.
    fn start_turn(&mut self, q: usize, quantum: u64);
    /// Whether `q`'s head packet of `size` bytes may go now; `first` = nothing sent yet in this turn.
    fn fits(&self, q: usize, size: u32, first: bool) -> bool;
    /// `q` sent `wire` bytes in its turn.
    fn charge(&mut self, q: usize, wire: u32);
    /// `q`'s turn is over; `emptied` = it ended because the queue emptied.
    fn end_turn(&mut self, q: usize, emptied: bool);
}

#[derive(Clone, Debug)]
pub struct RoundRobin<B> {
    quanta: Vec<u64>,
    budget: B,
    /// The active list: each non-empty queue exactly once, in service order (capacity n: never reallocates).
    ring: VecDeque<usize>,
    listed: Vec<bool>,
    /// T_start per queue: when it last joined the tail.
    started: Vec<Time>,
    /// The head of `ring` is in its turn (quantum credited) / has sent something in it.
    in_turn: bool,
    sent_in_turn: bool,
}

impl<B: TurnBudget> RoundRobin<B> {
    /// One queue per quantum; quanta of 0 are raised to 1 byte so every turn can make progress.
    pub fn new(quanta: Vec<u64>) -> Self {
        let n = quanta.len();
        RoundRobin {
            quanta: quanta.into_iter().map(|q| q.max(1)).collect(),
            budget: B::new(n),
            ring: VecDeque::with_capacity(n),
            listed: vec![false; n],
            started: vec![Time::ZERO; n],
            in_turn: false,
            sent_in_turn: false,
        }
    }

    pub fn n(&self) -> usize {
        self.quanta.len()
    }

    pub fn quanta(&self) -> &[u64] {
        &self.quanta
    }

    pub fn on_enqueue(&mut self, q: usize, now: Time, ev: &mut Vec<RoundEvent>) {
        if !self.listed[q] {
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
            if self.budget.fits(h, size, !self.sent_in_turn) {
                return Some(h);
            }
            self.finish_turn(now, ev, false);
            self.join(h, now, ev);
        }
    }

    pub fn on_dequeue(&mut self, q: usize, wire: u32, now_empty: bool, now: Time, ev: &mut Vec<RoundEvent>) {
        debug_assert_eq!(self.ring.front(), Some(&q), "dequeued a queue that is not in its turn");
        self.budget.charge(q, wire);
        self.sent_in_turn = true;
        if now_empty {
            self.finish_turn(now, ev, true);
        }
    }

    fn begin_turn(&mut self, h: usize) {
        self.budget.start_turn(h, self.quanta[h]);
        self.in_turn = true;
        self.sent_in_turn = false;
    }

    /// Puts `q` at the tail of the active list.
    fn join(&mut self, q: usize, now: Time, ev: &mut Vec<RoundEvent>) {
        self.ring.push_back(q);
        self.listed[q] = true;
        self.started[q] = now;
        ev.push(RoundEvent::Joined { queue: q, at: now });
    }

    /// Ends the head's turn and takes it off the active list.
    fn finish_turn(&mut self, now: Time, ev: &mut Vec<RoundEvent>, emptied: bool) {
        let Some(h) = self.ring.pop_front() else { return };
        self.listed[h] = false;
        self.in_turn = false;
        self.budget.end_turn(h, emptied);
        ev.push(RoundEvent::TurnEnded { queue: h, started: self.started[h], at: now });
    }
}
