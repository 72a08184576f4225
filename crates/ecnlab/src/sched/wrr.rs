//! Weighted round robin with byte quanta: a turn sends at most Q_i bytes; the unused budget is forfeited.
//!
//! MQ-ECN §3.3.2 ("WRR": each queue is configured with a quantum Q_i and in each round can transmit at most
//! Q_i) and §4.2 (WRR = DWRR "resetting the deficit counter to 0 whenever a queue finishes its service in a
//! round"). Pinned (DESIGN "MQ-ECN"): the budget starts at Q_i each turn and is reset to 0 at the end of every
//! turn; the turn ends when the queue empties or its head packet does not fit the remaining budget.
//! Beyond the pin, for progress when Q_i < a packet (invalid configs are rejected elsewhere): the first
//! packet of a turn is always sent.

use super::rr::{RoundRobin, RrConfig, TurnBudget};

/// WRR: the round-robin engine with a per-turn budget that never carries over.
pub type Wrr = RoundRobin<WrrBudget>;

/// `scheduler = { kind = "wrr", quantum = "1500B", weights = [1, 2] }`: queue i may send `quantum ×
/// weights[i]` bytes per turn (default quantum 1500 B, weights all 1); the budget is reset at the end of every
/// turn.
pub type WrrConfig = RrConfig<WrrBudget>;

/// The credit is what is left of this turn's quantum; it never carries over.
#[derive(Clone, Debug)]
pub struct WrrBudget;

impl TurnBudget for WrrBudget {
    fn start_turn(left: &mut u64, quantum: u64) {
        *left = quantum;
    }
    fn fits(left: u64, size: u32, first: bool) -> bool {
        first || size as u64 <= left
    }
    fn end_turn(left: &mut u64, _emptied: bool) {
        *left = 0;
    }
}
