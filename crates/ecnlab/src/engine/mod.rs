//! The event queue ordered by `(time, phase, sequence)` and seeded random-number streams.

mod heap;
pub mod rng;
pub use rng::Rng;

use crate::packet::PacketId;
use crate::units::Time;
use std::hint::select_unpredictable;

/// What happens at an instant. Small and `Copy`: events name the component, state lives in `Sim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A port finished serializing the packet at its head.
    TxDone { port: u32 },
    /// Packet `id` reaches the far end of a port's outgoing link, where it goes on by port `hop` (a switch's
    /// egress, from `Sim::next_hop`; `u32::MAX` at a host). A link's arrivals form a line
    /// (`EventQueue::push_in_line`): only its first is in the order.
    Arrive { port: u32, id: PacketId, hop: u32 },
    /// A flow's transport timer (RTO, delayed ACK, pacing) may be due.
    FlowTimer { flow: u32 },
    /// Delayed packets (RTT variation) of a host's link reach its far end.
    LateArrive { port: u32 },
    /// A host's NIC backlog fell below `tsq_limit`: blocked flows may send again.
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

    /// The line an event belongs to when pushed with `push_in_line`: a link's arrivals, by port.
    fn line(self) -> Option<u32> {
        match self {
            Event::Arrive { port, .. } => Some(port),
            _ => None,
        }
    }
}

/// A heap key's low 64 bits: the phase in the top 3, the insertion sequence below.
const SEQ_BITS: u32 = 61;

/// A wheel bucket spans 2^13 ps = 8.2 ns. Wider buckets than session 13's 4.1 ns halve the bucket arrays to
/// 24 KiB: callgrind at 1 000 flows counts 5 % fewer L1 data misses for 0.1 % more instructions (wall time:
/// docs/PERFORMANCE-LOG.md, session 24).
const BUCKET_SHIFT: u32 = 13;
/// 2 048 buckets: the wheel holds events up to 16.8 µs ahead, past a 10 µs link plus a full-size packet at
/// 10 Gb/s, so in datacenter networks packets in flight and transmit ends rarely reach the heap.
const WHEEL: usize = 1 << 11;
const WORDS: usize = WHEEL / 64;
const NIL: u32 = u32::MAX;

/// `(time, phase)` in one word, `time << 3 | phase`: how the wheel orders (its ties break by position) and
/// how the heap's minimum is compared with the wheel's. Times from 2^61 ps (26 days, past any run's end:
/// `duration` is at most 10^6 s) saturate, so such events sort last and are never handed out.
#[inline(always)]
fn instant(time: u64, phase: u8) -> u64 {
    if time >> 61 != 0 {
        return u64::MAX;
    }
    time << 3 | phase as u64
}

/// An event, on the wheel (linked to the next one in its bucket), in the heap, or waiting in a line.
#[derive(Clone, Copy)]
struct Node {
    /// `instant(time, phase)`.
    key: u64,
    event: Event,
    /// The next node in its bucket, or in the free list.
    next: u32,
    /// The next event of its line (`push_in_line`), or `NIL`.
    after: u32,
}

const _: () = assert!(std::mem::size_of::<Node>() == 32, "a node stays 32 bytes: two to a cache line");

/// Events ordered by `(time, phase, insertion)`: ties at one instant break by phase, then by insertion order,
/// and a run is reproducible bit for bit.
///
/// Two stores, one order. Most events land a few microseconds ahead (a packet reaching the end of its link, a
/// transmission ending), so they go to a timing wheel (Varghese and Lauck 1987): a circle of buckets of
/// `2^BUCKET_SHIFT` ps covering the next `WHEEL` buckets from the latest event handed out, each bucket a list
/// sorted by `instant`, a new node going after those with its own (so equal instants keep insertion order),
/// with a two-level bitmap of the buckets in use and each bucket's first `instant` in an array of its own.
/// Pushing and popping there cost a few instructions whatever the number of events. Events further ahead
/// (timers, workload arrivals, sampling) go to a heap keyed by `(time, phase, sequence)` packed in a `u128`,
/// and `pop` hands out the smaller of the two minima.
///
/// At one instant, the heap's events come before the wheel's: an event goes to the heap only while its time
/// lies beyond the wheel's range from the cursor, and the cursor never goes back, so every event the heap
/// holds for an instant was pushed before any the wheel holds for it.
///
/// Lines (DESIGN: "a link ... keeps one pending event at a time"): the arrivals of one link are handed out in
/// the order they were pushed, and only the first is in the order; the next joins it when the one before is
/// handed out, as if pushed then. A line is a chain of nodes, so an arrival's record is written once, when
/// the packet enters the link, and read once, when it reaches the far end, with no pipe beside it.
pub struct EventQueue {
    far: heap::Heap,
    /// `instant` of the heap's minimum, `u64::MAX` if it is empty: kept here, beside the wheel's fields,
    /// because every pop compares with it and the heap's own lines are rarely touched otherwise.
    far_min: u64,
    /// Per bucket: its first node, or `NIL`.
    heads: Box<[u32; WHEEL]>,
    /// Per bucket: its first node's `instant`, `u64::MAX` when it is empty. Kept beside `heads` so that
    /// finding the minimum and most pushes read no node: the entries near the cursor are read in turn.
    head_keys: Box<[u64; WHEEL]>,
    /// Bit b of word w: bucket 64 w + b holds events.
    occupied: [u64; WORDS],
    /// Bit w: `occupied[w] != 0`.
    summary: u64,
    nodes: Vec<Node>,
    /// Unused nodes, linked through `next`.
    free: u32,
    /// Events on the wheel.
    near: usize,
    /// The absolute bucket of the latest event handed out: every event on the wheel lies in the `WHEEL`
    /// buckets from it.
    cursor: u64,
    /// Pushes to the heap, its keys' tie-break.
    seq: u64,
    /// Per line: its last node, `NIL` when it is empty.
    tails: Vec<u32>,
    /// `instant` of the queue's minimum (`u64::MAX` when empty) and its bucket (`NIL` when it is the heap's),
    /// kept up to date by every push and pop: the loop reads the next event before it handles the current
    /// one.
    min_key: u64,
    min_bucket: u32,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            far: heap::Heap::default(),
            far_min: u64::MAX,
            heads: Box::new([NIL; WHEEL]),
            head_keys: Box::new([u64::MAX; WHEEL]),
            occupied: [0; WORDS],
            summary: 0,
            nodes: Vec::new(),
            free: NIL,
            near: 0,
            cursor: 0,
            seq: 0,
            tails: Vec::new(),
            min_key: u64::MAX,
            min_bucket: NIL,
        }
    }
}

impl EventQueue {
    #[inline(always)]
    pub fn push(&mut self, time: Time, event: Event) {
        let key = instant(time.0, event.phase());
        let id = self.alloc(key, event);
        self.enter(id, time.0, key);
    }

    /// Pushes an event of its line (`Event::line`; an event of none is pushed as by `push`): it is handed out
    /// after every event pushed to the line before it, and joins the order only then (its tie-break is that
    /// moment's, not this one's). Times along a line must not decrease (a link is a FIFO).
    #[inline(always)]
    pub fn push_in_line(&mut self, time: Time, event: Event) {
        let Some(line) = event.line() else {
            return self.push(time, event);
        };
        // A successor enters the order at the time its key holds, which saturates from 2^61 ps (`instant`):
        // such an arrival (a link slower than any run is long) then sorts last, and is never handed out.
        let key = instant(time.0, event.phase());
        let id = self.alloc(key, event);
        if line as usize >= self.tails.len() {
            self.tails.resize(line as usize + 1, NIL);
        }
        match std::mem::replace(&mut self.tails[line as usize], id) {
            NIL => self.enter(id, time.0, key),
            tail => {
                debug_assert!(self.node(tail).key <= key, "a line's times do not decrease");
                self.node(tail).after = id;
            }
        }
    }

    /// A node for the event, from the free list when it has one.
    #[inline(always)]
    fn alloc(&mut self, key: u64, event: Event) -> u32 {
        let node = Node { key, event, next: NIL, after: NIL };
        if self.free != NIL {
            let id = self.free;
            self.free = self.node(id).next;
            *self.node(id) = node;
            id
        } else {
            debug_assert!(self.nodes.len() < NIL as usize);
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        }
    }

    /// Puts node `id` (at `time`, key `key`) into the order: on the wheel or in the heap.
    #[inline(always)]
    fn enter(&mut self, id: u32, time: u64, key: u64) {
        // An event before the cursor cannot happen in a simulation; if it did, the heap would still order it.
        let ahead = (time >> BUCKET_SHIFT).wrapping_sub(self.cursor);
        // A new wheel event may tie the heap's minimum, which stays first; a new heap event never ties the
        // wheel's (see the type's note); a tie in the same store goes after the minimum. So `<` keeps it.
        let bucket = if ahead < WHEEL as u64 {
            let bucket = (time >> BUCKET_SHIFT) as usize % WHEEL;
            self.insert_near(bucket, id, key);
            bucket as u32
        } else {
            self.seq += 1;
            debug_assert!(self.seq < 1 << SEQ_BITS);
            let phase = (key & 7) as u128;
            self.far.push((time as u128) << 64 | (phase << SEQ_BITS | self.seq as u128), id);
            self.far_min = self.far_min.min(key);
            NIL
        };
        if key < self.min_key {
            (self.min_key, self.min_bucket) = (key, bucket);
        }
    }

    /// The event `pop_until` hands out next unless an earlier one is pushed first, if it is on the wheel
    /// (the heap's are timers and generators, rare and not worth a look ahead).
    #[inline(always)]
    pub fn peek_near(&self) -> Option<Event> {
        let head = *self.heads.get(self.min_bucket as usize)?;
        // SAFETY: the minimum's bucket is in use, so it heads a list of existing nodes.
        let node = unsafe { self.nodes.get_unchecked(head as usize) };
        if let Some(after) = self.nodes.get(node.after as usize) {
            // Its line's next event, which joins the order as this one leaves.
            crate::packet::prefetch(after);
        }
        Some(node.event)
    }

    /// The node `id`: one that a bucket list, the heap, a line or the free list links to, so it exists.
    #[inline(always)]
    fn node(&mut self, id: u32) -> &mut Node {
        debug_assert!((id as usize) < self.nodes.len());
        // SAFETY: ids in `heads`, `far`, `tails`, `free`, `next` and `after` index `nodes`, which never shrinks.
        unsafe { self.nodes.get_unchecked_mut(id as usize) }
    }

    /// Links node `id` into its bucket's list after every key up to its own.
    #[inline(always)]
    fn insert_near(&mut self, bucket: usize, id: u32, key: u64) {
        if key < self.head_keys[bucket] {
            // Before the first (or the bucket is empty, its first `NIL`).
            self.node(id).next = self.heads[bucket];
            self.heads[bucket] = id;
            self.head_keys[bucket] = key;
        } else {
            let mut prev = self.heads[bucket];
            let mut at = self.node(prev).next;
            while at != NIL && self.node(at).key <= key {
                prev = at;
                at = self.node(at).next;
            }
            self.node(id).next = at;
            self.node(prev).next = id;
        }
        self.occupied[bucket / 64] |= 1 << (bucket % 64);
        self.summary |= 1 << (bucket / 64);
        self.near += 1;
    }

    /// The first bucket in use, going round from the cursor's. Needs `near > 0`.
    #[inline(always)]
    fn first_near(&self) -> usize {
        let start = self.cursor as usize % WHEEL;
        let word = start / 64;
        let here = self.occupied[word] & (!0 << (start % 64));
        // Else a later word, else round past the top (which may come back to the low bits of `word`). Both
        // answers are computed and one is selected without a branch: whether the next event lies in the
        // cursor's word is a coin toss to the branch predictor (callgrind's model missed it on 27 % of pops;
        // with this pop's other selects, 2.4 % less wall time at 10 000 flows). `summary` is not 0, so
        // `w` < 64 (`% WORDS` only spares a bounds check).
        let later = self.summary & (!1 << word);
        let w = select_unpredictable(later != 0, later, self.summary).trailing_zeros() as usize;
        let elsewhere = w * 64 + self.occupied[w % WORDS].trailing_zeros() as usize;
        select_unpredictable(here != 0, word * 64 + here.trailing_zeros() as usize, elsewhere)
    }

    /// The minimum's `instant` and bucket, searched for: `(u64::MAX, NIL)` if the queue is empty, bucket `NIL`
    /// if the minimum is the heap's (which wins a tie).
    #[inline(always)]
    fn find_min(&self) -> (u64, u32) {
        if self.near > 0 {
            let bucket = self.first_near();
            let key = self.head_keys[bucket];
            if key < self.far_min {
                return (key, bucket as u32);
            }
        }
        (self.far_min, NIL)
    }

    /// Removes and returns the earliest event if it is due by `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, Event)> {
        if self.min_key == u64::MAX {
            return None;
        }
        let time = Time(self.min_key >> 3);
        if time > limit {
            return None;
        }
        let id = match self.min_bucket {
            NIL => {
                let (_, id) = self.far.pop().expect("a minimum");
                self.far_min =
                    self.far.min_key().map_or(u64::MAX, |k| instant((k >> 64) as u64, (k as u64 >> SEQ_BITS) as u8));
                id
            }
            bucket => {
                let bucket = bucket as usize;
                let id = self.heads[bucket];
                let next = self.node(id).next;
                self.heads[bucket] = next;
                // The next node's instant, read from this one when there is none (no branch).
                let key = self.node(select_unpredictable(next == NIL, id, next)).key;
                self.head_keys[bucket] = select_unpredictable(next == NIL, u64::MAX, key);
                // The bucket's bit, then its word's, clear when they empty: without branches, which
                // callgrind's model missed on 30 % of pops.
                let word = bucket / 64;
                self.occupied[word] &= !(((next == NIL) as u64) << (bucket % 64));
                self.summary &= !(((self.occupied[word] == 0) as u64) << word);
                self.near -= 1;
                id
            }
        };
        let node = *self.node(id);
        self.node(id).next = self.free;
        self.free = id;
        // Never backwards (an event pushed before the cursor, from the heap): the wheel's range must keep
        // covering every event on it.
        self.cursor = self.cursor.max(time.0 >> BUCKET_SHIFT);
        (self.min_key, self.min_bucket) = self.find_min();
        if node.after != NIL {
            // Its line's next event joins the order now.
            let key = self.node(node.after).key;
            self.enter(node.after, key >> 3, key);
        } else if let Some(line) = node.event.line() {
            if self.tails.get(line as usize) == Some(&id) {
                self.tails[line as usize] = NIL;
            }
        }
        Some((time, node.event))
    }
}

/// What the tests read besides what the simulation uses (`push`, `push_in_line`, `peek_near`, `pop_until`).
#[cfg(test)]
impl EventQueue {
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.pop_until(Time::MAX)
    }
    pub fn peek_time(&self) -> Option<Time> {
        assert_eq!((self.min_key, self.min_bucket), self.find_min(), "the kept minimum is the minimum");
        (self.min_key != u64::MAX).then_some(Time(self.min_key >> 3))
    }
    /// Events in the order (a line counts its head only).
    pub fn len(&self) -> usize {
        self.near + self.far.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

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
                1 => Event::Arrive { port: seq as u32, id: PacketId(0), hop: 0 },
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
        let (mut now, mut x, mut seq, mut peeked) = (0u64, 99u64, 0u64, 0);
        for step in 0..40_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let span = [100, 1 << 17, 1 << 24, 1 << 29, 1 << 40][(x >> 60) as usize % 5];
            let t = now + (x >> 20) % span;
            let ev = if x & 1 == 0 {
                Event::Arrive { port: step as u32, id: PacketId(0), hop: 0 }
            } else {
                Event::TxDone { port: step as u32 }
            };
            q.push(Time(t), ev);
            seq += 1;
            expect.push((t, ev.phase(), seq, ev));
            if step % 3 != 0 {
                expect.sort_by_key(|e| std::cmp::Reverse((e.0, e.1, e.2)));
                let want = expect.pop().unwrap();
                assert_eq!(q.peek_time(), Some(Time(want.0)));
                if let Some(next) = q.peek_near() {
                    assert_eq!(next, want.3, "a look ahead sees the event popped next");
                    peeked += 1;
                }
                assert_eq!(q.pop(), Some((Time(want.0), want.3)));
                now = want.0;
            }
            assert_eq!(q.len(), expect.len());
        }
        expect.sort_by_key(|e| (e.0, e.1, e.2));
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, expect.iter().map(|e| (Time(e.0), e.3)).collect::<Vec<_>>());
        assert!(q.is_empty());
        assert!(peeked > 10_000, "the wheel's minima were looked at: {peeked}");
    }

    /// The old links, the second implementation for lines: each line a FIFO pipe whose head alone is in a
    /// list sorted by (time, phase, sequence), the next pushed to the list as the head leaves, with that
    /// moment's sequence number.
    #[derive(Default)]
    struct PipeModel {
        sorted: Vec<(u64, u8, u64, Event)>,
        pipes: Vec<VecDeque<(u64, Event)>>,
        seq: u64,
    }

    impl PipeModel {
        fn enter(&mut self, t: u64, ev: Event) {
            self.seq += 1;
            self.sorted.push((t, ev.phase(), self.seq, ev));
            self.sorted.sort_by_key(|e| std::cmp::Reverse((e.0, e.1, e.2)));
        }
        fn push_in_line(&mut self, line: usize, t: u64, ev: Event) {
            self.pipes[line].push_back((t, ev));
            if self.pipes[line].len() == 1 {
                self.enter(t, ev);
            }
        }
        fn pop(&mut self) -> Option<(Time, Event)> {
            let (t, _, _, ev) = self.sorted.pop()?;
            if let Some(pipe) = ev.line().and_then(|l| self.pipes.get_mut(l as usize)) {
                pipe.pop_front();
                if let Some(&(next_t, next)) = pipe.front() {
                    self.enter(next_t, next);
                }
            }
            Some((Time(t), ev))
        }
    }

    #[test]
    fn lines_pop_like_pipes_whose_heads_join_a_sort() {
        // Arrivals on 6 lines, whose times often tie across lines, mixed with plain pushes (arrivals of ports
        // 100+ among them, in no line), some beyond the wheel's horizon.
        let mut q = EventQueue::default();
        let mut model = PipeModel { pipes: vec![VecDeque::new(); 6], ..Default::default() };
        let mut last = [0u64; 6];
        let (mut now, mut x, mut popped) = (0u64, 5u64, 0);
        let horizon = (WHEEL as u64) << BUCKET_SHIFT;
        let check_pop = |q: &mut EventQueue, want: (Time, Event)| {
            assert_eq!(q.peek_time(), Some(want.0), "the kept minimum is the model's");
            if let Some(next) = q.peek_near() {
                assert_eq!(next, want.1, "a look ahead sees the event popped next");
            }
            assert_eq!(q.pop(), Some(want));
        };
        for step in 0..40_000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if x >> 62 != 0 || model.sorted.is_empty() {
                let line = (x >> 20) as usize % 6;
                if (x >> 30) % 8 == 0 {
                    let t = now + (x >> 33) % (horizon + horizon / 2);
                    let ev = match (x >> 31) % 3 {
                        0 => Event::TxDone { port: step },
                        1 => Event::Arrive { port: 100 + step, id: PacketId(step), hop: 0 },
                        _ => Event::Sample,
                    };
                    q.push(Time(t), ev);
                    model.enter(t, ev);
                } else {
                    // Steps of 0 to 3 ticks of 1 000 ps after the line's last, or a jump past the horizon.
                    let gap = if (x >> 35) % 50 == 0 { horizon } else { (x >> 40) % 4 * 1000 };
                    let t = last[line].max(now) + gap;
                    last[line] = t;
                    let ev = Event::Arrive { port: line as u32, id: PacketId(step), hop: 0 };
                    q.push_in_line(Time(t), ev);
                    model.push_in_line(line, t, ev);
                }
            } else {
                let want = model.pop().unwrap();
                check_pop(&mut q, want);
                popped += 1;
                now = want.0 .0;
            }
        }
        assert!(popped > 5_000, "only {popped} pops");
        while let Some(want) = model.pop() {
            check_pop(&mut q, want);
        }
        assert_eq!(q.pop(), None);
        assert!(model.pipes.iter().all(|p| p.is_empty()) && q.tails.iter().all(|&t| t == NIL));
    }

    #[test]
    fn handling_events_that_push_more_pops_like_a_sort() {
        // As the event loop uses it: pop the minimum, let the "handler" push 0, 1 or 2 events at or after it
        // (some at the same instant in an earlier phase, which then come first), mostly within the wheel's
        // horizon and some beyond it; a sorted list is the second implementation.
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
            push(&mut q, &mut expect, port as u64 * 7 % 1000, Event::Arrive { port, id: PacketId(port), hop: 0 });
        }
        let horizon = (WHEEL as u64) << BUCKET_SHIFT;
        let (mut x, mut popped) = (7u64, 0);
        for step in 0..30_000u32 {
            let Some((t, ev)) = q.pop() else { break };
            popped += 1;
            let want = expect.pop().unwrap();
            assert_eq!((t, ev), (Time(want.0), want.3));
            assert_eq!(q.len(), expect.len());
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let pushes = if expect.len() < 100 { 2 } else { (x >> 62) % 3 };
            for k in 0..pushes {
                let ev = if (x >> (10 + k)) & 1 == 0 {
                    Event::TxDone { port: step }
                } else {
                    Event::Arrive { port: step, id: PacketId(0), hop: 0 }
                };
                // Offsets up to 1.25 horizons, so events cross from the heap's range into the wheel's.
                let offset = (x >> (20 + 8 * k)) % (horizon + horizon / 4);
                push(&mut q, &mut expect, t.0 + offset, ev);
            }
        }
        assert!(popped > 10_000, "the queue ran dry after {popped} events");
        expect.reverse();
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, expect.iter().map(|e| (Time(e.0), e.3)).collect::<Vec<_>>());
    }

    #[test]
    fn events_pushed_before_the_last_pop_still_come_in_order() {
        // Not what a simulation does, but the queue's contract: an event earlier than the last one handed out
        // goes to the heap, and popping it must not turn the wheel back over events near its far edge.
        let mut q = EventQueue::default();
        let horizon = (WHEEL as u64) << BUCKET_SHIFT;
        q.push(Time(horizon), Event::Sample);
        assert_eq!(q.pop(), Some((Time(horizon), Event::Sample)));
        let edge = 2 * horizon - 1; // the last instant the wheel covers from here
        q.push(Time(edge), Event::TxDone { port: 2 });
        q.push(Time(horizon + 5), Event::TxDone { port: 1 });
        q.push(Time(3), Event::TxDone { port: 0 });
        q.push(Time(horizon / 2), Event::TxDone { port: 3 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(t, _)| t.0).collect();
        assert_eq!(order, vec![3, horizon / 2, horizon + 5, edge]);
    }

    #[test]
    fn ties_at_one_instant_across_wheel_and_heap_break_by_phase_then_insertion() {
        let mut q = EventQueue::default();
        let horizon = (WHEEL as u64) << BUCKET_SHIFT;
        let t = horizon + horizon / 4;
        q.push(Time(t), Event::Arrive { port: 1, id: PacketId(1), hop: 0 }); // beyond the horizon: the heap
        q.push(Time(horizon / 2), Event::Sample);
        assert_eq!(q.pop(), Some((Time(horizon / 2), Event::Sample)));
        // Now t is within the horizon: these go to the wheel.
        q.push(Time(t), Event::Sample);
        q.push(Time(t), Event::Arrive { port: 2, id: PacketId(2), hop: 0 });
        q.push(Time(t), Event::TxDone { port: 3 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(
            order,
            vec![
                Event::TxDone { port: 3 },
                Event::Arrive { port: 1, id: PacketId(1), hop: 0 },
                Event::Arrive { port: 2, id: PacketId(2), hop: 0 },
                Event::Sample
            ]
        );
    }

    #[test]
    fn the_scan_wraps_round_to_the_cursors_own_word() {
        // The cursor at bucket 10; events one turn later at buckets 4 096 + 3 and + 5 sit in slots 3 and 5,
        // below the cursor's slot in the same bitmap word.
        let mut q = EventQueue::default();
        let bucket = |b: u64| Time(b << BUCKET_SHIFT);
        q.push(bucket(10), Event::Sample);
        assert_eq!(q.pop(), Some((bucket(10), Event::Sample)));
        q.push(bucket(WHEEL as u64 + 5), Event::TxDone { port: 5 });
        q.push(bucket(WHEEL as u64 + 3), Event::TxDone { port: 3 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(t, _)| t).collect();
        assert_eq!(order, vec![bucket(WHEEL as u64 + 3), bucket(WHEEL as u64 + 5)]);
    }

    #[test]
    fn pop_until_leaves_later_events_in_place() {
        let mut q = EventQueue::default();
        q.push(Time(10), Event::Arrive { port: 1, id: PacketId(0), hop: 0 });
        q.push(Time(1 << 40), Event::Sample);
        assert_eq!(q.pop_until(Time(5)), None);
        assert_eq!(q.pop_until(Time(10)), Some((Time(10), Event::Arrive { port: 1, id: PacketId(0), hop: 0 })));
        assert_eq!(q.pop_until(Time(1 << 39)), None);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop(), Some((Time(1 << 40), Event::Sample)));
        assert!(q.is_empty());
    }

    #[test]
    fn an_event_pushed_after_a_peek_at_a_later_one_comes_first() {
        let mut q = EventQueue::default();
        q.push(Time(1 << 30), Event::Sample);
        assert_eq!(q.peek_time(), Some(Time(1 << 30)));
        q.push(Time(5), Event::Arrive { port: 1, id: PacketId(0), hop: 0 });
        q.push(Time(1 << 30), Event::TxDone { port: 2 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (Time(5), Event::Arrive { port: 1, id: PacketId(0), hop: 0 }),
                (Time(1 << 30), Event::TxDone { port: 2 }),
                (Time(1 << 30), Event::Sample)
            ]
        );
    }

    #[test]
    fn pops_in_time_then_phase_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Time(5), Event::Arrive { port: 1, id: PacketId(0), hop: 0 });
        q.push(Time(5), Event::TxDone { port: 9 });
        q.push(Time(3), Event::Sample);
        q.push(Time(5), Event::Arrive { port: 2, id: PacketId(0), hop: 0 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (Time(3), Event::Sample),
                (Time(5), Event::TxDone { port: 9 }),
                (Time(5), Event::Arrive { port: 1, id: PacketId(0), hop: 0 }),
                (Time(5), Event::Arrive { port: 2, id: PacketId(0), hop: 0 }),
            ]
        );
    }
}
