//! Weighted round robin with byte quanta: a turn sends at most Q_i bytes; the unused budget is forfeited.
//!
//! MQ-ECN §3.3.2 ("WRR": each queue is configured with a quantum Q_i and in each round can transmit at most
//! Q_i) and §4.2 (WRR = DWRR "resetting the deficit counter to 0 whenever a queue finishes its service in a
//! round"). Pinned (DESIGN "MQ-ECN"): the budget starts at Q_i each turn and is reset to 0 at the end of every
//! turn; the turn ends when the queue empties or its head packet does not fit the remaining budget.
//! Beyond the pin, for progress when Q_i < a packet (invalid configs are rejected elsewhere): the first
//! packet of a turn is always sent.

use super::rr::{RoundRobin, TurnBudget};

/// WRR: the round-robin engine with a per-turn budget that never carries over.
pub type Wrr = RoundRobin<WrrBudget>;

/// Only the queue in its turn has a budget, so one counter suffices.
#[derive(Clone, Debug)]
pub struct WrrBudget {
    left: u64,
}

impl TurnBudget for WrrBudget {
    fn new(_n: usize) -> Self {
        WrrBudget { left: 0 }
    }
    fn start_turn(&mut self, _q: usize, quantum: u64) {
        self.left = quantum;
    }
    fn fits(&self, _q: usize, size: u32, first: bool) -> bool {
        first || size as u64 <= self.left
    }
    fn charge(&mut self, _q: usize, wire: u32) {
        self.left = self.left.saturating_sub(wire as u64);
    }
    fn end_turn(&mut self, _q: usize, _emptied: bool) {
        self.left = 0;
    }
}
