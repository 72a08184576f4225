//! `Sim`: owns every component in `Vec`s indexed by ids and runs the event loop. The glue between ports,
//! links, hosts, transports and workloads lives here, once.

mod build;
mod busiest;
pub(crate) mod report;
pub mod summary;
mod traffic;
mod workload;

pub use busiest::busiest_port;
pub use report::{fct_csv, fct_stats, jain, FlowRecord, RunReport};
pub use summary::RunSummary;
// Their old home: `ecnlab::sim::load_cdf` stays public API.
pub use crate::dist::{load_cdf, load_rtt};

use crate::engine::{Event, EventQueue, Rng};
use crate::error::Error;
use crate::mark::DropReason;
use crate::net::pfc::{self, Pfc, Signal};
use crate::net::{Network, Node};
use crate::observe::{LogHist, Series, TraceKind, TraceRecord};
use crate::packet::{Kind, Packet, PacketId, PacketPool, Sack};
use crate::port::{Admit, Departure, FifoPool, Port, Settled};
use crate::transport::{FlowAddr, Receiver, Sender, TcpConfig};
use crate::units::{Bytes, Rate, Time};
use std::collections::VecDeque;
use workload::WorkloadState;

/// Application pacing for rate-limited flows: one segment every `interval`, up to `total` bytes.
#[derive(Clone, Copy, Debug)]
struct AppRate {
    interval: Time,
    next: Time,
    total: Option<u64>,
}

pub struct Flow {
    pub addr: FlowAddr,
    /// `None`: long-lived.
    pub size: Option<u64>,
    pub start: Time,
    pub first_data: Option<Time>,
    pub finish: Option<Time>,
    /// When the sender saw its last byte acknowledged (kept only with `observe.fct_end = "acked"`).
    pub acked: Option<Time>,
    pub sender: Sender,
    pub receiver: Receiver,
    pub base_rtt: Time,
    /// Delay the sender adds to each of its packets (RTT variation). Set only by `open_flow`, which keeps
    /// `Sim::any_extra_delay` true once any flow has one.
    extra_delay: Time,
    pub workload: u32,
    /// The receiver tells the workload when `rcv_nxt` reaches this (incast blocks).
    notify_at: u64,
    app: Option<AppRate>,
    timer_pending: Time,
    /// Waiting in its host's queue for the NIC to drain.
    nic_blocked: bool,
    delivered_at_warmup: u64,
}

impl Flow {
    /// When its completion time ends: the receiver's last byte, or with `acked` the sender's last
    /// acknowledgement (`observe.fct_end`).
    pub fn end(&self, acked: bool) -> Option<Time> {
        if acked {
            self.acked
        } else {
            self.finish
        }
    }
}

/// Per-host state: flows waiting for the NIC.
#[derive(Default)]
pub struct Host {
    blocked: VecDeque<u32>,
    wake_pending: bool,
    /// A host port like a switch's drained to `tsq_limit`: its `NicReady` is scheduled.
    waking: bool,
}

/// `Sim::port_host` of a switch's port.
const NOT_A_HOST: u32 = u32::MAX;

/// An endpoint of a flow (`Sim::pump_side`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Sender,
    Receiver,
}

pub struct Sim {
    now: Time,
    hosts: Vec<Host>,
    /// Shared buffer pools, one per switch, when configured.
    pools: Vec<crate::port::SharedBuffer>,
    events: EventQueue,
    pool: PacketPool,
    /// Every switch queue's FIFO entries.
    fifos: FifoPool,
    net: Network,
    ports: Vec<Port>,
    /// Where port i's outgoing link leads. The packets on it are the `Arrive` events of its line in `events`.
    far_end: Vec<Node>,
    /// Per port: the host it leaves (a NIC, or a port like a switch's), or `NOT_A_HOST` (a switch's). Dense, so
    /// a departure's test stays in cache.
    port_host: Vec<u32>,
    /// An event of a flow's receiver cannot make its sender send, nor wait: TCP senders (whether one sends
    /// depends on its window and its application's writes, not on the clock), hosts' ports like a switch's that
    /// never hold more than `tsq_limit`, no PFC. Then `pump_side` drains the receiver alone.
    receiver_events_leave_senders: bool,
    /// Packets on links (each with its `Arrive` in `events`).
    on_links: u64,
    /// Some flow was opened with an extra delay (RTT variation): until then no packet needs its flow's record
    /// read to leave its host (a departure from a host port like a switch's would otherwise read two lines
    /// long out of cache, the packet's and the flow's).
    any_extra_delay: bool,
    flows: Vec<Flow>,
    /// One transport configuration, shared by every flow's sender (a per-flow copy would spread it over
    /// every flow's cache lines).
    tcp: std::sync::Arc<TcpConfig>,
    /// `observe.fct_end = "acked"`: each sized flow's last acknowledgement is noted (`Flow::acked`).
    fct_acked: bool,
    /// TCP small queues: a host hands its egress data only while no more than this waits there unsent.
    tsq_limit: Bytes,
    workloads: Vec<WorkloadState>,
    seed: u64,
    duration: Time,
    warmup: Time,
    max_events: u64,
    events_processed: u64,
    /// When the last packet, timer or workload event happened (sampling, phases and the window start aside):
    /// the end of the traffic, where `duration` may lie far beyond it.
    traffic_end: Time,
    /// Per class: payload bytes delivered in order to receivers.
    class_delivered: Vec<u64>,
    class_delivered_at_warmup: Vec<u64>,
    /// Per class: TCP RTT samples (ps) after warm-up.
    class_rtt: Vec<LogHist>,
    /// Every class's TCP RTT samples together.
    all_rtt: LogHist,
    /// Phase boundaries and the delivered bytes per class at each.
    phases: Vec<Time>,
    phase_snapshots: Vec<Option<Vec<u64>>>,
    rtt_series: Option<Series>,
    sample_interval: Time,
    watched_ports: Vec<u32>,
    cwnd_flows: Vec<u32>,
    series: Vec<Series>,
    trace: Option<report::TraceSpec>,
    trace_records: Vec<TraceRecord>,
    drop_scratch: Vec<(PacketId, usize, DropReason)>,
    late_seq: u64,
    /// Packets injected by hosts and consumed by hosts, for the conservation check.
    injected: u64,
    consumed: u64,
    dropped: u64,
    /// Ingress accounting when `switch.pfc` is on.
    pfc: Option<Pfc>,
    /// The first PFC violation (headroom exceeded, lossless packet dropped): fails the run.
    pfc_error: Option<String>,
}

impl Sim {
    /// The host whose egress `port` is, if it is a host's.
    #[inline(always)]
    fn host_of_port(&self, port: u32) -> Option<u32> {
        Some(self.port_host[port as usize]).filter(|&h| h != NOT_A_HOST)
    }

    #[inline]
    fn schedule(&mut self, at: Time, ev: Event) {
        self.events.push(at, ev);
    }

    /// Turns every fast path off, before the run: each departure by its own `TxDone` event (no lazy
    /// departures), every packet through its port's FIFO and scheduler (no idle pass-through), both endpoints
    /// drained after every input (no one-sided pumps), and every host-port departure reading its flow's extra
    /// delay. Each is an optimisation that must change no result; running both ways and comparing outputs is
    /// the test of all of them together (`tests/integration/identity.rs`).
    pub fn without_fast_paths(&mut self) {
        for p in &mut self.ports {
            p.set_deferred_departures(false);
            p.set_pass_idle(false);
        }
        self.receiver_events_leave_senders = false;
        self.any_extra_delay = true;
    }

    /// The port named `name` (`"s0->h1"`: the egress of s0 toward h1), as an index for the accessors below.
    pub fn port_index(&self, name: &str) -> Option<u32> {
        self.net.port_by_name(name)
    }

    /// A port's counters now, every departure due by now made.
    pub fn port_counters(&mut self, port: u32) -> crate::port::Counters {
        self.port(port).counters()
    }

    /// A port's marker, as it stands now.
    pub fn marker(&self, port: u32) -> &crate::mark::AnyMarker {
        &self.ports[port as usize].marker
    }

    /// Replaces a port's marker before the run, e.g. with research code as `AnyMarker::Custom`.
    pub fn set_marker(&mut self, port: u32, marker: crate::mark::AnyMarker) {
        assert_eq!(self.events_processed, 0, "a marker is set before the run");
        self.ports[port as usize].marker = marker;
    }

    /// Every flow opened so far, by id.
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// Runs to `duration` (or until nothing is left to do).
    pub fn run(&mut self) -> Result<(), Error> {
        self.run_with_progress(false)
    }

    /// As `run`; with `progress`, a line on stderr every second of wall time: simulated time, events, rate.
    pub fn run_with_progress(&mut self, progress: bool) -> Result<(), Error> {
        self.run_with(&crate::RunOptions { progress, ..Default::default() })
    }

    /// As `run`, with a progress line (`opts.progress`), stopping with `Error::Interrupted` within 2^16 events
    /// (a few milliseconds) of `opts.cancel` being cancelled.
    pub fn run_with(&mut self, opts: &crate::RunOptions) -> Result<(), Error> {
        let progress = opts.progress;
        let cancel = &opts.cancel;
        let started = std::time::Instant::now();
        let mut last_print = 0u64;
        self.schedule(self.warmup, Event::WindowStart);
        if self.sample_interval > Time::ZERO {
            self.schedule(Time::ZERO, Event::Sample);
        }
        for (i, &t) in self.phases.clone().iter().enumerate() {
            self.schedule(t, Event::Phase { idx: i as u32 });
        }
        // The event budget, the cancel token and the progress line are looked at every 2^16 events, or at the
        // event past the budget if that comes first: one comparison per event in the hot loop.
        const EVERY: u64 = 1 << 16;
        let next_check =
            |done: u64, budget: u64| (done / EVERY + 1).saturating_mul(EVERY).min(budget.saturating_add(1));
        let mut check_at = next_check(self.events_processed, self.max_events);
        while let Some((t, ev)) = self.events.pop_until(self.duration) {
            self.now = t;
            self.events_processed += 1;
            if self.events_processed >= check_at {
                if self.events_processed > self.max_events {
                    return Err(Error::Run(format!(
                        "event budget exhausted: {} events by t = {} (limits.max_events)",
                        self.max_events, self.now
                    )));
                }
                // The token is an atomic load a few wall milliseconds apart (2.6 ms at 25 M events/s).
                if cancel.is_cancelled() {
                    return Err(Error::Interrupted);
                }
                if progress && self.events_processed.is_multiple_of(16 * EVERY) {
                    let secs = started.elapsed().as_secs();
                    if secs > last_print {
                        last_print = secs;
                        eprint!(
                            "\r\x1b[2K{:.3}/{:.3} s simulated, {} events, {:.1} M events/s",
                            self.now.as_secs_f64(),
                            self.duration.as_secs_f64(),
                            self.events_processed,
                            self.events_processed as f64 / started.elapsed().as_secs_f64() / 1e6
                        );
                    }
                }
                check_at = next_check(self.events_processed, self.max_events);
            }
            if !matches!(ev, Event::Sample | Event::Phase { .. } | Event::WindowStart) {
                self.traffic_end = t;
            }
            self.look_ahead();
            match ev {
                Event::TxDone { port } => self.tx_done(port),
                Event::Arrive { port, id, hop } => self.arrive(port, id, hop),
                Event::FlowTimer { flow } => self.flow_timer(flow),
                Event::NicReady { host } => self.nic_ready(host),
                Event::LateArrive { port } => self.late_arrive(port),
                Event::WindowStart => self.start_window(),
                Event::Workload { idx } => self.workload_event(idx),
                Event::Sample => self.sample(),
                Event::Phase { idx } => self.phase_snapshots[idx as usize] = Some(self.class_delivered.clone()),
                Event::Pfc { port, prio, pause } => self.pfc_frame(port, prio as usize, pause),
            }
            if let Some(e) = self.pfc_error.take() {
                return Err(Error::Run(format!("PFC: {e} (t = {})", self.now)));
            }
        }
        self.now = self.duration;
        self.catch_up_all();
        if progress && last_print > 0 {
            eprintln!();
        }
        Ok(())
    }

    /// Starts loading the first records the next event reads, while this one is handled: an arrival's packet
    /// header (written when the packet left, long since out of cache) and its link's next arrival (which
    /// joins the event order as it leaves: `EventQueue::peek_near`), a transmitter's port record. A hint only;
    /// handlers pushing an earlier event make it a wasted load.
    #[inline(always)]
    fn look_ahead(&self) {
        match self.events.peek_near() {
            Some(Event::Arrive { id, .. }) => self.pool.prefetch(id),
            Some(Event::TxDone { port }) => crate::packet::prefetch(&self.ports[port as usize]),
            _ => {}
        }
    }

    /// A packet the port put on the wire now goes onto its link (or its host's delay line).
    #[inline(always)]
    fn send(&mut self, port: u32, Departure { id, queue: q, marked, hop, arrives, wake, .. }: Departure) {
        let from_host = self.host_of_port(port).is_some();
        if !from_host {
            // A host's own packets never counted toward a switch's ingress (PFC's counts start at a switch).
            self.pfc_release(id);
        }
        if let Some(at) = wake {
            self.schedule(at, Event::TxDone { port });
        }
        if from_host {
            self.leave_host_port(port, arrives, id, hop);
        } else {
            self.put_on_link(port, arrives, id, hop);
        }
        if self.trace.is_some() {
            let kind = if marked { TraceKind::Mark } else { TraceKind::Dequeue };
            self.record(port, q, id, kind, if marked { "dequeue" } else { "" });
        }
    }

    /// Makes the departures a port deferred up to now (`port::may_defer_departures`), each at its own instant,
    /// as wake-ups would have made them. Every event that could see a departure comes here first: a packet
    /// offered to the port, the previous packet reaching the link's far end (never later than the departure's
    /// instant plus the link's delay, before the departed packet arrives), a sample, the window's start and
    /// the run's end, and every read of the port (`Sim::port`). A line orders its arrivals by when each joins
    /// the order, not by when it was pushed, so the events that follow are the same, in the same order, as
    /// with wake-ups.
    #[inline(always)]
    fn catch_up(&mut self, port: u32) {
        if self.ports[port as usize].owes_deferred() {
            self.catch_up_owed(port);
        }
    }

    fn catch_up_owed(&mut self, port: u32) {
        let now = self.now;
        while let Some(at) = self.ports[port as usize].take_due(now) {
            self.now = at;
            // As the wake-up's event would have (a sample or the run's end may be the first to see it).
            self.traffic_end = self.traffic_end.max(at);
            self.start_tx(port);
        }
        self.now = now;
    }

    /// The port caught up to now, for reading: every read of a port's backlog, counters or statistics goes
    /// through here (`Port::settled` refuses a port with a departure still due).
    #[inline(always)]
    fn port(&mut self, port: u32) -> Settled<'_> {
        self.catch_up(port);
        self.ports[port as usize].settled(self.now)
    }

    /// The wake-up a port asked for (`Departure::wake`): its transmission ended with packets waiting.
    fn tx_done(&mut self, port: u32) {
        self.ports[port as usize].wake(self.now);
        self.start_tx(port);
    }

    /// Sends the port's next packet if its transmitter is free, and accounts what its marker dropped at
    /// dequeue.
    fn start_tx(&mut self, port: u32) {
        let now = self.now;
        let p = &mut self.ports[port as usize];
        if !p.is_free(now) {
            return;
        }
        let shared = p.shared.map(|s| &mut self.pools[s as usize]);
        if let Some(departure) = p.depart(now, &mut self.pool, &mut self.fifos, shared, &mut self.drop_scratch) {
            self.send(port, departure);
        }
        while let Some((id, q, reason)) = self.drop_scratch.pop() {
            self.pfc_release(id);
            self.lossless_drop_check(port, id, reason);
            if self.trace.is_some() {
                self.record(port, q, id, TraceKind::Drop, reason.name());
            }
            self.pool.free(id);
            self.dropped += 1;
        }
        self.host_port_drained(port);
    }

    fn arrive(&mut self, port: u32, id: PacketId, hop: u32) {
        self.on_links -= 1;
        self.catch_up(port);
        self.deliver(port, id, hop);
    }

    /// Where a packet leaving by `port`'s link goes at its far end: the egress port at a switch (ECMP by a
    /// per-flow hash), `u32::MAX` at a host. Routing is a pure function of the packet, so a switch port does
    /// it as the packet joins its queue, while the header is in cache, and the FIFO keeps the answer for
    /// the departure.
    #[inline(always)]
    fn next_hop(&self, port: u32, id: PacketId) -> u32 {
        match self.far_end[port as usize] {
            Node::Switch(s) => {
                let pkt = self.pool.get(id);
                let hash = (pkt.flow as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.seed;
                self.net.route(s, pkt.dst, hash)
            }
            Node::Host(_) => u32::MAX,
        }
    }

    /// PFC: the packet reaches the far end of `port`'s link, which is its ingress there.
    #[inline(always)]
    fn set_ingress(&mut self, port: u32, id: PacketId) {
        if self.pfc.is_some() {
            self.pool.get_mut(id).ingress = port;
        }
    }

    /// A packet reaches the far end of `port`'s link: a switch queues it at `hop` (from `next_hop`), a host
    /// consumes it.
    fn deliver(&mut self, port: u32, id: PacketId, hop: u32) {
        match self.far_end[port as usize] {
            Node::Switch(_) => self.enqueue(hop, id),
            Node::Host(h) => {
                let (pkt, sack) = self.pool.take(id);
                self.consumed += 1;
                self.host_receive(h, pkt, &sack);
            }
        }
    }

    fn enqueue(&mut self, port: u32, id: PacketId) {
        self.catch_up(port);
        let hop = self.next_hop(port, id);
        let p = &mut self.ports[port as usize];
        let shared = p.shared.map(|s| &mut self.pools[s as usize]);
        let admit = p.offer(self.now, id, hop, &mut self.pool, &mut self.fifos, shared);
        match admit {
            Admit::Queued { queue, marked, wake } => {
                self.pfc_hold(id);
                if self.trace.is_some() {
                    let kind = if marked { TraceKind::Mark } else { TraceKind::Enqueue };
                    self.record(port, queue, id, kind, if marked { "enqueue" } else { "" });
                }
                if let Some(at) = wake {
                    self.schedule(at, Event::TxDone { port });
                } else {
                    self.start_tx(port);
                }
            }
            Admit::Sent(departure) => self.send(port, departure),
            Admit::Dropped(reason) => {
                self.lossless_drop_check(port, id, reason);
                if self.trace.is_some() {
                    let q = self.ports[port as usize].classify(self.pool.get(id).class);
                    self.record(port, q, id, TraceKind::Drop, reason.name());
                }
                self.pool.free(id);
                self.dropped += 1;
            }
        }
    }

    /// PFC: a lossless packet queued at a switch counts toward its ingress link's priority.
    #[inline]
    fn pfc_hold(&mut self, id: PacketId) {
        if self.pfc.is_some() {
            self.pfc_hold_lossless(id);
        }
    }

    fn pfc_hold_lossless(&mut self, id: PacketId) {
        let Some(pfc) = &mut self.pfc else { return };
        let p = self.pool.get(id);
        let prio = pfc::priority(p.class);
        if !pfc.is_lossless(prio) {
            return;
        }
        match pfc.arrive(p.ingress, prio, p.wire as u64) {
            Ok(Some(signal)) => self.send_pfc_frame(p.ingress, prio, signal),
            Ok(None) => {}
            Err(e) => self.pfc_error = Some(format!("{} ingress: {e}", self.net.ports[p.ingress as usize].name())),
        }
    }

    /// PFC: a lossless packet leaves its switch (sent or dropped).
    #[inline]
    fn pfc_release(&mut self, id: PacketId) {
        if self.pfc.is_some() {
            self.pfc_release_lossless(id);
        }
    }

    fn pfc_release_lossless(&mut self, id: PacketId) {
        let Some(pfc) = &mut self.pfc else { return };
        let p = self.pool.get(id);
        let prio = pfc::priority(p.class);
        if pfc.is_lossless(prio) {
            if let Some(signal) = pfc.depart(p.ingress, prio, p.wire as u64) {
                self.send_pfc_frame(p.ingress, prio, signal);
            }
        }
    }

    /// 802.1Qbb forbids dropping a lossless priority; a marker's drop verdict on one fails the run.
    fn lossless_drop_check(&mut self, port: u32, id: PacketId, reason: DropReason) {
        if self.ports[port as usize].lossless & (1 << pfc::priority(self.pool.get(id).class)) != 0 {
            self.pfc_error.get_or_insert_with(|| {
                format!(
                    "port {} dropped a packet of a lossless priority ({}): use a marking-only scheme with PFC",
                    self.net.ports[port as usize].name(),
                    reason.name()
                )
            });
        }
    }

    /// A PAUSE/RESUME frame travels back over the link whose transmitter is `link`.
    fn send_pfc_frame(&mut self, link: u32, prio: usize, signal: Signal) {
        let p = &self.ports[link as usize];
        let at = self.now + p.cfg.delay + p.tx_time(pfc::PAUSE_FRAME);
        self.schedule(at, Event::Pfc { port: link, prio: prio as u8, pause: signal == Signal::Pause });
    }

    /// A PAUSE/RESUME reaches a transmitter: a switch port stops or restarts serving the priority; a host NIC
    /// holds back its flows of that priority (what it has already committed still leaves).
    fn pfc_frame(&mut self, port: u32, prio: usize, pause: bool) {
        let signal = if pause { Signal::Pause } else { Signal::Resume };
        if !self.ports[port as usize].pfc_signal(self.now, prio, signal) || pause {
            return;
        }
        match self.net.ports[port as usize].from {
            Node::Switch(_) => self.start_tx(port),
            Node::Host(h) => self.nic_ready(h),
        }
    }

    /// A host puts a packet on its egress port: a NIC sends it at once (its departure is known), a port like a
    /// switch's queues it.
    #[inline(always)]
    fn send_from_host(&mut self, host: u32, pkt: Packet, sack: &Sack) {
        let id = self.pool.alloc_with_sack(pkt, sack);
        self.injected += 1;
        let port = self.net.host_port[host as usize];
        self.enqueue(port, id);
    }

    /// RTT variation (DESIGN): the extra one-way delay of a flow's data and SYNs, added after its host's port.
    #[inline(always)]
    fn extra_delay(&self, pkt: &Packet) -> Time {
        if !self.any_extra_delay {
            return Time::ZERO;
        }
        match pkt.kind {
            Kind::Data | Kind::Syn => self.flows.get(pkt.flow as usize).map_or(Time::ZERO, |f| f.extra_delay),
            _ => Time::ZERO,
        }
    }

    /// A delayed packet of a host's link reaches the far end `at`. Flows with different delays leave their host
    /// out of order, so the link's delayed packets wait in a line ordered by time, with one `LateArrive`.
    fn delay_line(&mut self, port: u32, at: Time, id: PacketId) {
        self.late_seq += 1;
        let p = &mut self.ports[port as usize];
        p.late.push(std::cmp::Reverse((at, self.late_seq, id)));
        if at < p.late_pending {
            p.late_pending = at;
            self.schedule(at, Event::LateArrive { port });
        }
    }

    /// A packet enters `port`'s link, reaching its far end `at` and going on to `hop` there (`next_hop`). The
    /// link is a FIFO with one pending event, its head's (DESIGN "Links"): its arrivals are a line of the
    /// event queue.
    #[inline(always)]
    fn put_on_link(&mut self, port: u32, at: Time, id: PacketId, hop: u32) {
        self.set_ingress(port, id);
        self.on_links += 1;
        self.events.push_in_line(at, Event::Arrive { port, id, hop });
    }

    /// Packets of RTT-varied flows reach the far end of their host's link.
    fn late_arrive(&mut self, port: u32) {
        let now = self.now;
        let p = &mut self.ports[port as usize];
        if p.late_pending == now {
            p.late_pending = Time::MAX;
        }
        while let Some(&std::cmp::Reverse((at, _, id))) = self.ports[port as usize].late.peek() {
            if at > now {
                let p = &mut self.ports[port as usize];
                if at < p.late_pending {
                    p.late_pending = at;
                    self.schedule(at, Event::LateArrive { port });
                }
                break;
            }
            self.ports[port as usize].late.pop();
            self.set_ingress(port, id);
            let hop = self.next_hop(port, id);
            self.deliver(port, id, hop);
        }
    }

    fn host_receive(&mut self, host: u32, pkt: Packet, sack: &Sack) {
        match pkt.kind {
            Kind::ProbeRequest => {
                // A probe's `flow` names its workload, which knows where the request came from.
                let origin = self.probe_origin(pkt.flow).expect("a probe request names its probe workload");
                let reply = Packet { kind: Kind::ProbeReply, dst: origin, ..pkt };
                self.send_from_host(host, reply, &Sack::NONE);
            }
            Kind::ProbeReply => self.probe_reply(pkt),
            Kind::Request => {
                self.on_request(pkt.flow, pkt.seq);
                self.pump(pkt.flow);
            }
            Kind::Data | Kind::Syn => {
                let f = &mut self.flows[pkt.flow as usize];
                let before = f.receiver.rcv_nxt();
                f.receiver.on_packet(self.now, &pkt, f.size);
                let after = f.receiver.rcv_nxt();
                self.class_delivered[f.addr.class as usize] += after - before;
                if after >= f.notify_at {
                    self.on_delivered(pkt.flow);
                    self.pump(pkt.flow);
                } else if self.receiver_events_leave_senders {
                    self.pump_side(pkt.flow, Side::Receiver);
                } else {
                    self.pump(pkt.flow);
                }
            }
            Kind::Ack | Kind::SynAck | Kind::Nack | Kind::Cnp => {
                let f = &mut self.flows[pkt.flow as usize];
                f.sender.on_packet(self.now, &pkt, sack);
                if self.fct_acked && f.acked.is_none() && f.size.is_some() && f.sender.all_acked() {
                    f.acked = Some(self.now);
                }
                if let Some(r) = f.sender.take_rtt_sample() {
                    if self.now >= self.warmup {
                        self.class_rtt[f.addr.class as usize].add(r.0, 1);
                        self.all_rtt.add(r.0, 1);
                        if let Some(s) = &mut self.rtt_series {
                            s.rows.push(vec![
                                self.now.as_secs_f64(),
                                pkt.flow as f64,
                                f.addr.class as f64,
                                r.as_us_f64(),
                            ]);
                        }
                    }
                }
                self.pump_side(pkt.flow, Side::Sender);
            }
        }
    }

    /// The receiver reached `notify_at`: a flow completed or an incast block arrived.
    fn on_delivered(&mut self, flow: u32) {
        let now = self.now;
        let f = &mut self.flows[flow as usize];
        f.notify_at = u64::MAX;
        if f.size.is_some_and(|s| f.receiver.rcv_nxt() >= s) && f.finish.is_none() {
            f.finish = Some(now);
            f.receiver.flush(now);
        }
        let w = f.workload;
        self.workload_delivered(w, flow);
    }

    /// Drains both endpoints of a flow onto the wire and keeps one timer event pending for it.
    fn pump(&mut self, flow: u32) {
        self.drain_sender(flow);
        self.drain_receiver(flow);
        self.arm_flow_timer(flow);
    }

    /// `pump` after an event that changed only one endpoint of the flow. Every event that changes an endpoint
    /// drains it, so the other has nothing to send: a receiver sends only what its own events queued (its
    /// `poll_transmit` reads no clock), and whether a TCP sender sends depends on its window and the
    /// application's writes, changed only by its own events (ACKs, timers, the application). Draining the other
    /// would send nothing and change nothing: always so for a receiver; for a sender only where its checks
    /// before polling cannot hold it back either (`receiver_events_leave_senders`).
    fn pump_side(&mut self, flow: u32, changed: Side) {
        match changed {
            Side::Sender => self.drain_sender(flow),
            Side::Receiver => self.drain_receiver(flow),
        }
        self.arm_flow_timer(flow);
    }

    /// The sender's packets onto the wire, while its host's port takes them and PFC does not pause it.
    fn drain_sender(&mut self, flow: u32) {
        let now = self.now;
        loop {
            let f = &self.flows[flow as usize];
            let host = f.addr.src;
            if f.nic_blocked {
                break;
            }
            if self.nic_full(host) {
                self.block_on_nic(host, flow);
                break;
            }
            if self.flow_paused(flow) {
                self.hold_flow(host, flow); // RESUME wakes it
                break;
            }
            let f = &mut self.flows[flow as usize];
            let Some(p) = f.sender.poll_transmit(now) else {
                break;
            };
            if p.kind == Kind::Data && f.first_data.is_none() {
                f.first_data = Some(now);
            }
            let src = f.addr.src;
            self.send_from_host(src, p, &Sack::NONE);
        }
    }

    /// The receiver's ACKs (and RoCE's CNPs) onto the wire.
    fn drain_receiver(&mut self, flow: u32) {
        loop {
            let f = &mut self.flows[flow as usize];
            let Some((p, sack)) = f.receiver.poll_transmit() else {
                break;
            };
            let dst = f.addr.dst;
            self.send_from_host(dst, p, &sack);
        }
    }

    /// Whether the host's NIC holds more than `tsq_limit` bytes not yet sent (a port like a switch's: in its
    /// queues).
    fn nic_full(&mut self, host: u32) -> bool {
        let limit = self.tsq_limit;
        self.port(self.net.host_port[host as usize]).holds_more_than(limit)
    }

    /// PFC paused the priority of the flow's data at its host's NIC.
    fn flow_paused(&self, flow: u32) -> bool {
        let f = &self.flows[flow as usize];
        let port = &self.ports[self.net.host_port[f.addr.src as usize] as usize];
        port.pause.paused != 0 && port.pause.is_paused(pfc::priority(f.addr.class))
    }

    /// The flow waits for its host's NIC to drain below `tsq_limit`.
    fn block_on_nic(&mut self, host: u32, flow: u32) {
        self.hold_flow(host, flow);
        self.wake_when_nic_drains(host);
    }

    /// The flow joins its host's queue of flows waiting to send.
    fn hold_flow(&mut self, host: u32, flow: u32) {
        self.flows[flow as usize].nic_blocked = true;
        self.hosts[host as usize].blocked.push_back(flow);
    }

    /// One pending wake-up per host, when the NIC backlog falls to `tsq_limit` (a port like a switch's: at
    /// the dequeue that brings it there, `host_port_drained`).
    fn wake_when_nic_drains(&mut self, host: u32) {
        if std::mem::replace(&mut self.hosts[host as usize].wake_pending, true) {
            return;
        }
        let limit = self.tsq_limit;
        if let Some(at) = self.port(self.net.host_port[host as usize]).drained_to(limit) {
            self.schedule(at, Event::NicReady { host });
        }
    }

    /// A host port like a switch's sent a packet, reaching the far end `at` (later under RTT variation).
    fn leave_host_port(&mut self, port: u32, at: Time, id: PacketId, hop: u32) {
        let extra = self.extra_delay(self.pool.get(id));
        if extra > Time::ZERO {
            self.delay_line(port, at + extra, id);
        } else {
            self.put_on_link(port, at, id, hop);
        }
    }

    /// A port dequeued (sent, or dropped at dequeue): if it is a host's like a switch's, and its host waits for
    /// the backlog to fall to `tsq_limit` and it has, the host's blocked flows go on at this instant.
    #[inline]
    fn host_port_drained(&mut self, port: u32) {
        let Some(host) = self.host_of_port(port) else { return };
        let h = &self.hosts[host as usize];
        if h.wake_pending && !h.waking && self.port(port).port_bytes() <= self.tsq_limit.0 {
            self.hosts[host as usize].waking = true;
            self.schedule(self.now, Event::NicReady { host });
        }
    }

    /// The NIC drained: blocked flows send again, in the order they blocked, until it fills up.
    fn nic_ready(&mut self, host: u32) {
        self.hosts[host as usize].wake_pending = false;
        self.hosts[host as usize].waking = false;
        while let Some(&flow) = self.hosts[host as usize].blocked.front() {
            if self.nic_full(host) {
                self.wake_when_nic_drains(host);
                break;
            }
            if self.flow_paused(flow) {
                break; // RESUME wakes the host again
            }
            self.hosts[host as usize].blocked.pop_front();
            self.flows[flow as usize].nic_blocked = false;
            self.pump(flow);
        }
    }

    fn arm_flow_timer(&mut self, flow: u32) {
        let f = &mut self.flows[flow as usize];
        let never = Time::MAX;
        let app = f.app.map_or(never, |a| a.next);
        let t = f.sender.next_timer().unwrap_or(never).min(f.receiver.next_timer().unwrap_or(never)).min(app);
        if t < f.timer_pending {
            f.timer_pending = t;
            self.schedule(t, Event::FlowTimer { flow });
        }
    }

    fn flow_timer(&mut self, flow: u32) {
        let now = self.now;
        let mss = self.tcp.mss as u64;
        let f = &mut self.flows[flow as usize];
        if f.timer_pending == now {
            f.timer_pending = Time::MAX;
        }
        if let Some(app) = &mut f.app {
            while app.next <= now && !f.sender.is_closed() {
                let chunk = app.total.map_or(mss, |t| mss.min(t - f.sender.written()));
                f.sender.write(chunk);
                app.next += app.interval;
                if app.total.is_some_and(|t| f.sender.written() >= t) {
                    f.sender.close();
                }
            }
            if f.sender.is_closed() {
                f.app = None;
            }
        }
        f.sender.on_timer(now);
        f.receiver.on_timer(now);
        self.pump(flow);
    }

    /// Opens a flow: both endpoints, the base RTT, and its first transmissions. `rtt_target`: the
    /// flow's end-to-end base RTT under RTT variation; the sender delays its packets by the difference to
    /// the fabric's base RTT (DESIGN "RTT variation"). `on`: an earlier flow whose connection, now idle,
    /// carries this one (its sender's congestion state goes on); `None`: a new connection.
    #[allow(clippy::too_many_arguments)]
    fn open_flow(
        &mut self,
        workload: u32,
        src: u32,
        dst: u32,
        class: u8,
        size: Option<u64>,
        rate: Option<Rate>,
        rtt_target: Option<Time>,
        on: Option<u32>,
    ) -> u32 {
        let id = self.flows.len() as u32;
        let addr = FlowAddr { flow: id, src, dst, class };
        let line = self.ports[self.net.host_port[src as usize] as usize].cfg.rate;
        let resumed = on.and_then(|f| self.flows[f as usize].sender.resume(addr));
        debug_assert_eq!(resumed.is_some(), on.is_some(), "validation keeps RoCE off persistent connections");
        let mut sender = resumed.unwrap_or_else(|| Sender::new(self.tcp.clone(), addr, line));
        match (size, rate) {
            (_, Some(_)) => {} // the application paces its writes (flow_timer)
            (Some(s), None) => {
                sender.write(s);
                sender.close();
            }
            (None, None) if workload_is_bulk(&self.workloads[workload as usize]) => sender.write(u64::MAX / 4),
            (None, None) => {} // written on request (incast)
        }
        let mss = self.tcp.mss as u64;
        let app = rate.map(|r| {
            let interval = r.tx_time(Bytes(mss + crate::packet::HEADER_BYTES as u64));
            AppRate { interval, next: self.now, total: size }
        });
        let mtu = Bytes(self.tcp.mss as u64 + crate::packet::HEADER_BYTES as u64);
        let fabric_rtt = self.net.base_rtt(src, dst, mtu, Bytes(crate::packet::HEADER_BYTES as u64));
        let extra_delay = rtt_target.map_or(Time::ZERO, |t| t.saturating_sub(fabric_rtt));
        self.any_extra_delay |= extra_delay > Time::ZERO;
        self.flows.push(Flow {
            addr,
            size,
            start: self.now,
            first_data: None,
            finish: None,
            acked: None,
            receiver: Receiver::new(&self.tcp, addr),
            sender,
            base_rtt: fabric_rtt + extra_delay,
            extra_delay,
            workload,
            notify_at: size.unwrap_or(u64::MAX),
            app,
            timer_pending: Time::MAX,
            nic_blocked: false,
            delivered_at_warmup: 0,
        });
        if app.is_some() {
            self.flow_timer(id);
        } else {
            self.pump(id);
        }
        id
    }

    /// `catch_up` on every port.
    fn catch_up_all(&mut self) {
        for port in 0..self.ports.len() as u32 {
            self.catch_up(port);
        }
    }

    fn start_window(&mut self) {
        self.catch_up_all();
        let now = self.now;
        for p in &mut self.ports {
            p.start_window(now);
        }
        for p in &mut self.pools {
            p.occupancy.reset(now);
        }
        for f in &mut self.flows {
            f.delivered_at_warmup = f.receiver.rcv_nxt();
        }
        self.class_delivered_at_warmup = self.class_delivered.clone();
    }

    fn record(&mut self, port: u32, queue: usize, id: PacketId, kind: TraceKind, reason: &'static str) {
        let spec = self.trace.as_ref().expect("tracing on");
        let p = self.pool.get(id);
        if !spec.accepts(self.now, port, p.flow) {
            return;
        }
        let (flow, seq, wire, time) = (p.flow, p.seq, p.wire, self.now);
        let pt = self.port(port);
        let (queue_bytes, port_bytes) = (pt.queue_bytes(queue), pt.port_bytes());
        let queue = queue as u8;
        let record = TraceRecord { time, port, queue, kind, reason, flow, seq, wire, queue_bytes, port_bytes };
        self.trace_records.push(record);
    }

    fn sample(&mut self) {
        let t = self.now.as_secs_f64();
        let mut row = vec![t];
        for i in 0..self.watched_ports.len() {
            row.extend(self.port(self.watched_ports[i]).queue_backlogs().map(|b| b as f64));
        }
        self.series[0].rows.push(row);
        let mut row = vec![t];
        let n = self.series[1].columns.len() - 1;
        row.extend(self.class_delivered[..n].iter().map(|&b| b as f64));
        self.series[1].rows.push(row);
        if !self.cwnd_flows.is_empty() {
            let mut row = vec![t];
            for &f in &self.cwnd_flows {
                row.push(self.flows.get(f as usize).map_or(0.0, |f| f.sender.window_sample()));
            }
            self.series[2].rows.push(row);
        }
        self.schedule(self.now + self.sample_interval, Event::Sample);
    }

    /// Conservation at the end of a run: every packet a host injected was consumed by a host, dropped, or is
    /// still queued or on a link (a packet being sent is already on its link).
    pub fn check_conservation(&mut self) -> Result<(), String> {
        let now = self.now;
        let in_network: u64 = self.on_links
            + self.ports.iter_mut().map(|p| p.late.len() as u64 + p.settled(now).queued_pkts()).sum::<u64>();
        if self.injected != self.consumed + self.dropped + in_network {
            return Err(format!(
                "injected {} ≠ consumed {} + dropped {} + in network {} (pool live {})",
                self.injected,
                self.consumed,
                self.dropped,
                in_network,
                self.pool.live()
            ));
        }
        if self.pool.live() as u64 != in_network {
            return Err(format!("pool holds {} packets, network {}", self.pool.live(), in_network));
        }
        for (i, p) in self.ports.iter_mut().enumerate() {
            // The queues derive their arrivals from what they sent, dropped and hold; the port counts its own.
            let p = p.settled(now);
            let c = p.counters();
            if p.arrived_pkts() != c.arrived_pkts {
                return Err(format!(
                    "port {}: arrived {} ≠ dropped {} + queued {} + sent {}",
                    self.net.ports[i].name(),
                    p.arrived_pkts(),
                    c.total_drops(),
                    p.queued_pkts(),
                    c.sent_pkts
                ));
            }
        }
        Ok(())
    }
}

fn workload_is_bulk(w: &WorkloadState) -> bool {
    matches!(w, WorkloadState::Flows { .. })
}

/// The RNG stream for workload `idx`, item `i`.
fn item_rng(seed: u64, idx: u32, i: u64) -> Rng {
    Rng::stream(seed, crate::engine::rng::key::WORKLOAD + ((idx as u64) << 24) + i)
}

#[cfg(test)]
mod tests;
