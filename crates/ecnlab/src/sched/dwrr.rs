//! Deficit (weighted) round robin: a turn credits Q_i to a deficit counter that carries over between turns.
//!
//! Shreedhar & Varghese, "Efficient fair queuing using deficit round robin" (SIGCOMM 1995), §3: at the start
//! of its turn a queue's deficit counter grows by its quantum; it sends head packets while they fit the
//! deficit, subtracting their size; what is left carries to its next turn; the counter is reset to 0 when
//! the queue empties (also MQ-ECN §3.3.2 "DWRR"). With Q_i ≥ MTU every turn sends at least one packet
//! (validated elsewhere); with a smaller quantum the deficit still grows each turn, so every queue is served.

use super::rr::{RoundRobin, RrConfig, TurnBudget};

/// DWRR: the round-robin engine with carried-over deficit counters.
pub type Dwrr = RoundRobin<Deficits>;

/// `scheduler = { kind = "dwrr", quantum = "1500B", weights = [1, 2] }`: the deficit of queue i grows by
/// `quantum × weights[i]` per turn (default quantum 1500 B, weights all 1) and resets when the queue empties.
pub type DwrrConfig = RrConfig<Deficits>;

/// The credit is the deficit counter.
#[derive(Clone, Debug)]
pub struct Deficits;

impl TurnBudget for Deficits {
    fn start_turn(deficit: &mut u64, quantum: u64) {
        *deficit += quantum;
    }
    fn fits(deficit: u64, size: u32, _first: bool) -> bool {
        size as u64 <= deficit
    }
    fn charge(deficit: &mut u64, wire: u32) {
        debug_assert!(wire as u64 <= *deficit, "DWRR sent more than its deficit");
        *deficit = deficit.saturating_sub(wire as u64);
    }
    fn end_turn(deficit: &mut u64, emptied: bool) {
        if emptied {
            *deficit = 0;
        }
    }
}
