//! PIAS end-host tagging: a flow's packets are demoted to lower priorities as its bytes sent cross thresholds.
//!
//! PIAS (Bai et al., NSDI 2015, §3.1 and §4.1): without knowing flow sizes, a sender tags each packet with
//! priority j when the bytes the flow sent before it lie in [α_{j−1}, α_j) (α_0 = 0, α_K = ∞); switches serve
//! the priorities with strict priority, so short flows finish in the top queues and long ones sink. Priority 0
//! is the highest (= queue 0 under SP); SYNs and ACKs travel at priority 0.
//!
//! The thresholds are given, or derived from the flow-size CDF and the load ([`derive()`], PIAS §4.2). Derivation
//! needs the scenario's workload, so `Scenario::from_toml` resolves it once when the scenario is loaded; the
//! sender only ever sees the resulting `Pias` (a `Copy` array of thresholds).

mod derive;

pub use derive::{candidates, derive, Derived, Model, DEFAULT_LEVELS};

use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// Up to this many demotion thresholds (8 priorities, as commodity switches offer).
pub const MAX_THRESHOLDS: usize = 7;

/// Demotion thresholds in bytes sent, strictly increasing; `Copy` so `TcpConfig` stays `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PiasToml", into = "PiasToml")]
pub struct Pias {
    n: u8,
    at: [u64; MAX_THRESHOLDS],
}

/// The schema: `pias = { thresholds = ["100KB", "1MB", "10MB"] }` (given; the default), or
/// `pias = { derive = true, levels = 4, cdf = "websearch", load = 0.5 }` (derived; `levels`, `cdf`, `load`
/// optional, the last two taken from the scenario's Poisson workload when absent).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiasToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    thresholds: Option<Vec<Bytes>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    derive: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    levels: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cdf: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    load: Option<f64>,
}

/// What a `pias` table asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum PiasSpec {
    Given(Pias),
    Derive(DeriveSpec),
}

/// `derive = true`: `levels` priorities, for flow sizes from `cdf` at `load` (each `None`: the workload's).
#[derive(Clone, Debug, PartialEq)]
pub struct DeriveSpec {
    pub levels: usize,
    pub cdf: Option<String>,
    pub load: Option<f64>,
}

/// The default: 4 levels demoting at 100 KB, 1 MB and 10 MB (the FCT bins the papers report).
fn default_thresholds() -> Vec<Bytes> {
    vec![Bytes(100_000), Bytes(1_000_000), Bytes(10_000_000)]
}

impl PiasToml {
    /// Checks the table; an error names the offending field of the table (`levels`, …) and says why.
    pub fn spec(self) -> Result<PiasSpec, (&'static str, String)> {
        if !self.derive {
            for (field, set) in
                [("levels", self.levels.is_some()), ("cdf", self.cdf.is_some()), ("load", self.load.is_some())]
            {
                if set {
                    return Err((field, "applies only with `derive = true`".into()));
                }
            }
            let thresholds = self.thresholds.unwrap_or_else(default_thresholds);
            return Pias::new(&thresholds).map(PiasSpec::Given).map_err(|e| ("thresholds", e));
        }
        if self.thresholds.is_some() {
            return Err(("thresholds", "give `thresholds` or `derive = true`, not both".into()));
        }
        let levels = self.levels.unwrap_or(DEFAULT_LEVELS as i64);
        derive::check_levels(levels).map_err(|m| ("levels", m))?;
        if let Some(load) = self.load {
            derive::check_load(load).map_err(|m| ("load", m))?;
        }
        if self.cdf.as_deref() == Some("") {
            return Err(("cdf", "must name a flow-size CDF (e.g. \"websearch\") or a CSV file".into()));
        }
        Ok(PiasSpec::Derive(DeriveSpec { levels: levels as usize, cdf: self.cdf, load: self.load }))
    }
}

impl TryFrom<PiasToml> for Pias {
    type Error = String;
    fn try_from(t: PiasToml) -> Result<Pias, String> {
        match t.spec() {
            Ok(PiasSpec::Given(p)) => Ok(p),
            Ok(PiasSpec::Derive(_)) => Err(
                "derive: resolved against the scenario's workload when the scenario is loaded (Scenario::from_toml)"
                    .into(),
            ),
            Err((field, msg)) => Err(format!("{field}: {msg}")),
        }
    }
}

impl From<Pias> for PiasToml {
    fn from(p: Pias) -> PiasToml {
        PiasToml { thresholds: Some(p.thresholds().iter().map(|&b| Bytes(b)).collect()), ..Default::default() }
    }
}

impl Default for Pias {
    fn default() -> Pias {
        Pias::new(&default_thresholds()).expect("default thresholds are valid")
    }
}

impl Pias {
    pub fn new(thresholds: &[Bytes]) -> Result<Pias, String> {
        if thresholds.is_empty() || thresholds.len() > MAX_THRESHOLDS {
            return Err(format!("1 to {MAX_THRESHOLDS} values (2 to 8 priorities), got {}", thresholds.len()));
        }
        if thresholds[0].0 == 0 || thresholds.windows(2).any(|w| w[1] <= w[0]) {
            return Err("must be > 0 and strictly increasing".into());
        }
        let mut at = [u64::MAX; MAX_THRESHOLDS];
        for (a, t) in at.iter_mut().zip(thresholds) {
            *a = t.0;
        }
        Ok(Pias { n: thresholds.len() as u8, at })
    }

    pub fn thresholds(&self) -> &[u64] {
        &self.at[..self.n as usize]
    }

    /// Number of priorities (queues) the tagging uses.
    pub fn levels(&self) -> usize {
        self.n as usize + 1
    }

    /// The priority of a packet whose first payload byte is `sent` bytes into the flow.
    pub fn priority(&self, sent: u64) -> u8 {
        self.thresholds().iter().take_while(|&&t| sent >= t).count() as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demotes_as_bytes_sent_cross_each_threshold() {
        let p = Pias::default();
        assert_eq!(p.levels(), 4);
        assert_eq!(p.priority(0), 0);
        assert_eq!(p.priority(99_999), 0);
        assert_eq!(p.priority(100_000), 1);
        assert_eq!(p.priority(999_999), 1);
        assert_eq!(p.priority(1_000_000), 2);
        assert_eq!(p.priority(10_000_000), 3);
        assert_eq!(p.priority(u64::MAX / 2), 3);
    }

    #[test]
    fn rejects_unordered_or_too_many_thresholds() {
        assert!(Pias::new(&[Bytes(10), Bytes(10)]).is_err());
        assert!(Pias::new(&[Bytes(0)]).is_err());
        assert!(Pias::new(&[]).is_err());
        assert!(Pias::new(&(1..=8).map(Bytes).collect::<Vec<_>>()).is_err());
    }
}
