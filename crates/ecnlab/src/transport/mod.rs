//! Sans-IO transport endpoints: TCP with pluggable congestion control (ECN off, ECN* = RFC 3168, DCTCP) and
//! PIAS tagging.
//!
//! Endpoints never touch the network: the host hands them packets (`on_packet`) and timer expiries
//! (`on_timer`), and drains what they want to send (`poll_transmit`). That keeps them testable as traces.

pub mod cc;
pub mod dcqcn;
pub mod pias;
pub mod receiver;
pub mod sender;

pub use cc::{Cc, CcConfig};
pub use dcqcn::{DcqcnConfig, RoceReceiver, RoceSender};
pub use pias::Pias;
pub use receiver::TcpReceiver;
pub use sender::TcpSender;

use crate::units::Time;
use serde::{Deserialize, Serialize};

/// Counters a sender reports, TCP's and RoCE's alike: here, not in `sender`, so that `dcqcn` needs nothing from
/// `sender` (`cc` → `dcqcn` → `sender` → `cc` was a module cycle).
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderStats {
    pub timeouts: u32,
    pub retransmits: u32,
    pub fast_recoveries: u32,
    pub ecn_cuts: u32,
    pub ece_acks: u64,
    /// ECEs a PMSB(e) sender ignored because its RTT was below the threshold.
    pub ece_ignored: u64,
}

/// Loss recovery after three duplicate ACKs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// RFC 6582 NewReno fast retransmit / fast recovery, no SACK.
    Newreno,
    /// RFC 6675 SACK-based loss recovery (receivers send SACK blocks).
    Sack,
}

/// Which packets carry ECT (RFC 3168 §6.1.1 vs. common implementations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EctPolicy {
    /// RFC 3168: new data only; never SYNs, pure ACKs or retransmissions.
    Rfc3168,
    /// Every data packet, retransmissions included (ns-3 classic ECN); not SYNs or pure ACKs.
    DataOnly,
    /// Every packet, SYNs and ACKs included (Linux DCTCP).
    All,
}

/// Receiver ACK policy: `count` in-order segments per ACK, or the timer, whichever first.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayedAck {
    pub count: u32,
    pub timeout: Time,
}

/// Everything an endpoint pair needs; `Copy` so each flow holds its own.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Payload bytes per segment (MTU 1500 on the wire = MSS 1460 + 40 B of headers).
    pub mss: u32,
    /// Initial window in segments.
    pub initial_window: u32,
    /// Floor of every window cut, in segments (pinned: 2).
    pub min_cwnd: u32,
    pub initial_rto: Time,
    pub min_rto: Time,
    pub max_rto: Time,
    pub recovery: Recovery,
    pub ect: EctPolicy,
    /// `None`: one ACK per segment.
    pub delayed_ack: Option<DelayedAck>,
    /// A SYN/SYN-ACK exchange before data (FCT includes it); otherwise connections are pre-established.
    pub handshake: bool,
    /// RFC 5681 §4.1: after an idle period longer than the RTO, restart from min(cwnd, IW).
    pub restart_after_idle: bool,
    pub cc: CcConfig,
    /// PIAS priority tagging (`None`: every packet travels in its flow's service class).
    pub pias: Option<Pias>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            initial_window: 10,
            min_cwnd: 2,
            initial_rto: Time::from_ms(5),
            min_rto: Time::from_ms(5),
            max_rto: Time::from_ms(60_000),
            recovery: Recovery::Sack,
            ect: EctPolicy::All,
            delayed_ack: None,
            handshake: false,
            restart_after_idle: true,
            cc: CcConfig::Dctcp { g: 1.0 / 16.0, initial_alpha: 1.0 },
            pias: None,
        }
    }
}

/// Addressing shared by both endpoints of one connection.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowAddr {
    pub flow: u32,
    pub src: u32,
    pub dst: u32,
    pub class: u8,
}

/// A flow's sending endpoint: TCP or RoCE (DCQCN). Enum dispatch keeps the host loop free of trait objects.
#[derive(Clone, Debug)]
pub enum Sender {
    Tcp(TcpSender),
    Roce(RoceSender),
}

/// A flow's receiving endpoint.
#[derive(Clone, Debug)]
pub enum Receiver {
    Tcp(TcpReceiver),
    Roce(RoceReceiver),
}

impl Sender {
    /// The endpoint `cfg.cc` calls for; `line` is the host's link rate (DCQCN starts there).
    pub fn new(cfg: std::sync::Arc<TcpConfig>, addr: FlowAddr, line: crate::units::Rate) -> Sender {
        match cfg.cc {
            CcConfig::Dcqcn(d) => Sender::Roce(RoceSender::new(d, cfg.mss, addr, line)),
            _ => Sender::Tcp(TcpSender::new(cfg, addr)),
        }
    }
    /// The application hands over `bytes` more to send.
    pub fn write(&mut self, bytes: u64) {
        match self {
            Sender::Tcp(s) => s.write(bytes),
            Sender::Roce(s) => s.written += bytes,
        }
    }
    /// A sender for the next flow on this idle connection (`TcpSender::resume`); `None` for RoCE, whose
    /// flows never share a connection.
    pub fn resume(&self, addr: FlowAddr) -> Option<Sender> {
        match self {
            Sender::Tcp(s) => Some(Sender::Tcp(s.resume(addr))),
            Sender::Roce(_) => None,
        }
    }
    /// Whether everything the application wrote and closed has been acknowledged (TCP), so the connection
    /// may carry another flow.
    pub fn is_idle(&self) -> bool {
        match self {
            Sender::Tcp(s) => s.done(),
            Sender::Roce(_) => false,
        }
    }
    /// The application closed the stream and the sender has seen every byte it wrote acknowledged: where
    /// the MQ-ECN authors' ns-2 scripts end a flow's completion time (`observe.fct_end = "acked"`).
    pub fn all_acked(&self) -> bool {
        match self {
            Sender::Tcp(s) => s.done(),
            Sender::Roce(s) => s.closed && s.snd_una >= s.written,
        }
    }
    /// The application will write no more.
    pub fn close(&mut self) {
        match self {
            Sender::Tcp(s) => s.closed = true,
            Sender::Roce(s) => s.closed = true,
        }
    }
    /// The application stops now: what was sent so far is the whole flow.
    pub fn stop(&mut self) {
        match self {
            Sender::Tcp(s) => s.written = s.snd_max.max(s.snd_nxt),
            Sender::Roce(s) => s.written = s.snd_nxt,
        }
        self.close();
    }
    pub fn is_closed(&self) -> bool {
        match self {
            Sender::Tcp(s) => s.closed,
            Sender::Roce(s) => s.closed,
        }
    }
    pub fn written(&self) -> u64 {
        match self {
            Sender::Tcp(s) => s.written,
            Sender::Roce(s) => s.written,
        }
    }
    /// Segmentation offload's burst (`TcpSender::tso_burst`); RoCE has none (validation refuses it), so `max`.
    pub fn tso_burst(&self, max: u64) -> u64 {
        match self {
            Sender::Tcp(s) => s.tso_burst(max),
            Sender::Roce(_) => max,
        }
    }
    /// Segmentation offload holds new data back now (`TcpSender::tso_defers`); never RoCE.
    pub fn tso_defers(&self, now: Time, burst: u64) -> bool {
        match self {
            Sender::Tcp(s) => s.tso_defers(now, burst),
            Sender::Roce(_) => false,
        }
    }
    /// What `cwnd.csv` samples: TCP's congestion window in bytes; DCQCN's current rate R_C in Gb/s.
    pub fn window_sample(&self) -> f64 {
        match self {
            Sender::Tcp(s) => s.cwnd as f64,
            Sender::Roce(s) => s.rp.rc / 1e9,
        }
    }
    pub fn stats(&self) -> &SenderStats {
        match self {
            Sender::Tcp(s) => &s.stats,
            Sender::Roce(s) => &s.stats,
        }
    }
    /// A packet from the receiver and its SACK blocks (TCP reads them; RoCE has none).
    pub fn on_packet(&mut self, now: Time, p: &crate::packet::Packet, sack: &crate::packet::Sack) {
        match self {
            Sender::Tcp(s) => s.on_packet(now, p, sack),
            Sender::Roce(s) => s.on_packet(now, p),
        }
    }
    pub fn on_timer(&mut self, now: Time) {
        match self {
            Sender::Tcp(s) => s.on_timer(now),
            Sender::Roce(s) => s.on_timer(now),
        }
    }
    pub fn next_timer(&self) -> Option<Time> {
        match self {
            Sender::Tcp(s) => s.next_timer(),
            Sender::Roce(s) => s.next_timer(),
        }
    }
    pub fn poll_transmit(&mut self, now: Time) -> Option<crate::packet::Packet> {
        match self {
            Sender::Tcp(s) => s.poll_transmit(now),
            Sender::Roce(s) => s.poll_transmit(now),
        }
    }
    /// The RTT sample the last packet produced (TCP only), taken.
    pub fn take_rtt_sample(&mut self) -> Option<Time> {
        match self {
            Sender::Tcp(s) => s.rtt_sample.take(),
            Sender::Roce(_) => None,
        }
    }
}

impl Receiver {
    pub fn new(cfg: &TcpConfig, addr: FlowAddr) -> Receiver {
        match cfg.cc {
            CcConfig::Dcqcn(d) => Receiver::Roce(RoceReceiver::new(d, addr)),
            _ => Receiver::Tcp(TcpReceiver::new(cfg, addr)),
        }
    }
    /// Next byte expected in order.
    pub fn rcv_nxt(&self) -> u64 {
        match self {
            Receiver::Tcp(r) => r.rcv_nxt,
            Receiver::Roce(r) => r.rcv_nxt,
        }
    }
    /// A data packet (or SYN) from the sender; `size` is the flow's length when known.
    pub fn on_packet(&mut self, now: Time, p: &crate::packet::Packet, size: Option<u64>) {
        match self {
            Receiver::Tcp(r) => r.on_packet(now, p),
            Receiver::Roce(r) => r.on_packet(now, p, size),
        }
    }
    pub fn on_timer(&mut self, now: Time) {
        if let Receiver::Tcp(r) = self {
            r.on_timer(now);
        }
    }
    pub fn next_timer(&self) -> Option<Time> {
        match self {
            Receiver::Tcp(r) => r.next_timer(),
            Receiver::Roce(_) => None,
        }
    }
    /// The next packet to send and its SACK blocks (empty for RoCE).
    pub fn poll_transmit(&mut self) -> Option<(crate::packet::Packet, crate::packet::Sack)> {
        match self {
            Receiver::Tcp(r) => r.poll_transmit(),
            Receiver::Roce(r) => r.poll_transmit().map(|p| (p, crate::packet::Sack::NONE)),
        }
    }
    /// The flow completed: a TCP receiver acknowledges what it still holds back.
    pub fn flush(&mut self, now: Time) {
        if let Receiver::Tcp(r) = self {
            r.flush(now);
        }
    }
}
