//! The egress port mechanism: buffer admission, classification into per-class FIFOs, scheduler and marker
//! calls, transmission bookkeeping, counters and exact occupancy statistics.
//!
//! Written once; schedulers and markers are plug-ins that see a `PortState`.

pub mod fifo;
pub mod occupancy;
pub mod shared;

pub use fifo::FifoPool;
pub use occupancy::{Occupancy, OccupancyStats};
pub use shared::SharedBuffer;

use crate::mark::{AnyMarker, DropReason, Link, MarkReason, PortState, Queues, Verdict};
use crate::net::pfc::{self, PauseState, Signal};
use crate::packet::{Ecn, Packet, PacketId, PacketPool};
use crate::sched::{AnyScheduler, QueueView};
use crate::units::{Bytes, Rate, Time, PS_PER_S};
use fifo::{Fifo, Waiting};

/// What a marker's Mark verdict does to a non-ECT packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NonEct {
    /// Pass it unmarked (the default).
    #[default]
    Pass,
    /// Drop it (a WRED profile that drops non-ECT traffic at the marking threshold).
    Drop,
}

/// Counters of one queue (or of the whole port), as reported.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub arrived_pkts: u64,
    pub arrived_bytes: u64,
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub marks: [u64; MarkReason::ALL.len()],
    pub drops: [u64; DropReason::ALL.len()],
    /// Mark verdicts on non-ECT packets that passed unmarked.
    pub non_ect_passed: u64,
}

impl Counters {
    /// `self − earlier`, counter by counter.
    pub fn since(&self, earlier: &Counters) -> Counters {
        let mut d = self.clone();
        d.arrived_pkts -= earlier.arrived_pkts;
        d.arrived_bytes -= earlier.arrived_bytes;
        d.sent_pkts -= earlier.sent_pkts;
        d.sent_bytes -= earlier.sent_bytes;
        d.non_ect_passed -= earlier.non_ect_passed;
        d.marks.iter_mut().zip(earlier.marks).for_each(|(a, b)| *a -= b);
        d.drops.iter_mut().zip(earlier.drops).for_each(|(a, b)| *a -= b);
        d
    }

    pub fn total_marks(&self) -> u64 {
        self.marks.iter().sum()
    }
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// One queue's record. What every enqueue and dequeue of the queue reads and writes fills its first two
/// lines: the FIFO's ends (its entries are in the simulation's `FifoPool`), backlog, weight and departure
/// counters, then the occupancy sums. What it is offered is not counted there but derived (sent + dropped +
/// waiting), which spares every enqueue a third line; the port counts its arrivals for the conservation check.
/// Marks and drops follow, touched only when they happen.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Queue {
    fifo: Fifo,
    /// Backlog: bytes waiting (the packets waiting are the FIFO's length).
    pub bytes: u64,
    /// The scheduler's weight for this queue as markers read it (w_i; see `AnyScheduler::weights`).
    pub weight: u64,
    /// Packets and wire bytes dequeued for transmission.
    sent_pkts: u64,
    sent_bytes: u64,
    /// Wire bytes of the packets dropped, by any reason.
    dropped_bytes: u64,
    /// Mark verdicts on non-ECT packets that passed unmarked.
    non_ect_passed: u64,
    pub occupancy: Occupancy,
    marks: [u64; MarkReason::ALL.len()],
    drops: [u64; DropReason::ALL.len()],
}

const _: () = assert!(std::mem::offset_of!(Queue, occupancy) == 64, "a queue's per-packet fields fill one line");

impl Queue {
    pub fn new(weight: u64, histogram: bool) -> Queue {
        Queue {
            fifo: Fifo::default(),
            bytes: 0,
            weight,
            sent_pkts: 0,
            sent_bytes: 0,
            occupancy: Occupancy::new(histogram),
            marks: Default::default(),
            drops: Default::default(),
            dropped_bytes: 0,
            non_ect_passed: 0,
        }
    }

    /// Packets waiting.
    pub fn pkts(&self) -> u64 {
        self.fifo.len() as u64
    }

    /// The queue's counters; arrivals are what was sent, dropped, or still waits.
    pub fn counters(&self) -> Counters {
        let dropped: u64 = self.drops.iter().sum();
        Counters {
            arrived_pkts: self.sent_pkts + dropped + self.pkts(),
            arrived_bytes: self.sent_bytes + self.dropped_bytes + self.bytes,
            sent_pkts: self.sent_pkts,
            sent_bytes: self.sent_bytes,
            marks: self.marks,
            drops: self.drops,
            non_ect_passed: self.non_ect_passed,
        }
    }

    fn count_drop(&mut self, reason: DropReason, wire: u64) {
        self.drops[reason as usize] += 1;
        self.dropped_bytes += wire;
    }
}

/// A packet the port put on the wire: its queue, its size, whether the dequeue marker marked it, and the
/// `hop` it was queued with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    pub id: PacketId,
    pub queue: usize,
    pub wire: Bytes,
    pub marked: bool,
    pub hop: u32,
}

/// Static configuration of a port, resolved to bytes. `repr(C)` in 64 bytes: one line of the port's record.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct PortConfig {
    pub rate: Rate,
    pub delay: Time,
    pub mtu: Bytes,
    pub buffer: Bytes,
    /// Static per-queue limits (the last applies to higher queues); none = the port buffer only.
    pub queue_limits: Vec<Bytes>,
    pub queues: u32,
    pub non_ect: NonEct,
}

/// The outcome of offering a packet to a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Queued; `marked` says whether the marker marked it at enqueue.
    Queued {
        queue: usize,
        marked: bool,
    },
    Dropped(DropReason),
    /// Found the port idle and empty and went straight into transmission (only with `Port::pass_idle`): the
    /// caller puts it on the wire as it would a `dequeue`'s departure.
    Sent(Departure),
}

/// The queues as the marker reads them (`mark::Queues`): backlogs and weights of the records, and their sum.
#[derive(Clone, Copy)]
struct Loads<'a> {
    queues: &'a [Queue],
    weight_sum: u64,
}

impl Queues for Loads<'_> {
    #[inline(always)]
    fn bytes(&self, q: usize) -> u64 {
        self.queues[q].bytes
    }
    #[inline(always)]
    fn weight(&self, q: usize) -> u64 {
        self.queues[q].weight
    }
    #[inline(always)]
    fn weight_sum(&self) -> u64 {
        self.weight_sum
    }
}

/// `repr(C)`, fields in order of use: what every packet's enqueue, dequeue and departure touches comes first
/// (the first two lines of an aligned record, ahead of the configuration), the scheduler and the marker next,
/// and what only statistics windows, PFC and RTT variation use last.
#[repr(C, align(64))]
pub struct Port {
    /// When the last bit of the latest packet put on the wire leaves: the transmitter is busy while
    /// `now < tx_end`. The packet itself is already on its link (its `Arrive` is in the event queue).
    pub tx_end: Time,
    /// Its wire size (the backlog an arriving packet finds counts it while it is being sent).
    tx_wire: u32,
    /// What the end of that transmission still owes.
    tx_owes: TxEnd,
    /// PFC: priorities this port admits whatever its buffer (ingress thresholds bound them instead).
    pub lossless: u8,
    /// A packet that finds every queue empty and the transmitter free leaves at once, without its FIFO and
    /// the scheduler's pick (`Admit::Sent`). Off where each enqueue and dequeue must be seen on its own (a
    /// packet trace, PFC's ingress counts); on or off, the results are the same.
    pub pass_idle: bool,
    pub port_bytes: u64,
    /// Σ of the queues' weights (PMSB's and the weighted shares' denominator).
    weight_sum: u64,
    pub queues: Box<[Queue]>,
    /// Time the transmitter spent busy as a switch port (for utilisation).
    busy_time: Time,
    /// Serialization time per byte when it is a whole number of picoseconds (every common rate), else 0.
    ps_per_byte: u64,
    /// PFC: the queues the downstream's pauses leave unservable.
    paused_queues: u64,
    /// Over the window: the smallest backlog (queued bytes + the packet in transmission) an arriving packet
    /// found, i.e. what a switch logging "the queue at every arrival" sees (ECN* §3.2.3); `u64::MAX`: none.
    arrival_backlog_min: u64,
    /// Packets offered to its queues, counted on their own (the queues derive theirs) for the conservation
    /// check; a NIC counts its own (`Nic`).
    arrived_pkts: u64,
    /// The switch whose shared buffer pool this port draws from, if any.
    pub shared: Option<u32>,
    pub cfg: PortConfig,
    pub occupancy: Occupancy,
    pub sched: AnyScheduler,
    pub marker: AnyMarker,
    pub first_mark: Option<(Time, u32)>,
    /// Host links only: packets delayed by RTT variation, ordered by arrival time, and the earliest pending
    /// wake-up for them.
    pub late: std::collections::BinaryHeap<std::cmp::Reverse<(Time, u64, PacketId)>>,
    pub late_pending: Time,
    /// PFC: priorities the downstream paused.
    pub pause: PauseState,
    /// Counters and busy time when the statistics window opened.
    pub at_window_start: (Counters, Time),
    nic: Nic,
}

/// A host NIC: a FIFO at line rate that never marks or drops, so it needs no queue. All a host's send reads
/// and writes is here, in one line of its own (copies of the rate and delay included), not spread over the
/// port record's lines and its first queue's.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Nic {
    /// When its transmitter is next free.
    free_at: Time,
    ps_per_byte: u64,
    rate: Rate,
    delay: Time,
    /// Packets and wire bytes sent, and the time spent sending them.
    sent_pkts: u64,
    sent_bytes: u64,
    busy_time: Time,
}

impl Nic {
    fn tx_time(&self, wire: Bytes) -> Time {
        serialization(self.ps_per_byte, self.rate, wire)
    }
}

/// The time to serialize `wire` bytes: by `ps_per_byte` when it is a whole number (not 0), else by the rate.
#[inline]
fn serialization(ps_per_byte: u64, rate: Rate, wire: Bytes) -> Time {
    match ps_per_byte {
        0 => rate.tx_time(wire),
        k => Time(wire.0 * k),
    }
}

/// What the end of a port's transmission owes (DESIGN: a departure is processed at the instant the last bit
/// leaves). Ending a transmission matters only if a packet waits to be sent next, so the `TxDone` event is
/// scheduled only then; a port that falls idle tells its marker lazily.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxEnd {
    /// Nothing: no transmission yet, or its end was handled.
    Nothing,
    /// A `TxDone` event is scheduled at `tx_end`.
    Event,
    /// No event: the queues were empty when it started and have stayed so; the marker's `on_idle(tx_end)`
    /// is still owed.
    IdleNotice,
}

/// The scheduler's view: a paused queue looks empty.
struct View<'a>(&'a [Queue], &'a FifoPool, u64);
impl QueueView for View<'_> {
    fn n(&self) -> usize {
        self.0.len()
    }
    fn head(&self, q: usize) -> Option<u32> {
        if self.2 & (1 << q) != 0 {
            return None;
        }
        self.0[q].fifo.front(self.1).map(|w| w.wire)
    }
}

impl Port {
    pub fn new(cfg: PortConfig, sched: AnyScheduler, marker: AnyMarker, histogram: bool) -> Port {
        let n = cfg.queues as usize;
        let weights = sched.weights(n);
        let ps_per_byte = if (8 * PS_PER_S).is_multiple_of(cfg.rate.0) { 8 * PS_PER_S / cfg.rate.0 } else { 0 };
        Port {
            weight_sum: weights.iter().sum(),
            queues: weights.into_iter().map(|w| Queue::new(w, histogram)).collect(),
            port_bytes: 0,
            sched,
            marker,
            tx_end: Time::ZERO,
            tx_wire: 0,
            tx_owes: TxEnd::Nothing,
            arrival_backlog_min: u64::MAX,
            arrived_pkts: 0,
            occupancy: Occupancy::new(histogram),
            busy_time: Time::ZERO,
            at_window_start: (Counters::default(), Time::ZERO),
            first_mark: None,
            late: Default::default(),
            late_pending: Time::MAX,
            shared: None,
            ps_per_byte,
            nic: Nic { ps_per_byte, rate: cfg.rate, delay: cfg.delay, ..Nic::default() },
            pause: PauseState::default(),
            paused_queues: 0,
            lossless: 0,
            pass_idle: false,
            cfg,
        }
    }

    /// The link as the marker reads it.
    #[inline(always)]
    fn link(cfg: &PortConfig) -> Link {
        Link { rate: cfg.rate, mtu: cfg.mtu, buffer: cfg.buffer }
    }

    /// Class → queue: classes beyond the last queue share the last one.
    pub fn classify(&self, class: u8) -> usize {
        (class as usize).min(self.queues.len() - 1)
    }

    /// Every queue change: the queue's and the port's lengths and their occupancy statistics. Inlined at its
    /// two call sites (enqueue, dequeue): as a call, saving and restoring registers cost as much as its body.
    #[inline(always)]
    fn set_len(&mut self, now: Time, q: usize, bytes: u64) {
        let multi_queue = self.queues.len() > 1;
        let queue = &mut self.queues[q];
        let port_bytes = self.port_bytes + bytes - queue.bytes;
        queue.bytes = bytes;
        queue.occupancy.set(now, bytes);
        self.port_bytes = port_bytes;
        if multi_queue {
            self.occupancy.set(now, port_bytes);
        }
    }

    /// Applies a marker verdict to a packet; returns the drop reason if it must go.
    fn apply(&mut self, q: usize, v: Verdict, p: &mut Packet, now: Time) -> Result<bool, DropReason> {
        let c = &mut self.queues[q];
        match v {
            Verdict::Pass => Ok(false),
            Verdict::Drop(r) => Err(r),
            Verdict::Mark(r) => {
                if p.ecn.is_ect() {
                    p.ecn = Ecn::Ce;
                    c.marks[r as usize] += 1;
                    if self.first_mark.is_none() {
                        self.first_mark = Some((now, p.cwnd_segments));
                    }
                    Ok(true)
                } else if self.cfg.non_ect == NonEct::Drop {
                    Err(DropReason::NonEct)
                } else {
                    c.non_ect_passed += 1;
                    Ok(false)
                }
            }
        }
    }

    /// Buffer admission, the marker at enqueue, and the FIFO. The caller frees dropped packets.
    /// Buffer admission: the port buffer, the queue's static limit, and the shared pool's dynamic threshold.
    fn admits(&self, q: usize, class: u8, wire: u64, shared: &Option<&mut SharedBuffer>) -> bool {
        if self.lossless & (1 << pfc::priority(class)) != 0 {
            return true;
        }
        let limit = self.cfg.queue_limits.get(q).or(self.cfg.queue_limits.last()).map_or(u64::MAX, |b| b.0);
        self.port_bytes + wire <= self.cfg.buffer.0
            && self.queues[q].bytes + wire <= limit
            && shared.as_ref().is_none_or(|s| s.admits(q, self.queues[q].bytes, wire))
    }

    /// `hop`: where the packet goes beyond this port's link (opaque here), handed back at its departure.
    pub fn enqueue(
        &mut self,
        now: Time,
        id: PacketId,
        hop: u32,
        pool: &mut PacketPool,
        fifos: &mut FifoPool,
        mut shared: Option<&mut SharedBuffer>,
    ) -> Admit {
        let p = pool.get_mut(id);
        let q = self.classify(p.class);
        let wire = p.wire as u64;
        self.settle(now);
        let backlog = self.port_bytes + if self.tx_end > now { self.tx_wire as u64 } else { 0 };
        self.arrival_backlog_min = self.arrival_backlog_min.min(backlog);
        self.arrived_pkts += 1;
        let pool_used = shared.as_ref().map(|s| s.used);
        if !self.admits(q, p.class, wire, &shared) {
            self.queues[q].count_drop(DropReason::BufferFull, wire);
            return Admit::Dropped(DropReason::BufferFull);
        }
        // The view counts the arriving packet in its queue, the port and the pool.
        let loads = Loads { queues: &self.queues, weight_sum: self.weight_sum };
        let st = PortState::arrival(now, Self::link(&self.cfg), loads, self.port_bytes, pool_used, q, wire);
        let verdict = self.marker.on_enqueue(&st, q, p);
        let marked = match self.apply(q, verdict, p, now) {
            Ok(m) => m,
            Err(r) => {
                self.queues[q].count_drop(r, wire);
                return Admit::Dropped(r);
            }
        };
        if let Some(s) = shared.as_deref_mut() {
            s.used += wire;
            s.occupancy.set(now, s.used);
        }
        if self.pass_idle && self.port_bytes == 0 && self.tx_end <= now && self.paused_queues == 0 {
            return self.pass(now, q, Waiting { id, wire: wire as u32, since: now, hop }, p, shared);
        }
        let b = self.queues[q].bytes + wire;
        self.queues[q].fifo.push_back(fifos, Waiting { id, wire: wire as u32, since: now, hop });
        self.set_len(now, q, b);
        self.sched.on_enqueue(q, wire as u32, now, &mut self.marker);
        Admit::Queued { queue: q, marked }
    }

    /// Takes the next packet to transmit (scheduler, then the marker at dequeue). Packets the dequeue marker
    /// drops are returned in `dropped` for the caller to account and free.
    pub fn dequeue(
        &mut self,
        now: Time,
        pool: &mut PacketPool,
        fifos: &mut FifoPool,
        mut shared: Option<&mut SharedBuffer>,
        dropped: &mut Vec<(PacketId, usize, DropReason)>,
    ) -> Option<Departure> {
        self.settle(now);
        loop {
            let picked = self.sched.pick(&View(&self.queues, fifos, self.paused_queues), now, &mut self.marker);
            let q = picked?;
            let fifo = &mut self.queues[q].fifo;
            let Waiting { id, wire, since, hop } = fifo.pop_front(fifos).expect("scheduler picked an empty queue");
            let emptied = fifo.is_empty();
            let b = self.queues[q].bytes - wire as u64;
            self.set_len(now, q, b);
            self.sched.on_dequeue(q, wire, emptied, now, &mut self.marker);
            let leaving = Waiting { id, wire, since, hop };
            match self.leave(now, q, leaving, pool.get_mut(id), shared.as_deref_mut()) {
                Ok(departure) => return Some(departure),
                Err(r) => dropped.push((id, q, r)),
            }
        }
    }

    /// A packet out of queue `q` (its FIFO and the scheduler done with it): the shared pool, the marker at
    /// dequeue, the queue's departure or drop counters.
    #[inline(always)]
    fn leave(
        &mut self,
        now: Time,
        q: usize,
        w: Waiting,
        p: &mut Packet,
        shared: Option<&mut SharedBuffer>,
    ) -> Result<Departure, DropReason> {
        let pool_bytes = match shared {
            Some(s) => {
                s.used -= w.wire as u64;
                s.occupancy.set(now, s.used);
                s.used
            }
            None => 0,
        };
        let verdict = if self.marker.acts_at_dequeue() {
            let loads = Loads { queues: &self.queues, weight_sum: self.weight_sum };
            let st = PortState::departure(now, Self::link(&self.cfg), loads, self.port_bytes, pool_bytes);
            self.marker.on_dequeue(&st, q, p, now - w.since)
        } else {
            Verdict::Pass
        };
        match self.apply(q, verdict, p, now) {
            Ok(marked) => {
                let c = &mut self.queues[q];
                c.sent_pkts += 1;
                c.sent_bytes += w.wire as u64;
                Ok(Departure { id: w.id, queue: q, wire: Bytes(w.wire as u64), marked, hop: w.hop })
            }
            Err(r) => {
                self.queues[q].count_drop(r, w.wire as u64);
                Err(r)
            }
        }
    }

    /// `enqueue`'s end and `dequeue` in one, for a packet that finds every queue empty and the transmitter
    /// free (it was admitted and seen by the marker at enqueue, and counts in the shared pool): the same
    /// round events and marker calls in the same order, without the FIFO. Its queue's and the port's lengths
    /// rise by the packet and fall back at one instant, recorded as such (`Occupancy::pulse`), since nothing
    /// reads them between (the scheduler's round events go to the marker alone). A drop at dequeue leaves the
    /// port idle, and its marker is told so, as `Sim::start_tx` tells it when `dequeue` finds nothing left to
    /// send.
    fn pass(&mut self, now: Time, q: usize, w: Waiting, p: &mut Packet, shared: Option<&mut SharedBuffer>) -> Admit {
        self.queues[q].occupancy.pulse(now, w.wire as u64);
        if self.queues.len() > 1 {
            self.occupancy.pulse(now, w.wire as u64);
        }
        self.sched.pass(q, w.wire, now, &mut self.marker);
        match self.leave(now, q, w, p, shared) {
            Ok(d) => Admit::Sent(d),
            Err(r) => {
                self.marker.on_idle(now);
                Admit::Dropped(r)
            }
        }
    }

    /// Puts a packet of `wire` bytes on the wire at `now` (the transmitter must be free). Returns when its
    /// last bit leaves and whether that instant needs a `TxDone` event: only if packets are still queued.
    /// Otherwise nothing happens then unless a packet arrives before (`tx_event_needed`); the marker is told
    /// the port went idle at `tx_end` when the port is next used (`settle`).
    pub fn transmit(&mut self, now: Time, wire: Bytes) -> (Time, bool) {
        debug_assert!(self.tx_end <= now, "transmitter busy");
        let tx = self.tx_time(wire);
        self.tx_end = now + tx;
        self.tx_wire = wire.0 as u32;
        self.busy_time += tx;
        let event = self.port_bytes > 0;
        self.tx_owes = if event { TxEnd::Event } else { TxEnd::IdleNotice };
        (self.tx_end, event)
    }

    /// A packet was queued at `now` while the transmitter is busy: whether the end of the transmission now
    /// needs its `TxDone` event (it was not scheduled because the queues were empty).
    pub fn tx_event_needed(&mut self, now: Time) -> bool {
        debug_assert!(self.tx_end > now);
        let needed = self.tx_owes == TxEnd::IdleNotice;
        if needed {
            self.tx_owes = TxEnd::Event;
        }
        needed
    }

    /// The `TxDone` event at `tx_end` fired.
    pub fn tx_event_done(&mut self) {
        self.tx_owes = TxEnd::Nothing;
    }

    /// If a transmission ended with nothing queued and no event, tells the marker now (before it sees
    /// anything else) that the port went idle when it ended, as a `TxDone` event would have then.
    #[inline]
    fn settle(&mut self, now: Time) {
        if self.tx_owes == TxEnd::IdleNotice && self.tx_end <= now {
            self.tx_owes = TxEnd::Nothing;
            self.marker.on_idle(self.tx_end);
        }
    }

    /// The time to serialize `wire` bytes at the port's rate.
    #[inline]
    pub fn tx_time(&self, wire: Bytes) -> Time {
        serialization(self.ps_per_byte, self.cfg.rate, wire)
    }

    /// Over the window: the smallest backlog an arriving packet found (`None` if none arrived).
    pub fn arrival_backlog_min(&self) -> Option<u64> {
        (self.arrival_backlog_min != u64::MAX).then_some(self.arrival_backlog_min)
    }

    /// How long a NIC needs to send what it holds beyond its first `limit` bytes (zero if no more).
    #[inline]
    pub fn nic_excess(&self, now: Time, limit: Bytes) -> Time {
        self.nic.free_at.saturating_sub(now).saturating_sub(self.nic.tx_time(limit))
    }

    /// A NIC sends `wire` bytes FIFO at line rate: returns when the last bit reaches the far end.
    #[inline]
    pub fn nic_transmit(&mut self, now: Time, wire: Bytes) -> Time {
        let nic = &mut self.nic;
        let tx = nic.tx_time(wire);
        nic.free_at = now.max(nic.free_at) + tx;
        nic.busy_time += tx;
        nic.sent_pkts += 1;
        nic.sent_bytes += wire.0;
        nic.free_at + nic.delay
    }

    /// Packets offered: to the queues, or sent by the NIC (which holds none back).
    pub fn arrived_pkts(&self) -> u64 {
        self.arrived_pkts + self.nic.sent_pkts
    }

    /// Time the transmitter spent busy, as a switch port's or as a NIC's.
    fn busy_time(&self) -> Time {
        self.busy_time + self.nic.busy_time
    }

    /// A PAUSE or RESUME from downstream for priority `prio`; returns whether anything changed.
    pub fn pfc_signal(&mut self, now: Time, prio: usize, signal: Signal) -> bool {
        if !self.pause.apply(now, prio, signal) {
            return false;
        }
        self.paused_queues = 0;
        for p in 0..pfc::PRIORITIES {
            if self.pause.is_paused(p) {
                self.paused_queues |= 1 << self.classify(p as u8);
            }
        }
        true
    }

    pub fn is_empty(&self) -> bool {
        self.port_bytes == 0
    }

    /// Packets waiting in the queues (not counting the one in transmission).
    pub fn queued_pkts(&self) -> u64 {
        self.queues.iter().map(Queue::pkts).sum()
    }

    /// Occupancy statistics of the whole port (with one queue, the queue's own).
    pub fn port_occupancy(&mut self) -> &mut Occupancy {
        if self.queues.len() == 1 {
            &mut self.queues[0].occupancy
        } else {
            &mut self.occupancy
        }
    }

    /// Opens the statistics window: occupancy restarts, counters are remembered for differences.
    pub fn start_window(&mut self, now: Time) {
        self.occupancy.reset(now);
        for q in &mut self.queues {
            q.occupancy.reset(now);
        }
        self.at_window_start = (self.counters(), self.busy_time().saturating_sub(self.busy_ahead(now)));
        self.arrival_backlog_min = u64::MAX;
    }

    /// Transmission time already counted in `busy_time` that lies after `now` (the packet in flight).
    pub fn busy_ahead(&self, now: Time) -> Time {
        self.tx_end.saturating_sub(now)
    }

    /// Fraction of [window start, now] the transmitter was busy.
    pub fn utilization(&self, now: Time, window: Time) -> f64 {
        let busy = self.busy_time().saturating_sub(self.busy_ahead(now)).saturating_sub(self.at_window_start.1);
        busy.as_secs_f64() / window.as_secs_f64().max(1e-12)
    }

    /// The port's counters: its queues' summed, and a NIC's sends as arrived and sent.
    pub fn counters(&self) -> Counters {
        let mut t = Counters::default();
        for q in &self.queues {
            let c = &q.counters();
            t.arrived_pkts += c.arrived_pkts;
            t.arrived_bytes += c.arrived_bytes;
            t.sent_pkts += c.sent_pkts;
            t.sent_bytes += c.sent_bytes;
            t.non_ect_passed += c.non_ect_passed;
            for i in 0..t.marks.len() {
                t.marks[i] += c.marks[i];
            }
            for i in 0..t.drops.len() {
                t.drops[i] += c.drops[i];
            }
        }
        let nic = &self.nic;
        t.arrived_pkts += nic.sent_pkts;
        t.arrived_bytes += nic.sent_bytes;
        t.sent_pkts += nic.sent_pkts;
        t.sent_bytes += nic.sent_bytes;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::mqecn::{MqEcn, Shape};

    /// One 10 Gb/s queue with MQ-ECN (β = 0.5, T_idle = 10 us) whose round-time estimate starts at 8 us.
    fn mqecn_port() -> Port {
        let cfg = PortConfig {
            rate: Rate::gbps(10),
            delay: Time::from_us(1),
            mtu: Bytes(1500),
            buffer: Bytes(1 << 20),
            queue_limits: vec![],
            queues: 1,
            non_ect: NonEct::Pass,
        };
        let mut m = MqEcn::new(Shape::Step { k_std: Bytes(1 << 20) }, 0.5, Time::from_us(10), &[true]);
        m.t_round = 8e6;
        Port::new(cfg, AnyScheduler::strict_priority(), AnyMarker::MqEcn(m), false)
    }

    fn t_round(p: &Port) -> f64 {
        match &p.marker {
            AnyMarker::MqEcn(m) => m.t_round,
            _ => unreachable!(),
        }
    }

    fn send_one(p: &mut Port, pool: &mut PacketPool, fifos: &mut FifoPool, now: Time) -> (Time, bool) {
        let id = pool.alloc(Packet { wire: 1500, ..Packet::default() });
        assert!(matches!(p.enqueue(now, id, 0, pool, fifos, None), Admit::Queued { .. }));
        let id = p.dequeue(now, pool, fifos, None, &mut vec![]).expect("queued").id;
        pool.free(id);
        p.transmit(now, Bytes(1500))
    }

    #[test]
    fn a_transmission_with_nothing_behind_it_needs_no_event_and_idles_from_its_last_bit() {
        let (mut p, mut pool, mut fifos) = (mqecn_port(), PacketPool::default(), FifoPool::new());
        let (end, event) = send_one(&mut p, &mut pool, &mut fifos, Time::ZERO);
        assert_eq!(end, Time::from_ns(1200), "1500 B at 10 Gb/s");
        assert!(!event, "nothing waits behind it");
        // The next packet arrives 19.5 us after the last bit left (20.7 us after the transmission started):
        // one whole T_idle of idleness counted from the end, so T_round halves once (two periods from the start).
        let id = pool.alloc(Packet { wire: 1500, ..Packet::default() });
        p.enqueue(end + Time::from_ns(19_500), id, 0, &mut pool, &mut fifos, None);
        assert_eq!(t_round(&p), 4e6);
    }

    #[test]
    fn a_packet_queued_during_a_transmission_asks_for_its_end_event_once() {
        let (mut p, mut pool, mut fifos) = (mqecn_port(), PacketPool::default(), FifoPool::new());
        let (end, _) = send_one(&mut p, &mut pool, &mut fifos, Time::ZERO);
        for i in 0..2 {
            let id = pool.alloc(Packet { wire: 1500, ..Packet::default() });
            p.enqueue(Time::from_ns(100 * (i + 1)), id, 0, &mut pool, &mut fifos, None);
        }
        assert!(p.tx_event_needed(Time::from_ns(100)), "the first packet behind the transmission needs it");
        assert!(!p.tx_event_needed(Time::from_ns(200)), "already scheduled");
        p.tx_event_done();
        // The port was never idle: no decay.
        let (end2, event) = send_one(&mut p, &mut pool, &mut fifos, end);
        assert_eq!(t_round(&p), 8e6);
        assert!(event, "two packets still wait");
        assert_eq!(end2, end + Time::from_ns(1200));
    }

    /// A 10 Gb/s port of three DWRR queues (quanta 1500, 3000, 700 B) with MQ-ECN at K_std = 6 000 B and a
    /// 30 KB buffer, so that this test's bursts are marked and dropped.
    fn dwrr_mqecn_port(pass_idle: bool) -> Port {
        let cfg = PortConfig {
            rate: Rate::gbps(10),
            delay: Time::from_us(1),
            mtu: Bytes(1500),
            buffer: Bytes(30_000),
            queue_limits: vec![],
            queues: 3,
            non_ect: NonEct::Pass,
        };
        let m = MqEcn::new(Shape::Step { k_std: Bytes(6_000) }, 0.5, Time::from_ns(1200), &[true; 3]);
        let mut p = Port::new(cfg, AnyScheduler::dwrr(vec![1500, 3000, 700]), AnyMarker::MqEcn(m), true);
        p.pass_idle = pass_idle;
        p
    }

    #[test]
    fn packets_through_an_idle_port_leave_it_as_the_queue_path_would() {
        // Two ports, one passing packets that find it idle straight through, take the same arrivals (bursts
        // and lone packets, as `Sim` drives a port: departures due by an arrival go first). Every departure,
        // counter, occupancy statistic and the round-time estimate must match.
        let mut ports = [dwrr_mqecn_port(false), dwrr_mqecn_port(true)];
        let mut pools = [(PacketPool::default(), FifoPool::new()), (PacketPool::default(), FifoPool::new())];
        let mut sent = [vec![], vec![]];
        let mut x = 5u64;
        let mut now = Time::ZERO;
        let mut passed = 0;
        let same_statistics = |ports: &mut [Port; 2], now: Time| {
            let [a, b] = ports;
            assert_eq!(format!("{:?}", a.counters()), format!("{:?}", b.counters()));
            assert_eq!(t_round(a), t_round(b));
            for q in 0..3 {
                let (sa, sb) = (a.queues[q].occupancy.stats(now), b.queues[q].occupancy.stats(now));
                assert_eq!(format!("{sa:?}"), format!("{sb:?}"), "queue {q} at {now}");
            }
            assert_eq!(format!("{:?}", a.occupancy.stats(now)), format!("{:?}", b.occupancy.stats(now)));
        };
        for i in 0..5_000u64 {
            if i % 100 == 39 {
                // Before a burst: the maxima are those of lone packets.
                same_statistics(&mut ports, now);
            }
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Spaced arrivals, then a burst of 60 arrivals 50 ns apart, in every 100.
            now += if i % 100 >= 40 { Time::from_ns(50) } else { Time::from_ns(200 + (x >> 20) % 3000) };
            let pkt = Packet {
                wire: 64 + (x >> 33) as u32 % 1437,
                class: (x >> 8) as u8 % 3,
                ecn: Ecn::Ect,
                ..Packet::default()
            };
            for (k, p) in ports.iter_mut().enumerate() {
                let (pool, fifos) = &mut pools[k];
                // The transmissions that end by now, each followed by the next departure.
                while p.tx_end <= now && !p.is_empty() {
                    let at = p.tx_end;
                    let d = p.dequeue(at, pool, fifos, None, &mut vec![]).expect("a packet waits");
                    p.transmit(at, d.wire);
                    sent[k].push((at, d));
                }
                let id = pool.alloc(pkt);
                match p.enqueue(now, id, i as u32, pool, fifos, None) {
                    Admit::Sent(d) => {
                        p.transmit(now, d.wire);
                        sent[k].push((now, d));
                        passed += 1;
                    }
                    Admit::Queued { .. } if p.tx_end <= now => {
                        let d = p.dequeue(now, pool, fifos, None, &mut vec![]).expect("just queued");
                        p.transmit(now, d.wire);
                        sent[k].push((now, d));
                    }
                    Admit::Queued { .. } => {}
                    Admit::Dropped(_) => pool.free(id),
                }
            }
        }
        assert!(passed > 500, "the case passes packets through: {passed}");
        assert_eq!(sent[0], sent[1]);
        same_statistics(&mut ports, now);
        let c = ports[0].counters();
        assert!(c.total_marks() > 0 && c.total_drops() > 0, "the case marks and drops: {c:?}");
    }

    #[test]
    fn derived_arrivals_equal_what_was_offered() {
        // A 4 500 B buffer offered six packets of 1 000–2 000 B: some are dropped, two are sent, the rest wait.
        let mut p = mqecn_port();
        p.cfg.buffer = Bytes(4_500);
        let (mut pool, mut fifos) = (PacketPool::default(), FifoPool::new());
        let sizes = [1_000u32, 2_000, 1_500, 2_000, 1_000, 1_200];
        for (i, &wire) in sizes.iter().enumerate() {
            let id = pool.alloc(Packet { wire, ..Packet::default() });
            if let Admit::Dropped(_) = p.enqueue(Time::from_ns(10 * i as u64), id, 0, &mut pool, &mut fifos, None) {
                pool.free(id);
            }
            if i == 1 || i == 3 {
                let sent = p
                    .dequeue(Time::from_ns(10 * i as u64 + 5), &mut pool, &mut fifos, None, &mut vec![])
                    .expect("queued");
                pool.free(sent.id);
            }
        }
        let c = p.counters();
        assert_eq!((c.arrived_pkts, c.arrived_bytes), (6, sizes.iter().map(|&w| w as u64).sum()));
        assert_eq!(c.arrived_pkts, p.arrived_pkts(), "the port's own count");
        assert_eq!(c.sent_pkts + c.total_drops() + p.queued_pkts(), 6);
        assert!(c.total_drops() > 0 && p.queued_pkts() > 0, "the case covers drops and waiting packets");
    }

    #[test]
    fn a_nic_sends_back_to_back_at_line_rate_and_counts_what_it_sent() {
        // 10 Gb/s: 1500 B take 1.2 us; the link adds 1 us.
        let mut p = mqecn_port();
        let t0 = Time::from_us(5);
        assert_eq!(p.nic_transmit(t0, Bytes(1500)), t0 + Time::from_ns(1200) + Time::from_us(1));
        // Sent at once, before the first is out: it waits for it.
        assert_eq!(p.nic_transmit(t0, Bytes(1500)), t0 + Time::from_ns(2400) + Time::from_us(1));
        // The NIC holds 2.4 us of bytes, 1.2 us beyond a 1500-byte limit, which it has drained 1.2 us later.
        assert_eq!(p.nic_excess(t0, Bytes(1500)), Time::from_ns(1200));
        assert_eq!(p.nic_excess(t0 + Time::from_ns(1200), Bytes(1500)), Time::ZERO);
        // Idle from 7.4 us: one sent at 10 us starts at once.
        let t1 = Time::from_us(10);
        assert_eq!(p.nic_transmit(t1, Bytes(64)), t1 + Time::from_ps(64 * 800) + Time::from_us(1));
        let c = p.counters();
        assert_eq!((c.arrived_pkts, c.sent_pkts, c.sent_bytes), (3, 3, 3064));
        assert_eq!(p.arrived_pkts(), 3, "a NIC counts what it was offered as sent");
        assert_eq!(p.busy_time(), Time::from_ns(2400) + Time::from_ps(64 * 800));
    }
}
