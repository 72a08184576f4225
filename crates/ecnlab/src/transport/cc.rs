//! Congestion-control policies behind one enum: ECN off (Reno), ECN* (RFC 3168), DCTCP.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum CcConfig {
    /// Loss-based NewReno/SACK TCP, not ECN-capable.
    Reno,
    /// RFC 3168 ECN over standard TCP: halve once per window on ECE, CWR handshake (ECN* paper §2).
    Ecnstar,
    /// DCTCP (Alizadeh et al., SIGCOMM 2010 §3): α ← (1−g)α + gF once per window, cwnd ← cwnd(1−α/2).
    Dctcp {
        #[serde(default = "default_g")]
        g: f64,
        #[serde(default = "one")]
        initial_alpha: f64,
    },
    /// PMSB(e) (PMSB paper, Algorithm 2): DCTCP whose sender ignores an ECE while its latest RTT sample is
    /// below `rtt_threshold`; an ignored ECE counts as unmarked in α.
    Pmsbe {
        rtt_threshold: crate::units::Time,
        #[serde(default = "default_g")]
        g: f64,
        #[serde(default = "one")]
        initial_alpha: f64,
    },
    /// DCQCN over RoCEv2 (`transport::dcqcn`): rate-based, go-back-N; the TCP fields do not apply.
    Dcqcn(super::dcqcn::DcqcnConfig),
}

fn default_g() -> f64 {
    1.0 / 16.0
}
fn one() -> f64 {
    1.0
}

impl CcConfig {
    pub fn ecn_capable(&self) -> bool {
        !matches!(self, CcConfig::Reno)
    }
    /// How the receiver echoes CE.
    pub fn echo(&self) -> Echo {
        match self {
            CcConfig::Reno => Echo::None,
            CcConfig::Ecnstar => Echo::LatchUntilCwr,
            CcConfig::Dctcp { .. } | CcConfig::Pmsbe { .. } => Echo::Exact,
            CcConfig::Dcqcn(_) => Echo::None, // its receiver sends CNPs instead
        }
    }
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if let CcConfig::Dcqcn(d) = self {
            return d.validate();
        }
        if let CcConfig::Dctcp { g, initial_alpha } | CcConfig::Pmsbe { g, initial_alpha, .. } = *self {
            if !(g > 0.0 && g <= 1.0) {
                return Err(("g", format!("must be in (0, 1], got {g}")));
            }
            if !(0.0..=1.0).contains(&initial_alpha) {
                return Err(("initial_alpha", format!("must be in [0, 1], got {initial_alpha}")));
            }
        }
        Ok(())
    }
}

/// Receiver-side CE feedback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Echo {
    None,
    /// RFC 3168 §6.1.3: set ECE on every ACK from a CE arrival until a CWR arrives.
    LatchUntilCwr,
    /// DCTCP §3.1: ECE equals the CE bit of the segments acknowledged, with the two-state delayed-ACK machine.
    Exact,
}

/// Per-connection congestion-control state.
#[derive(Clone, Copy, Debug)]
pub enum Cc {
    Reno,
    Ecnstar,
    Dctcp(Dctcp),
}

#[derive(Clone, Copy, Debug)]
pub struct Dctcp {
    pub g: f64,
    pub alpha: f64,
    /// PMSB(e): ignore ECE while the latest RTT sample is below this.
    pub blind_below: Option<crate::units::Time>,
    /// Bytes acknowledged and bytes acknowledged with ECE in the current observation window.
    acked: u64,
    marked: u64,
    /// The window ends when snd_una passes this sequence.
    window_end: u64,
}

impl Dctcp {
    /// Counts one ACK; at the end of a window of data updates α (DCTCP §3.1, Eq. 1). Returns true on update.
    pub fn on_ack(&mut self, acked: u64, ece: bool, snd_una: u64, snd_nxt: u64) -> bool {
        self.acked += acked;
        if ece {
            self.marked += acked;
        }
        if snd_una > self.window_end {
            let f = if self.acked == 0 { 0.0 } else { self.marked as f64 / self.acked as f64 };
            self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            self.acked = 0;
            self.marked = 0;
            self.window_end = snd_nxt;
            return true;
        }
        false
    }
}

impl Cc {
    pub fn new(cfg: CcConfig) -> Cc {
        match cfg {
            // DCQCN flows run RoCE endpoints, never a TCP sender; TCP without ECN is the neutral value.
            CcConfig::Reno | CcConfig::Dcqcn(_) => Cc::Reno,
            CcConfig::Ecnstar => Cc::Ecnstar,
            CcConfig::Dctcp { g, initial_alpha } => {
                Cc::Dctcp(Dctcp { g, alpha: initial_alpha, blind_below: None, acked: 0, marked: 0, window_end: 0 })
            }
            CcConfig::Pmsbe { rtt_threshold, g, initial_alpha } => Cc::Dctcp(Dctcp {
                g,
                alpha: initial_alpha,
                blind_below: Some(rtt_threshold),
                acked: 0,
                marked: 0,
                window_end: 0,
            }),
        }
    }

    /// The state a connection's next flow starts from (`TcpSender::resume`): α kept, DCTCP's observation
    /// window restarted in the new sequence space.
    pub fn resumed(&self) -> Cc {
        match *self {
            Cc::Dctcp(d) => Cc::Dctcp(Dctcp { acked: 0, marked: 0, window_end: 0, ..d }),
            other => other,
        }
    }

    /// The window after an ECN congestion signal (at most once per window; the sender enforces that).
    pub fn ecn_cut(&self, cwnd: u64) -> u64 {
        match self {
            Cc::Reno => cwnd,
            Cc::Ecnstar => cwnd / 2,
            Cc::Dctcp(d) => (cwnd as f64 * (1.0 - d.alpha / 2.0)) as u64,
        }
    }

    pub fn alpha(&self) -> Option<f64> {
        match self {
            Cc::Dctcp(d) => Some(d.alpha),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dctcp_alpha_follows_the_ewma_once_per_window() {
        // DCTCP Eq. 1 with g = 1/16, starting at α = 1: a window with F = 0.25 gives 1 − g + g·0.25.
        let mut d = match Cc::new(CcConfig::Dctcp { g: 1.0 / 16.0, initial_alpha: 1.0 }) {
            Cc::Dctcp(d) => d,
            _ => unreachable!(),
        };
        // First ACK closes the (empty) initial window: F = 0 over that ACK alone.
        assert!(d.on_ack(1000, false, 1000, 10_000));
        let a1 = 15.0 / 16.0;
        assert!((d.alpha - a1).abs() < 1e-12);
        // Next window [1000, 10000]: 3 unmarked ACKs and one marked, equal sizes → F = 0.25.
        assert!(!d.on_ack(1000, false, 2000, 12_000));
        assert!(!d.on_ack(1000, true, 3000, 12_000));
        assert!(!d.on_ack(1000, false, 4000, 12_000));
        assert!(!d.on_ack(1000, false, 9000, 12_000));
        assert!(d.on_ack(0, false, 10_001, 12_000));
        let a2 = (1.0 - 1.0 / 16.0) * a1 + (1.0 / 16.0) * 0.25;
        assert!((d.alpha - a2).abs() < 1e-12, "{} vs {a2}", d.alpha);
        // The cut uses α: cwnd · (1 − α/2).
        let cut = Cc::Dctcp(d).ecn_cut(100_000);
        assert_eq!(cut, (100_000.0 * (1.0 - a2 / 2.0)) as u64);
    }

    #[test]
    fn ecnstar_halves() {
        assert_eq!(Cc::new(CcConfig::Ecnstar).ecn_cut(20_000), 10_000);
    }
}
