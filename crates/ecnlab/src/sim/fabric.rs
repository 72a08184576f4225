//! The network a packet crosses between two hosts: ports, links and their lines of arrivals, the packet pool,
//! switches' shared buffers, PFC and the packet trace. Hosts hand it packets and take delivery of them.

use super::clock::Clock;
use super::report::{counters, occupancy, TraceSpec};
use super::summary::{FirstMark, PfcSummary, PoolSummary, PortSummary, QueueSummary};
use crate::engine::{rng::key, Event, Rng};
use crate::error::Error;
use crate::mark::DropReason;
use crate::net::pfc::{self, Pfc, PfcConfig, Signal};
use crate::net::{Network, Node};
use crate::observe::{TraceKind, TraceRecord};
use crate::packet::{Kind, Packet, PacketId, PacketPool, Sack};
use crate::port::{
    may_defer_departures, Admit, Counters, Departure, FifoPool, HostSide, Port, Settled, SharedBuffer, Surroundings,
};
use crate::scenario::{Egress, PortSettings, Scenario, Workload};
use crate::units::{Bytes, Time};
use std::collections::BTreeMap;

/// `Fabric::port_host` of a switch's port.
const NOT_A_HOST: u32 = u32::MAX;

/// Where a packet went at the far end of a link (`Fabric::arrive`).
pub(super) enum Reached {
    /// A switch queued, sent or dropped it.
    Switch,
    /// A host took delivery of it.
    Host(u32, Packet, Sack),
}

pub(super) struct Fabric {
    net: Network,
    ports: Vec<Port>,
    /// Shared buffer pools, one per switch, when configured.
    pools: Vec<SharedBuffer>,
    pool: PacketPool,
    /// Every switch queue's FIFO entries.
    fifos: FifoPool,
    /// Where port i's outgoing link leads. The packets on it are the `Arrive` events of its line in the clock.
    far_end: Vec<Node>,
    /// Per port: the host it leaves (a NIC, or a port like a switch's), or `NOT_A_HOST` (a switch's). Dense, so
    /// a departure's test stays in cache.
    port_host: Vec<u32>,
    /// RTT variation (DESIGN): per flow, the delay its host's link adds to its data and SYNs (empty until a
    /// flow has one).
    flow_delay: Vec<Time>,
    /// Some flow has an extra delay: until then no packet leaving a host looks one up.
    any_flow_delay: bool,
    /// ECMP's hash salt.
    seed: u64,
    /// Packets on links (each with its `Arrive` in the clock).
    on_links: u64,
    late_seq: u64,
    drop_scratch: Vec<(PacketId, usize, DropReason)>,
    /// Packets injected by hosts and consumed by hosts, for the conservation check.
    injected: u64,
    consumed: u64,
    dropped: u64,
    /// Ingress accounting when `switch.pfc` is on.
    pfc: Option<Pfc>,
    /// The first PFC violation (headroom exceeded, lossless packet dropped): fails the run.
    pfc_error: Option<String>,
    trace: Option<TraceSpec>,
    trace_records: Vec<TraceRecord>,
}

impl Fabric {
    /// The topology with every port built from its settings (switch defaults, host ports like a switch's,
    /// overrides by name), and the ports `observe` samples.
    pub(super) fn new(sc: &Scenario) -> Result<(Fabric, Vec<u32>), Error> {
        let hosts = sc.topology.host_count();
        let (switches, links) = sc.topology.links();
        let net = Network::build(hosts as usize, switches as usize, &links, sc.mtu)
            .map_err(|e| Error::config("topology", e))?;
        let mut settings: Vec<Option<PortSettings>> = net
            .ports
            .iter()
            .map(|p| sc.queueing_port(p.from).then(|| sc.port_settings(matches!(p.from, Node::Switch(_)), None)))
            .collect();
        for (i, o) in sc.ports.iter().enumerate() {
            let id = net.port_by_name(&o.port).ok_or_else(|| {
                Error::config(format!("ports.{i}.port"), format!("no port named `{}` (names look like s0->h0)", o.port))
            })?;
            if settings[id as usize].is_none() {
                return Err(Error::config(
                    format!("ports.{i}.port"),
                    "host NIC ports are not configurable (unless hosts.egress = \"switch\")",
                ));
            }
            let at_switch = matches!(net.ports[id as usize].from, Node::Switch(_));
            settings[id as usize] = Some(sc.port_settings(at_switch, Some(o)));
        }
        let watched: Vec<u32> = if sc.observe.ports.is_empty() {
            (0..net.ports.len() as u32).filter(|&p| settings[p as usize].is_some()).collect()
        } else {
            sc.observe
                .ports
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    net.port_by_name(n)
                        .ok_or_else(|| Error::config(format!("observe.ports.{i}"), format!("no port named `{n}`")))
                })
                .collect::<Result<_, _>>()?
        };
        // Watched ports as a mask: every switch port is watched by default, and a search per port would cost
        // ports².
        let mut is_watched = vec![false; net.ports.len()];
        watched.iter().for_each(|&p| is_watched[p as usize] = true);
        let mut ports = Vec::with_capacity(net.ports.len());
        for (i, spec) in net.ports.iter().enumerate() {
            let hist = sc.observe.occupancy_quantiles && is_watched[i];
            let port = match &settings[i] {
                Some(s) => build_port(sc, i, spec, s, hist)?,
                // A host NIC: a FIFO at line rate that never marks or drops (the transport bounds it).
                None => Port::nic(spec.rate, spec.delay, spec.mtu),
            };
            ports.push(port);
        }
        let trace = match &sc.observe.trace {
            None => None,
            Some(t) => Some(TraceSpec::new(t, &net, &settings)?),
        };
        let pfc = sc.switch.pfc.as_ref().map(|c| pfc_state(c, &net, sc));
        let rtt_varies = sc.workloads.iter().any(|w| matches!(w, Workload::Poisson { rtt: Some(_), .. }));
        for (spec, port) in net.ports.iter().zip(&mut ports) {
            let around = Surroundings {
                shared_buffer: port.shared.is_some(),
                pfc: pfc.is_some(),
                traced: trace.is_some(),
                passes_idle: port.passes_idle(),
                host: match spec.from {
                    Node::Switch(_) => None,
                    Node::Host(_) => {
                        Some(HostSide { senders_may_wait: !never_fills(sc, port), delay_line: rtt_varies })
                    }
                },
            };
            port.set_deferred_departures(may_defer_departures(&around));
        }
        let fabric = Fabric {
            pools: match &sc.switch.pool {
                Some(p) => (0..switches).map(|_| SharedBuffer::new(p.size.0, p.alpha.clone())).collect(),
                None => Vec::new(),
            },
            pool: PacketPool::default(),
            fifos: FifoPool::new(),
            ports,
            far_end: net.ports.iter().map(|spec| spec.to).collect(),
            port_host: net
                .ports
                .iter()
                .map(|p| match p.from {
                    Node::Host(h) => h,
                    Node::Switch(_) => NOT_A_HOST,
                })
                .collect(),
            flow_delay: Vec::new(),
            any_flow_delay: false,
            seed: sc.seed,
            on_links: 0,
            late_seq: 0,
            drop_scratch: Vec::new(),
            injected: 0,
            consumed: 0,
            dropped: 0,
            pfc,
            pfc_error: None,
            trace,
            trace_records: Vec::new(),
            net,
        };
        Ok((fabric, watched))
    }

    /// Whether no host's port ever holds more than `hosts.tsq_limit` (only a port like a switch's with a
    /// buffer that small): then no flow ever waits for its host's port to drain.
    pub(super) fn host_ports_never_fill(&self, sc: &Scenario) -> bool {
        self.net
            .ports
            .iter()
            .zip(&self.ports)
            .all(|(spec, port)| matches!(spec.from, Node::Switch(_)) || never_fills(sc, port))
    }

    pub(super) fn has_pfc(&self) -> bool {
        self.pfc.is_some()
    }

    pub(super) fn net(&self) -> &Network {
        &self.net
    }

    pub(super) fn port_count(&self) -> u32 {
        self.ports.len() as u32
    }

    /// A port's marker, its configuration and name, read without catching it up (none of them move with its
    /// departures).
    pub(super) fn raw(&self, port: u32) -> &Port {
        &self.ports[port as usize]
    }

    /// Before the run: replaces a port's marker, or turns its fast paths off (`Sim::without_fast_paths`).
    pub(super) fn raw_mut(&mut self, port: u32) -> &mut Port {
        &mut self.ports[port as usize]
    }

    /// Every host-port departure reads its flow's extra delay, whether any flow has one or not (a fast path
    /// off: `Sim::without_fast_paths`).
    pub(super) fn always_look_up_flow_delays(&mut self) {
        self.any_flow_delay = true;
    }

    /// The egress port of `host`.
    #[inline(always)]
    pub(super) fn host_port(&self, host: u32) -> u32 {
        self.net.host_port[host as usize]
    }

    /// The host whose egress `port` is, if it is a host's.
    #[inline(always)]
    pub(super) fn host_of_port(&self, port: u32) -> Option<u32> {
        Some(self.port_host[port as usize]).filter(|&h| h != NOT_A_HOST)
    }

    /// RTT variation: the flow's data and SYNs reach the far end of its host's link `delay` later.
    pub(super) fn set_flow_delay(&mut self, flow: u32, delay: Time) {
        if delay > Time::ZERO {
            if self.flow_delay.len() <= flow as usize {
                self.flow_delay.resize(flow as usize + 1, Time::ZERO);
            }
            self.flow_delay[flow as usize] = delay;
            self.any_flow_delay = true;
        }
    }

    /// PFC paused the priority of `class` at `host`'s egress.
    pub(super) fn host_paused(&self, host: u32, class: u8) -> bool {
        let port = &self.ports[self.host_port(host) as usize];
        port.pause.paused != 0 && port.pause.is_paused(pfc::priority(class))
    }

    /// Starts loading what the next event reads first, while this one is handled (`Sim::look_ahead`).
    #[inline(always)]
    pub(super) fn prefetch(&self, next: Option<Event>) {
        match next {
            Some(Event::Arrive { id, .. }) => self.pool.prefetch(id),
            Some(Event::TxDone { port }) => crate::packet::prefetch(&self.ports[port as usize]),
            _ => {}
        }
    }

    /// The first PFC violation, once: it fails the run.
    #[inline(always)]
    pub(super) fn take_pfc_error(&mut self) -> Option<String> {
        self.pfc_error.take()
    }

    /// The port caught up to now, for reading: every read of a port's backlog, counters or statistics goes
    /// through here (`Port::settled` refuses a port with a departure still due).
    #[inline(always)]
    pub(super) fn port(&mut self, clk: &mut Clock, port: u32) -> Settled<'_> {
        self.catch_up(clk, port);
        self.ports[port as usize].settled(clk.now())
    }

    /// Makes the departures a port deferred up to now (`port::may_defer_departures`), each at its own instant,
    /// as wake-ups would have made them. Every event that could see a departure comes here first: a packet
    /// offered to the port, the previous packet reaching the link's far end (never later than the departure's
    /// instant plus the link's delay, before the departed packet arrives), a sample, the window's start and
    /// the run's end, and every read of the port (`Fabric::port`). A line orders its arrivals by when each
    /// joins the order, not by when it was pushed, so the events that follow are the same, in the same order,
    /// as with wake-ups. A port that defers has no host waiting for it to drain (`HostSide::senders_may_wait`
    /// is false there), so nothing beyond the fabric hears of these departures.
    #[inline(always)]
    fn catch_up(&mut self, clk: &mut Clock, port: u32) {
        if self.ports[port as usize].owes_deferred() {
            self.catch_up_owed(clk, port);
        }
    }

    fn catch_up_owed(&mut self, clk: &mut Clock, port: u32) {
        let now = clk.now();
        while let Some(at) = self.ports[port as usize].take_due(now) {
            clk.set(at);
            // As the wake-up's event would have (a sample or the run's end may be the first to see it).
            clk.traffic_at(at);
            self.start_tx(clk, port);
        }
        clk.set(now);
    }

    /// `catch_up` on every port.
    pub(super) fn catch_up_all(&mut self, clk: &mut Clock) {
        for port in 0..self.ports.len() as u32 {
            self.catch_up(clk, port);
        }
    }

    /// The wake-up a port asked for (`Departure::wake`): its transmission ended with packets waiting. True:
    /// the port dequeued (`start_tx`).
    pub(super) fn tx_done(&mut self, clk: &mut Clock, port: u32) -> bool {
        self.ports[port as usize].wake(clk.now());
        self.start_tx(clk, port)
    }

    /// Sends the port's next packet if its transmitter is free, and accounts what its marker dropped at
    /// dequeue. True when the transmitter was free (the port dequeued, or had nothing to send).
    fn start_tx(&mut self, clk: &mut Clock, port: u32) -> bool {
        let now = clk.now();
        let p = &mut self.ports[port as usize];
        if !p.is_free(now) {
            return false;
        }
        let shared = p.shared.map(|s| &mut self.pools[s as usize]);
        if let Some(departure) = p.depart(now, &mut self.pool, &mut self.fifos, shared, &mut self.drop_scratch) {
            self.send(clk, port, departure);
        }
        while let Some((id, q, reason)) = self.drop_scratch.pop() {
            self.pfc_release(clk, id);
            self.lossless_drop_check(port, id, reason);
            if self.trace.is_some() {
                self.record(clk, port, q, id, TraceKind::Drop, reason.name());
            }
            self.pool.free(id);
            self.dropped += 1;
        }
        true
    }

    /// A packet the port put on the wire now goes onto its link (or its host's delay line).
    #[inline(always)]
    fn send(
        &mut self,
        clk: &mut Clock,
        port: u32,
        Departure { id, queue: q, marked, hop, arrives, wake, .. }: Departure,
    ) {
        let from_host = self.host_of_port(port).is_some();
        if !from_host {
            // A host's own packets never counted toward a switch's ingress (PFC's counts start at a switch).
            self.pfc_release(clk, id);
        }
        if let Some(at) = wake {
            clk.schedule(at, Event::TxDone { port });
        }
        let extra = if from_host { self.flow_delay(self.pool.get(id)) } else { Time::ZERO };
        if extra > Time::ZERO {
            self.delay_line(clk, port, arrives + extra, id);
        } else {
            self.put_on_link(clk, port, arrives, id, hop);
        }
        if self.trace.is_some() {
            let kind = if marked { TraceKind::Mark } else { TraceKind::Dequeue };
            self.record(clk, port, q, id, kind, if marked { "dequeue" } else { "" });
        }
    }

    /// RTT variation (DESIGN): the extra one-way delay of a flow's data and SYNs, added after its host's port.
    #[inline(always)]
    fn flow_delay(&self, pkt: &Packet) -> Time {
        if !self.any_flow_delay {
            return Time::ZERO;
        }
        match pkt.kind {
            Kind::Data | Kind::Syn => self.flow_delay.get(pkt.flow as usize).copied().unwrap_or(Time::ZERO),
            _ => Time::ZERO,
        }
    }

    /// A delayed packet of a host's link reaches the far end `at`. Flows with different delays leave their host
    /// out of order, so the link's delayed packets wait in a line ordered by time, with one `LateArrive`.
    fn delay_line(&mut self, clk: &mut Clock, port: u32, at: Time, id: PacketId) {
        self.late_seq += 1;
        let p = &mut self.ports[port as usize];
        p.late.push(std::cmp::Reverse((at, self.late_seq, id)));
        if at < p.late_pending {
            p.late_pending = at;
            clk.schedule(at, Event::LateArrive { port });
        }
    }

    /// A packet enters `port`'s link, reaching its far end `at` and going on to `hop` there (`next_hop`). The
    /// link is a FIFO with one pending event, its head's (DESIGN "Links"): its arrivals are a line of the
    /// event queue.
    #[inline(always)]
    fn put_on_link(&mut self, clk: &mut Clock, port: u32, at: Time, id: PacketId, hop: u32) {
        self.set_ingress(port, id);
        self.on_links += 1;
        clk.push_in_line(at, Event::Arrive { port, id, hop });
    }

    /// A packet on `port`'s link reaches its far end.
    #[inline(always)]
    pub(super) fn arrive(&mut self, clk: &mut Clock, port: u32, id: PacketId, hop: u32) -> Reached {
        self.on_links -= 1;
        self.catch_up(clk, port);
        self.deliver(clk, port, id, hop)
    }

    /// The next packet of `port`'s delay line due by now (RTT variation), delivered at the far end of its link;
    /// `None` when no more is due (the line's next `LateArrive` is then scheduled).
    pub(super) fn late_arrival(&mut self, clk: &mut Clock, port: u32) -> Option<Reached> {
        let now = clk.now();
        let p = &mut self.ports[port as usize];
        if p.late_pending == now {
            p.late_pending = Time::MAX;
        }
        let &std::cmp::Reverse((at, _, id)) = p.late.peek()?;
        if at > now {
            if at < p.late_pending {
                p.late_pending = at;
                clk.schedule(at, Event::LateArrive { port });
            }
            return None;
        }
        p.late.pop();
        self.set_ingress(port, id);
        let hop = self.next_hop(port, id);
        Some(self.deliver(clk, port, id, hop))
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
    /// takes it.
    #[inline(always)]
    fn deliver(&mut self, clk: &mut Clock, port: u32, id: PacketId, hop: u32) -> Reached {
        match self.far_end[port as usize] {
            Node::Switch(_) => {
                self.enqueue(clk, hop, id);
                Reached::Switch
            }
            Node::Host(h) => {
                let (pkt, sack) = self.pool.take(id);
                self.consumed += 1;
                Reached::Host(h, pkt, sack)
            }
        }
    }

    /// A host puts a packet on its egress port: a NIC sends it at once (its departure is known), a port like a
    /// switch's queues it. True when the port dequeued (`start_tx`).
    #[inline(always)]
    pub(super) fn send_from_host(&mut self, clk: &mut Clock, host: u32, pkt: Packet, sack: &Sack) -> bool {
        let id = self.pool.alloc_with_sack(pkt, sack);
        self.injected += 1;
        let port = self.host_port(host);
        self.enqueue(clk, port, id)
    }

    /// Offers a packet to a port. True when the port dequeued at once (`start_tx`).
    fn enqueue(&mut self, clk: &mut Clock, port: u32, id: PacketId) -> bool {
        self.catch_up(clk, port);
        let hop = self.next_hop(port, id);
        let p = &mut self.ports[port as usize];
        let shared = p.shared.map(|s| &mut self.pools[s as usize]);
        let admit = p.offer(clk.now(), id, hop, &mut self.pool, &mut self.fifos, shared);
        match admit {
            Admit::Queued { queue, marked, wake } => {
                self.pfc_hold(clk, id);
                if self.trace.is_some() {
                    let kind = if marked { TraceKind::Mark } else { TraceKind::Enqueue };
                    self.record(clk, port, queue, id, kind, if marked { "enqueue" } else { "" });
                }
                if let Some(at) = wake {
                    clk.schedule(at, Event::TxDone { port });
                    false
                } else {
                    self.start_tx(clk, port)
                }
            }
            Admit::Sent(departure) => {
                self.send(clk, port, departure);
                false
            }
            Admit::Dropped(reason) => {
                self.lossless_drop_check(port, id, reason);
                if self.trace.is_some() {
                    let q = self.ports[port as usize].classify(self.pool.get(id).class);
                    self.record(clk, port, q, id, TraceKind::Drop, reason.name());
                }
                self.pool.free(id);
                self.dropped += 1;
                false
            }
        }
    }

    /// PFC: a lossless packet queued at a switch counts toward its ingress link's priority.
    #[inline]
    fn pfc_hold(&mut self, clk: &mut Clock, id: PacketId) {
        if self.pfc.is_some() {
            self.pfc_hold_lossless(clk, id);
        }
    }

    fn pfc_hold_lossless(&mut self, clk: &mut Clock, id: PacketId) {
        let Some(pfc) = &mut self.pfc else { return };
        let p = self.pool.get(id);
        let prio = pfc::priority(p.class);
        if !pfc.is_lossless(prio) {
            return;
        }
        match pfc.arrive(p.ingress, prio, p.wire as u64) {
            Ok(Some(signal)) => self.send_pfc_frame(clk, p.ingress, prio, signal),
            Ok(None) => {}
            Err(e) => self.pfc_error = Some(format!("{} ingress: {e}", self.net.ports[p.ingress as usize].name())),
        }
    }

    /// PFC: a lossless packet leaves its switch (sent or dropped).
    #[inline]
    fn pfc_release(&mut self, clk: &mut Clock, id: PacketId) {
        if self.pfc.is_some() {
            self.pfc_release_lossless(clk, id);
        }
    }

    fn pfc_release_lossless(&mut self, clk: &mut Clock, id: PacketId) {
        let Some(pfc) = &mut self.pfc else { return };
        let p = self.pool.get(id);
        let prio = pfc::priority(p.class);
        if pfc.is_lossless(prio) {
            if let Some(signal) = pfc.depart(p.ingress, prio, p.wire as u64) {
                self.send_pfc_frame(clk, p.ingress, prio, signal);
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
    fn send_pfc_frame(&mut self, clk: &mut Clock, link: u32, prio: usize, signal: Signal) {
        let p = &self.ports[link as usize];
        let at = clk.now() + p.cfg.delay + p.tx_time(pfc::PAUSE_FRAME);
        clk.schedule(at, Event::Pfc { port: link, prio: prio as u8, pause: signal == Signal::Pause });
    }

    /// A PAUSE/RESUME reaches a transmitter: a switch port stops or restarts serving the priority; a host's
    /// egress holds back its flows of that priority (what it has already committed still leaves). The host to
    /// wake, when a RESUME reached a host's egress.
    pub(super) fn pfc_frame(&mut self, clk: &mut Clock, port: u32, prio: usize, pause: bool) -> Option<u32> {
        let signal = if pause { Signal::Pause } else { Signal::Resume };
        if !self.ports[port as usize].pfc_signal(clk.now(), prio, signal) || pause {
            return None;
        }
        match self.net.ports[port as usize].from {
            Node::Switch(_) => {
                self.start_tx(clk, port);
                None
            }
            Node::Host(h) => Some(h),
        }
    }

    fn record(
        &mut self,
        clk: &mut Clock,
        port: u32,
        queue: usize,
        id: PacketId,
        kind: TraceKind,
        reason: &'static str,
    ) {
        let spec = self.trace.as_ref().expect("tracing on");
        let p = self.pool.get(id);
        if !spec.accepts(clk.now(), port, p.flow) {
            return;
        }
        let (flow, seq, wire, time) = (p.flow, p.seq, p.wire, clk.now());
        let pt = self.port(clk, port);
        let (queue_bytes, port_bytes) = (pt.queue_bytes(queue), pt.port_bytes());
        let queue = queue as u8;
        let record = TraceRecord { time, port, queue, kind, reason, flow, seq, wire, queue_bytes, port_bytes };
        self.trace_records.push(record);
    }

    /// The measurement window opens: every port's and pool's statistics start over.
    pub(super) fn start_window(&mut self, clk: &mut Clock) {
        self.catch_up_all(clk);
        let now = clk.now();
        for p in &mut self.ports {
            p.start_window(now);
        }
        for p in &mut self.pools {
            p.occupancy.reset(now);
        }
    }

    /// Conservation at the end of a run: every packet a host injected was consumed by a host, dropped, or is
    /// still queued or on a link (a packet being sent is already on its link).
    pub(super) fn check_conservation(&mut self, now: Time) -> Result<(), String> {
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

/// A switch's port (or a host's like a switch's) from its settings (`PortSettings::build_port`), with what its
/// surroundings decide: PFC's lossless priorities, pass-through, its switch's shared pool.
fn build_port(
    sc: &Scenario,
    i: usize,
    spec: &crate::net::PortSpec,
    s: &PortSettings,
    histogram: bool,
) -> Result<Port, Error> {
    let rng = Rng::stream(sc.seed, key::PORT + i as u64);
    let mut port = s.build_port(spec.rate, spec.delay, spec.mtu, &spec.name(), rng, histogram)?;
    port.lossless = s.pfc.as_ref().map_or(0, |c| c.lossless_mask());
    port.set_pass_idle(s.pfc.is_none() && sc.observe.trace.is_none());
    if let (Some(_), Node::Switch(sw)) = (&sc.switch.pool, spec.from) {
        port.shared = Some(sw);
    }
    Ok(port)
}

/// A host's port like a switch's that never holds more than `tsq_limit`: no flow of it ever waits for it to
/// drain.
fn never_fills(sc: &Scenario, port: &Port) -> bool {
    sc.hosts.egress == Egress::Switch && port.cfg.buffer <= sc.hosts.tsq_limit
}
/// PFC ingress state for every link into a switch, with its XOFF + headroom bound.
fn pfc_state(c: &PfcConfig, net: &Network, sc: &Scenario) -> Pfc {
    // RTT variation delays a flow's packets after its NIC (DESIGN "RTT variation"): what is in that delay
    // line when PAUSE arrives still lands, so a host link's headroom grows by its rate × the longest delay.
    let longest_rtt = sc
        .workloads
        .iter()
        .filter_map(|w| match w {
            crate::scenario::Workload::Poisson { rtt: Some(r), .. } => Some(r.hi),
            _ => None,
        })
        .max()
        .unwrap_or(Time::ZERO);
    let limit = net
        .ports
        .iter()
        .map(|p| {
            let upstream_backlog = match p.from {
                Node::Host(_) => {
                    Bytes(sc.hosts.tsq_limit.0.saturating_add(sc.mtu.0).saturating_add(p.rate.bytes_in(longest_rtt).0))
                }
                Node::Switch(_) => Bytes::ZERO,
            };
            // Saturating: a bound past 2⁶⁴ B is never reached, and must not wrap into a tiny one.
            c.xoff.0.saturating_add(c.headroom_for(p.rate, p.delay, sc.mtu, upstream_backlog).0)
        })
        .collect();
    Pfc {
        xoff: c.xoff.0,
        xon: c.xon(sc.mtu).0,
        lossless: c.lossless_mask(),
        limit,
        ingress: vec![Default::default(); net.ports.len()],
    }
}

/// What the fabric reports at the end of a run (`Sim::report`).
impl Fabric {
    /// Ports that queue (switch ports, and host ports when they are like a switch's: a host NIC never marks or
    /// drops), by name, and their counters summed (arrivals and departures over switch ports only).
    pub(super) fn port_summaries(
        &mut self,
        sc: &Scenario,
        now: Time,
        warmup: Time,
    ) -> (BTreeMap<String, PortSummary>, Counters) {
        let mut ports = BTreeMap::new();
        let mut total = Counters::default();
        for (i, p) in self.ports.iter_mut().enumerate() {
            let spec = &self.net.ports[i];
            let switch = matches!(spec.from, Node::Switch(_));
            if !sc.queueing_port(spec.from) {
                continue;
            }
            // The run's end made every deferred departure.
            let mut p = p.settled(now);
            let c = p.counters();
            if switch {
                total.arrived_pkts += c.arrived_pkts;
                total.sent_pkts += c.sent_pkts;
            }
            for k in 0..c.marks.len() {
                total.marks[k] += c.marks[k];
            }
            for k in 0..c.drops.len() {
                total.drops[k] += c.drops[k];
            }
            let mtu = spec.mtu.0;
            let queues = p
                .queue_reports()
                .into_iter()
                .map(|(c, o)| QueueSummary { counters: counters(&c), occupancy: occupancy(o, mtu) })
                .collect();
            let v = PortSummary {
                rate_gbps: spec.rate.as_gbps(),
                utilization: p.utilization(now - warmup),
                counters: counters(&c),
                window_counters: counters(&p.window_counters()),
                occupancy: occupancy(p.port_occupancy(), mtu),
                queues,
                arrival_backlog_min_pkts: p.arrival_backlog_min().map(|b| b as f64 / mtu as f64),
                first_mark: p.first_mark().map(|(t, cwnd)| FirstMark { time_s: t.as_secs_f64(), cwnd_segments: cwnd }),
            };
            ports.insert(spec.name(), v);
        }
        (ports, total)
    }

    /// Each switch's shared buffer pool (`switch.pool`).
    pub(super) fn pool_summaries(&mut self, now: Time, mtu: Bytes) -> Vec<PoolSummary> {
        self.pools
            .iter_mut()
            .enumerate()
            .map(|(sw, p)| PoolSummary {
                switch: format!("s{sw}"),
                size_bytes: p.size,
                occupancy: occupancy(p.occupancy.stats(now), mtu.0),
            })
            .collect()
    }

    /// PFC: pauses per ingress link and priority, paused time per transmitter, peak ingress bytes.
    pub(super) fn pfc_summary(&self, now: Time) -> Option<PfcSummary> {
        let pfc = self.pfc.as_ref()?;
        let mut paused_time_s = BTreeMap::new();
        let mut pauses_received = 0;
        for (i, p) in self.ports.iter().enumerate() {
            pauses_received += p.pause.pauses_received;
            let t = p.pause.paused_time(now);
            if t.iter().any(|t| *t > Time::ZERO) {
                paused_time_s.insert(self.net.ports[i].name(), t.iter().map(|t| t.as_secs_f64()).collect());
            }
        }
        let mut peak_ingress_bytes = BTreeMap::new();
        for (i, ing) in pfc.ingress.iter().enumerate() {
            let m = ing.peak.iter().max().copied().unwrap_or(0);
            if m > 0 {
                peak_ingress_bytes.insert(self.net.ports[i].name(), m);
            }
        }
        Some(PfcSummary {
            pauses_sent: pfc.ingress.iter().map(|i| i.pauses_sent).sum::<u64>(),
            pauses_received,
            paused_time_s,
            peak_ingress_bytes,
            max_peak_ingress_bytes: pfc.ingress.iter().flat_map(|i| i.peak).max().unwrap_or(0),
            xoff_bytes: pfc.xoff,
            xon_bytes: pfc.xon,
        })
    }

    /// The packet trace recorded so far, handed over.
    pub(super) fn take_trace(&mut self) -> Vec<TraceRecord> {
        std::mem::take(&mut self.trace_records)
    }

    pub(super) fn port_names(&self) -> Vec<String> {
        self.net.ports.iter().map(|p| p.name()).collect()
    }
}
