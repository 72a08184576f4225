//! Workload generators at run time: flows at given times, back-to-back connections, incast rounds, probes.

use super::flows::Opening;
use super::{item_rng, Sim};
use crate::engine::Event;
use crate::observe::LogHist;
use crate::packet::{Ecn, Kind, Packet, Sack};
use crate::scenario::Workload;
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

    /// Long-lived flows of it send without end (the others write when asked: incast).
    pub fn is_bulk(&self) -> bool {
        matches!(self, WorkloadState::Flows { .. })
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

impl Sim {
    pub(super) fn workload_event(&mut self, idx: u32) {
        let now = self.clock.now();
        let w = &mut self.workloads[idx as usize];
        match w {
            WorkloadState::Flows { starts, next, dst, size, stop, rate, .. } => {
                if stop.is_some_and(|s| now >= s) {
                    // The stop: long-lived flows write no more, and flows not yet started never start.
                    *next = starts.len();
                    self.stop_flows(idx);
                    return;
                }
                let (dst, size, rate, stop) = (*dst, *size, *rate, *stop);
                let mut opened = vec![];
                while *next < starts.len() && starts[*next].0 <= now {
                    opened.push((starts[*next].1, starts[*next].2));
                    *next += 1;
                }
                let following = starts.get(*next).map(|s| s.0);
                for (src, class) in opened {
                    let f = self.open_flow(idx, Opening { rate, ..Opening::new(src, dst, class, size) });
                    if let WorkloadState::Flows { flows, .. } = &mut self.workloads[idx as usize] {
                        flows.push(f);
                    }
                }
                let wake = match (following, stop) {
                    (Some(t), Some(s)) => Some(t.min(s)),
                    (t, s) => t.or(s),
                };
                if let Some(t) = wake {
                    self.clock.schedule(t, Event::Workload { idx });
                }
            }
            WorkloadState::BackToBack { src, dst, size, class, flows, .. } => {
                if flows.is_empty() {
                    let (s, d, sz, c) = (*src, *dst, *size, *class);
                    let f = self.open_flow(idx, Opening::new(s, d, c, Some(sz)));
                    self.b2b_push(idx, f);
                }
            }
            WorkloadState::Incast(inc) => {
                if inc.timer_pending == now {
                    // The retry timer; after the last round it just lapses.
                    inc.timer_pending = Time::MAX;
                    if inc.round < inc.rounds && now >= inc.retry_at {
                        self.resend_requests(idx);
                    } else if inc.round < inc.rounds {
                        self.queue_retry_timer(idx);
                    }
                } else if inc.flows.is_empty() {
                    let (senders, r, c) = (inc.senders.clone(), inc.receiver, inc.class);
                    for s in senders {
                        let f = self.open_flow(idx, Opening::new(s, r, c, None));
                        if let WorkloadState::Incast(inc) = &mut self.workloads[idx as usize] {
                            inc.flows.push(f);
                        }
                    }
                    self.incast_round(idx);
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
                let idle = p.idle_connection((src, dst, class), &self.flows);
                let f = self.open_flow(
                    idx,
                    Opening {
                        rtt_target: rtt,
                        on: idle.map(|(_, on)| on),
                        ..Opening::new(src, dst, class, Some(size))
                    },
                );
                if let WorkloadState::Poisson(p) = &mut self.workloads[idx as usize] {
                    p.flows.push(f);
                    p.carry((src, dst, class), idle.map(|(slot, _)| slot), f);
                }
                if more {
                    self.clock.schedule(now + gap, Event::Workload { idx });
                }
            }
            WorkloadState::Query(q) => {
                // Flow by flow, without a list of all `count` of them first: the workload's draws come in the
                // same order, and the only memory that grows is the flows' own (which validation bounded).
                let count = q.count;
                for i in 0..count {
                    let WorkloadState::Query(q) = &mut self.workloads[idx as usize] else { return };
                    let span = q.size_max - q.size_min + 1;
                    let (src, size) = (q.senders[i as usize % q.senders.len()], q.size_min + q.rng.below(span));
                    let (r, c) = (q.receiver, q.class);
                    let f = self.open_flow(idx, Opening::new(src, r, c, Some(size)));
                    if let WorkloadState::Query(q) = &mut self.workloads[idx as usize] {
                        q.flows.push(f);
                    }
                }
            }
            WorkloadState::Probe { src, dst, interval, stop, class, size, ect, sent, .. } => {
                if stop.is_some_and(|s| now >= s) {
                    return;
                }
                let p = Packet {
                    flow: idx,
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
                let (host, next) = (*src, now + *interval);
                self.send_from_host(host, p, &Sack::NONE);
                self.clock.schedule(next, Event::Workload { idx });
            }
        }
    }

    fn b2b_push(&mut self, idx: u32, f: u32) {
        if let WorkloadState::BackToBack { flows, .. } = &mut self.workloads[idx as usize] {
            flows.push(f);
        }
    }

    fn stop_flows(&mut self, idx: u32) {
        let WorkloadState::Flows { flows, .. } = &self.workloads[idx as usize] else {
            return;
        };
        for &f in flows.iter() {
            self.flows[f as usize].stop();
        }
    }

    /// The receiver sends every sender a one-packet request for its next block.
    fn incast_round(&mut self, idx: u32) {
        let now = self.clock.now();
        let WorkloadState::Incast(inc) = &mut self.workloads[idx as usize] else {
            return;
        };
        inc.done_in_round = 0;
        inc.round_start = now;
        inc.retries = 0;
        let wanted = inc.wanted();
        for f in inc.flows.clone() {
            self.flows[f as usize].notify_at(wanted);
            self.send_request(idx, f, wanted);
        }
        self.arm_request_retry(idx);
    }

    /// One request: "send me your stream up to byte `wanted`" (carried in `seq`, so a duplicate is harmless).
    fn send_request(&mut self, idx: u32, flow: u32, wanted: u64) {
        let WorkloadState::Incast(inc) = &self.workloads[idx as usize] else {
            return;
        };
        let receiver = inc.receiver;
        let req = Packet {
            flow,
            dst: self.flows[flow as usize].addr.src,
            kind: Kind::Request,
            class: inc.class,
            wire: 64,
            seq: wanted,
            ts: self.clock.now(),
            ..Packet::default()
        };
        self.send_from_host(receiver, req, &Sack::NONE);
    }

    /// Requests travel outside any connection, so the receiver times them out itself, as a request/response
    /// application over TCP would have TCP do: after the initial RTO, doubling per resend up to the maximum.
    fn arm_request_retry(&mut self, idx: u32) {
        let (rto, max, now) = (self.flows.tcp().initial_rto, self.flows.tcp().max_rto, self.clock.now());
        if let WorkloadState::Incast(inc) = &mut self.workloads[idx as usize] {
            inc.retry_at = now + Time(rto.0.saturating_mul(1u64 << inc.retries.min(32))).min(max);
            self.queue_retry_timer(idx);
        }
    }

    /// Schedules the retry event for `retry_at` unless one is already queued: that one fires no later, and
    /// re-queues itself if `retry_at` has moved since (one event per workload, not one per round).
    fn queue_retry_timer(&mut self, idx: u32) {
        let WorkloadState::Incast(inc) = &mut self.workloads[idx as usize] else {
            return;
        };
        if inc.timer_pending == Time::MAX {
            let at = inc.retry_at;
            inc.timer_pending = at;
            self.clock.schedule(at, Event::Workload { idx });
        }
    }

    /// The round's retry timer fired: request again from every sender whose application has not yet written
    /// the round's block (its request was lost).
    fn resend_requests(&mut self, idx: u32) {
        let WorkloadState::Incast(inc) = &mut self.workloads[idx as usize] else {
            return;
        };
        let wanted = inc.wanted();
        let lost: Vec<u32> =
            inc.flows.iter().copied().filter(|&f| self.flows[f as usize].sender.written() < wanted).collect();
        if lost.is_empty() {
            return;
        }
        inc.retries += 1;
        inc.requests_resent += lost.len() as u64;
        for f in lost {
            self.send_request(idx, f, wanted);
        }
        self.arm_request_retry(idx);
    }

    /// A request reached an incast sender: its application writes up to the requested byte (once: a resent
    /// request whose original also arrived writes nothing).
    pub(super) fn on_request(&mut self, flow: u32, wanted: u64) {
        let s = &mut self.flows[flow as usize].sender;
        if s.written() < wanted {
            s.write(wanted - s.written());
        }
    }

    pub(super) fn workload_delivered(&mut self, idx: u32, _flow: u32) {
        let now = self.clock.now();
        match &mut self.workloads[idx as usize] {
            WorkloadState::BackToBack { src, dst, size, count, class, flows, .. }
                if count.is_none_or(|c| (flows.len() as u32) < c) =>
            {
                let (s, d, sz, c) = (*src, *dst, *size, *class);
                let f = self.open_flow(idx, Opening::new(s, d, c, Some(sz)));
                self.b2b_push(idx, f);
            }
            WorkloadState::Incast(inc) => {
                inc.done_in_round += 1;
                if inc.done_in_round as usize == inc.flows.len() {
                    inc.round_times.push(now - inc.round_start);
                    inc.round += 1;
                    if inc.round < inc.rounds {
                        self.incast_round(idx);
                    } else {
                        for f in inc.flows.clone() {
                            self.flows[f as usize].sender.close();
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The host a probe workload sends its requests from.
    pub(super) fn probe_origin(&self, workload: u32) -> Option<u32> {
        match self.workloads.get(workload as usize) {
            Some(WorkloadState::Probe { src, .. }) => Some(*src),
            _ => None,
        }
    }

    pub(super) fn probe_reply(&mut self, p: Packet) {
        let now = self.clock.now();
        let warm = now >= self.observer.warmup();
        if let Some(WorkloadState::Probe { rtt, .. }) = self.workloads.get_mut(p.flow as usize) {
            if warm {
                rtt.add((now - p.ts).0, 1);
            }
        }
    }
}
