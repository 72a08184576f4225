//! The TCP receiver: cumulative and SACK acknowledgements, delayed ACKs, and CE echo (RFC 3168 or DCTCP).

use super::cc::Echo;
use super::sender::insert_range;
use super::{EctPolicy, FlowAddr, TcpConfig};
use crate::packet::{Ecn, Kind, Packet, Sack, HEADER_BYTES};
use crate::units::Time;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct TcpReceiver {
    addr: FlowAddr,
    echo: Echo,
    ect_acks: bool,
    /// ACKs travel in the flow's class, or at the top priority under PIAS.
    ack_class: u8,
    delack: Option<(u32, Time)>,
    sack: bool,
    /// Next byte expected in order.
    pub rcv_nxt: u64,
    ooo: Vec<(u64, u64)>,
    /// The out-of-order range touched last (reported first, RFC 2018 §4).
    last_ooo: Option<(u64, u64)>,
    unacked: u32,
    delack_at: Option<Time>,
    /// RFC 3168: ECE latched from a CE arrival until CWR.
    ece_latched: bool,
    /// DCTCP: the CE state of the last segment.
    ce_state: bool,
    ts_echo: Time,
    out: VecDeque<(Packet, Sack)>,
    pub ce_received: u64,
    pub segments_received: u64,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig, addr: FlowAddr) -> TcpReceiver {
        TcpReceiver {
            addr,
            echo: cfg.cc.echo(),
            ect_acks: cfg.ect == EctPolicy::All && cfg.cc.ecn_capable(),
            ack_class: if cfg.pias.is_some() { 0 } else { addr.class },
            delack: cfg.delayed_ack.filter(|d| d.count > 1).map(|d| (d.count, d.timeout)),
            sack: cfg.recovery == super::Recovery::Sack,
            rcv_nxt: 0,
            ooo: Vec::new(),
            last_ooo: None,
            unacked: 0,
            delack_at: None,
            ece_latched: false,
            ce_state: false,
            ts_echo: Time::ZERO,
            out: VecDeque::new(),
            ce_received: 0,
            segments_received: 0,
        }
    }

    pub fn next_timer(&self) -> Option<Time> {
        self.delack_at
    }

    pub fn on_timer(&mut self, now: Time) {
        if self.delack_at.is_some_and(|t| t <= now) {
            self.send_ack(now, Kind::Ack);
        }
    }

    /// The next packet to send (an ACK) and its SACK blocks.
    pub fn poll_transmit(&mut self) -> Option<(Packet, Sack)> {
        self.out.pop_front()
    }

    fn ece(&self) -> bool {
        match self.echo {
            Echo::None => false,
            Echo::LatchUntilCwr => self.ece_latched,
            Echo::Exact => self.ce_state,
        }
    }

    fn send_ack(&mut self, now: Time, kind: Kind) {
        let mut sack = Sack::default();
        if self.sack {
            if let Some(r) = self.last_ooo {
                sack.push(r);
            }
            for &r in self.ooo.iter().rev() {
                if Some(r) != self.last_ooo && !sack.push(r) {
                    break;
                }
            }
        }
        let ack = Packet {
            flow: self.addr.flow,
            dst: self.addr.src,
            kind,
            ecn: if self.ect_acks { Ecn::Ect } else { Ecn::NotEct },
            class: self.ack_class,
            ece: self.ece(),
            wire: HEADER_BYTES,
            ack: self.rcv_nxt,
            ts: now,
            ts_echo: self.ts_echo,
            ..Packet::default()
        };
        self.out.push_back((ack, sack));
        self.unacked = 0;
        self.delack_at = None;
        self.ts_echo = Time::ZERO;
    }

    pub fn on_packet(&mut self, now: Time, p: &Packet) {
        match p.kind {
            Kind::Syn => {
                self.ts_echo = p.ts;
                self.send_ack(now, Kind::SynAck);
            }
            Kind::Data => self.on_data(now, p),
            _ => {}
        }
    }

    fn on_data(&mut self, now: Time, p: &Packet) {
        self.segments_received += 1;
        let ce = p.ecn == Ecn::Ce;
        if ce {
            self.ce_received += 1;
        }
        match self.echo {
            Echo::None => {}
            Echo::LatchUntilCwr => {
                if p.cwr {
                    self.ece_latched = false;
                }
                if ce {
                    self.ece_latched = true;
                }
            }
            Echo::Exact => {
                // DCTCP §3.1 (Fig. 10): on a change of CE state, first ACK what is pending with the old state.
                if ce != self.ce_state {
                    if self.unacked > 0 {
                        self.send_ack(now, Kind::Ack);
                    }
                    self.ce_state = ce;
                }
            }
        }
        let (s, e) = (p.seq, p.seq + p.len as u64);
        let mut immediate = false;
        if e <= self.rcv_nxt {
            immediate = true; // duplicate
        } else if s <= self.rcv_nxt {
            self.rcv_nxt = e;
            if !self.ooo.is_empty() {
                immediate = true; // filled (part of) a hole
                while let Some(&(os, oe)) = self.ooo.first() {
                    if os > self.rcv_nxt {
                        break;
                    }
                    self.rcv_nxt = self.rcv_nxt.max(oe);
                    self.ooo.remove(0);
                }
                if self.last_ooo.is_some_and(|(_, le)| le <= self.rcv_nxt) {
                    self.last_ooo = None;
                }
            }
        } else {
            insert_range(&mut self.ooo, s, e);
            self.last_ooo = self.ooo.iter().copied().find(|&(a, b)| a <= s && e <= b);
            immediate = true;
        }
        if self.ts_echo == Time::ZERO || immediate {
            self.ts_echo = p.ts;
        }
        self.unacked += 1;
        match self.delack {
            Some((count, timeout)) if !immediate => {
                if self.unacked >= count {
                    self.send_ack(now, Kind::Ack);
                } else if self.delack_at.is_none() {
                    self.delack_at = Some(now + timeout);
                }
            }
            _ => self.send_ack(now, Kind::Ack),
        }
    }

    /// Forces an ACK now (used when a flow's last byte arrives, so the sender learns at once).
    pub fn flush(&mut self, now: Time) {
        if self.unacked > 0 {
            self.send_ack(now, Kind::Ack);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{CcConfig, DelayedAck, Recovery};

    fn data(seq: u64, ce: bool, cwr: bool) -> Packet {
        Packet {
            kind: Kind::Data,
            seq,
            len: 1000,
            ecn: if ce { Ecn::Ce } else { Ecn::Ect },
            cwr,
            ts: Time(seq + 1),
            ..Packet::default()
        }
    }

    fn rx(cc: CcConfig, delack: u32) -> TcpReceiver {
        let cfg = TcpConfig {
            cc,
            delayed_ack: Some(DelayedAck { count: delack, timeout: Time::from_ms(1) }),
            recovery: Recovery::Sack,
            ..TcpConfig::default()
        };
        TcpReceiver::new(&cfg, FlowAddr::default())
    }

    fn acks(r: &mut TcpReceiver) -> Vec<(u64, bool)> {
        std::iter::from_fn(|| r.poll_transmit()).map(|(a, _)| (a.ack, a.ece)).collect()
    }

    #[test]
    fn dctcp_delayed_ack_state_machine_echoes_ce_exactly() {
        // DCTCP Fig. 10 with m = 2: segments 0,1 unmarked, 2 marked, 3 marked, 4 unmarked.
        let mut r = rx(CcConfig::Dctcp { g: 1.0 / 16.0, initial_alpha: 1.0 }, 2);
        let t = Time::from_us(1);
        r.on_packet(t, &data(0, false, false));
        assert!(acks(&mut r).is_empty(), "first segment waits for a second");
        r.on_packet(t, &data(1000, false, false));
        assert_eq!(acks(&mut r), vec![(2000, false)]);
        r.on_packet(t, &data(2000, true, false));
        assert!(acks(&mut r).is_empty(), "nothing pending: the state flips silently");
        r.on_packet(t, &data(3000, true, false));
        assert_eq!(acks(&mut r), vec![(4000, true)]);
        r.on_packet(t, &data(4000, true, false));
        // CE → not CE with one segment pending: ACK it at once with ECE = 1, then carry on with state 0.
        r.on_packet(t, &data(5000, false, false));
        assert_eq!(acks(&mut r), vec![(5000, true)]);
        r.on_packet(t, &data(6000, false, false));
        assert_eq!(acks(&mut r), vec![(7000, false)]);
    }

    #[test]
    fn rfc3168_receiver_latches_ece_until_cwr() {
        let mut r = rx(CcConfig::Ecnstar, 1);
        let t = Time::from_us(1);
        r.on_packet(t, &data(0, true, false));
        r.on_packet(t, &data(1000, false, false));
        r.on_packet(t, &data(2000, false, true));
        r.on_packet(t, &data(3000, false, false));
        assert_eq!(acks(&mut r), vec![(1000, true), (2000, true), (3000, false), (4000, false)]);
    }

    #[test]
    fn out_of_order_data_is_acked_at_once_with_sack_blocks() {
        let mut r = rx(CcConfig::Reno, 2);
        let t = Time::from_us(1);
        r.on_packet(t, &data(0, false, false));
        r.on_packet(t, &data(2000, false, false));
        let (a, sack) = r.poll_transmit().unwrap();
        assert_eq!((a.ack, sack.len(), sack.iter().next()), (1000, 1, Some((2000, 3000))));
        r.on_packet(t, &data(1000, false, false));
        let (a, sack) = r.poll_transmit().unwrap();
        assert_eq!((a.ack, sack.len()), (3000, 0), "hole filled: cumulative ACK jumps");
    }

    #[test]
    fn delayed_ack_timer_fires() {
        let mut r = rx(CcConfig::Reno, 2);
        r.on_packet(Time::from_us(1), &data(0, false, false));
        assert_eq!(r.next_timer(), Some(Time::from_us(1) + Time::from_ms(1)));
        r.on_timer(Time::from_us(1) + Time::from_ms(1));
        assert_eq!(acks(&mut r), vec![(1000, false)]);
    }
}
