//! The event queue ordered by `(time, phase, sequence)` and seeded random-number streams.

pub mod rng;
pub use rng::Rng;

use crate::units::Time;

/// What happens at an instant. Small and `Copy`: events name the component, state lives in `Sim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A port finished serializing the packet at its head.
    TxDone { port: u32 },
    /// The packet at the head of a port's outgoing link reaches the far end.
    Arrive { port: u32 },
    /// A flow's transport timer (RTO, delayed ACK, pacing) may be due.
    FlowTimer { flow: u32 },
    /// Delayed packets (RTT variation) of a host's link reach its far end.
    LateArrive { port: u32 },
    /// A host's NIC backlog fell below `nic_limit`: blocked flows may send again.
    NicReady { host: u32 },
    /// A workload generator acts (start a flow, next arrival, next incast round, probe).
    Workload { idx: u32 },
    /// The statistics window opens (`observe.warmup`).
    WindowStart,
    /// Periodic observation sample.
    Sample,
    /// A boundary between observation phases (`observe.phases`).
    Phase { idx: u32 },
    /// A PFC PAUSE (`pause`) or RESUME for priority `prio` reaches the transmitter of `port`.
    Pfc { port: u32, prio: u8, pause: bool },
}

impl Event {
    /// Same-instant order: departures before arrivals (DESIGN: "a port processes a departure before an
    /// arrival"), then timers and generators, then sampling, so a sample sees the instant's final state.
    fn phase(self) -> u8 {
        match self {
            Event::TxDone { .. } => 0,
            Event::Arrive { .. } | Event::LateArrive { .. } | Event::Pfc { .. } => 1,
            Event::FlowTimer { .. } | Event::NicReady { .. } => 2,
            Event::Workload { .. } => 3,
            Event::Sample | Event::Phase { .. } | Event::WindowStart => 4,
        }
    }
}

/// A heap entry: 24 bytes. `order` packs the phase (top 3 bits) above the insertion sequence, so ties at one
/// instant compare with one integer.
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    order: u64,
    event: Event,
}

impl Entry {
    /// `(time, order)` as one integer: compares without a branch.
    #[inline(always)]
    fn key(&self) -> u128 {
        (self.time as u128) << 64 | self.order as u128
    }
}

const SEQ_BITS: u32 = 61;

/// A binary min-heap of events; ties at one instant break by phase, then by insertion order, so a run is
/// reproducible bit for bit (every key is distinct, so the pop order does not depend on the heap's layout).
#[derive(Default)]
pub struct EventQueue {
    heap: Vec<Entry>,
    seq: u64,
}

impl EventQueue {
    #[inline]
    pub fn push(&mut self, time: Time, event: Event) {
        self.seq += 1;
        debug_assert!(self.seq < 1 << SEQ_BITS);
        let e = Entry { time: time.0, order: (event.phase() as u64) << SEQ_BITS | self.seq, event };
        self.heap.push(e);
        let h = self.heap.as_mut_slice();
        let i = h.len() - 1;
        Self::sift_up(h, i, e);
    }

    /// Moves the hole at `i` up until `e` fits there, and puts `e` in it.
    #[inline(always)]
    fn sift_up(h: &mut [Entry], mut i: usize, e: Entry) {
        let key = e.key();
        while i > 0 {
            let parent = (i - 1) / 2;
            // SAFETY: parent < i < h.len().
            let pe = unsafe { *h.get_unchecked(parent) };
            if key >= pe.key() {
                break;
            }
            unsafe { *h.get_unchecked_mut(i) = pe };
            i = parent;
        }
        h[i] = e;
    }

    /// Bottom-up deletion (Wegener 1993): the hole left by the minimum sinks to a leaf along the smaller
    /// children, chosen without a data-dependent branch; the last entry then rises from there, which is rarely
    /// more than a level or two. Half the comparisons of a textbook sift-down, and no mispredicted early exit.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("non-empty");
        let h = self.heap.as_mut_slice();
        let n = h.len();
        if n > 0 {
            let mut i = 0;
            loop {
                let left = 2 * i + 1;
                if left >= n {
                    break;
                }
                let right = (left + 1).min(n - 1);
                // SAFETY: left, right < n.
                let (l, r) = unsafe { (h.get_unchecked(left).key(), h.get_unchecked(right).key()) };
                let child = left + (r < l) as usize;
                unsafe { *h.get_unchecked_mut(i) = *h.get_unchecked(child) };
                i = child;
            }
            Self::sift_up(h, i, last);
        }
        Some((Time(top.time), top.event))
    }

    pub fn peek_time(&self) -> Option<Time> {
        self.heap.first().map(|e| Time(e.time))
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
    fn pops_like_a_sort_by_time_phase_and_insertion() {
        // A second implementation: sort the same pushes by (time, phase, seq).
        let mut q = EventQueue::default();
        let mut expect = vec![];
        let mut x = 12345u64;
        for seq in 0..5000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let t = Time((x >> 33) % 50);
            let ev = match (x >> 20) % 3 {
                0 => Event::TxDone { port: seq as u32 },
                1 => Event::Arrive { port: seq as u32 },
                _ => Event::FlowTimer { flow: seq as u32 },
            };
            q.push(t, ev);
            expect.push((t, ev.phase(), seq, ev));
            if seq % 7 == 0 {
                expect.sort_by_key(|e| (e.0, e.1, e.2));
                let first = expect.remove(0);
                assert_eq!(q.pop(), Some((first.0, first.3)));
            }
        }
        expect.sort_by_key(|e| (e.0, e.1, e.2));
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, expect.iter().map(|e| (e.0, e.3)).collect::<Vec<_>>());
    }

    #[test]
    fn matches_a_sort_when_pushes_follow_the_clock() {
        // As a simulation uses it: each push lies at or after the last popped time, at offsets from 100 ps to
        // 1.1 simulated seconds; a sorted list is the second implementation.
        let mut q = EventQueue::default();
        let mut expect: Vec<(u64, u8, u64, Event)> = vec![];
        let (mut now, mut x, mut seq) = (0u64, 99u64, 0u64);
        for step in 0..40_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let span = [100, 1 << 17, 1 << 24, 1 << 29, 1 << 40][(x >> 60) as usize % 5];
            let t = now + (x >> 20) % span;
            let ev = if x & 1 == 0 { Event::Arrive { port: step as u32 } } else { Event::TxDone { port: step as u32 } };
            q.push(Time(t), ev);
            seq += 1;
            expect.push((t, ev.phase(), seq, ev));
            if step % 3 != 0 {
                expect.sort_by_key(|e| std::cmp::Reverse((e.0, e.1, e.2)));
                let want = expect.pop().unwrap();
                assert_eq!(q.peek_time(), Some(Time(want.0)));
                assert_eq!(q.pop(), Some((Time(want.0), want.3)));
                now = want.0;
            }
            assert_eq!(q.len(), expect.len());
        }
        expect.sort_by_key(|e| (e.0, e.1, e.2));
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, expect.iter().map(|e| (Time(e.0), e.3)).collect::<Vec<_>>());
        assert!(q.is_empty());
    }

    #[test]
    fn an_event_pushed_after_a_peek_at_a_later_one_comes_first() {
        let mut q = EventQueue::default();
        q.push(Time(1 << 30), Event::Sample);
        assert_eq!(q.peek_time(), Some(Time(1 << 30)));
        q.push(Time(5), Event::Arrive { port: 1 });
        q.push(Time(1 << 30), Event::TxDone { port: 2 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (Time(5), Event::Arrive { port: 1 }),
                (Time(1 << 30), Event::TxDone { port: 2 }),
                (Time(1 << 30), Event::Sample)
            ]
        );
    }

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
