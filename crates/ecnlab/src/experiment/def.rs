//! The experiment definition schema (TOML under `experiments/<paper>/`, embedded in the binary).

use super::expr;
use crate::error::Error;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    pub id: String,
    /// Paper and figure/table.
    pub paper: String,
    pub title: String,
    /// The setup as the paper states it, with our pins.
    pub setup: String,
    /// The paper's headline result.
    pub result: String,
    /// Why the definition states no magnitude claim (the paper gives only a direction or a bound).
    pub magnitude_note: Option<String>,
    /// Where ecnlab and the paper still differ, with the evidence: what was tried, what each change moved, what
    /// the paper's number would need that the paper does not state (issue 44). Markdown, shown in check.md.
    pub notes: Option<String>,
    /// The base scenario (TOML text).
    pub base: String,
    /// Overrides applied to every run.
    #[serde(default)]
    pub set: Vec<String>,
    /// Named numbers usable in templates and checks (e.g. `tc = 20`).
    #[serde(default)]
    pub constants: BTreeMap<String, f64>,
    #[serde(default)]
    pub axis: Vec<Axis>,
    /// Grid points for which this expression is true are not run.
    pub skip: Option<String>,
    /// Metric name → JSON pointer into summary.json (`ports/s0->h0/occupancy/max_pkts`) or `= expression` over
    /// other metrics of the same run.
    pub metrics: BTreeMap<String, String>,
    pub search: Option<Search>,
    #[serde(default)]
    pub scale: BTreeMap<String, Scale>,
    #[serde(default)]
    pub check: Vec<CheckDef>,
    /// The paper's headline numbers, each compared with ecnlab's value (issue 44).
    #[serde(default)]
    pub magnitude: Vec<MagnitudeDef>,
    /// How the experiment runs on the software switch with real TCP stacks (`reproduce ID --emulate`); absent
    /// for experiments whose setup cannot be emulated.
    pub emulate: Option<Emulate>,
    /// Overrides applied after every other (axis values' included): `[emulate] set` while the experiment runs
    /// at its emulation settings (`experiment::for_emulation`); never read from the file.
    #[serde(skip)]
    pub final_set: Vec<String>,
}

/// The changes that make an experiment's runs emulatable on a 2-core machine (docs/EMULATION.md): applied
/// after every other override (the axes' included), to the simulator's runs and the real stack's alike, so the
/// two are compared on the same setup.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Emulate {
    /// Overrides of every run (`topology.rate=100Mbps`, …).
    #[serde(default)]
    pub set: Vec<String>,
    /// Axis name → values replacing the definition's (fewer points: each emulated point runs in real time).
    #[serde(default)]
    pub axis: BTreeMap<String, Vec<toml::Value>>,
    /// Why each change was needed (shown in the comparison).
    pub note: String,
    /// For a search: its bounds and fixed values while emulated (as a scale's `search_lo`, `search_hi`,
    /// `search_also`), and its criterion at the emulated rate (a goodput threshold scales with the rate).
    pub search_lo: Option<i64>,
    pub search_hi: Option<i64>,
    pub search_also: Option<Vec<i64>>,
    pub search_at_least: Option<f64>,
}

/// The default tolerance of a magnitude claim: ecnlab's value within 25 % of the paper's.
pub const DEFAULT_TOLERANCE: f64 = 0.25;

/// One of the paper's numbers: `expr` computes ecnlab's value of the same metric from the table; it is
/// within tolerance when |ecnlab − paper| ≤ tolerance · |paper|.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MagnitudeDef {
    pub name: String,
    /// The paper's sentence or figure the number comes from, with its section/figure.
    pub claim: String,
    /// The paper's value: a plain number for `absolute`, a fraction for `relative` (−0.437 = −43.7 %).
    pub paper: f64,
    /// `absolute` or `relative`.
    pub kind: String,
    /// A numeric expression over the table, evaluated once per binding of `for` (default: one binding).
    pub expr: String,
    #[serde(rename = "for", default)]
    pub for_axes: Vec<String>,
    #[serde(rename = "where")]
    pub where_: Option<String>,
    /// With more than one binding: `min`, `max` or `mean` of the per-binding values.
    pub reduce: Option<String>,
    /// Relative tolerance; only with `why`.
    pub tolerance: Option<f64>,
    pub why: Option<String>,
}

impl MagnitudeDef {
    pub fn tolerance(&self) -> f64 {
        self.tolerance.unwrap_or(DEFAULT_TOLERANCE)
    }
}

/// Whether ecnlab's value is within `tolerance` (relative) of the paper's: |ecnlab − paper| ≤ tolerance·|paper|
/// (plus 1e-12 for rounding). A non-finite value never is.
pub fn within(paper: f64, ecnlab: f64, tolerance: f64) -> bool {
    ecnlab.is_finite() && (ecnlab - paper).abs() <= tolerance * paper.abs() + 1e-12
}

/// One dimension of the grid; `set` templates see the axis values as `{name}`. A value may also be a table
/// `{ value = …, set = [...] }` whose own overrides apply with it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    pub name: String,
    pub values: Vec<toml::Value>,
    #[serde(default)]
    pub set: Vec<String>,
}

/// Per combination of the axes: the largest integer `param` in [lo, hi] whose `metric` is ≥ `at_least`
/// (found by bisection, assuming the metric falls as `param` grows), reported as metric `name`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Search {
    pub param: String,
    pub lo: i64,
    pub hi: i64,
    pub metric: String,
    pub at_least: f64,
    pub name: String,
    /// Values of `param` always run as well (for checks at fixed values).
    #[serde(default)]
    pub also: Vec<i64>,
    pub set: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scale {
    #[serde(default)]
    pub set: Vec<String>,
    /// Axis name → values replacing the definition's.
    #[serde(default)]
    pub axis: BTreeMap<String, Vec<toml::Value>>,
    pub seeds: Option<u32>,
    /// Constants replacing the definition's at this scale.
    #[serde(default)]
    pub constants: BTreeMap<String, f64>,
    pub search_lo: Option<i64>,
    pub search_hi: Option<i64>,
    pub search_also: Option<Vec<i64>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckDef {
    pub name: String,
    /// What the paper claims (shown beside the measurement).
    pub claim: String,
    /// A boolean expression evaluated once per binding of the `for` axes.
    pub expr: Option<String>,
    pub monotone: Option<Monotone>,
    /// `all` (default), `any`, `at_least:K`, `fraction:F`.
    pub over: Option<String>,
    /// Axes the check iterates over (default: every axis).
    #[serde(rename = "for")]
    pub for_axes: Option<Vec<String>>,
    /// Only bindings where this is true.
    #[serde(rename = "where")]
    pub where_: Option<String>,
    /// The scales at which the check applies (default: all). Magnitude bands usually skip `quick`, whose
    /// runs are too small for them (EXPERIMENTS.md: quick keeps direction checks only).
    pub scales: Option<Vec<String>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Monotone {
    pub metric: String,
    pub axis: String,
    /// `increasing` (strict), `decreasing` (strict), `non_decreasing`, `non_increasing`.
    pub direction: String,
    /// Relative slack for the non-strict forms (0.01 = within 1 %).
    #[serde(default)]
    pub tolerance: f64,
}

/// How many bindings must pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Over {
    All,
    Any,
    AtLeast(usize),
    Fraction(f64),
}

impl Over {
    pub fn parse(s: Option<&str>) -> Result<Over, String> {
        let s = s.unwrap_or("all");
        Ok(match s.split_once(':') {
            None if s == "all" => Over::All,
            None if s == "any" => Over::Any,
            Some(("at_least", k)) => Over::AtLeast(k.trim().parse().map_err(|_| format!("bad count in `{s}`"))?),
            Some(("fraction", f)) => Over::Fraction(f.trim().parse().map_err(|_| format!("bad fraction in `{s}`"))?),
            _ => return Err(format!("`{s}`: over is all, any, at_least:K or fraction:F")),
        })
    }
    pub fn holds(self, passed: usize, total: usize) -> bool {
        match self {
            Over::All => total > 0 && passed == total,
            Over::Any => passed > 0,
            Over::AtLeast(k) => passed >= k,
            Over::Fraction(f) => total > 0 && passed as f64 >= f * total as f64 - 1e-9,
        }
    }
}

/// An axis value as an expression value.
pub fn value_of(v: &toml::Value) -> expr::Value {
    match v {
        toml::Value::Table(t) if t.contains_key("value") => value_of(&t["value"]),
        toml::Value::Integer(i) => expr::Value::Num(*i as f64),
        toml::Value::Float(x) => expr::Value::Num(*x),
        toml::Value::Boolean(b) => expr::Value::Bool(*b),
        toml::Value::String(s) => expr::Value::Str(s.clone()),
        other => expr::Value::Str(other.to_string()),
    }
}

/// The overrides that come with a table-form axis value.
pub fn value_sets(v: &toml::Value) -> Vec<String> {
    match v {
        toml::Value::Table(t) => t
            .get("set")
            .and_then(|s| s.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or_default(),
        _ => vec![],
    }
}

impl Definition {
    pub fn parse(text: &str) -> Result<Definition, Error> {
        let d: Definition = serde_path_to_error::deserialize(toml::Deserializer::new(text))
            .map_err(|e| Error::config(e.path().to_string(), e.inner().to_string()))?;
        d.validate()?;
        Ok(d)
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |p: &str, m: String| Error::config(format!("{}: {p}", self.id), m);
        for (i, c) in self.check.iter().enumerate() {
            if c.expr.is_some() == c.monotone.is_some() {
                return Err(bad(&format!("check.{i}"), "needs exactly one of expr, monotone".into()));
            }
            if let Some(e) = &c.expr {
                expr::parse(e).map_err(|m| bad(&format!("check.{i}.expr"), m))?;
            }
            if let Some(w) = &c.where_ {
                expr::parse(w).map_err(|m| bad(&format!("check.{i}.where"), m))?;
            }
            Over::parse(c.over.as_deref()).map_err(|m| bad(&format!("check.{i}.over"), m))?;
        }
        for (i, m) in self.magnitude.iter().enumerate() {
            let at = |f: &str| format!("magnitude.{i}.{f}");
            expr::parse(&m.expr).map_err(|msg| bad(&at("expr"), msg))?;
            if let Some(w) = &m.where_ {
                expr::parse(w).map_err(|msg| bad(&at("where"), msg))?;
            }
            if !["absolute", "relative"].contains(&m.kind.as_str()) {
                return Err(bad(&at("kind"), format!("`{}`: kind is absolute or relative", m.kind)));
            }
            if let Some(r) = &m.reduce {
                if !["min", "max", "mean"].contains(&r.as_str()) {
                    return Err(bad(&at("reduce"), format!("`{r}`: reduce is min, max or mean")));
                }
            }
            if let Some(t) = m.tolerance {
                if !(t.is_finite() && t >= 0.0) {
                    return Err(bad(&at("tolerance"), format!("{t}: a tolerance is a fraction ≥ 0")));
                }
                if m.why.as_deref().is_none_or(|w| w.trim().is_empty()) {
                    return Err(bad(&at("tolerance"), "a tolerance other than 25 % needs a `why` sentence".into()));
                }
            }
            if !m.paper.is_finite() || (m.paper == 0.0) {
                return Err(bad(&at("paper"), "the paper's value must be a finite non-zero number".into()));
            }
            if self.magnitude[..i].iter().any(|o| o.name == m.name) {
                return Err(bad(&at("name"), format!("`{}` is used twice", m.name)));
            }
        }
        for (name, m) in &self.metrics {
            if let Some(e) = m.strip_prefix('=') {
                expr::parse(e).map_err(|msg| bad(&format!("metrics.{name}"), msg))?;
            }
        }
        if let Some(em) = &self.emulate {
            let fields = [
                ("search_lo", em.search_lo.is_some()),
                ("search_hi", em.search_hi.is_some()),
                ("search_also", em.search_also.is_some()),
                ("search_at_least", em.search_at_least.is_some()),
            ];
            for (f, given) in fields {
                if given && self.search.is_none() {
                    return Err(bad(&format!("emulate.{f}"), "the experiment has no [search]".into()));
                }
            }
            if let (Some(lo), Some(hi)) = (
                em.search_lo.or(self.search.as_ref().map(|s| s.lo)),
                em.search_hi.or(self.search.as_ref().map(|s| s.hi)),
            ) {
                if lo > hi {
                    return Err(bad("emulate.search_hi", format!("{hi} is below the search's lower bound {lo}")));
                }
            }
            if em.search_at_least.is_some_and(|x| !x.is_finite()) {
                return Err(bad("emulate.search_at_least", "must be a finite number".into()));
            }
        }
        for s in self.scale.keys() {
            if !["quick", "default", "paper"].contains(&s.as_str()) {
                return Err(bad(&format!("scale.{s}"), "scales are quick, default and paper".into()));
            }
        }
        Ok(())
    }
}
