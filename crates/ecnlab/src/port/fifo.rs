//! Queue FIFOs as chains of small chunks drawn from one pool that every port shares, last freed first reused.
//!
//! A ring per queue (a `VecDeque`) keeps the capacity of its longest backlog and a standing queue walks all
//! of it, so a busy network's rings span megabytes of lines that are each touched once per lap. Here a queue
//! holds only the chunks its waiting packets fill (five to a chunk of two lines), and a push takes the chunk
//! that the network freed last, still in cache: what the FIFOs occupy follows what waits, not what once did.

use crate::packet::PacketId;
use crate::units::Time;

/// A packet in a queue's FIFO with what its dequeue needs (its size for the scheduler and the transmitter,
/// its enqueue time for the sojourn, where it goes next), so serving it reads the packet itself only when a
/// marker marks it: a packet that waited is usually no longer in cache.
#[derive(Clone, Copy, Debug)]
pub struct Waiting {
    pub id: PacketId,
    pub wire: u32,
    pub since: Time,
    pub hop: u32,
}

/// Entries per chunk: five 24-byte entries after the link fill two cache lines.
const PER_CHUNK: u8 = 5;
/// No chunk: the end of a chain, or of the free list.
const NIL: u32 = u32::MAX;

/// The link first, so that taking a chunk from the free list and writing its first entry touch one line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Chunk {
    /// The next chunk of its queue's chain, or of the free list.
    next: u32,
    entries: [Waiting; PER_CHUNK as usize],
}

const _: () = assert!(std::mem::size_of::<Chunk>() == 128, "a chunk is two cache lines");

/// The chunks of every queue of a simulation. It grows to the run's peak of waiting packets and never
/// allocates after that.
#[derive(Default)]
pub struct FifoPool {
    chunks: Vec<Chunk>,
    /// Unused chunks, linked through `next`, the last freed first.
    free: u32,
}

impl FifoPool {
    pub fn new() -> FifoPool {
        FifoPool { chunks: Vec::new(), free: NIL }
    }

    fn alloc(&mut self) -> u32 {
        if self.free != NIL {
            let c = self.free;
            self.free = std::mem::replace(&mut self.chunk(c).next, NIL);
            c
        } else {
            assert!(self.chunks.len() < NIL as usize, "more than 2^32 FIFO chunks");
            let unused = Waiting { id: PacketId(0), wire: 0, since: Time::ZERO, hop: 0 };
            self.chunks.push(Chunk { next: NIL, entries: [unused; PER_CHUNK as usize] });
            (self.chunks.len() - 1) as u32
        }
    }

    fn release(&mut self, c: u32) {
        let free = self.free;
        self.chunk(c).next = free;
        self.free = c;
    }

    #[inline(always)]
    fn chunk(&mut self, c: u32) -> &mut Chunk {
        &mut self.chunks[c as usize]
    }
}

/// One queue's FIFO: where its chain starts and ends in the pool.
#[derive(Clone, Copy, Debug)]
pub struct Fifo {
    head: u32,
    tail: u32,
    len: u32,
    /// The oldest entry's slot in the head chunk; the next free slot in the tail chunk.
    head_slot: u8,
    tail_slot: u8,
}

impl Default for Fifo {
    fn default() -> Self {
        Fifo { head: NIL, tail: NIL, len: 0, head_slot: 0, tail_slot: 0 }
    }
}

impl Fifo {
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub fn push_back(&mut self, pool: &mut FifoPool, w: Waiting) {
        if self.len == 0 {
            let c = pool.alloc();
            (self.head, self.tail, self.head_slot, self.tail_slot) = (c, c, 0, 0);
        } else if self.tail_slot == PER_CHUNK {
            let c = pool.alloc();
            pool.chunk(self.tail).next = c;
            (self.tail, self.tail_slot) = (c, 0);
        }
        pool.chunk(self.tail).entries[self.tail_slot as usize] = w;
        self.tail_slot += 1;
        self.len += 1;
    }

    /// The oldest entry, if any.
    #[inline(always)]
    pub fn front<'a>(&self, pool: &'a FifoPool) -> Option<&'a Waiting> {
        if self.len == 0 {
            return None;
        }
        Some(&pool.chunks[self.head as usize].entries[self.head_slot as usize])
    }

    /// Removes the oldest entry; a chunk it leaves empty goes back to the pool. Past the middle of a chunk,
    /// asks the CPU to load the next one, read by a later dequeue.
    #[inline(always)]
    pub fn pop_front(&mut self, pool: &mut FifoPool) -> Option<Waiting> {
        if self.len == 0 {
            return None;
        }
        let head = self.head;
        let chunk = pool.chunk(head);
        let w = chunk.entries[self.head_slot as usize];
        let next = chunk.next;
        self.head_slot += 1;
        self.len -= 1;
        if self.len == 0 {
            pool.release(head);
            *self = Fifo::default();
        } else if self.head_slot == PER_CHUNK {
            pool.release(head);
            (self.head, self.head_slot) = (next, 0);
        } else if self.head_slot == PER_CHUNK / 2 && next != NIL {
            crate::packet::prefetch(&pool.chunks[next as usize]);
        }
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn entry(i: u32) -> Waiting {
        Waiting { id: PacketId(i), wire: 64 + i, since: Time(i as u64), hop: i }
    }

    #[test]
    fn queues_interleaved_in_one_pool_behave_like_separate_deques() {
        // A second implementation: one VecDeque per queue, driven by the same pseudo-random pushes and pops.
        let mut pool = FifoPool::new();
        let mut fifos = [Fifo::default(); 4];
        let mut model: [VecDeque<u32>; 4] = Default::default();
        let mut x = 99u64;
        for i in 0..20_000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let q = (x >> 40) as usize % 4;
            // Pushes slightly more often than pops, so queues grow past several chunks and also empty.
            if (x >> 20) % 9 < 5 {
                fifos[q].push_back(&mut pool, entry(i));
                model[q].push_back(i);
            } else {
                let got = fifos[q].pop_front(&mut pool).map(|w| (w.id.0, w.wire, w.since, w.hop));
                let want = model[q].pop_front().map(|i| (i, 64 + i, Time(i as u64), i));
                assert_eq!(got, want);
            }
            assert_eq!(fifos[q].len(), model[q].len());
            assert_eq!(fifos[q].front(&pool).map(|w| w.id.0), model[q].front().copied());
        }
        assert!(model.iter().any(|m| m.len() > 3 * PER_CHUNK as usize), "the case spans several chunks");
    }

    #[test]
    fn chunks_come_back_and_are_reused() {
        // Filling four chunks and a bit takes five; emptying returns them; filling again takes no new one.
        let (mut pool, mut f) = (FifoPool::new(), Fifo::default());
        for round in 0..3 {
            for i in 0..4 * PER_CHUNK as u32 + 1 {
                f.push_back(&mut pool, entry(i));
            }
            assert_eq!(pool.chunks.len(), 5, "round {round}");
            while f.pop_front(&mut pool).is_some() {}
            assert!(f.is_empty() && f.front(&pool).is_none());
        }
    }
}
