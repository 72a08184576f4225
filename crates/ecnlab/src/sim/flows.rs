//! Flows: a TCP (or RoCE) connection's two endpoints with what the run records of it, their opening, their
//! timers and the application writes that pace a rate-limited flow.

use super::{Side, Sim};
use crate::engine::Event;
use crate::packet::{Packet, Sack};
use crate::transport::{FlowAddr, Receiver, Sender, TcpConfig};
use crate::units::{Bytes, Rate, Time};
use std::sync::Arc;

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
    pub workload: u32,
    /// The receiver tells the workload when `rcv_nxt` reaches this (incast blocks).
    notify_at: u64,
    app: Option<AppRate>,
    timer_pending: Time,
    /// Waiting in its host's queue for its egress to drain.
    pub(super) nic_blocked: bool,
    pub(super) delivered_at_warmup: u64,
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

    /// The workload stops a long-lived flow: its application writes no more.
    pub(super) fn stop(&mut self) {
        if !self.sender.is_closed() {
            self.sender.stop();
            self.app = None;
        }
    }

    /// The workload wants to hear when the receiver has `bytes` of the stream (an incast block).
    pub(super) fn notify_at(&mut self, bytes: u64) {
        self.notify_at = bytes;
    }
}

/// Every flow opened so far, by id, and what all of them share.
pub(super) struct Flows {
    list: Vec<Flow>,
    /// One transport configuration, shared by every flow's sender (a per-flow copy would spread it over
    /// every flow's cache lines).
    tcp: Arc<TcpConfig>,
    /// `observe.fct_end = "acked"`: each sized flow's last acknowledgement is noted (`Flow::acked`).
    fct_acked: bool,
}

impl Flows {
    /// `list`: room reserved for the flows the workloads open by count (`build::reserve_flows`).
    pub(super) fn new(list: Vec<Flow>, tcp: TcpConfig, fct_acked: bool) -> Flows {
        Flows { list, tcp: Arc::new(tcp), fct_acked }
    }

    pub(super) fn tcp(&self) -> &TcpConfig {
        &self.tcp
    }

    pub(super) fn fct_acked(&self) -> bool {
        self.fct_acked
    }
}

impl std::ops::Deref for Flows {
    type Target = [Flow];
    fn deref(&self) -> &[Flow] {
        &self.list
    }
}

impl std::ops::DerefMut for Flows {
    fn deref_mut(&mut self) -> &mut [Flow] {
        &mut self.list
    }
}

/// What a workload asks of a new flow (`Sim::open_flow`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Opening {
    pub src: u32,
    pub dst: u32,
    pub class: u8,
    /// `None`: long-lived (written by the workload, or without end when it is bulk).
    pub size: Option<u64>,
    /// The application writes at this rate (one segment at a time) rather than all at once.
    pub rate: Option<Rate>,
    /// Without a size or a rate: the application writes without end (a long-lived flow), rather than when
    /// asked (incast).
    pub bulk: bool,
    /// The flow's end-to-end base RTT under RTT variation: its sender delays its packets by the difference to
    /// the fabric's base RTT (DESIGN "RTT variation").
    pub rtt_target: Option<Time>,
    /// An earlier flow whose connection, now idle, carries this one (its sender's congestion state goes on);
    /// `None`: a new connection.
    pub on: Option<u32>,
}

impl Opening {
    pub(super) fn new(src: u32, dst: u32, class: u8, size: Option<u64>) -> Opening {
        Opening { src, dst, class, size, rate: None, bulk: false, rtt_target: None, on: None }
    }
}

impl Sim {
    /// Opens a flow for `workload`: both endpoints, the base RTT, and its first transmissions.
    pub(super) fn open_flow(&mut self, workload: u32, o: Opening) -> u32 {
        let now = self.clock.now();
        let id = self.flows.list.len() as u32;
        let addr = FlowAddr { flow: id, src: o.src, dst: o.dst, class: o.class };
        let line = self.fabric.raw(self.fabric.host_port(o.src)).cfg.rate;
        let resumed = o.on.and_then(|f| self.flows[f as usize].sender.resume(addr));
        debug_assert_eq!(resumed.is_some(), o.on.is_some(), "validation keeps RoCE off persistent connections");
        let mut sender = resumed.unwrap_or_else(|| Sender::new(self.flows.tcp.clone(), addr, line));
        match (o.size, o.rate) {
            (_, Some(_)) => {} // the application paces its writes (flow_timer)
            (Some(s), None) => {
                sender.write(s);
                sender.close();
            }
            (None, None) if o.bulk => sender.write(u64::MAX / 4),
            (None, None) => {} // written on request (incast)
        }
        let tcp = &self.flows.tcp;
        let mss = tcp.mss as u64;
        let app = o.rate.map(|r| {
            let interval = r.tx_time(Bytes(mss + crate::packet::HEADER_BYTES as u64));
            AppRate { interval, next: now, total: o.size }
        });
        let mtu = Bytes(mss + crate::packet::HEADER_BYTES as u64);
        let fabric_rtt = self.fabric.net().base_rtt(o.src, o.dst, mtu, Bytes(crate::packet::HEADER_BYTES as u64));
        let extra_delay = o.rtt_target.map_or(Time::ZERO, |t| t.saturating_sub(fabric_rtt));
        self.fabric.set_flow_delay(id, extra_delay);
        let receiver = Receiver::new(tcp, addr);
        self.flows.list.push(Flow {
            addr,
            size: o.size,
            start: now,
            first_data: None,
            finish: None,
            acked: None,
            receiver,
            sender,
            base_rtt: fabric_rtt + extra_delay,
            workload,
            notify_at: o.size.unwrap_or(u64::MAX),
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

    /// The flow's receiver takes a data packet or SYN.
    pub(super) fn receiver_took(&mut self, pkt: &Packet) {
        let now = self.clock.now();
        let f = &mut self.flows[pkt.flow as usize];
        let before = f.receiver.rcv_nxt();
        f.receiver.on_packet(now, pkt, f.size);
        let after = f.receiver.rcv_nxt();
        let reached = after >= f.notify_at;
        self.observer.delivered(f.addr.class, after - before);
        if reached {
            self.on_delivered(pkt.flow);
            self.pump(pkt.flow);
        } else if self.hosts.receiver_events_leave_senders() {
            self.pump_side(pkt.flow, Side::Receiver);
        } else {
            self.pump(pkt.flow);
        }
    }

    /// The receiver reached `notify_at`: a flow completed or an incast block arrived.
    fn on_delivered(&mut self, flow: u32) {
        let now = self.clock.now();
        let f = &mut self.flows[flow as usize];
        f.notify_at = u64::MAX;
        if f.size.is_some_and(|s| f.receiver.rcv_nxt() >= s) && f.finish.is_none() {
            f.finish = Some(now);
            f.receiver.flush(now);
        }
        let w = f.workload;
        self.workload_delivered(w);
    }

    /// The sender took an ACK (or a SYN-ACK, NACK, CNP).
    pub(super) fn sender_took(&mut self, pkt: &Packet, sack: &Sack) {
        let flow = pkt.flow;
        let now = self.clock.now();
        let fct_acked = self.flows.fct_acked;
        let f = &mut self.flows[flow as usize];
        f.sender.on_packet(now, pkt, sack);
        if fct_acked && f.acked.is_none() && f.size.is_some() && f.sender.all_acked() {
            f.acked = Some(now);
        }
        if let Some(r) = f.sender.take_rtt_sample() {
            let class = f.addr.class;
            self.observer.rtt_sample(now, flow, class, r);
        }
        self.pump_side(flow, Side::Sender);
    }

    /// Keeps one timer event pending for the flow: its sender's, its receiver's or its application's, the
    /// earliest.
    pub(super) fn arm_flow_timer(&mut self, flow: u32) {
        let f = &mut self.flows[flow as usize];
        let never = Time::MAX;
        let app = f.app.map_or(never, |a| a.next);
        let t = f.sender.next_timer().unwrap_or(never).min(f.receiver.next_timer().unwrap_or(never)).min(app);
        if t < f.timer_pending {
            f.timer_pending = t;
            self.clock.schedule(t, Event::FlowTimer { flow });
        }
    }

    pub(super) fn flow_timer(&mut self, flow: u32) {
        let now = self.clock.now();
        let mss = self.flows.tcp.mss as u64;
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
}
