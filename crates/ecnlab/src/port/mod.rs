//! The egress port mechanism: buffer admission, classification into per-class FIFOs, scheduler and marker
//! calls, transmission bookkeeping, counters and exact occupancy statistics.
//!
//! Written once; schedulers and markers are plug-ins that see a `PortState`.

mod clock;
pub mod fifo;
pub mod occupancy;
mod settled;
mod shaper;
pub mod shared;

pub use clock::{may_defer_departures, HostSide, Surroundings};
pub use fifo::FifoPool;
pub use occupancy::{Occupancy, OccupancyStats};
pub use settled::Settled;
pub use shaper::Shaper;
pub use shared::SharedBuffer;

use crate::mark::{AnyMarker, DropReason, Link, MarkReason, PortState, Queues, Verdict};
use crate::net::pfc::{self, PauseState, Signal};
use crate::packet::{Ecn, Packet, PacketId, PacketPool};
use crate::sched::{AnyScheduler, QueueView};
use crate::units::{Bytes, Rate, Time, PS_PER_S};
use clock::TxEnd;
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
    fn counters(&self) -> Counters {
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

/// A packet the port put on the wire: its queue, its size, whether the dequeue marker marked it, the `hop`
/// it was queued with, when its last bit reaches the far end of the link, and the instant the owner must
/// wake the port (`Port::wake`) to make the next departure, if the port asks for one (`clock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    pub id: PacketId,
    pub queue: usize,
    pub wire: Bytes,
    pub marked: bool,
    pub hop: u32,
    pub arrives: Time,
    pub wake: Option<Time>,
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
    /// Queued; `marked` says whether the marker marked it at enqueue. If the transmitter is free the owner
    /// asks for the departure at once (`depart`); if it is busy, `wake` is the wake-up its end now needs.
    Queued {
        queue: usize,
        marked: bool,
        wake: Option<Time>,
    },
    Dropped(DropReason),
    /// Found the port idle and empty and went straight onto the wire (`Entry::PassIdle`), or was sent by a NIC
    /// (`Entry::Nic`), as a
    /// `depart`'s packet.
    Sent(Departure),
}

/// How an offered packet enters a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    /// Through its class's queue, the scheduler's pick and the marker at dequeue.
    Queues,
    /// As `Queues`, except that a packet finding every queue empty and the transmitter free leaves at once,
    /// without its FIFO and the scheduler's pick: the same departures, counters and statistics, fewer steps
    /// (a fast path: off where each enqueue and dequeue must be seen on its own, a packet trace or PFC's
    /// ingress counts).
    PassIdle,
    /// A host's NIC: a FIFO at line rate that never marks or drops (its host's transport bounds what it
    /// holds), so a packet's departure is known when it is offered and the port needs neither queue nor
    /// wake-up (`Port::nic`). A model, not a fast path.
    Nic,
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
    tx_end: Time,
    /// Its wire size (the backlog an arriving packet finds counts it while it is being sent).
    tx_wire: u32,
    /// What the end of that transmission still owes (`clock`).
    tx_owes: TxEnd,
    /// PFC: priorities this port admits whatever its buffer (ingress thresholds bound them instead).
    pub lossless: u8,
    /// A departure owed at the end of a transmission is deferred until the owner next looks at the port
    /// (`advance_to`), instead of asking for a wake-up then (`may_defer_departures` says when that is sound).
    defers: bool,
    /// How an offered packet enters the port (`Entry`).
    entry: Entry,
    port_bytes: u64,
    /// Σ of the queues' weights (PMSB's and the weighted shares' denominator).
    weight_sum: u64,
    queues: Box<[Queue]>,
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
    /// A token bucket its transmissions wait for (`shaper`); `None`, one test of a pointer read with the
    /// link's delay, for every port without one.
    shaper: Option<Box<shaper::TokenBucket>>,
    pub cfg: PortConfig,
    occupancy: Occupancy,
    pub sched: AnyScheduler,
    pub marker: AnyMarker,
    first_mark: Option<(Time, u32)>,
    /// Host links only: packets delayed by RTT variation, ordered by arrival time, and the earliest pending
    /// wake-up for them.
    pub late: std::collections::BinaryHeap<std::cmp::Reverse<(Time, u64, PacketId)>>,
    pub late_pending: Time,
    /// PFC: priorities the downstream paused.
    pub pause: PauseState,
    /// Counters and busy time when the statistics window opened.
    at_window_start: (Counters, Time),
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
            defers: false,
            arrival_backlog_min: u64::MAX,
            arrived_pkts: 0,
            occupancy: Occupancy::new(histogram),
            busy_time: Time::ZERO,
            at_window_start: (Counters::default(), Time::ZERO),
            first_mark: None,
            late: Default::default(),
            late_pending: Time::MAX,
            shared: None,
            shaper: None,
            ps_per_byte,
            nic: Nic { ps_per_byte, rate: cfg.rate, delay: cfg.delay, ..Nic::default() },
            pause: PauseState::default(),
            paused_queues: 0,
            lossless: 0,
            entry: Entry::Queues,
            cfg,
        }
    }

    /// A host's NIC on a link of `rate` and `delay` (`Entry::Nic`).
    pub fn nic(rate: Rate, delay: Time, mtu: Bytes) -> Port {
        let buffer = Bytes(u64::MAX / 2);
        let cfg = PortConfig { rate, delay, mtu, buffer, queues: 1, non_ect: NonEct::Pass, queue_limits: Vec::new() };
        let mut port = Port::new(cfg, AnyScheduler::strict_priority(), AnyMarker::None, false);
        port.entry = Entry::Nic;
        port
    }

    /// Shapes its transmissions with a token bucket, full at the start (`shaper`), or not. A NIC is never
    /// shaped (its departures are fixed when offered).
    pub fn set_shaper(&mut self, s: Option<Shaper>) {
        self.shaper = s.filter(|_| self.entry != Entry::Nic).map(|s| Box::new(shaper::TokenBucket::new(s)));
    }

    /// Whether it is a host's NIC (`Port::nic`).
    #[inline(always)]
    pub fn is_nic(&self) -> bool {
        self.entry == Entry::Nic
    }

    /// Packets that find a queueing port idle pass straight through (`Entry::PassIdle`), or not.
    pub fn set_pass_idle(&mut self, on: bool) {
        if self.entry != Entry::Nic {
            self.entry = if on { Entry::PassIdle } else { Entry::Queues };
        }
    }

    /// Whether packets that find it idle pass straight through.
    pub fn passes_idle(&self) -> bool {
        self.entry == Entry::PassIdle
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

    /// Offers a packet to the port at `now`: buffer admission, the marker at enqueue, and its queue (or
    /// straight onto the wire, `Admit::Sent`). `hop`: where the packet goes beyond this port's link (opaque
    /// here), handed back at its departure.
    pub fn offer(
        &mut self,
        now: Time,
        id: PacketId,
        hop: u32,
        pool: &mut PacketPool,
        fifos: &mut FifoPool,
        mut shared: Option<&mut SharedBuffer>,
    ) -> Admit {
        let p = pool.get_mut(id);
        if self.entry == Entry::Nic {
            return Admit::Sent(self.nic_send(now, id, p.wire_bytes(), hop));
        }
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
        if self.entry == Entry::PassIdle && self.port_bytes == 0 && self.tx_end <= now && self.paused_queues == 0 {
            return self.pass(now, q, Waiting { id, wire: wire as u32, since: now, hop }, p, shared);
        }
        let b = self.queues[q].bytes + wire;
        self.queues[q].fifo.push_back(fifos, Waiting { id, wire: wire as u32, since: now, hop });
        self.set_len(now, q, b);
        self.sched.on_enqueue(q, wire as u32, now, &mut self.marker);
        let wake = if self.tx_end > now { self.queued_behind(now) } else { None };
        Admit::Queued { queue: q, marked, wake }
    }

    /// Takes the next packet to transmit (scheduler, then the marker at dequeue), not yet on the wire
    /// (`depart` puts it there). Packets the dequeue marker drops are returned in `dropped` for the caller
    /// to account and free.
    pub(super) fn dequeue(
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
                let wire = Bytes(w.wire as u64);
                Ok(Departure { id: w.id, queue: q, wire, marked, hop: w.hop, arrives: Time::MAX, wake: None })
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
            Ok(mut d) => {
                self.put_on_wire(now, &mut d);
                Admit::Sent(d)
            }
            Err(r) => {
                self.marker.on_idle(now);
                Admit::Dropped(r)
            }
        }
    }

    /// Over the window: the smallest backlog an arriving packet found (`None` if none arrived).
    fn arrival_backlog_min(&self) -> Option<u64> {
        (self.arrival_backlog_min != u64::MAX).then_some(self.arrival_backlog_min)
    }

    /// How long a NIC needs to send what it holds beyond its first `limit` bytes (zero if no more).
    #[inline]
    fn nic_excess(&self, now: Time, limit: Bytes) -> Time {
        self.nic.free_at.saturating_sub(now).saturating_sub(self.nic.tx_time(limit))
    }

    /// A NIC sends a packet of `wire` bytes FIFO at line rate: it starts when the ones before it are out.
    #[inline]
    fn nic_send(&mut self, now: Time, id: PacketId, wire: Bytes, hop: u32) -> Departure {
        let nic = &mut self.nic;
        let tx = nic.tx_time(wire);
        nic.free_at = now.max(nic.free_at) + tx;
        nic.busy_time += tx;
        nic.sent_pkts += 1;
        nic.sent_bytes += wire.0;
        let arrives = nic.free_at + nic.delay;
        Departure { id, queue: 0, wire, marked: false, hop, arrives, wake: None }
    }

    /// Packets offered: to the queues, or sent by the NIC (which holds none back).
    fn arrived_pkts(&self) -> u64 {
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

    /// The number of queues (its configuration).
    pub fn queue_count(&self) -> usize {
        self.queues.len()
    }

    pub fn is_empty(&self) -> bool {
        self.port_bytes == 0
    }

    /// Packets waiting in the queues (not counting the one in transmission).
    fn queued_pkts(&self) -> u64 {
        self.queues.iter().map(Queue::pkts).sum()
    }

    /// Occupancy statistics of the whole port (with one queue, the queue's own).
    fn port_occupancy(&mut self) -> &mut Occupancy {
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

    /// Transmission time already counted in `busy_time` that lies after `now` (the packet in flight; a
    /// shaped port's packet may still wait at its bucket, which is not transmission).
    fn busy_ahead(&self, now: Time) -> Time {
        let ahead = self.tx_end.saturating_sub(now);
        match self.shaper {
            None => ahead,
            Some(_) => ahead.min(self.tx_time(Bytes(self.tx_wire as u64))),
        }
    }

    /// Fraction of [window start, now] the transmitter was busy.
    fn utilization(&self, now: Time, window: Time) -> f64 {
        let busy = self.busy_time().saturating_sub(self.busy_ahead(now)).saturating_sub(self.at_window_start.1);
        busy.as_secs_f64() / window.as_secs_f64().max(1e-12)
    }

    /// The port's counters: its queues' summed, and a NIC's sends as arrived and sent.
    fn counters(&self) -> Counters {
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
mod tests;
