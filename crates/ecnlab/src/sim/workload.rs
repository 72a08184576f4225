//! Workload generators at run time, sans-IO (they act through a `Driver`): flows at given times,
//! back-to-back connections, incast rounds, Poisson arrivals, queries, probes.

use super::flows::Opening;
use super::{item_rng, Sim};
use crate::engine::Event;
use crate::observe::LogHist;
use crate::packet::{Ecn, Kind, Packet, Sack};
use crate::scenario::Workload;
use crate::transport::TcpConfig;
use crate::units::{Bytes, Time};

pub enum WorkloadState {
    Flows {
        /// (start time, src, class) sorted by time; `next` is the first not yet started.
        starts: Vec<(Time, u32, u8)>,
        next: usize,
        dst: u32,
        size: Option<u64>,
        stop: Option<Time>,
        rate: Option<crate::units::Rate>,
        flows: Vec<u32>,
    },
    BackToBack {
        src: u32,
        dst: u32,
        size: u64,
        count: Option<u32>,
        class: u8,
        flows: Vec<u32>,
    },
    Incast(Incast),
    Poisson(Box<super::traffic::Poisson>),
    Query(super::traffic::Query),
    Probe {
        src: u32,
        dst: u32,
        interval: Time,
        stop: Option<Time>,
        class: u8,
        size: Bytes,
        ect: bool,
        sent: u64,
        rtt: LogHist,
    },
}

pub struct Incast {
    pub senders: Vec<u32>,
    pub receiver: u32,
    pub block: u64,
    pub rounds: u32,
    pub class: u8,
    pub flows: Vec<u32>,
    pub round: u32,
    pub done_in_round: u32,
    pub round_start: Time,
    /// Completion time of each finished round (request sent → last block byte received).
    pub round_times: Vec<Time>,
    /// When the receiver next resends the requests of this round that no sender has acted on.
    pub retry_at: Time,
    /// The time of the one retry event in the queue (`Time::MAX`: none). A new round moves `retry_at` later
    /// without scheduling another: the pending event, on firing early, re-arms itself for `retry_at`.
    pub timer_pending: Time,
    /// Resends so far in this round (the wait doubles with each).
    pub retries: u32,
    /// Requests sent again over the run.
    pub requests_resent: u64,
}

impl Incast {
    /// The stream offset every sender must have written by the end of the current round.
    fn wanted(&self) -> u64 {
        self.block * (self.round as u64 + 1)
    }
}

impl WorkloadState {
    pub fn new(seed: u64, idx: u32, w: &Workload, net: &crate::net::Network) -> Result<WorkloadState, crate::Error> {
        Ok(match w.clone() {
            Workload::Poisson { .. } => {
                WorkloadState::Poisson(Box::new(super::traffic::Poisson::new(seed, idx, w, net)?))
            }
            Workload::Query { senders, receiver, count, size_min, size_max, class, .. } => {
                WorkloadState::Query(super::traffic::Query {
                    senders: senders.0,
                    receiver,
                    count,
                    size_min: size_min.0,
                    size_max: size_max.0,
                    class,
                    rng: item_rng(seed, idx, 0),
                    flows: vec![],
                })
            }
            Workload::Flows { src, dst, size, start, jitter, stop, class, classes, rate } => {
                let classes = classes.unwrap_or_else(|| vec![class]);
                let mut starts: Vec<(Time, u32, u8)> = src
                    .0
                    .iter()
                    .enumerate()
                    .map(|(i, &s)| {
                        let j = if jitter > Time::ZERO { item_rng(seed, idx, i as u64).below(jitter.0 + 1) } else { 0 };
                        (start + Time(j), s, classes[i % classes.len()])
                    })
                    .collect();
                starts.sort_by_key(|&(t, s, _)| (t, s));
                WorkloadState::Flows { starts, next: 0, dst, size: size.map(|b| b.0), stop, rate, flows: vec![] }
            }
            Workload::BackToBack { src, dst, size, count, class, .. } => {
                WorkloadState::BackToBack { src, dst, size: size.0, count, class, flows: vec![] }
            }
            Workload::Incast { senders, receiver, block, rounds, start, class } => WorkloadState::Incast(Incast {
                senders: senders.0,
                receiver,
                block: block.0,
                rounds,
                class,
                flows: vec![],
                round: 0,
                done_in_round: 0,
                round_start: start,
                round_times: vec![],
                retry_at: Time::MAX,
                timer_pending: Time::MAX,
                retries: 0,
                requests_resent: 0,
            }),
            Workload::Probe { src, dst, interval, stop, class, size, ect, .. } => {
                WorkloadState::Probe { src, dst, interval, stop, class, size, ect, sent: 0, rtt: LogHist::default() }
            }
        })
    }

    /// When the generator first acts.
    pub fn first_event(&self, w: &Workload) -> Option<Time> {
        match (self, w) {
            (WorkloadState::Flows { starts, .. }, _) => starts.first().map(|s| s.0),
            (
                _,
                Workload::BackToBack { start, .. }
                | Workload::Incast { start, .. }
                | Workload::Probe { start, .. }
                | Workload::Poisson { start, .. },
            ) => Some(*start),
            (_, Workload::Query { at, .. }) => Some(*at),
            _ => None,
        }
    }
}

/// The simulation as a workload sees it, and the only way a generator acts on a run: a generator holds no
/// reference to the `Sim` and reads no clock of its own, so anything implementing this drives it (the `Sim`
/// through `Sim::workload_event`, or a test's stand-in).
pub(super) trait Driver {
    fn now(&self) -> Time;
    /// Which workload this is (a probe names its workload in its packets, for the reply to find it).
    fn workload(&self) -> u32;
    /// Opens a flow for the workload (`Sim::open_flow`); its id.
    fn open(&mut self, o: Opening) -> u32;
    /// A host sends a packet outside any flow: a probe, an incast request.
    fn send(&mut self, host: u32, pkt: Packet);
    /// The workload's next `Event::Workload`.
    fn wake_at(&mut self, at: Time);
    /// A flow's sender, as its application sees it.
    fn written(&self, flow: u32) -> u64;
    /// The flow's connection has everything acknowledged and nothing to send (a persistent connection free
    /// for the next flow).
    fn is_idle(&self, flow: u32) -> bool;
    /// The host that sends the flow's data.
    fn source(&self, flow: u32) -> u32;
    /// The application closes the flow once what it wrote is sent (`Sender::close`).
    fn close(&mut self, flow: u32);
    /// The application stops writing a long-lived flow (`Flow::stop`).
    fn stop(&mut self, flow: u32);
    /// The workload wants `delivered` when the flow's receiver has this many bytes.
    fn notify_at(&mut self, flow: u32, bytes: u64);
    /// The transport's configuration (incast requests time out as its RTO would).
    fn tcp(&self) -> &TcpConfig;
}

impl WorkloadState {
    /// The workload's own event: a flow starts, a round begins, a probe leaves, a request times out.
    pub(super) fn act(&mut self, d: &mut impl Driver) {
        let now = d.now();
        match self {
            WorkloadState::Flows { starts, next, dst, size, stop, rate, flows } => {
                if stop.is_some_and(|s| now >= s) {
                    // The stop: long-lived flows write no more, and flows not yet started never start.
                    *next = starts.len();
                    for &f in flows.iter() {
                        d.stop(f);
                    }
                    return;
                }
                while *next < starts.len() && starts[*next].0 <= now {
                    let (_, src, class) = starts[*next];
                    *next += 1;
                    flows.push(d.open(Opening { rate: *rate, bulk: true, ..Opening::new(src, *dst, class, *size) }));
                }
                let following = starts.get(*next).map(|s| s.0);
                let wake = match (following, *stop) {
                    (Some(t), Some(s)) => Some(t.min(s)),
                    (t, s) => t.or(s),
                };
                if let Some(t) = wake {
                    d.wake_at(t);
                }
            }
            WorkloadState::BackToBack { src, dst, size, class, flows, .. } => {
                if flows.is_empty() {
                    flows.push(d.open(Opening::new(*src, *dst, *class, Some(*size))));
                }
            }
            WorkloadState::Incast(inc) => {
                if inc.timer_pending == now {
                    // The retry timer; after the last round it just lapses.
                    inc.timer_pending = Time::MAX;
                    if inc.round < inc.rounds && now >= inc.retry_at {
                        inc.resend_requests(d);
                    } else if inc.round < inc.rounds {
                        inc.queue_retry_timer(d);
                    }
                } else if inc.flows.is_empty() {
                    for i in 0..inc.senders.len() {
                        let f = d.open(Opening::new(inc.senders[i], inc.receiver, inc.class, None));
                        inc.flows.push(f);
                    }
                    inc.start_round(d);
                }
            }
            WorkloadState::Poisson(p) => {
                if p.done(now) {
                    return;
                }
                let (src, dst, class, size, rtt) = p.draw();
                p.opened += 1;
                p.offered_bytes += size;
                p.first = p.first.min(now);
                p.last = now;
                let gap = p.next_gap();
                let more = !p.done(now);
                let idle = p.idle_connection((src, dst, class), |f| d.is_idle(f));
                let on = idle.map(|(_, on)| on);
                let f = d.open(Opening { rtt_target: rtt, on, ..Opening::new(src, dst, class, Some(size)) });
                p.flows.push(f);
                p.carry((src, dst, class), idle.map(|(slot, _)| slot), f);
                if more {
                    d.wake_at(now + gap);
                }
            }
            WorkloadState::Query(q) => {
                // Flow by flow, without a list of all `count` of them first: the workload's draws come in the
                // same order, and the only memory that grows is the flows' own (which validation bounded).
                for i in 0..q.count {
                    let span = q.size_max - q.size_min + 1;
                    let (src, size) = (q.senders[i as usize % q.senders.len()], q.size_min + q.rng.below(span));
                    let f = d.open(Opening::new(src, q.receiver, q.class, Some(size)));
                    q.flows.push(f);
                }
            }
            WorkloadState::Probe { src, dst, interval, stop, class, size, ect, sent, .. } => {
                if stop.is_some_and(|s| now >= s) {
                    return;
                }
                let p = Packet {
                    flow: d.workload(),
                    dst: *dst,
                    kind: Kind::ProbeRequest,
                    ecn: if *ect { Ecn::Ect } else { Ecn::NotEct },
                    class: *class,
                    wire: size.0 as u32,
                    seq: *sent,
                    ts: now,
                    ..Packet::default()
                };
                *sent += 1;
                d.send(*src, p);
                d.wake_at(now + *interval);
            }
        }
    }

    /// A flow of the workload reached the byte it was waiting for (`Flow::notify_at`): completed, or its
    /// incast block arrived.
    pub(super) fn delivered(&mut self, d: &mut impl Driver) {
        let now = d.now();
        match self {
            WorkloadState::BackToBack { src, dst, size, count, class, flows }
                if count.is_none_or(|c| (flows.len() as u32) < c) =>
            {
                flows.push(d.open(Opening::new(*src, *dst, *class, Some(*size))));
            }
            WorkloadState::Incast(inc) => {
                inc.done_in_round += 1;
                if inc.done_in_round as usize == inc.flows.len() {
                    inc.round_times.push(now - inc.round_start);
                    inc.round += 1;
                    if inc.round < inc.rounds {
                        inc.start_round(d);
                    } else {
                        for &f in &inc.flows {
                            d.close(f);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The host a probe workload sends its requests from.
    pub(super) fn probe_origin(&self) -> Option<u32> {
        match self {
            WorkloadState::Probe { src, .. } => Some(*src),
            _ => None,
        }
    }

    /// A probe's reply came back: its round trip, counted after warm-up.
    pub(super) fn probe_reply(&mut self, p: &Packet, now: Time, warm: bool) {
        if let WorkloadState::Probe { rtt, .. } = self {
            if warm {
                rtt.add((now - p.ts).0, 1);
            }
        }
    }
}

impl Incast {
    /// The receiver sends every sender a one-packet request for its next block.
    fn start_round(&mut self, d: &mut impl Driver) {
        self.done_in_round = 0;
        self.round_start = d.now();
        self.retries = 0;
        let wanted = self.wanted();
        for i in 0..self.flows.len() {
            let f = self.flows[i];
            d.notify_at(f, wanted);
            self.send_request(d, f, wanted);
        }
        self.arm_request_retry(d);
    }

    /// One request: "send me your stream up to byte `wanted`" (carried in `seq`, so a duplicate is harmless).
    fn send_request(&self, d: &mut impl Driver, flow: u32, wanted: u64) {
        let req = Packet {
            flow,
            dst: d.source(flow),
            kind: Kind::Request,
            class: self.class,
            wire: 64,
            seq: wanted,
            ts: d.now(),
            ..Packet::default()
        };
        d.send(self.receiver, req);
    }

    /// Requests travel outside any connection, so the receiver times them out itself, as a request/response
    /// application over TCP would have TCP do: after the initial RTO, doubling per resend up to the maximum.
    fn arm_request_retry(&mut self, d: &mut impl Driver) {
        let (rto, max) = (d.tcp().initial_rto, d.tcp().max_rto);
        self.retry_at = d.now() + Time(rto.0.saturating_mul(1u64 << self.retries.min(32))).min(max);
        self.queue_retry_timer(d);
    }

    /// Schedules the retry event for `retry_at` unless one is already queued: that one fires no later, and
    /// re-queues itself if `retry_at` has moved since (one event per workload, not one per round).
    fn queue_retry_timer(&mut self, d: &mut impl Driver) {
        if self.timer_pending == Time::MAX {
            self.timer_pending = self.retry_at;
            d.wake_at(self.retry_at);
        }
    }

    /// The round's retry timer fired: request again from every sender whose application has not yet written
    /// the round's block (its request was lost).
    fn resend_requests(&mut self, d: &mut impl Driver) {
        let wanted = self.wanted();
        let lost: Vec<u32> = self.flows.iter().copied().filter(|&f| d.written(f) < wanted).collect();
        if lost.is_empty() {
            return;
        }
        self.retries += 1;
        self.requests_resent += lost.len() as u64;
        for f in lost {
            self.send_request(d, f, wanted);
        }
        self.arm_request_retry(d);
    }
}

/// `Driver` for the workload `idx` of a `Sim`.
struct Drive<'a> {
    sim: &'a mut Sim,
    idx: u32,
}

impl Driver for Drive<'_> {
    fn now(&self) -> Time {
        self.sim.clock.now()
    }
    fn workload(&self) -> u32 {
        self.idx
    }
    fn open(&mut self, o: Opening) -> u32 {
        self.sim.open_flow(self.idx, o)
    }
    fn send(&mut self, host: u32, pkt: Packet) {
        self.sim.send_from_host(host, pkt, &Sack::NONE);
    }
    fn wake_at(&mut self, at: Time) {
        self.sim.clock.schedule(at, Event::Workload { idx: self.idx });
    }
    fn written(&self, flow: u32) -> u64 {
        self.sim.flows[flow as usize].sender.written()
    }
    fn is_idle(&self, flow: u32) -> bool {
        self.sim.flows[flow as usize].sender.is_idle()
    }
    fn source(&self, flow: u32) -> u32 {
        self.sim.flows[flow as usize].addr.src
    }
    fn close(&mut self, flow: u32) {
        self.sim.flows[flow as usize].sender.close();
    }
    fn stop(&mut self, flow: u32) {
        self.sim.flows[flow as usize].stop();
    }
    fn notify_at(&mut self, flow: u32, bytes: u64) {
        self.sim.flows[flow as usize].notify_at(bytes);
    }
    fn tcp(&self) -> &TcpConfig {
        self.sim.flows.tcp()
    }
}

impl Sim {
    /// Lends workload `idx` the simulation to act on. The workloads are out of `self` meanwhile; nothing a
    /// workload's action sets off reads them (a packet it sends reaches its far end in a later event).
    fn drive(&mut self, idx: u32, action: impl FnOnce(&mut WorkloadState, &mut Drive)) {
        let mut workloads = std::mem::take(&mut self.workloads);
        action(&mut workloads[idx as usize], &mut Drive { sim: self, idx });
        self.workloads = workloads;
    }

    pub(super) fn workload_event(&mut self, idx: u32) {
        self.drive(idx, |w, d| w.act(d));
    }

    pub(super) fn workload_delivered(&mut self, idx: u32) {
        self.drive(idx, |w, d| w.delivered(d));
    }

    /// A request reached an incast sender: its application writes up to the requested byte (once: a resent
    /// request whose original also arrived writes nothing).
    pub(super) fn on_request(&mut self, flow: u32, wanted: u64) {
        let s = &mut self.flows[flow as usize].sender;
        if s.written() < wanted {
            s.write(wanted - s.written());
        }
    }

    /// The host a probe workload sends its requests from.
    pub(super) fn probe_origin(&self, workload: u32) -> Option<u32> {
        self.workloads.get(workload as usize)?.probe_origin()
    }

    pub(super) fn probe_reply(&mut self, p: Packet) {
        let (now, warmup) = (self.clock.now(), self.observer.warmup());
        if let Some(w) = self.workloads.get_mut(p.flow as usize) {
            w.probe_reply(&p, now, now >= warmup);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{HostSet, Topology};
    use crate::units::Rate;
    use std::collections::BTreeMap;

    /// A stand-in for the simulation: a clock set by hand, and a record of everything the generator asks.
    #[derive(Default)]
    struct Script {
        now: Time,
        tcp: TcpConfig,
        opened: Vec<Opening>,
        sent: Vec<(u32, Packet)>,
        wakes: Vec<Time>,
        written: BTreeMap<u32, u64>,
        notify: BTreeMap<u32, u64>,
        closed: Vec<u32>,
    }

    impl Driver for Script {
        fn now(&self) -> Time {
            self.now
        }
        fn workload(&self) -> u32 {
            0
        }
        fn tcp(&self) -> &TcpConfig {
            &self.tcp
        }
        fn open(&mut self, o: Opening) -> u32 {
            self.opened.push(o);
            self.opened.len() as u32 - 1
        }
        fn send(&mut self, host: u32, pkt: Packet) {
            self.sent.push((host, pkt));
        }
        fn wake_at(&mut self, at: Time) {
            self.wakes.push(at);
        }
        fn written(&self, flow: u32) -> u64 {
            self.written.get(&flow).copied().unwrap_or(0)
        }
        fn is_idle(&self, _: u32) -> bool {
            false
        }
        fn source(&self, flow: u32) -> u32 {
            self.opened[flow as usize].src
        }
        fn close(&mut self, flow: u32) {
            self.closed.push(flow);
        }
        fn stop(&mut self, _: u32) {}
        fn notify_at(&mut self, flow: u32, bytes: u64) {
            self.notify.insert(flow, bytes);
        }
    }

    fn star(hosts: u32) -> crate::net::Network {
        let t = Topology::Star { hosts, rate: Rate::gbps(1), delay: Time::from_us(5), host_links: vec![] };
        let (sw, links) = t.links();
        crate::net::Network::build(hosts as usize, sw as usize, &links, Bytes(1500)).unwrap()
    }

    /// An incast workload as ECN* §5.1 runs it: the receiver asks every sender for one block per round over
    /// kept connections; a round ends when every block has arrived; a request no sender acted on is sent again
    /// after the initial RTO; after the last round the connections close.
    #[test]
    fn incast_rounds_request_one_block_per_sender_and_resend_only_lost_requests() {
        let block = 64 * 1024;
        let w = Workload::Incast {
            senders: HostSet(vec![1, 2, 3]),
            receiver: 0,
            block: Bytes(block),
            rounds: 2,
            start: Time::from_us(10),
            class: 2,
        };
        let mut g = WorkloadState::new(1, 0, &w, &star(4)).unwrap();
        assert_eq!(g.first_event(&w), Some(Time::from_us(10)));
        let mut d = Script { now: Time::from_us(10), ..Default::default() };
        g.act(&mut d);
        // One connection per sender toward the receiver, written only when asked.
        let pairs: Vec<_> = d.opened.iter().map(|o| (o.src, o.dst, o.class, o.size, o.bulk)).collect();
        assert_eq!(pairs, [1, 2, 3].map(|s| (s, 0, 2, None, false)));
        // The first round: one request per sender for the stream up to the first block, from the receiver.
        let asked: Vec<_> = d.sent.iter().map(|(h, p)| (*h, p.dst, p.kind, p.seq)).collect();
        assert_eq!(asked, [1, 2, 3].map(|s| (0, s, Kind::Request, block)));
        assert!(d.notify.values().all(|&b| b == block));
        assert_eq!(d.wakes, [Time::from_us(10) + d.tcp.initial_rto]);

        // Every block arrives by 1 ms: the second round asks for the next block.
        d.now = Time::from_ms(1);
        d.sent.clear();
        for f in 0..3 {
            d.written.insert(f, block);
            g.delivered(&mut d);
        }
        let asked: Vec<_> = d.sent.iter().map(|(_, p)| (p.dst, p.seq)).collect();
        assert_eq!(asked, [1, 2, 3].map(|s| (s, 2 * block)));
        let WorkloadState::Incast(inc) = &g else { unreachable!() };
        assert_eq!(inc.round_times, [Time::from_ms(1) - Time::from_us(10)]);

        // The retry timer fires with two senders' applications already writing the second block: only the
        // third sender's request is sent again.
        d.now = Time::from_us(10) + d.tcp.initial_rto;
        d.sent.clear();
        d.written.insert(0, 2 * block);
        d.written.insert(1, 2 * block);
        g.act(&mut d); // the pending timer, early for the moved deadline: re-armed only
        assert!(d.sent.is_empty());
        d.now = Time::from_ms(1) + d.tcp.initial_rto;
        g.act(&mut d);
        let resent: Vec<_> = d.sent.iter().map(|(_, p)| (p.dst, p.seq)).collect();
        assert_eq!(resent, [(3, 2 * block)]);

        // The last round completes: every connection closes.
        for _ in 0..3 {
            g.delivered(&mut d);
        }
        assert_eq!(d.closed, [0, 1, 2]);
    }

    /// Long-lived flows start at their times, each bulk (written without end), and the stop ends the
    /// workload: no flow starts after it.
    #[test]
    fn flows_start_at_their_times_and_none_after_the_stop() {
        let flows = |stop| Workload::Flows {
            src: HostSet(vec![1, 2, 3]),
            dst: 0,
            size: None,
            start: Time::from_ms(1),
            jitter: Time::ZERO,
            stop: Some(stop),
            class: 0,
            classes: None,
            rate: None,
        };
        let mut g = WorkloadState::new(1, 0, &flows(Time::from_ms(1)), &star(4)).unwrap();
        let mut d = Script { now: Time::from_ms(1), ..Default::default() };
        g.act(&mut d);
        assert!(d.opened.is_empty(), "the stop at the start instant comes first");
        let mut g = WorkloadState::new(1, 0, &flows(Time::from_ms(5)), &star(4)).unwrap();
        g.act(&mut d);
        assert_eq!(d.opened.iter().map(|o| (o.src, o.bulk)).collect::<Vec<_>>(), [(1, true), (2, true), (3, true)]);
        assert_eq!(d.wakes, [Time::from_ms(5)]);
    }
}
