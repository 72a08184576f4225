//! Hosts: what reaches a host goes to its flow's endpoint, and an endpoint's packets go to the host's egress
//! port while it holds no more than `hosts.tsq_limit` (TCP small queues); flows held back wait in line.

use super::{Side, Sim};
use crate::engine::Event;
use crate::packet::{Kind, Packet, Sack};
use crate::units::Bytes;
use std::collections::VecDeque;

/// Per host: flows waiting for its egress port to drain.
#[derive(Default)]
struct Host {
    blocked: VecDeque<u32>,
    wake_pending: bool,
    /// A host port like a switch's drained to `tsq_limit`: its `NicReady` is scheduled.
    waking: bool,
}

pub(super) struct Hosts {
    hosts: Vec<Host>,
    /// TCP small queues: a host hands its egress data only while no more than this waits there unsent.
    tsq_limit: Bytes,
    /// Segmentation offload: the largest burst a sender hands its egress (`hosts.tso_max`).
    tso_max: Option<Bytes>,
    /// An event of a flow's receiver cannot make its sender send, nor wait: TCP senders (whether one sends
    /// depends on its window and its application's writes, not on the clock), hosts' ports like a switch's that
    /// never hold more than `tsq_limit`, no PFC. Then `pump_side` drains the receiver alone.
    receiver_events_leave_senders: bool,
}

impl Hosts {
    pub(super) fn new(sc: &crate::Scenario, receiver_events_leave_senders: bool) -> Hosts {
        Hosts {
            hosts: (0..sc.topology.host_count()).map(|_| Host::default()).collect(),
            tsq_limit: sc.hosts.tsq_limit,
            tso_max: sc.hosts.tso_max,
            receiver_events_leave_senders,
        }
    }

    #[inline(always)]
    pub(super) fn receiver_events_leave_senders(&self) -> bool {
        self.receiver_events_leave_senders
    }

    /// Both endpoints drained after every input (a fast path off: `Sim::without_fast_paths`).
    pub(super) fn drain_both_sides(&mut self) {
        self.receiver_events_leave_senders = false;
    }

    #[cfg(test)]
    pub(super) fn set_receiver_events_leave_senders(&mut self, on: bool) {
        self.receiver_events_leave_senders = on;
    }
}

impl Sim {
    /// A packet reaches its destination host.
    pub(super) fn host_receive(&mut self, host: u32, pkt: Packet, sack: &Sack) {
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
            Kind::Data | Kind::Syn => self.receiver_took(&pkt),
            Kind::Ack | Kind::SynAck | Kind::Nack | Kind::Cnp => self.sender_took(&pkt, sack),
        }
    }

    /// A host puts a packet on its egress port (`Fabric::send_from_host`).
    #[inline(always)]
    pub(super) fn send_from_host(&mut self, host: u32, pkt: Packet, sack: &Sack) {
        if self.fabric.send_from_host(&mut self.clock, host, pkt, sack) {
            self.host_port_drained(host);
        }
    }

    /// Drains both endpoints of a flow onto the wire and keeps one timer event pending for it.
    pub(super) fn pump(&mut self, flow: u32) {
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
    pub(super) fn pump_side(&mut self, flow: u32, changed: Side) {
        match changed {
            Side::Sender => self.drain_sender(flow),
            Side::Receiver => self.drain_receiver(flow),
        }
        self.arm_flow_timer(flow);
    }

    /// The sender's packets onto the wire, while its host's port takes them and PFC does not pause it. With
    /// segmentation offload, in bursts: at each burst's start the sender may hold its data back for a larger
    /// one (`Sender::tso_defers`), and TCP small queues let two bursts wait at the egress (Linux's
    /// `tcp_small_queue_check`: twice the skb, at least `tsq_limit`).
    fn drain_sender(&mut self, flow: u32) {
        let now = self.clock.now();
        let mut limit = self.hosts.tsq_limit;
        let mut burst_left = 0;
        loop {
            let f = &self.flows[flow as usize];
            let (host, class) = (f.addr.src, f.addr.class);
            if f.nic_blocked {
                break;
            }
            if let Some(max) = self.hosts.tso_max {
                if burst_left == 0 {
                    let burst = f.sender.tso_burst(max.0);
                    if f.sender.tso_defers(now, burst) {
                        break; // the ACKs that open the window drain it again
                    }
                    burst_left = burst;
                    limit = limit.max(Bytes(2 * burst));
                }
            }
            if self.nic_full(host, limit) {
                self.block_on_nic(host, flow);
                break;
            }
            if self.fabric.host_paused(host, class) {
                self.hold_flow(host, flow); // RESUME wakes it
                break;
            }
            let f = &mut self.flows[flow as usize];
            let Some(p) = f.sender.poll_transmit(now) else {
                break;
            };
            if p.kind == Kind::Data {
                f.first_data.get_or_insert(now);
                burst_left = burst_left.saturating_sub(p.len as u64);
            }
            self.send_from_host(host, p, &Sack::NONE);
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

    /// Whether the host's egress holds more than `limit` bytes not yet sent (a port like a switch's: in its
    /// queues).
    fn nic_full(&mut self, host: u32, limit: Bytes) -> bool {
        let port = self.fabric.host_port(host);
        self.fabric.port(&mut self.clock, port).holds_more_than(limit)
    }

    /// The flow waits for its host's egress to drain below `tsq_limit`.
    fn block_on_nic(&mut self, host: u32, flow: u32) {
        self.hold_flow(host, flow);
        self.wake_when_nic_drains(host);
    }

    /// The flow joins its host's queue of flows waiting to send.
    fn hold_flow(&mut self, host: u32, flow: u32) {
        self.flows[flow as usize].nic_blocked = true;
        self.hosts.hosts[host as usize].blocked.push_back(flow);
    }

    /// One pending wake-up per host, when the egress backlog falls to `tsq_limit` (a port like a switch's: at
    /// the dequeue that brings it there, `host_port_drained`).
    fn wake_when_nic_drains(&mut self, host: u32) {
        if std::mem::replace(&mut self.hosts.hosts[host as usize].wake_pending, true) {
            return;
        }
        let limit = self.hosts.tsq_limit;
        let port = self.fabric.host_port(host);
        if let Some(at) = self.fabric.port(&mut self.clock, port).drained_to(limit) {
            self.clock.schedule(at, Event::NicReady { host });
        }
    }

    /// The host's egress dequeued (sent, or dropped at dequeue): if it is a port like a switch's, and the host
    /// waits for the backlog to fall to `tsq_limit` and it has, the host's blocked flows go on at this instant.
    #[inline]
    pub(super) fn host_port_drained(&mut self, host: u32) {
        let h = &self.hosts.hosts[host as usize];
        if !h.wake_pending || h.waking {
            return;
        }
        let port = self.fabric.host_port(host);
        if self.fabric.port(&mut self.clock, port).port_bytes() <= self.hosts.tsq_limit.0 {
            self.hosts.hosts[host as usize].waking = true;
            self.clock.schedule(self.clock.now(), Event::NicReady { host });
        }
    }

    /// The egress drained (or PFC resumed it): blocked flows send again, in the order they blocked, until it
    /// fills up.
    pub(super) fn nic_ready(&mut self, host: u32) {
        let h = &mut self.hosts.hosts[host as usize];
        h.wake_pending = false;
        h.waking = false;
        while let Some(&flow) = self.hosts.hosts[host as usize].blocked.front() {
            if self.nic_full(host, self.hosts.tsq_limit) {
                self.wake_when_nic_drains(host);
                break;
            }
            if self.fabric.host_paused(host, self.flows[flow as usize].addr.class) {
                break; // RESUME wakes the host again
            }
            self.hosts.hosts[host as usize].blocked.pop_front();
            self.flows[flow as usize].nic_blocked = false;
            self.pump(flow);
        }
    }
}
