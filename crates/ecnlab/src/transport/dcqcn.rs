//! RoCEv2 endpoints with DCQCN congestion control: a rate-paced, go-back-N sender (the reaction point) and a
//! receiver that returns ACKs, NACKs and CNPs (the notification point).
//!
//! DCQCN: Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015, §3.1 (RP, Fig. 5),
//! §3.2 (NP). The switch side (the congestion point) is RED-ECN on the instantaneous queue between K_min and
//! K_max with P_max: `switch.marker = { kind = "red", weight = 1, ... }`, or ECN♯'s probabilistic variant.

use super::{FlowAddr, SenderStats};
use crate::packet::{Ecn, Kind, Packet, HEADER_BYTES};
use crate::units::{Bytes, Rate, Time};
use serde::{Deserialize, Serialize};

/// DCQCN parameters. Defaults: the values of the DCQCN paper's evaluation (§5: g = 1/256, and 55 us timers),
/// and of its public simulator's configuration for the rest (R_AI 40 Mb/s, R_HAI 200 Mb/s, F = 5,
/// byte counter 10 MB, CNP interval 50 us).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnConfig {
    /// α gain (§3.1: α ← (1 − g)α + g on a CNP, α ← (1 − g)α per `alpha_timer` without one).
    pub g: f64,
    /// K in §3.1: α decays once per this period without a CNP.
    pub alpha_timer: Time,
    /// T in §3.1: the rate-increase timer.
    pub rate_timer: Time,
    /// B in §3.1: the rate-increase byte counter.
    pub byte_counter: Bytes,
    /// F in §3.1: increase events of fast recovery before additive increase.
    pub fast_recovery_steps: u32,
    /// R_AI: additive-increase step of the target rate.
    pub rate_ai: Rate,
    /// R_HAI: hyper-increase step.
    pub rate_hai: Rate,
    /// The rate never falls below this.
    pub min_rate: Rate,
    /// N in §3.2: the receiver sends at most one CNP per flow per this interval.
    pub cnp_interval: Time,
    /// The receiver acknowledges every this many in-order packets (and the last one of a message).
    pub ack_every: u32,
    /// Go-back-N timeout: with nothing acknowledged for this long, resend from the first unacknowledged byte.
    pub rto: Time,
}

impl Default for DcqcnConfig {
    fn default() -> Self {
        DcqcnConfig {
            g: 1.0 / 256.0,
            alpha_timer: Time::from_us(55),
            rate_timer: Time::from_us(55),
            byte_counter: Bytes(10_000_000),
            fast_recovery_steps: 5,
            rate_ai: Rate(40_000_000),
            rate_hai: Rate(200_000_000),
            min_rate: Rate(100_000_000),
            cnp_interval: Time::from_us(50),
            ack_every: 1,
            rto: Time::from_ms(1),
        }
    }
}

impl DcqcnConfig {
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err(("g", format!("must be in (0, 1], got {}", self.g)));
        }
        for (name, t) in [
            ("alpha_timer", self.alpha_timer),
            ("rate_timer", self.rate_timer),
            ("rto", self.rto),
            ("cnp_interval", self.cnp_interval),
        ] {
            if t == Time::ZERO {
                return Err((name, "must be > 0".into()));
            }
        }
        if self.byte_counter.0 == 0 {
            return Err(("byte_counter", "must be > 0".into()));
        }
        if self.ack_every == 0 {
            return Err(("ack_every", "must be ≥ 1".into()));
        }
        if self.min_rate.0 == 0 {
            return Err(("min_rate", "must be > 0".into()));
        }
        Ok(())
    }
}

/// The reaction point's rate state (§3.1, Fig. 5), separate from packets so it can be traced in tests.
#[derive(Clone, Copy, Debug)]
pub struct ReactionPoint {
    cfg: DcqcnConfig,
    line: f64,
    /// Current and target rates, bits per second.
    pub rc: f64,
    pub rt: f64,
    pub alpha: f64,
    /// Increase events since the last cut, from the timer and from the byte counter.
    timer_count: u32,
    byte_count: u32,
    bytes_since: u64,
    pub next_alpha: Time,
    /// The rate-increase timer runs only after a cut (at line rate there is nothing to recover).
    pub next_increase: Option<Time>,
}

/// Which stage an increase event ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    FastRecovery,
    Additive,
    Hyper,
}

impl ReactionPoint {
    pub fn new(cfg: DcqcnConfig, line: Rate) -> ReactionPoint {
        let line = line.0 as f64;
        ReactionPoint {
            cfg,
            line,
            rc: line,
            rt: line,
            alpha: 1.0,
            timer_count: 0,
            byte_count: 0,
            bytes_since: 0,
            next_alpha: Time::MAX,
            next_increase: None,
        }
    }

    /// A CNP: R_T ← R_C, R_C ← R_C(1 − α/2), α ← (1 − g)α + g; the increase counters and both timers restart.
    pub fn on_cnp(&mut self, now: Time) {
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.cfg.min_rate.0 as f64);
        self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g;
        self.timer_count = 0;
        self.byte_count = 0;
        self.bytes_since = 0;
        self.next_alpha = now + self.cfg.alpha_timer;
        self.next_increase = Some(now + self.cfg.rate_timer);
    }

    /// Runs the α timer and the increase timer up to `now`.
    pub fn on_timer(&mut self, now: Time) {
        while self.next_alpha <= now {
            self.alpha *= 1.0 - self.cfg.g;
            self.next_alpha += self.cfg.alpha_timer;
        }
        while let Some(t) = self.next_increase.filter(|&t| t <= now) {
            self.timer_count += 1;
            self.increase();
            self.next_increase = Some(t + self.cfg.rate_timer);
        }
        if self.rc >= self.line {
            self.next_increase = None;
        }
        if self.alpha < 1e-9 {
            self.next_alpha = Time::MAX; // nothing left to decay
        }
    }

    /// `wire` bytes sent: every B bytes the byte counter fires an increase event.
    pub fn on_sent(&mut self, wire: u64) {
        if self.next_increase.is_none() {
            return;
        }
        self.bytes_since += wire;
        while self.bytes_since >= self.cfg.byte_counter.0 {
            self.bytes_since -= self.cfg.byte_counter.0;
            self.byte_count += 1;
            self.increase();
        }
    }

    /// One increase event (§3.1): fast recovery while both counters are below F, hyper increase when both
    /// exceed it (R_T grows by i·R_HAI, i = min(counters) − F), additive increase otherwise; then
    /// R_C ← (R_T + R_C)/2.
    pub fn increase(&mut self) -> Stage {
        let f = self.cfg.fast_recovery_steps;
        let (lo, hi) = (self.timer_count.min(self.byte_count), self.timer_count.max(self.byte_count));
        let stage = if hi < f {
            Stage::FastRecovery
        } else if lo > f {
            self.rt += (lo - f) as f64 * self.cfg.rate_hai.0 as f64;
            Stage::Hyper
        } else {
            self.rt += self.cfg.rate_ai.0 as f64;
            Stage::Additive
        };
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
        stage
    }

    pub fn next_timer(&self) -> Option<Time> {
        let t = self.next_alpha.min(self.next_increase.unwrap_or(Time::MAX));
        (t < Time::MAX).then_some(t)
    }
}

/// The RoCE sender: paces data at R_C, resends from a NACK's sequence (go-back-N) or after `rto`.
#[derive(Clone, Debug)]
pub struct RoceSender {
    addr: FlowAddr,
    mss: u64,
    rto: Time,
    pub rp: ReactionPoint,
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub written: u64,
    pub closed: bool,
    /// Earliest time the pacer lets the next packet go, and whether a send waits for it (a sender held back
    /// by its NIC instead is woken by the NIC, not by the pacer).
    next_send: Time,
    pacing: bool,
    rto_at: Option<Time>,
    pub stats: SenderStats,
}

impl RoceSender {
    pub fn new(cfg: DcqcnConfig, mss: u32, addr: FlowAddr, line: Rate) -> RoceSender {
        RoceSender {
            addr,
            mss: mss as u64,
            rto: cfg.rto,
            rp: ReactionPoint::new(cfg, line),
            snd_una: 0,
            snd_nxt: 0,
            written: 0,
            closed: false,
            next_send: Time::ZERO,
            pacing: false,
            rto_at: None,
            stats: SenderStats::default(),
        }
    }

    pub fn on_packet(&mut self, now: Time, p: &Packet) {
        match p.kind {
            Kind::Cnp => {
                self.rp.on_timer(now);
                self.rp.on_cnp(now);
                self.stats.ecn_cuts += 1;
                self.stats.ece_acks += 1;
            }
            Kind::Ack | Kind::Nack => {
                if p.ack > self.snd_una {
                    self.snd_una = p.ack.min(self.written);
                    self.rto_at = (self.snd_una < self.snd_nxt).then(|| now + self.rto);
                }
                if p.kind == Kind::Nack && p.ack < self.snd_nxt {
                    // Go-back-N: the receiver dropped everything after the hole.
                    self.stats.retransmits += ((self.snd_nxt - p.ack).div_ceil(self.mss)) as u32;
                    self.snd_nxt = p.ack.max(self.snd_una);
                }
            }
            _ => {}
        }
    }

    pub fn on_timer(&mut self, now: Time) {
        self.rp.on_timer(now);
        // The pacer's wait is over; the host polls again unless its NIC holds the flow back.
        self.pacing &= self.next_send > now;
        if self.rto_at.is_some_and(|t| t <= now) {
            self.stats.timeouts += 1;
            self.snd_nxt = self.snd_una;
            self.rto_at = None;
        }
    }

    pub fn next_timer(&self) -> Option<Time> {
        let pace = self.pacing.then_some(self.next_send);
        [self.rp.next_timer(), self.rto_at, pace].into_iter().flatten().min()
    }

    /// The next data packet, when the pacer allows.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Packet> {
        self.pacing = false;
        if self.snd_nxt >= self.written {
            return None;
        }
        if now < self.next_send {
            self.pacing = true;
            return None;
        }
        let seq = self.snd_nxt;
        let len = self.mss.min(self.written - seq);
        let wire = len + HEADER_BYTES as u64;
        self.snd_nxt += len;
        // The pacer spaces packets by their size at the current rate, from when this one could leave.
        let gap = Time((wire as f64 * 8.0 / self.rp.rc * 1e12).round() as u64);
        self.next_send = self.next_send.max(now.saturating_sub(gap)) + gap;
        self.rp.on_sent(wire);
        self.rto_at.get_or_insert(now + self.rto);
        Some(Packet {
            flow: self.addr.flow,
            dst: self.addr.dst,
            kind: Kind::Data,
            ecn: Ecn::Ect,
            class: self.addr.class,
            wire: wire as u32,
            seq,
            len: len as u32,
            ts: now,
            ..Packet::default()
        })
    }
}

/// The RoCE receiver: in-order delivery only; ACKs, one NACK per hole, and CNPs at most once per interval.
#[derive(Clone, Debug)]
pub struct RoceReceiver {
    addr: FlowAddr,
    cfg: DcqcnConfig,
    pub rcv_nxt: u64,
    unacked: u32,
    /// A NACK was sent for the current hole.
    nacked: bool,
    last_cnp: Option<Time>,
    out: Option<Packet>,
    cnp: Option<Packet>,
    pub cnps_sent: u64,
}

impl RoceReceiver {
    pub fn new(cfg: DcqcnConfig, addr: FlowAddr) -> RoceReceiver {
        RoceReceiver {
            addr,
            cfg,
            rcv_nxt: 0,
            unacked: 0,
            nacked: false,
            last_cnp: None,
            out: None,
            cnp: None,
            cnps_sent: 0,
        }
    }

    /// A data packet; `size`: the message length when known (its last packet is acknowledged at once).
    pub fn on_packet(&mut self, now: Time, p: &Packet, size: Option<u64>) {
        if p.kind != Kind::Data {
            return;
        }
        // §3.2: a CE-marked packet triggers a CNP unless one went out for this flow within N.
        if p.ecn == Ecn::Ce && self.last_cnp.is_none_or(|t| now - t >= self.cfg.cnp_interval) {
            self.last_cnp = Some(now);
            self.cnps_sent += 1;
            self.cnp = Some(self.control(now, Kind::Cnp));
        }
        if p.seq == self.rcv_nxt {
            self.rcv_nxt += p.len as u64;
            self.nacked = false;
            self.unacked += 1;
            if self.unacked >= self.cfg.ack_every || size.is_some_and(|s| self.rcv_nxt >= s) {
                self.unacked = 0;
                self.out = Some(self.control(now, Kind::Ack));
            }
        } else if p.seq > self.rcv_nxt && !self.nacked {
            self.nacked = true;
            self.out = Some(self.control(now, Kind::Nack));
        }
    }

    fn control(&self, now: Time, kind: Kind) -> Packet {
        Packet {
            flow: self.addr.flow,
            dst: self.addr.src,
            kind,
            class: 0,
            wire: HEADER_BYTES,
            ack: self.rcv_nxt,
            ts: now,
            ..Packet::default()
        }
    }

    pub fn poll_transmit(&mut self) -> Option<Packet> {
        self.cnp.take().or_else(|| self.out.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: Rate = Rate(40_000_000_000);

    fn rp() -> ReactionPoint {
        ReactionPoint::new(DcqcnConfig::default(), LINE)
    }

    #[test]
    fn a_cnp_cuts_the_rate_by_half_alpha_and_raises_alpha() {
        let mut r = rp();
        r.on_cnp(Time::ZERO);
        // α starts at 1: R_C = 40 G·(1 − 1/2); then α = (1 − g) + g = 1.
        assert_eq!(r.rc, 20e9);
        assert_eq!(r.rt, 40e9);
        assert!((r.alpha - 1.0).abs() < 1e-12);
        // Two α periods without a CNP: α = (1 − g)².
        r.on_timer(Time::from_us(110));
        let a = (1.0f64 - 1.0 / 256.0).powi(2);
        assert!((r.alpha - a).abs() < 1e-12, "{}", r.alpha);
        let rc = r.rc;
        r.on_cnp(Time::from_us(110));
        assert!((r.rc - rc * (1.0 - a / 2.0)).abs() < 1.0);
        assert!((r.alpha - ((1.0 - 1.0 / 256.0) * a + 1.0 / 256.0)).abs() < 1e-12);
    }

    #[test]
    fn fast_recovery_halves_the_gap_to_the_target_five_times_then_additive_then_hyper() {
        let mut r = rp();
        r.on_cnp(Time::ZERO);
        let (rt, mut rc) = (r.rt, r.rc);
        // Timer events 1..4: max(counters) < F = 5 → fast recovery, R_T fixed, R_C → (R_T + R_C)/2.
        for k in 1..=4 {
            r.on_timer(Time::from_us(55 * k));
            rc = (rt + rc) / 2.0;
            assert_eq!(r.rt, rt);
            assert!((r.rc - rc).abs() < 1e-3, "step {k}");
        }
        // Event 5: the timer counter reaches F while the byte counter is 0 → additive: R_T += R_AI.
        r.rc = 10e9; // pretend still far below, to see the stages apart from the line-rate cap
        r.rt = 20e9;
        r.on_timer(Time::from_us(55 * 5));
        assert_eq!(r.rt, 20e9 + 40e6);
        assert!((r.rc - (20.04e9 + 10e9) / 2.0).abs() < 1e-3);
        // Hyper: both counters above F. Force the byte counter up: each B bytes is an event.
        let mut r2 = rp();
        r2.on_cnp(Time::ZERO);
        r2.rc = 1e9;
        r2.rt = 1e9;
        r2.timer_count = 7;
        r2.byte_count = 6;
        assert_eq!(r2.increase(), Stage::Hyper);
        assert_eq!(r2.rt, 1e9 + 1.0 * 200e6, "i = min(7, 6) − 5 = 1");
        r2.byte_count = 3;
        assert_eq!(r2.increase(), Stage::Additive);
    }

    #[test]
    fn the_byte_counter_fires_every_b_bytes_and_rates_stay_within_bounds() {
        let mut r = rp();
        r.on_cnp(Time::ZERO);
        let before = r.rc;
        r.on_sent(9_999_999);
        assert_eq!(r.rc, before);
        r.on_sent(1);
        assert!(r.rc > before, "one byte-counter event");
        for _ in 0..1000 {
            r.on_sent(10_000_000);
        }
        assert!(r.rc <= 40e9 && r.rt <= 40e9);
        let mut low = rp();
        for k in 0..200 {
            low.on_cnp(Time::from_us(k));
        }
        assert_eq!(low.rc, 100e6, "floored at min_rate");
    }

    #[test]
    fn the_receiver_sends_one_cnp_per_interval_and_one_nack_per_hole() {
        let addr = FlowAddr { flow: 0, src: 1, dst: 2, class: 0 };
        let mut rx = RoceReceiver::new(DcqcnConfig::default(), addr);
        let data = |seq: u64, ce: bool| Packet {
            kind: Kind::Data,
            seq,
            len: 1000,
            ecn: if ce { Ecn::Ce } else { Ecn::Ect },
            ..Packet::default()
        };
        rx.on_packet(Time::from_us(0), &data(0, true), None);
        assert_eq!(rx.poll_transmit().unwrap().kind, Kind::Cnp);
        assert_eq!(rx.poll_transmit().unwrap().kind, Kind::Ack);
        rx.on_packet(Time::from_us(10), &data(1000, true), None);
        assert_eq!(rx.poll_transmit().unwrap().kind, Kind::Ack, "no CNP within 50 us");
        rx.on_packet(Time::from_us(50), &data(3000, true), None);
        let cnp = rx.poll_transmit().unwrap();
        assert_eq!(cnp.kind, Kind::Cnp);
        let nack = rx.poll_transmit().unwrap();
        assert_eq!((nack.kind, nack.ack), (Kind::Nack, 2000));
        rx.on_packet(Time::from_us(51), &data(4000, false), None);
        assert!(rx.poll_transmit().is_none(), "one NACK per hole");
        assert_eq!(rx.rcv_nxt, 2000);
    }

    #[test]
    fn the_sender_paces_at_its_rate_and_goes_back_n_on_a_nack() {
        let addr = FlowAddr { flow: 0, src: 1, dst: 2, class: 0 };
        let mut tx = RoceSender::new(DcqcnConfig::default(), 1000, addr, Rate(10_000_000_000));
        tx.written = 10_000;
        let p = tx.poll_transmit(Time::ZERO).unwrap();
        assert_eq!(p.wire, 1040);
        assert_eq!(tx.next_timer(), Some(Time::from_ms(1)), "only the RTO while nothing waits");
        assert!(tx.poll_transmit(Time::ZERO).is_none(), "paced");
        // 1040 B at 10 Gb/s = 832 ns.
        assert_eq!(tx.next_timer(), Some(Time(832_000)));
        assert!(tx.poll_transmit(Time(832_000)).is_some());
        assert!(tx.poll_transmit(Time(2 * 832_000)).is_some());
        let nack = Packet { kind: Kind::Nack, ack: 1000, ..Packet::default() };
        tx.on_packet(Time(2_000_000), &nack);
        assert_eq!((tx.snd_una, tx.snd_nxt), (1000, 1000));
        assert_eq!(tx.stats.retransmits, 2);
    }
}
