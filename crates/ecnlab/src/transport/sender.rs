//! The TCP sender: windows, loss recovery (NewReno or SACK), RTO (RFC 6298) and the ECN reaction.

use super::cc::Cc;
use super::{EctPolicy, FlowAddr, Recovery, TcpConfig};
// Its old path, `transport::sender::SenderStats`, stays public API.
pub use super::SenderStats;
use crate::packet::{Ecn, Kind, Packet, Sack, HEADER_BYTES};
use crate::units::Time;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// SYN sent (or due), waiting for the SYN-ACK.
    SynSent,
    Established,
}

#[derive(Clone, Debug)]
pub struct TcpSender {
    /// Shared by every flow of the run.
    cfg: Arc<TcpConfig>,
    addr: FlowAddr,
    pub state: State,
    syn_due: bool,
    pub cc: Cc,
    mss: u64,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Highest sequence ever sent + 1.
    pub snd_max: u64,
    /// Bytes the application has handed over so far.
    pub written: u64,
    /// The application will write no more: the flow ends when `written` is acknowledged.
    pub closed: bool,
    pub cwnd: u64,
    pub ssthresh: u64,
    ca_acc: u64,
    dupacks: u32,
    in_recovery: bool,
    recover: u64,
    /// NewReno: a segment to retransmit at once (fast retransmit, partial ACK).
    rtx_now: Option<u64>,
    /// SACK: everything in holes below this has been retransmitted.
    high_rxt: u64,
    /// SACK scoreboard: disjoint sorted `[start, end)` ranges above snd_una.
    sacked: Vec<(u64, u64)>,
    srtt: Option<Time>,
    rttvar: Time,
    rto: Time,
    backoff: u32,
    rto_at: Option<Time>,
    ecn_recover: u64,
    send_cwr: bool,
    last_send: Time,
    /// The most recent RTT sample; the host drains it into statistics.
    pub rtt_sample: Option<Time>,
    /// The latest RTT sample, kept (PMSB(e) compares it with its threshold).
    last_rtt: Option<Time>,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(cfg: Arc<TcpConfig>, addr: FlowAddr) -> TcpSender {
        let mss = cfg.mss as u64;
        TcpSender {
            addr,
            state: if cfg.handshake { State::SynSent } else { State::Established },
            syn_due: cfg.handshake,
            cc: Cc::new(cfg.cc),
            mss,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            written: 0,
            closed: false,
            cwnd: cfg.initial_window as u64 * mss,
            ssthresh: u64::MAX,
            ca_acc: 0,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            rtx_now: None,
            high_rxt: 0,
            sacked: Vec::new(),
            srtt: None,
            rttvar: Time::ZERO,
            rto: cfg.initial_rto,
            backoff: 0,
            rto_at: None,
            ecn_recover: 0,
            send_cwr: false,
            last_send: Time::ZERO,
            rtt_sample: None,
            last_rtt: None,
            stats: SenderStats::default(),
            cfg,
        }
    }

    /// The application hands over `bytes` more to send.
    pub fn write(&mut self, bytes: u64) {
        self.written += bytes;
    }

    /// A sender for the next flow on this connection, which must be `done` (idle, everything acknowledged):
    /// a new sequence space and counters, with this connection's congestion state (cwnd, ssthresh, DCTCP α),
    /// RTT estimate and RTO, and the time it last sent, so that RFC 5681 §4.1's restart after idle
    /// (`restart_after_idle`) applies to its first segment as on a kept connection. No handshake: the
    /// connection is open.
    pub fn resume(&self, addr: FlowAddr) -> TcpSender {
        debug_assert!(self.done(), "only an idle connection carries another flow");
        TcpSender {
            state: State::Established,
            syn_due: false,
            cc: self.cc.resumed(),
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            srtt: self.srtt,
            rttvar: self.rttvar,
            rto: self.rto,
            last_send: self.last_send,
            last_rtt: self.last_rtt,
            ..TcpSender::new(self.cfg.clone(), addr)
        }
    }

    /// Everything written has been acknowledged and the application closed the stream.
    pub fn done(&self) -> bool {
        self.closed && self.state == State::Established && self.snd_una >= self.written
    }

    fn min_cwnd(&self) -> u64 {
        self.cfg.min_cwnd as u64 * self.mss
    }

    fn flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    pub fn next_timer(&self) -> Option<Time> {
        self.rto_at
    }

    fn backed_off_rto(&self) -> Time {
        let mut t = self.rto;
        for _ in 0..self.backoff {
            t = t + t;
            if t >= self.cfg.max_rto {
                return self.cfg.max_rto;
            }
        }
        t.min(self.cfg.max_rto)
    }

    fn arm_rto(&mut self, now: Time) {
        self.rto_at = Some(now + self.backed_off_rto());
    }

    /// RFC 6298 §2: SRTT, RTTVAR and RTO from one sample (clock granularity 0; RTO floored at min_rto).
    fn on_rtt_sample(&mut self, r: Time) {
        self.rtt_sample = Some(r);
        self.last_rtt = Some(r);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Time(r.0 / 2);
            }
            Some(s) => {
                let diff = s.0.abs_diff(r.0);
                self.rttvar = Time((3 * self.rttvar.0 + diff) / 4);
                self.srtt = Some(Time((7 * s.0 + r.0) / 8));
            }
        }
        let rto = Time(self.srtt.unwrap().0 + 4 * self.rttvar.0);
        self.rto = rto.max(self.cfg.min_rto).min(self.cfg.max_rto);
    }

    pub fn srtt(&self) -> Option<Time> {
        self.srtt
    }
    pub fn current_rto(&self) -> Time {
        self.backed_off_rto()
    }

    pub fn on_timer(&mut self, now: Time) {
        let Some(at) = self.rto_at else { return };
        if now < at {
            return;
        }
        self.stats.timeouts += 1;
        self.backoff += 1;
        if self.state == State::SynSent {
            self.syn_due = true;
            self.arm_rto(now);
            return;
        }
        // RFC 5681 §3.1 Eq. 4 and the loss window of one segment; go back to snd_una.
        self.ssthresh = (self.flight() / 2).max(self.min_cwnd());
        self.cwnd = self.mss;
        self.ca_acc = 0;
        self.snd_nxt = self.snd_una;
        self.in_recovery = false;
        self.dupacks = 0;
        self.rtx_now = None;
        self.sacked.clear();
        self.high_rxt = self.snd_una;
        self.recover = self.snd_max;
        self.ecn_recover = self.snd_max;
        self.arm_rto(now);
    }

    /// A packet from the receiver (an ACK, or the SYN-ACK) and the SACK blocks it carries.
    pub fn on_packet(&mut self, now: Time, p: &Packet, sack: &Sack) {
        match p.kind {
            Kind::SynAck if self.state == State::SynSent => {
                self.state = State::Established;
                self.syn_due = false;
                self.on_rtt_sample(now - p.ts_echo);
                self.backoff = 0;
                self.rto_at = None;
            }
            Kind::Ack if self.state == State::Established => self.on_ack(now, p, sack),
            _ => {}
        }
    }

    /// PMSB(e) Algorithm 2: an ECE is ignored when the latest RTT sample is below the threshold.
    fn blind(&self) -> bool {
        match (&self.cc, self.last_rtt) {
            (Cc::Dctcp(d), Some(rtt)) => d.blind_below.is_some_and(|thr| rtt < thr),
            _ => false,
        }
    }

    fn on_ack(&mut self, now: Time, p: &Packet, sack: &Sack) {
        let ack = p.ack.min(self.snd_max);
        if ack > self.snd_una && p.ts_echo > Time::ZERO && p.ts_echo <= now {
            self.on_rtt_sample(now - p.ts_echo);
        }
        let mut ece = p.ece;
        if ece {
            self.stats.ece_acks += 1;
            if self.blind() {
                ece = false;
                self.stats.ece_ignored += 1;
            }
        }
        if self.cfg.recovery == Recovery::Sack {
            self.update_scoreboard(ack, sack);
        }
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            let flight_before = self.flight();
            self.snd_una = ack;
            if self.snd_nxt < ack {
                self.snd_nxt = ack;
            }
            self.dupacks = 0;
            self.backoff = 0;
            if let Cc::Dctcp(d) = &mut self.cc {
                d.on_ack(acked, ece, self.snd_una, self.snd_nxt);
            }
            let cut = ece && self.ecn_signal();
            if self.in_recovery {
                if ack >= self.recover {
                    // Full ACK: leave fast recovery (RFC 6582 §3.2 step 3, RFC 6675 §5).
                    self.in_recovery = false;
                    self.cwnd = self.ssthresh.min(self.flight() + self.mss).max(self.min_cwnd());
                } else if self.cfg.recovery == Recovery::Newreno {
                    // Partial ACK: retransmit the next hole, deflate by the amount acked, add one segment back.
                    self.rtx_now = Some(self.snd_una);
                    self.cwnd = self.cwnd.saturating_sub(acked).max(self.mss) + self.mss;
                }
            } else if !cut {
                self.grow(acked, flight_before);
            }
            if self.snd_una >= self.snd_max {
                self.rto_at = None;
            } else {
                self.arm_rto(now);
            }
        } else if ack == self.snd_una && p.len == 0 && self.flight() > 0 {
            if ece {
                self.ecn_signal();
            }
            self.dupacks += 1;
            if self.in_recovery {
                if self.cfg.recovery == Recovery::Newreno {
                    self.cwnd += self.mss;
                }
            } else if (self.dupacks >= 3 || self.sack_says_lost(self.snd_una)) && ack >= self.recover {
                self.enter_recovery();
            }
        }
    }

    /// An ECE arrived: react at most once per window of data (RFC 3168 §6.1.2). Returns true if cut.
    fn ecn_signal(&mut self) -> bool {
        if matches!(self.cc, Cc::Reno) || self.snd_una < self.ecn_recover || self.in_recovery {
            return false;
        }
        let cut = self.cc.ecn_cut(self.cwnd).max(self.min_cwnd());
        self.cwnd = cut;
        self.ssthresh = cut;
        self.ca_acc = 0;
        self.ecn_recover = self.snd_max + 1;
        self.send_cwr = matches!(self.cc, Cc::Ecnstar);
        self.stats.ecn_cuts += 1;
        true
    }

    fn enter_recovery(&mut self) {
        self.stats.fast_recoveries += 1;
        self.ssthresh = (self.flight() / 2).max(self.min_cwnd());
        self.in_recovery = true;
        self.recover = self.snd_max;
        self.ecn_recover = self.snd_max + 1;
        self.rtx_now = Some(self.snd_una);
        self.high_rxt = self.snd_una;
        self.cwnd = match self.cfg.recovery {
            Recovery::Newreno => self.ssthresh + 3 * self.mss,
            Recovery::Sack => self.ssthresh,
        };
    }

    /// Slow start (one segment per ACK'd segment, at most two per ACK: RFC 3465 L = 2) or congestion avoidance,
    /// only while the window limits the sender (RFC 7661's idea, as Linux's `tcp_is_cwnd_limited`): in slow
    /// start while cwnd < 2 × the flight, in congestion avoidance while the flight fills the window. A sender
    /// held back by its NIC or its application does not inflate cwnd.
    fn grow(&mut self, acked: u64, flight_before: u64) {
        let limited = if self.cwnd < self.ssthresh {
            self.cwnd < 2 * flight_before
        } else {
            flight_before + self.mss >= self.cwnd
        };
        if !limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += acked.min(2 * self.mss);
        } else {
            self.ca_acc += acked;
            if self.ca_acc >= self.cwnd {
                self.ca_acc -= self.cwnd;
                self.cwnd += self.mss;
            }
        }
    }

    fn update_scoreboard(&mut self, ack: u64, sack: &Sack) {
        self.sacked.retain(|&(_, e)| e > ack);
        if let Some(first) = self.sacked.first_mut() {
            first.0 = first.0.max(ack);
        }
        for (s, e) in sack.iter() {
            if e <= ack.max(self.snd_una) || s >= e {
                continue;
            }
            insert_range(&mut self.sacked, s.max(ack), e.min(self.snd_max));
        }
    }

    /// The first sequence not yet known lost: every hole below it has ≥ 3 segments' worth SACKed above it
    /// (RFC 6675 IsLost, byte form).
    fn lost_below(&self) -> u64 {
        let mut above = 0;
        for &(s, e) in self.sacked.iter().rev() {
            above += e - s;
            if above >= 3 * self.mss {
                return s;
            }
        }
        self.snd_una
    }

    fn sack_says_lost(&self, seq: u64) -> bool {
        self.cfg.recovery == Recovery::Sack && self.lost_below() > seq
    }

    /// RFC 6675 §4 pipe: unsacked bytes not deemed lost, plus retransmitted ones.
    fn pipe(&self) -> u64 {
        let lost_end = self.lost_below();
        let mut pipe = 0;
        let mut cursor = self.snd_una;
        let hole = |a: u64, b: u64, pipe: &mut u64| {
            if a >= b {
                return;
            }
            let lost = b.min(lost_end).saturating_sub(a);
            let rexmitted = b.min(self.high_rxt).saturating_sub(a);
            *pipe += (b - a) - lost + rexmitted.min(lost);
        };
        for &(s, e) in &self.sacked {
            hole(cursor, s, &mut pipe);
            cursor = e;
        }
        hole(cursor, self.snd_max, &mut pipe);
        pipe
    }

    /// RFC 6675 NextSeg rule 1: the first lost, not yet retransmitted hole byte.
    fn next_lost_hole(&self) -> Option<(u64, u64)> {
        let lost_end = self.lost_below();
        let mut cursor = self.snd_una;
        for &(s, e) in &self.sacked {
            let a = cursor.max(self.high_rxt);
            let b = s.min(lost_end);
            if a < b {
                return Some((a, b));
            }
            cursor = e;
        }
        None
    }

    fn app_available(&self) -> u64 {
        self.written
    }

    /// Linux's pacing rate, which TSO autosizing reads (`tcp_update_pacing_rate`): cwnd / srtt, doubled while
    /// cwnd is under half of ssthresh (`tcp_pacing_ss_ratio` = 200 %), × 1.2 after (`tcp_pacing_ca_ratio` =
    /// 120 %); bytes per second. `None` before the first RTT sample.
    fn pacing_rate(&self) -> Option<f64> {
        let srtt = self.srtt?.as_secs_f64();
        let ratio = if self.cwnd < self.ssthresh / 2 { 2.0 } else { 1.2 };
        (srtt > 0.0).then(|| self.cwnd as f64 * ratio / srtt)
    }

    /// Segmentation offload's burst (`hosts.tso_max`), sized as Linux's `tcp_tso_autosize` before 5.18 sizes it:
    /// the pacing rate shifted right by `sk_pacing_shift` = 10 (about 1 ms of it), in whole segments, at least
    /// two, at most `max` bytes of data; `max` before an RTT sample (Linux's rate is then unbounded). Kernels
    /// from 5.18 add `gso_max_size >> (min_rtt_us >> 9)`, a full 64 KiB below 512 µs of RTT: `max` says which.
    pub fn tso_burst(&self, max: u64) -> u64 {
        let most = (max / self.mss).max(2);
        let segs = self.pacing_rate().map_or(most, |r| ((r / 1024.0) as u64 / self.mss).clamp(2, most));
        segs * self.mss
    }

    /// Whether segmentation offload holds new data back now, to send it later as a larger burst: Linux's
    /// `tcp_tso_should_defer`, less its last test (the oldest unacknowledged segment's age against srtt/2,
    /// which needs each segment's send time). It sends at once when not in plain congestion avoidance or
    /// slow start (a handshake, recovery, go-back-N after a timeout), with nothing in flight, a jiffy (1 ms,
    /// HZ = 1000) after its last send, when a full `burst` fits the window, when the closed stream's rest fits
    /// (its FIN), or when a third of the window is open (`tcp_tso_win_divisor` = 3); otherwise it waits for the
    /// ACKs that open the window further (each drains the sender again).
    pub fn tso_defers(&self, now: Time, burst: u64) -> bool {
        let flight = self.snd_nxt - self.snd_una;
        let unsent = self.app_available().saturating_sub(self.snd_nxt);
        let room = self.cwnd.saturating_sub(flight);
        let plain = self.state == State::Established
            && !self.in_recovery
            && self.rtx_now.is_none()
            && self.snd_nxt == self.snd_max;
        plain
            && flight > 0
            && unsent > 0
            && now.saturating_sub(self.last_send) < Time::from_ms(1)
            && room < burst
            && !(self.closed && room >= unsent)
            && room < self.cwnd / 3
    }

    /// The next packet this sender wants to put on the wire, if the window allows.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Packet> {
        if self.state == State::SynSent {
            if !self.syn_due {
                return None;
            }
            self.syn_due = false;
            if self.rto_at.is_none() || self.rto_at.unwrap() <= now {
                self.arm_rto(now);
            }
            let ect = self.cfg.ect == EctPolicy::All && self.cc_ecn();
            return Some(self.packet(now, Kind::Syn, 0, 0, ect, false));
        }
        if let Some(seq) = self.rtx_now.take() {
            if seq < self.snd_max {
                let len = self.mss.min(self.snd_max - seq);
                self.high_rxt = self.high_rxt.max(seq + len);
                return Some(self.data(now, seq, len, true));
            }
        }
        if self.in_recovery && self.cfg.recovery == Recovery::Sack {
            if self.pipe() + self.mss > self.cwnd {
                return None;
            }
            if let Some((a, b)) = self.next_lost_hole() {
                let len = self.mss.min(b - a);
                self.high_rxt = a + len;
                return Some(self.data(now, a, len, true));
            }
        } else {
            let outstanding = self.snd_nxt - self.snd_una;
            if outstanding + self.mss.min(self.app_available().saturating_sub(self.snd_nxt)) > self.cwnd {
                return None;
            }
        }
        // (Re)send from snd_nxt: below snd_max after an RTO (go-back-N), new data above.
        let seq = self.snd_nxt;
        let limit = if seq < self.snd_max { self.snd_max } else { self.app_available() };
        if seq >= limit {
            return None;
        }
        let len = self.mss.min(limit - seq);
        if self.cfg.restart_after_idle && self.flight() == 0 && now.saturating_sub(self.last_send) > self.rto {
            self.cwnd = self.cwnd.min(self.cfg.initial_window as u64 * self.mss);
        }
        let retx = seq < self.snd_max;
        self.snd_nxt = seq + len;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        if self.rto_at.is_none() {
            self.arm_rto(now);
        }
        Some(self.data(now, seq, len, retx))
    }

    fn cc_ecn(&self) -> bool {
        !matches!(self.cc, Cc::Reno)
    }

    fn data(&mut self, now: Time, seq: u64, len: u64, retx: bool) -> Packet {
        if retx {
            self.stats.retransmits += 1;
        }
        let ect = self.cc_ecn() && !(retx && self.cfg.ect == EctPolicy::Rfc3168);
        let mut p = self.packet(now, Kind::Data, seq, len as u32, ect, retx);
        if self.send_cwr && !retx {
            p.cwr = true;
            self.send_cwr = false;
        }
        self.last_send = now;
        p
    }

    fn packet(&self, now: Time, kind: Kind, seq: u64, len: u32, ect: bool, retx: bool) -> Packet {
        Packet {
            flow: self.addr.flow,
            dst: self.addr.dst,
            kind,
            ecn: if ect { Ecn::Ect } else { Ecn::NotEct },
            class: match self.cfg.pias {
                Some(p) if kind == Kind::Data => p.priority(seq),
                Some(_) => 0,
                None => self.addr.class,
            },
            retx,
            wire: len + HEADER_BYTES,
            seq,
            len,
            ts: now,
            cwnd_segments: (self.cwnd / self.mss) as u32,
            ..Packet::default()
        }
    }
}

/// Inserts `[s, e)` into sorted disjoint ranges, merging overlaps and neighbours.
pub(crate) fn insert_range(v: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    if s >= e {
        return;
    }
    let i = v.partition_point(|&(_, end)| end < s);
    let mut j = i;
    let (mut ns, mut ne) = (s, e);
    while j < v.len() && v[j].0 <= ne {
        ns = ns.min(v[j].0);
        ne = ne.max(v[j].1);
        j += 1;
    }
    v.splice(i..j, std::iter::once((ns, ne)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::CcConfig;

    const MSS: u64 = 1000;

    fn cfg(cc: CcConfig, recovery: Recovery) -> TcpConfig {
        TcpConfig {
            mss: MSS as u32,
            initial_window: 4,
            recovery,
            cc,
            min_rto: Time::from_ms(10),
            initial_rto: Time::from_ms(100),
            ..TcpConfig::default()
        }
    }

    fn ack(ack: u64, ece: bool, ts_echo: Time) -> Packet {
        Packet { kind: Kind::Ack, ack, ece, ts_echo, ..Packet::default() }
    }

    fn drain(s: &mut TcpSender, now: Time) -> Vec<Packet> {
        std::iter::from_fn(|| s.poll_transmit(now)).collect()
    }

    fn established(cc: CcConfig, recovery: Recovery, bytes: u64) -> TcpSender {
        let mut s = TcpSender::new(Arc::new(cfg(cc, recovery)), FlowAddr::default());
        s.write(bytes);
        s.closed = true;
        s
    }

    #[test]
    fn sends_the_initial_window_then_waits() {
        let mut s = established(CcConfig::Reno, Recovery::Newreno, 100 * MSS);
        let sent = drain(&mut s, Time::ZERO);
        assert_eq!(sent.len(), 4);
        assert_eq!(sent.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![0, 1000, 2000, 3000]);
        assert!(sent.iter().all(|p| p.ecn == Ecn::NotEct), "Reno is not ECN-capable");
    }

    #[test]
    fn rfc3168_cuts_once_per_window_and_sets_cwr() {
        let mut s = established(CcConfig::Ecnstar, Recovery::Newreno, 1000 * MSS);
        s.cwnd = 20 * MSS;
        s.ssthresh = 10 * MSS; // congestion avoidance
        let t = Time::from_us(100);
        let sent = drain(&mut s, t);
        assert_eq!(sent.len(), 20);
        assert!(sent.iter().all(|p| p.ecn == Ecn::Ect));
        // First ECE halves cwnd; further ECEs for the same window do nothing.
        s.on_packet(t + Time::from_us(50), &ack(MSS, true, t), &Sack::NONE);
        assert_eq!(s.cwnd, 10 * MSS);
        s.on_packet(t + Time::from_us(51), &ack(2 * MSS, true, t), &Sack::NONE);
        s.on_packet(t + Time::from_us(52), &ack(3 * MSS, true, t), &Sack::NONE);
        assert_eq!(s.cwnd, 10 * MSS, "at most one cut per window");
        assert_eq!(s.stats.ecn_cuts, 1);
        // Once the window has room again, the next new data segment carries CWR, exactly once.
        s.on_packet(t + Time::from_us(53), &ack(12 * MSS, false, t), &Sack::NONE);
        let next: Vec<_> = drain(&mut s, t + Time::from_us(53));
        assert!(!next.is_empty());
        assert!(next[0].cwr && next.iter().skip(1).all(|p| !p.cwr));
        // After the window sent before the cut is acknowledged, a new ECE cuts again.
        s.on_packet(t + Time::from_us(200), &ack(s.snd_max, true, t), &Sack::NONE);
        assert_eq!(s.stats.ecn_cuts, 2);
    }

    #[test]
    fn dctcp_cuts_by_alpha_over_two() {
        let mut s = established(CcConfig::Dctcp { g: 1.0 / 16.0, initial_alpha: 0.5 }, Recovery::Sack, 1000 * MSS);
        s.cwnd = 40 * MSS;
        s.ssthresh = 10 * MSS;
        let t = Time::from_us(10);
        drain(&mut s, t);
        // First ACK ends DCTCP's initial observation window with F = 1 → α = 15/16·0.5 + 1/16.
        s.on_packet(t + Time::from_us(50), &ack(MSS, true, t), &Sack::NONE);
        let alpha = 15.0 / 16.0 * 0.5 + 1.0 / 16.0;
        assert!((s.cc.alpha().unwrap() - alpha).abs() < 1e-12);
        assert_eq!(s.cwnd, (40.0 * MSS as f64 * (1.0 - alpha / 2.0)) as u64);
    }

    #[test]
    fn pmsbe_ignores_ece_while_rtt_is_small_and_counts_it_unmarked() {
        let cfg = CcConfig::Pmsbe { rtt_threshold: Time::from_us(40), g: 1.0 / 16.0, initial_alpha: 0.0 };
        let mut s = established(cfg, Recovery::Sack, 1000 * MSS);
        s.cwnd = 40 * MSS;
        s.ssthresh = 10 * MSS;
        let t = Time::from_us(10);
        drain(&mut s, t);
        // RTT 30 us < 40 us: the ECE is ignored — no cut, and α sees an unmarked ACK (stays 0).
        s.on_packet(t + Time::from_us(30), &ack(MSS, true, t), &Sack::NONE);
        assert_eq!(s.stats.ece_ignored, 1);
        assert_eq!(s.stats.ecn_cuts, 0);
        assert_eq!(s.cc.alpha(), Some(0.0));
        // RTT 50 us ≥ 40 us: the ECE counts; the window closes with F = 1 and DCTCP cuts.
        let t2 = t + Time::from_us(100);
        drain(&mut s, t2);
        s.on_packet(t2 + Time::from_us(50), &ack(s.snd_max, true, t2), &Sack::NONE);
        assert_eq!(s.stats.ecn_cuts, 1);
        assert!(s.cc.alpha().unwrap() > 0.0);
    }

    #[test]
    fn newreno_partial_acks_retransmit_each_hole() {
        let mut s = established(CcConfig::Reno, Recovery::Newreno, 100 * MSS);
        s.cwnd = 10 * MSS;
        let t0 = Time::from_us(1);
        assert_eq!(drain(&mut s, t0).len(), 10);
        // Segments 0 and 3 are lost: dupacks for 0.
        for i in 0..3 {
            s.on_packet(t0 + Time::from_us(100 + i), &ack(0, false, Time::ZERO), &Sack::NONE);
        }
        let rtx = drain(&mut s, t0 + Time::from_us(103));
        assert_eq!(rtx[0].seq, 0, "fast retransmit of the first hole");
        assert!(rtx[0].retx);
        assert_eq!(s.ssthresh, 5 * MSS);
        // Partial ACK up to the second hole retransmits it at once.
        s.on_packet(t0 + Time::from_us(200), &ack(3 * MSS, false, Time::ZERO), &Sack::NONE);
        let rtx2 = drain(&mut s, t0 + Time::from_us(200));
        assert_eq!(rtx2[0].seq, 3 * MSS);
        // The full ACK ends recovery with cwnd = ssthresh (or less when little is in flight).
        s.on_packet(t0 + Time::from_us(300), &ack(s.snd_max, false, Time::ZERO), &Sack::NONE);
        assert!(s.cwnd <= 5 * MSS && s.cwnd >= 2 * MSS);
    }

    #[test]
    fn sack_recovery_retransmits_only_the_holes() {
        let mut s = established(CcConfig::Reno, Recovery::Sack, 100 * MSS);
        s.cwnd = 10 * MSS;
        let t0 = Time::from_us(1);
        drain(&mut s, t0);
        // Segments 2 and 5 lost; receiver SACKs the rest. A hole counts as lost once 3 segments above it are
        // SACKed (RFC 6675 IsLost), so segment 5 is retransmitted only after 6, 7 and 8 arrive.
        let a = ack(2 * MSS, false, Time::ZERO);
        let sack = Sack::from_blocks;
        s.on_packet(t0, &ack(2 * MSS, false, Time::ZERO), &Sack::NONE);
        for p in [
            sack(&[(3 * MSS, 4 * MSS)]),
            sack(&[(3 * MSS, 5 * MSS)]),
            sack(&[(6 * MSS, 7 * MSS), (3 * MSS, 5 * MSS)]),
            sack(&[(6 * MSS, 8 * MSS), (3 * MSS, 5 * MSS)]),
            sack(&[(6 * MSS, 9 * MSS), (3 * MSS, 5 * MSS)]),
        ] {
            s.on_packet(t0 + Time::from_us(10), &a, &p);
        }
        assert!(s.in_recovery);
        let out = drain(&mut s, t0 + Time::from_us(10));
        let retx: Vec<u64> = out.iter().filter(|p| p.retx).map(|p| p.seq).collect();
        assert_eq!(retx, vec![2 * MSS, 5 * MSS], "both holes, nothing SACKed");
    }

    #[test]
    fn rto_backs_off_exponentially_and_respects_the_minimum() {
        let mut s = established(CcConfig::Reno, Recovery::Newreno, 10 * MSS);
        drain(&mut s, Time::ZERO);
        assert_eq!(s.next_timer(), Some(Time::from_ms(100)), "initial RTO");
        // A 20 us RTT sample: SRTT + 4·RTTVAR = 60 us, floored at min_rto = 10 ms.
        s.on_packet(Time::from_us(20), &ack(MSS, false, Time::ZERO + Time::from_ps(1)), &Sack::NONE);
        assert_eq!(s.current_rto(), Time::from_ms(10));
        let first = s.next_timer().unwrap();
        s.on_timer(first);
        assert_eq!(s.cwnd, MSS, "loss window of one segment");
        assert_eq!(s.next_timer(), Some(first + Time::from_ms(20)), "doubled");
        s.on_timer(first + Time::from_ms(20));
        assert_eq!(s.next_timer(), Some(first + Time::from_ms(20) + Time::from_ms(40)));
        assert_eq!(s.stats.timeouts, 2);
        let p = s.poll_transmit(first + Time::from_ms(60)).unwrap();
        assert_eq!(p.seq, MSS, "go back to snd_una");
        assert!(p.retx);
    }

    #[test]
    fn rfc3168_retransmissions_are_not_ect() {
        let mut c = cfg(CcConfig::Ecnstar, Recovery::Newreno);
        c.ect = EctPolicy::Rfc3168;
        let mut s = TcpSender::new(Arc::new(c), FlowAddr::default());
        s.write(10 * MSS);
        drain(&mut s, Time::ZERO);
        s.on_timer(Time::from_ms(100));
        let p = s.poll_transmit(Time::from_ms(100)).unwrap();
        assert!(p.retx && p.ecn == Ecn::NotEct);
    }

    #[test]
    fn scoreboard_merges_ranges() {
        let mut v = vec![];
        insert_range(&mut v, 10, 20);
        insert_range(&mut v, 30, 40);
        insert_range(&mut v, 20, 30);
        assert_eq!(v, vec![(10, 40)]);
        insert_range(&mut v, 50, 60);
        insert_range(&mut v, 5, 12);
        assert_eq!(v, vec![(5, 40), (50, 60)]);
    }

    /// TSO autosizing, worked by hand: the pacing rate (cwnd / srtt, ×2 in slow start, ×1.2 after) over 1 024
    /// (about 1 ms of it), in whole segments of 1 000 B, at least two, at most `max`.
    #[test]
    fn tso_bursts_are_a_millisecond_of_the_pacing_rate_between_two_segments_and_max() {
        let mut s = established(CcConfig::Reno, Recovery::Newreno, 10_000 * MSS);
        let max = 64_000;
        assert_eq!(s.tso_burst(max), 64 * MSS, "no RTT sample yet: the largest burst");
        // Slow start: 100 segments over 10 ms → 2 × 10^7 B/s → 19 531 B a "millisecond" → 19 segments.
        s.cwnd = 100 * MSS;
        s.srtt = Some(Time::from_ms(10));
        assert_eq!(s.tso_burst(max), 19 * MSS);
        // Congestion avoidance (cwnd ≥ ssthresh / 2): × 1.2 → 1.2 × 10^7 B/s → 11 718 B → 11 segments.
        s.ssthresh = 150 * MSS;
        assert_eq!(s.tso_burst(max), 11 * MSS);
        // Fast: 100 µs of RTT would give 117 187 B: capped at `max`.
        s.srtt = Some(Time::from_us(100));
        assert_eq!(s.tso_burst(max), 64 * MSS);
        // Slow: 4 segments over 100 ms → 48 000 B/s → 46 B: the floor of two segments.
        s.cwnd = 4 * MSS;
        s.srtt = Some(Time::from_ms(100));
        assert_eq!(s.tso_burst(max), 2 * MSS);
    }

    /// `tcp_tso_should_defer`'s tests one by one, on a sender in congestion avoidance with data in flight.
    #[test]
    fn tso_waits_for_a_burst_only_while_acks_are_due_and_little_window_is_open() {
        let mut s = established(CcConfig::Reno, Recovery::Newreno, 10_000 * MSS);
        s.closed = false;
        s.cwnd = 30 * MSS;
        s.snd_una = 0;
        s.snd_nxt = 25 * MSS;
        s.snd_max = 25 * MSS;
        s.last_send = Time::from_us(500);
        let now = Time::from_us(600);
        // 5 segments open, under a third of the window (10) and the burst (20): wait.
        assert!(s.tso_defers(now, 20 * MSS));
        // A full burst fits, or a third of the window is open: send.
        assert!(!s.tso_defers(now, 5 * MSS));
        s.snd_nxt = 20 * MSS;
        s.snd_max = 20 * MSS;
        assert!(!s.tso_defers(now, 20 * MSS), "10 segments open: a third of the window");
        s.snd_nxt = 25 * MSS;
        s.snd_max = 25 * MSS;
        // A jiffy since the last send: nothing worth waiting for.
        assert!(!s.tso_defers(Time::from_us(1_500), 20 * MSS));
        // The closed stream's rest fits (its FIN goes with it).
        s.written = 28 * MSS;
        s.closed = true;
        assert!(!s.tso_defers(now, 20 * MSS));
        s.written = 10_000 * MSS;
        // Nothing in flight, or recovery: send.
        assert!(s.tso_defers(now, 20 * MSS));
        s.in_recovery = true;
        assert!(!s.tso_defers(now, 20 * MSS));
        s.in_recovery = false;
        s.snd_una = 25 * MSS;
        assert!(!s.tso_defers(now, 20 * MSS));
    }
}
