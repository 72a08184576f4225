//! Deficit (weighted) round robin: a turn credits Q_i to a deficit counter that carries over between turns.
//!
//! Shreedhar & Varghese, "Efficient fair queuing using deficit round robin" (SIGCOMM 1995), §3: at the start
//! of its turn a queue's deficit counter grows by its quantum; it sends head packets while they fit the
//! deficit, subtracting their size; what is left carries to its next turn; the counter is reset to 0 when
//! the queue empties (also MQ-ECN §3.3.2 "DWRR"). With Q_i ≥ MTU every turn sends at least one packet
//! (validated elsewhere); with a smaller quantum the deficit still grows each turn, so every queue is served.

use super::rr::{RoundRobin, TurnBudget};

/// DWRR: the round-robin engine with carried-over deficit counters.
pub type Dwrr = RoundRobin<Deficits>;

#[derive(Clone, Debug)]
pub struct Deficits(Vec<u64>);

impl TurnBudget for Deficits {
    fn new(n: usize) -> Self {
        Deficits(vec![0; n])
    }
    fn start_turn(&mut self, q: usize, quantum: u64) {
        self.0[q] += quantum;
    }
    fn fits(&self, q: usize, size: u32, _first: bool) -> bool {
        size as u64 <= self.0[q]
    }
    fn charge(&mut self, q: usize, wire: u32) {
        debug_assert!(wire as u64 <= self.0[q], "DWRR sent more than its deficit");
        self.0[q] = self.0[q].saturating_sub(wire as u64);
    }
    fn end_turn(&mut self, q: usize, emptied: bool) {
        if emptied {
            self.0[q] = 0;
        }
    }
}
