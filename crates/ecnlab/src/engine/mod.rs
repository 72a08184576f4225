//! The event queue ordered by `(time, phase, sequence)` and seeded random-number streams.

pub mod rng;
pub use rng::Rng;

use crate::units::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens at an instant. Small and `Copy`: events name the component, state lives in `Sim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A port finished serializing the packet at its head.
    TxDone { port: u32 },
    /// The packet at the head of a port's outgoing link reaches the far end.
    Arrive { port: u32 },
    /// A flow's transport timer (RTO, delayed ACK, pacing) may be due.
    FlowTimer { flow: u32 },
    /// A workload generator acts (start a flow, next arrival, next incast round, probe).
    Workload { idx: u32 },
    /// Periodic observation sample.
    Sample,
}

impl Event {
    /// Same-instant order: departures before arrivals (DESIGN: "a port processes a departure before an
    /// arrival"), then timers and generators, then sampling, so a sample sees the instant's final state.
    fn phase(self) -> u8 {
        match self {
            Event::TxDone { .. } => 0,
            Event::Arrive { .. } => 1,
            Event::FlowTimer { .. } => 2,
            Event::Workload { .. } => 3,
            Event::Sample => 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    time: Time,
    phase: u8,
    seq: u64,
    event: Event,
}

impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we pop the earliest.
        (o.time, o.phase, o.seq).cmp(&(self.time, self.phase, self.seq))
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// A priority queue of events; ties at one instant break by phase, then by insertion order, so a run is
/// reproducible bit for bit.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, time: Time, event: Event) {
        self.seq += 1;
        self.heap.push(Entry { time, phase: event.phase(), seq: self.seq, event });
    }
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_phase_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Time(5), Event::Arrive { port: 1 });
        q.push(Time(5), Event::TxDone { port: 9 });
        q.push(Time(3), Event::Sample);
        q.push(Time(5), Event::Arrive { port: 2 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (Time(3), Event::Sample),
                (Time(5), Event::TxDone { port: 9 }),
                (Time(5), Event::Arrive { port: 1 }),
                (Time(5), Event::Arrive { port: 2 }),
            ]
        );
    }
}
