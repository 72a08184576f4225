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

const SEQ_BITS: u32 = 61;
/// Children per heap node.
const ARITY: usize = 4;

/// `ARITY` keys in one cache line: a node's children, compared together on every level of a pop.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct KeyLine([u128; ARITY]);

/// A 4-ary min-heap of events, keys and events in separate arrays. A key packs `(time, phase, sequence)` in
/// one integer (time in the high 64 bits, the phase in the top 3 bits of the low half, above the insertion
/// sequence), so ties at one instant break by phase, then by insertion order, and a run is reproducible bit
/// for bit (every key is distinct, so the pop order does not depend on the heap's layout).
///
/// What bounds a pop is its chain of dependent loads, one per level: four children per level halve the depth
/// of a binary heap, and node i's keys sit at slot i + 3 of cache-line-aligned storage, so the four children
/// of a node (4i+1 … 4i+4) always share one line.
///
/// Most events schedule another while they are handled. `take` hands out the minimum but leaves its slot at
/// the root: the next `push` fills that slot (one pass from the root down, where a `pop` then a `push` make a
/// pass down and one up), and `settle` removes it if nothing was pushed. The order is the same either way.
#[derive(Default)]
pub struct EventQueue {
    keys: Vec<KeyLine>,
    events: Vec<Event>,
    seq: u64,
    /// The root was taken and awaits a replacement (`push`) or removal (`settle`).
    vacant_root: bool,
}

impl EventQueue {
    /// Node i's position in `keys` (counted in keys, not lines).
    #[inline(always)]
    fn slot(i: usize) -> usize {
        i + ARITY - 1
    }

    #[inline(always)]
    fn key(&self, i: usize) -> u128 {
        let s = Self::slot(i);
        debug_assert!(s / ARITY < self.keys.len());
        // SAFETY: callers pass i ≤ len; `push` keeps a line for slot len + 3 and `keys` never shrinks.
        unsafe { *(self.keys.as_ptr() as *const u128).add(s) }
    }

    #[inline(always)]
    fn set(&mut self, i: usize, key: u128, event: Event) {
        let s = Self::slot(i);
        debug_assert!(s / ARITY < self.keys.len() && i < self.events.len());
        // SAFETY: as in `key`; `events` holds index i.
        unsafe {
            *(self.keys.as_mut_ptr() as *mut u128).add(s) = key;
            *self.events.get_unchecked_mut(i) = event;
        }
    }

    #[inline]
    pub fn push(&mut self, time: Time, event: Event) {
        self.seq += 1;
        debug_assert!(self.seq < 1 << SEQ_BITS);
        let key = (time.0 as u128) << 64 | ((event.phase() as u128) << SEQ_BITS | self.seq as u128);
        if self.vacant_root {
            self.vacant_root = false;
            self.fill_root(key, event);
            return;
        }
        let i = self.events.len();
        if Self::slot(i) / ARITY >= self.keys.len() {
            self.keys.push(KeyLine::default());
        }
        self.events.push(event);
        self.sift_up(i, key, event);
    }

    /// Moves the hole at `i` up until `key` fits there, and puts the event in it.
    #[inline(always)]
    fn sift_up(&mut self, mut i: usize, key: u128, event: Event) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let pk = self.key(parent);
            if key >= pk {
                break;
            }
            // SAFETY: parent < i < len.
            let pe = unsafe { *self.events.get_unchecked(parent) };
            self.set(i, pk, pe);
            i = parent;
        }
        self.set(i, key, event);
    }

    /// The minimum, leaving its slot at the root for the next `push` (see the type's note). Call `settle`
    /// before the next `take`, `pop` or `peek_time`.
    #[inline]
    pub fn take(&mut self) -> Option<(Time, Event)> {
        debug_assert!(!self.vacant_root, "take before settle");
        let event = *self.events.first()?;
        self.vacant_root = true;
        Some((Time((self.key(0) >> 64) as u64), event))
    }

    /// Removes a taken root that no `push` replaced.
    #[inline]
    pub fn settle(&mut self) {
        if std::mem::take(&mut self.vacant_root) {
            let last_event = self.events.pop().expect("a taken root");
            let n = self.events.len();
            if n > 0 {
                let last_key = self.key(n);
                self.fill_root(last_key, last_event);
            }
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let top = self.take();
        self.settle();
        top
    }

    /// Puts `key` into the vacant root of the first `len` entries by bottom-up deletion (Wegener 1993): the
    /// hole sinks to a leaf along the smallest children, picked by a two-round tournament without
    /// data-dependent branches; `key` then rises from there, which is rarely more than a level.
    #[inline(always)]
    fn fill_root(&mut self, key: u128, event: Event) {
        let n = self.events.len();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let child = if first + ARITY <= n {
                let (k0, k1, k2, k3) = (self.key(first), self.key(first + 1), self.key(first + 2), self.key(first + 3));
                let (a, ka) = if k1 < k0 { (1, k1) } else { (0, k0) };
                let (b, kb) = if k3 < k2 { (3, k3) } else { (2, k2) };
                first + if kb < ka { b } else { a }
            } else {
                (first + 1..n).fold(first, |m, j| if self.key(j) < self.key(m) { j } else { m })
            };
            // SAFETY: child < n.
            let ce = unsafe { *self.events.get_unchecked(child) };
            self.set(i, self.key(child), ce);
            i = child;
        }
        self.sift_up(i, key, event);
    }

    pub fn peek_time(&self) -> Option<Time> {
        debug_assert!(!self.vacant_root, "peek before settle");
        (!self.events.is_empty()).then(|| Time((self.key(0) >> 64) as u64))
    }
    pub fn len(&self) -> usize {
        self.events.len() - self.vacant_root as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
    fn taking_the_root_then_pushing_pops_like_a_sort() {
        // As the event loop uses it: take the minimum, let the "handler" push 0, 1 or 2 events at or after it
        // (some at the same instant in an earlier phase, which then come first), settle; a sorted list is the
        // second implementation.
        let mut q = EventQueue::default();
        let mut expect: Vec<(u64, u8, u64, Event)> = vec![];
        let mut seq = 0u64;
        let mut push = |q: &mut EventQueue, expect: &mut Vec<_>, t: u64, ev: Event| {
            q.push(Time(t), ev);
            seq += 1;
            expect.push((t, ev.phase(), seq, ev));
            expect.sort_by_key(|e: &(u64, u8, u64, Event)| std::cmp::Reverse((e.0, e.1, e.2)));
        };
        for port in 0..300 {
            push(&mut q, &mut expect, port as u64 * 7 % 1000, Event::Arrive { port });
        }
        let (mut x, mut taken) = (7u64, 0);
        for step in 0..30_000u32 {
            let Some((t, ev)) = q.take() else { break };
            taken += 1;
            let want = expect.pop().unwrap();
            assert_eq!((t, ev), (Time(want.0), want.3));
            assert_eq!(q.len(), expect.len());
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let pushes = if expect.len() < 100 { 2 } else { (x >> 62) % 3 };
            for k in 0..pushes {
                let ev =
                    if (x >> (10 + k)) & 1 == 0 { Event::TxDone { port: step } } else { Event::Arrive { port: step } };
                push(&mut q, &mut expect, t.0 + (x >> (20 + 8 * k)) % 2000, ev);
            }
            q.settle();
        }
        assert!(taken > 10_000, "the queue ran dry after {taken} events");
        expect.reverse();
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, expect.iter().map(|e| (Time(e.0), e.3)).collect::<Vec<_>>());
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
