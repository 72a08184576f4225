//! Packets: a small `Copy` header record living in a pool, passed around by `PacketId`.

use crate::units::{Bytes, Time};

/// The two ECN bits of the IP header (RFC 3168 §5); ECT(0) and ECT(1) are treated alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect,
    Ce,
}

impl Ecn {
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    Data,
    /// A pure acknowledgement.
    Ack,
    Syn,
    SynAck,
    /// A one-packet application request from the receiver that releases the sender's next block (incast).
    Request,
    ProbeRequest,
    ProbeReply,
    /// RoCE: a negative acknowledgement (go-back-N from `ack`).
    Nack,
    /// RoCE: a DCQCN congestion notification packet.
    Cnp,
}

/// Bytes of IP + TCP headers: MTU 1500 on the wire carries MSS 1460.
pub const HEADER_BYTES: u32 = 40;

/// Up to three SACK blocks, `[start, end)` byte ranges above the cumulative ACK (RFC 2018 §3). Unused slots
/// are empty ranges, so the record carries no count. An ACK's blocks travel beside its `Packet`, in the
/// pool's side table (`PacketPool::alloc_with_sack`), so the packet itself stays one cache line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Sack {
    blocks: [(u64, u64); 3],
}

impl Sack {
    /// No blocks: what every packet but an ACK after a loss carries.
    pub const NONE: Sack = Sack { blocks: [(0, 0); 3] };

    /// At most three non-empty blocks, in the order given.
    pub fn from_blocks(blocks: &[(u64, u64)]) -> Sack {
        let mut s = Sack::default();
        for &b in blocks {
            assert!(s.push(b), "a SACK option holds at most three blocks");
        }
        s
    }

    /// Appends a non-empty block; false when all three slots are taken.
    pub fn push(&mut self, block: (u64, u64)) -> bool {
        debug_assert!(block.0 < block.1, "empty SACK block");
        let n = self.len();
        if n == self.blocks.len() {
            return false;
        }
        self.blocks[n] = block;
        true
    }

    pub fn len(&self) -> usize {
        self.blocks.iter().take_while(|b| b.0 < b.1).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.blocks.iter().copied().take_while(|b| b.0 < b.1)
    }
}

/// `repr(C)`, 64 bytes in one aligned cache line: what switches read and write (flow and destination for
/// ECMP, size, ingress link, class, ECN) is the first 24 bytes; what only hosts read follows. (A queue keeps
/// a packet's enqueue time in its FIFO entry, beside its size; an ACK's SACK blocks wait in the pool's side
/// table.)
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
pub struct Packet {
    pub flow: u32,
    pub dst: u32,
    /// Size on the wire (headers included).
    pub wire: u32,
    /// The link (upstream egress port id) it last arrived on at a switch: PFC's ingress accounting (kept only
    /// when PFC is on).
    pub ingress: u32,
    /// Service class = queue index at switches.
    pub class: u8,
    pub ecn: Ecn,
    pub kind: Kind,
    pub ece: bool,
    pub cwr: bool,
    /// A retransmitted segment (RFC 3168 forbids ECT on these).
    pub retx: bool,
    /// Set by the pool: the packet's SACK blocks are in its side table (`PacketPool::take`).
    pub has_sack: bool,
    /// Payload length.
    pub len: u32,
    /// The sender's congestion window in segments when the packet left (ECN* Table 1 reads it).
    pub cwnd_segments: u32,
    /// First payload byte (data).
    pub seq: u64,
    /// Cumulative ACK: next byte expected.
    pub ack: u64,
    /// Sender timestamp and the echoed one (RFC 7323 style), for RTT samples.
    pub ts: Time,
    pub ts_echo: Time,
}

const _: () = assert!(std::mem::size_of::<Packet>() == 64, "a packet is one cache line");

impl Packet {
    pub fn wire_bytes(&self) -> Bytes {
        Bytes(self.wire as u64)
    }
}

/// Asks the CPU to start loading the cache line holding `r` (a hint: no effect on results; nothing on
/// other architectures).
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching a valid address has no architectural effect.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(r as *const T as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PacketId(pub u32);

/// Owns every packet in flight; ids are recycled through a free list so the hot path never allocates once
/// the pool has grown to the run's peak.
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    /// SACK blocks by packet id, read only where the packet's `has_sack` says so: most packets never touch it.
    sacks: Vec<Sack>,
    free: Vec<u32>,
    live: usize,
}

impl PacketPool {
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        self.alloc_with_sack(p, &Sack::NONE)
    }

    /// A packet carrying SACK blocks (an ACK); with none, the same as `alloc`.
    pub fn alloc_with_sack(&mut self, p: Packet, sack: &Sack) -> PacketId {
        self.live += 1;
        let p = Packet { has_sack: !sack.is_empty(), ..p };
        let id = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = p;
                PacketId(i)
            }
            None => {
                self.slots.push(p);
                PacketId(self.slots.len() as u32 - 1)
            }
        };
        if p.has_sack {
            let i = id.0 as usize;
            if self.sacks.len() <= i {
                self.sacks.resize(self.slots.len(), Sack::NONE);
            }
            self.sacks[i] = *sack;
        }
        id
    }

    /// Takes a packet out of the pool (its slot is free again) with the SACK blocks it carries.
    pub fn take(&mut self, id: PacketId) -> (Packet, Sack) {
        let p = self.slots[id.0 as usize];
        let sack = if p.has_sack { self.sacks[id.0 as usize] } else { Sack::NONE };
        self.free(id);
        (p, sack)
    }
    pub fn free(&mut self, id: PacketId) {
        self.live -= 1;
        self.free.push(id.0);
    }
    /// Asks the CPU to start loading a packet's header line, which is read some events later (a hint: no
    /// effect on results).
    #[inline(always)]
    pub fn prefetch(&self, id: PacketId) {
        if let Some(p) = self.slots.get(id.0 as usize) {
            prefetch(p);
        }
    }
    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id.0 as usize]
    }
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
    }
    /// Packets currently allocated (in queues, on links).
    pub fn live(&self) -> usize {
        self.live
    }
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sack_blocks_travel_with_their_packet_and_never_with_the_next_in_its_slot() {
        let mut pool = PacketPool::default();
        let blocks = Sack::from_blocks(&[(3000, 4000), (6000, 9000)]);
        let ack = pool.alloc_with_sack(Packet { kind: Kind::Ack, ack: 2000, ..Packet::default() }, &blocks);
        let data = pool.alloc(Packet { seq: 5, ..Packet::default() });
        let (copy, sack) = pool.take(ack);
        assert_eq!(sack, blocks);
        // The freed slot is reused: a packet without blocks (even one copied from the ACK) reads none.
        let reused = pool.alloc(copy);
        assert_eq!(reused, ack, "the free list hands the slot back");
        let (p, sack) = pool.take(reused);
        assert!(sack.is_empty());
        assert_eq!(p.ack, 2000);
        assert!(pool.take(data).1.is_empty());
        assert_eq!(pool.live(), 0);
    }
}
