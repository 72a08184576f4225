//! Empirical distributions from the papers' data files: flow sizes (`FlowSizeCdf`) and base RTTs (`RttDist`).
//!
//! The CSVs live in `crates/ecnlab/data/` and are embedded with `include_str!`, so the library reads no files for
//! them; [`load_cdf`] and [`load_rtt`] also take a user's CSV file by path (scenarios' `cdf` and `rtt.dist`).
//! Every file states its own sampling rule in its `#` header; this module implements those rules exactly:
//!
//! * `*_pkts.csv` (unit column `size_packets`) — [`Rule::PacketsNs2`], the rule of the MQ-ECN/TCN ns-2 scripts:
//!   ns-2 `RandomVariable/Empirical` with `interpolation_ 2` (HKUST-SING/MQ-ECN-NS2
//!   `scripts/tcp-common-opt-raw.tcl`, `set_PCarrival_process`), i.e. draw u ~ U(0,1), take the first point i
//!   with cdf_i ≥ u, interpolate linearly between points i−1 and i when u < cdf_i (else return size_i), then the
//!   same script's `schedule` sends `ceil(value) * 1460` bytes.
//! * `*_bytes.csv` (unit column `size_bytes`) — [`Rule::BytesLinear`], the rule of the ECN-sharp ns-3 code
//!   (snowzjx/ns3-ecn-sharp `examples/rtt-variations/cdf.c`, `gen_random_cdf`): the same inverse transform with
//!   linear interpolation (below the first point it interpolates from (0, 0)), and the caller stores the result in
//!   a `uint32_t` (`large-scale.cc`: `uint32_t flowSize = gen_random_cdf (cdfTable)`), i.e. truncates it.
//! * RTT files — piecewise-linear CDF over the `fraction` column, inverse transform with linear interpolation,
//!   rescaled as rtt = lo + fraction × (hi − lo) (the files' own headers).
//!
//! No flow is ever 0 bytes: a draw that rounds to 0 becomes 1 byte. For the bundled files this only happens in
//! the bytes files, whose first point is (0 B, 0): u = 0 exactly, or u < cdf_1 / size_1 (1.5·10⁻⁵ for web search,
//! 5.6·10⁻⁴ for data mining), where the ECN-sharp cast would give an empty flow. The analytic means include this.

use crate::engine::Rng;
use crate::units::{Bytes, Time};
use crate::{Error, Result};

/// MQ-ECN/TCN ns-2 payload per packet (`set pktSize 1460`, MQ-ECN-NS2 `scripts/spine_empirical.tcl`).
pub const NS2_PAYLOAD: u32 = 1460;

/// Largest byte count a sample may reach (2⁵³, so every size is exact in an `f64`).
const MAX_BYTES: f64 = 9_007_199_254_740_992.0;

/// How a drawn size becomes a byte count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Sizes in packets: bytes = ceil(value) × `payload` (MQ-ECN/TCN ns-2 scripts, payload 1460).
    PacketsNs2 { payload: u32 },
    /// Sizes in bytes: bytes = floor(value) (ECN-sharp's `uint32_t` cast), at least 1.
    BytesLinear,
}

/// One point of a CDF table: P(size ≤ `value`) = `cdf`, in the unit of the file.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    value: f64,
    cdf: f64,
}

/// The inverse transform shared by both rules and the RTT files (ns-2 `EmpiricalRandomVariable::value` with
/// interpolation): the first point i with cdf_i ≥ u; interpolate between i−1 and i when u < cdf_i.
fn inverse(table: &[Point], u: f64) -> f64 {
    let i = table.partition_point(|p| p.cdf < u).min(table.len() - 1);
    if i > 0 && u < table[i].cdf {
        let (a, b) = (table[i - 1], table[i]);
        // cdf_{i-1} < u < cdf_i, so the division is by a positive number.
        a.value + (u - a.cdf) * (b.value - a.value) / (b.cdf - a.cdf)
    } else {
        table[i].value
    }
}

/// Partial moments of a flow size X below a cut a, in bytes: P(X ≤ a), E[X·1{X ≤ a}] and E[X²·1{X ≤ a}].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Below {
    pub prob: f64,
    pub first: f64,
    pub second: f64,
}

/// A flow-size distribution from an empirical CDF table.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSizeCdf {
    rule: Rule,
    /// The sampling table, non-decreasing in both columns, ending at cdf 1. For `BytesLinear` with a first cdf
    /// above 0, a virtual (0, 0) point is prepended (ECN-sharp interpolates from the origin below the first point).
    table: Vec<Point>,
}

impl FlowSizeCdf {
    /// Names accepted by [`FlowSizeCdf::builtin`].
    pub const BUILTIN: [&'static str; 7] =
        ["websearch", "datamining", "cache", "hadoop", "websearch_bytes", "datamining_bytes", "uniform_3k_60k_bytes"];

    /// One of the bundled workloads: `websearch` (DCTCP), `datamining` (VL2), `cache`, `hadoop` (Facebook) from the
    /// MQ-ECN ns-2 scripts, in packets; `websearch_bytes`, `datamining_bytes` from the MQ-ECN testbed / ECN-sharp;
    /// `uniform_3k_60k_bytes`, ECN-sharp §5.4's query and probe flows (uniform on 3–60 KB).
    pub fn builtin(name: &str) -> Result<FlowSizeCdf> {
        let (file, text) = match name {
            "websearch" => ("websearch_pkts.csv", include_str!("../data/websearch_pkts.csv")),
            "datamining" => ("datamining_pkts.csv", include_str!("../data/datamining_pkts.csv")),
            "cache" => ("cache_pkts.csv", include_str!("../data/cache_pkts.csv")),
            "hadoop" => ("hadoop_pkts.csv", include_str!("../data/hadoop_pkts.csv")),
            "websearch_bytes" => ("websearch_bytes.csv", include_str!("../data/websearch_bytes.csv")),
            "datamining_bytes" => ("datamining_bytes.csv", include_str!("../data/datamining_bytes.csv")),
            "uniform_3k_60k_bytes" => ("uniform_3k_60k_bytes.csv", include_str!("../data/uniform_3k_60k_bytes.csv")),
            _ => {
                return Err(Error::config(
                    "cdf",
                    format!("unknown flow-size CDF `{name}`; one of {}", Self::BUILTIN.join(", ")),
                ))
            }
        };
        FlowSizeCdf::from_csv(file, text)
    }

    /// Parses CSV text: `#` lines and blank lines are skipped, the first other line names the columns
    /// (`size_packets,cumulative_probability` → [`Rule::PacketsNs2`] with 1460-byte payloads, or
    /// `size_bytes,cumulative_probability` → [`Rule::BytesLinear`]), then one `size,cdf` row per line.
    /// Errors are `Error::Config` at `<source>:<line>`.
    pub fn from_csv(source: &str, text: &str) -> Result<FlowSizeCdf> {
        let (header_line, header, rows) = split_csv(source, text)?;
        let rule = match header.as_slice() {
            ["size_packets", "cumulative_probability"] => Rule::PacketsNs2 { payload: NS2_PAYLOAD },
            ["size_bytes", "cumulative_probability"] => Rule::BytesLinear,
            _ => {
                return Err(line_err(
                    source,
                    header_line,
                    format!(
                        "columns `{}`: expected `size_packets,cumulative_probability` or \
                         `size_bytes,cumulative_probability`",
                        header.join(",")
                    ),
                ))
            }
        };
        let scale = match rule {
            Rule::PacketsNs2 { payload } => payload as f64,
            Rule::BytesLinear => 1.0,
        };
        let mut table: Vec<Point> = Vec::with_capacity(rows.len() + 1);
        for (line, fields) in &rows {
            let line = *line;
            if fields.len() != 2 {
                return Err(line_err(source, line, format!("expected 2 fields (size,cdf), found {}", fields.len())));
            }
            let value = parse_num(source, line, "size", fields[0])?;
            if value < 0.0 {
                return Err(line_err(source, line, format!("size {value} is negative")));
            }
            if value.ceil() * scale > MAX_BYTES {
                return Err(line_err(source, line, format!("size {value} is too large (over 2^53 bytes)")));
            }
            let cdf = parse_cdf(source, line, fields[1], table.last().map(|p| p.cdf))?;
            if let Some(prev) = table.last() {
                if value < prev.value {
                    return Err(line_err(
                        source,
                        line,
                        format!("size {value} is below the previous size {}; sizes must not decrease", prev.value),
                    ));
                }
            }
            table.push(Point { value, cdf });
        }
        check_ends_at_one(source, &rows, &table)?;
        if rule == Rule::BytesLinear && table[0].cdf > 0.0 {
            table.insert(0, Point { value: 0.0, cdf: 0.0 });
        }
        Ok(FlowSizeCdf { rule, table })
    }

    /// The rule this table is sampled with.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// Maps a drawn size (in the file's unit) to bytes under this table's rule; never 0.
    fn to_bytes(&self, value: f64) -> u64 {
        let b = match self.rule {
            Rule::PacketsNs2 { payload } => value.ceil() as u64 * payload as u64,
            Rule::BytesLinear => value.floor() as u64,
        };
        b.max(1)
    }

    /// Draws one flow size: u = `rng.uniform()` ∈ [0, 1), inverse transform, then the rule's rounding.
    pub fn sample(&self, rng: &mut Rng) -> Bytes {
        Bytes(self.to_bytes(inverse(&self.table, rng.uniform())))
    }

    /// The exact mean flow size in bytes under the same rule, rounding and 1-byte floor as `sample`
    /// (`below(∞).first`).
    pub fn mean(&self) -> f64 {
        self.below(f64::INFINITY).first
    }

    /// Sizes lie on a lattice: multiples of the payload (`PacketsNs2`) or whole bytes (`BytesLinear`).
    pub fn unit(&self) -> u64 {
        match self.rule {
            Rule::PacketsNs2 { payload } => payload as u64,
            Rule::BytesLinear => 1,
        }
    }

    /// The largest size on the lattice that is ≤ `bytes` (0 below the first step): X ≤ `bytes` ⟺ X ≤ this.
    pub fn lattice_floor(&self, bytes: f64) -> u64 {
        let u = self.unit();
        (bytes.max(0.0) / u as f64).floor() as u64 * u
    }

    /// The sizes at the table's points, as `sample` rounds them: where the CDF changes slope.
    pub fn breakpoints(&self) -> Vec<u64> {
        self.table.iter().map(|p| self.to_bytes(p.value)).collect()
    }

    /// The smallest and the largest size `sample` can return.
    pub fn range(&self) -> (u64, u64) {
        let mut pieces = std::iter::once((0.0, self.table[0].value, self.table[0].value, self.table[0].cdf))
            .chain(self.table.windows(2).map(|w| (w[0].cdf, w[0].value, w[1].value, w[1].cdf)))
            .filter(|&(lo_cdf, _, _, hi_cdf)| hi_cdf > lo_cdf);
        // A piece is a point mass (equal ends) or uniform over (a, b): its sizes run from r(a⁺) to r(b⁻).
        let lowest = |a: f64, b: f64| match self.rule {
            _ if a == b => self.to_bytes(a),
            Rule::PacketsNs2 { payload } => (a.floor() as u64 + 1) * payload as u64,
            Rule::BytesLinear => self.to_bytes(a),
        };
        let highest = |a: f64, b: f64| match self.rule {
            _ if a == b => self.to_bytes(a),
            Rule::PacketsNs2 { .. } => self.to_bytes(b),
            Rule::BytesLinear => (b.ceil() as u64).saturating_sub(1).max(1),
        };
        let first = pieces.next().expect("a table ends at cdf 1, so some piece has mass");
        let last = pieces.next_back().unwrap_or(first);
        (lowest(first.1, first.2), highest(last.1, last.2))
    }

    /// ∫₀ᵛ r(t) dt and ∫₀ᵛ r(t)² dt for v ≥ 0, r the rule's rounding in the file's unit: ⌈t⌉ for `PacketsNs2`,
    /// max(1, ⌊t⌋) for `BytesLinear`. With n = ⌊v⌋ and f = v − n they are sums over the whole steps below n plus the
    /// partial step: Σ_{k≤n} k = n(n+1)/2, Σ_{k≤n} k² = n(n+1)(2n+1)/6.
    fn step_integrals(&self, v: f64) -> (f64, f64) {
        let n = v.floor();
        let f = v - n;
        match self.rule {
            Rule::PacketsNs2 { .. } => {
                (n * (n + 1.0) / 2.0 + f * (n + 1.0), n * (n + 1.0) * (2.0 * n + 1.0) / 6.0 + f * (n + 1.0).powi(2))
            }
            // ⌊t⌋ is 0 on [0, 1), where the 1-byte floor makes it 1 (1² = 1 too).
            Rule::BytesLinear => {
                let one = v.min(1.0);
                (n * (n - 1.0) / 2.0 + f * n + one, (n - 1.0) * n * (2.0 * n - 1.0) / 6.0 + f * n * n + one)
            }
        }
    }

    /// P(X ≤ a), E[X; X ≤ a] and E[X²; X ≤ a] in bytes for X drawn by `sample`, exactly: no sampling and no
    /// numerical integration. The probability below the first point is a point mass there; each segment between
    /// points i−1 and i carries mass cdf_i − cdf_{i−1} spread uniformly over the drawn value v ∈ [v_{i−1}, v_i]
    /// (a point mass when equal), and X = r(v)·unit with r the rule's rounding. X ≤ a is v ≤ ⌊a/1460⌋ under
    /// ⌈·⌉ × 1460, and v < ⌊a⌋ + 1 (a ≥ 1) under max(1, ⌊·⌋), so each segment contributes its part below that cut
    /// through `step_integrals`. `a = ∞` gives 1, `E[X]` and `E[X²]`.
    pub fn below(&self, a: f64) -> Below {
        let unit = self.unit() as f64;
        let cut = match self.rule {
            Rule::PacketsNs2 { payload } => (a / payload as f64).floor(),
            Rule::BytesLinear if a < 1.0 => 0.0,
            Rule::BytesLinear => a.floor() + 1.0,
        };
        let mut out = Below::default();
        let point = |out: &mut Below, mass: f64, v: f64| {
            let x = self.to_bytes(v) as f64;
            if x <= a {
                out.prob += mass;
                out.first += mass * x;
                out.second += mass * x * x;
            }
        };
        let first = self.table[0];
        point(&mut out, first.cdf, first.value);
        for w in self.table.windows(2) {
            let (p, q) = (w[0], w[1]);
            let mass = q.cdf - p.cdf;
            if mass <= 0.0 {
                continue;
            }
            if q.value <= p.value {
                point(&mut out, mass, p.value);
                continue;
            }
            let hi = q.value.min(cut);
            if hi <= p.value {
                continue;
            }
            let density = mass / (q.value - p.value);
            let ((lo1, lo2), (hi1, hi2)) = (self.step_integrals(p.value), self.step_integrals(hi));
            out.prob += density * (hi - p.value);
            out.first += density * unit * (hi1 - lo1);
            out.second += density * unit * unit * (hi2 - lo2);
        }
        out
    }
}

/// A base-RTT distribution: a piecewise-linear CDF over a normalised `fraction`, placed on [lo, hi].
#[derive(Clone, Debug, PartialEq)]
pub struct RttDist {
    lo: Time,
    hi: Time,
    /// Points (fraction, cdf): fractions from 0 to 1 and cdfs ending at 1, both non-decreasing.
    table: Vec<Point>,
}

impl RttDist {
    /// Names accepted by [`RttDist::builtin`].
    pub const BUILTIN: [&'static str; 2] = ["longtail_70_210us", "longtail_80_240us"];

    /// One of the bundled long-tailed RTT shapes (ECN-sharp's RTT-variation experiments).
    pub fn builtin(name: &str) -> Result<RttDist> {
        let (file, text) = match name {
            "longtail_70_210us" => ("longtail_70_210us.csv", include_str!("../data/longtail_70_210us.csv")),
            "longtail_80_240us" => ("longtail_80_240us.csv", include_str!("../data/longtail_80_240us.csv")),
            _ => {
                return Err(Error::config(
                    "rtt",
                    format!("unknown RTT distribution `{name}`; one of {}", Self::BUILTIN.join(", ")),
                ))
            }
        };
        RttDist::from_csv(file, text)
    }

    /// Parses `rtt_us,fraction,cumulative_probability` CSV text (`#` and blank lines skipped). Fractions must run
    /// from 0 to 1, and each `rtt_us` must equal lo + fraction × (hi − lo) (to 1 ps) with lo, hi the first and last
    /// `rtt_us`. Errors are `Error::Config` at `<source>:<line>`.
    pub fn from_csv(source: &str, text: &str) -> Result<RttDist> {
        let (header_line, header, rows) = split_csv(source, text)?;
        if header.as_slice() != ["rtt_us", "fraction", "cumulative_probability"] {
            return Err(line_err(
                source,
                header_line,
                format!("columns `{}`: expected `rtt_us,fraction,cumulative_probability`", header.join(",")),
            ));
        }
        let mut rtts: Vec<Time> = Vec::with_capacity(rows.len());
        let mut table: Vec<Point> = Vec::with_capacity(rows.len());
        for (line, fields) in &rows {
            let line = *line;
            if fields.len() != 3 {
                return Err(line_err(
                    source,
                    line,
                    format!("expected 3 fields (rtt_us,fraction,cdf), found {}", fields.len()),
                ));
            }
            let rtt: Time = format!("{}us", fields[0])
                .parse()
                .map_err(|e: String| line_err(source, line, format!("rtt_us: {e}")))?;
            let fraction = parse_num(source, line, "fraction", fields[1])?;
            if !(0.0..=1.0).contains(&fraction) {
                return Err(line_err(source, line, format!("fraction {fraction} is outside [0, 1]")));
            }
            let cdf = parse_cdf(source, line, fields[2], table.last().map(|p| p.cdf))?;
            if let Some(prev) = table.last() {
                if fraction < prev.value {
                    return Err(line_err(
                        source,
                        line,
                        format!(
                            "fraction {fraction} is below the previous {}; fractions must not decrease",
                            prev.value
                        ),
                    ));
                }
            }
            rtts.push(rtt);
            table.push(Point { value: fraction, cdf });
        }
        check_ends_at_one(source, &rows, &table)?;
        let (first, last) = (rows[0].0, rows[rows.len() - 1].0);
        if table[0].value != 0.0 {
            return Err(line_err(source, first, "the first fraction must be 0"));
        }
        if table[table.len() - 1].value != 1.0 {
            return Err(line_err(source, last, "the last fraction must be 1"));
        }
        let dist = RttDist { lo: rtts[0], hi: rtts[rtts.len() - 1], table };
        for ((line, _), (rtt, p)) in rows.iter().zip(rtts.iter().zip(&dist.table)) {
            let want = dist.at_fraction(p.value);
            if rtt.0.abs_diff(want.0) > 1 {
                return Err(line_err(
                    source,
                    *line,
                    format!("rtt_us {rtt} does not match lo + fraction × (hi − lo) = {want}"),
                ));
            }
        }
        Ok(dist)
    }

    /// The same shape placed on [lo, hi] (rtt = lo + fraction × (hi − lo)); lo = hi gives a fixed RTT.
    pub fn rescaled(&self, lo: Time, hi: Time) -> Result<RttDist> {
        if hi < lo {
            return Err(Error::config("rtt", format!("range {lo}..{hi}: the upper end is below the lower end")));
        }
        Ok(RttDist { lo, hi, table: self.table.clone() })
    }

    /// The smallest RTT (fraction 0).
    pub fn lo(&self) -> Time {
        self.lo
    }

    /// The largest RTT (fraction 1).
    pub fn hi(&self) -> Time {
        self.hi
    }

    /// lo + fraction × (hi − lo), rounded to the nearest picosecond.
    fn at_fraction(&self, fraction: f64) -> Time {
        let span = (self.hi.0 - self.lo.0) as f64;
        Time(self.lo.0 + (fraction * span).round() as u64)
    }

    /// The p-quantile of the piecewise-linear CDF (the same inverse transform as `sample`). `p` is clamped to
    /// [0, 1]; NaN counts as 0.
    pub fn quantile(&self, p: f64) -> Time {
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
        self.at_fraction(inverse(&self.table, p))
    }

    /// Draws one RTT by inverse transform of u = `rng.uniform()`.
    pub fn sample(&self, rng: &mut Rng) -> Time {
        self.quantile(rng.uniform())
    }

    /// The exact mean: lo + E[fraction] × (hi − lo), E[fraction] = Σ (cdf_i − cdf_{i−1}) (f_{i−1} + f_i)/2 plus
    /// cdf_0 × f_0.
    pub fn mean(&self) -> Time {
        let first = self.table[0];
        let mut f = first.cdf * first.value;
        for w in self.table.windows(2) {
            f += (w[1].cdf - w[0].cdf) * (w[0].value + w[1].value) / 2.0;
        }
        self.at_fraction(f)
    }
}

/// A data row: its 1-based line number and its trimmed fields.
type Row<'a> = (usize, Vec<&'a str>);

/// Splits CSV text into (header line number, column names, data rows), skipping `#` and blank lines.
fn split_csv<'a>(source: &str, text: &'a str) -> Result<(usize, Vec<&'a str>, Vec<Row<'a>>)> {
    let mut header: Option<(usize, Vec<&str>)> = None;
    let mut rows = Vec::new();
    let mut last_line = 0;
    for (i, raw) in text.lines().enumerate() {
        last_line = i + 1;
        let s = raw.trim();
        if s.is_empty() || s.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = s.split(',').map(str::trim).collect();
        if header.is_none() {
            header = Some((i + 1, fields));
        } else {
            rows.push((i + 1, fields));
        }
    }
    let Some((header_line, header)) = header else {
        return Err(line_err(source, last_line, "no column-name line (only comments or blank lines)"));
    };
    if rows.is_empty() {
        return Err(line_err(source, last_line, "no data rows after the column-name line"));
    }
    Ok((header_line, header, rows))
}

fn line_err(source: &str, line: usize, msg: impl std::fmt::Display) -> Error {
    Error::config(format!("{source}:{line}"), format!("line {line}: {msg}"))
}

fn parse_num(source: &str, line: usize, what: &str, s: &str) -> Result<f64> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(line_err(source, line, format!("{what} `{s}` is not a finite number"))),
    }
}

/// Parses a cumulative probability in [0, 1] that does not go below `prev`.
fn parse_cdf(source: &str, line: usize, s: &str, prev: Option<f64>) -> Result<f64> {
    let cdf = parse_num(source, line, "cumulative probability", s)?;
    if !(0.0..=1.0).contains(&cdf) {
        return Err(line_err(source, line, format!("cumulative probability {cdf} is outside [0, 1]")));
    }
    if let Some(prev) = prev {
        if cdf < prev {
            return Err(line_err(
                source,
                line,
                format!("cumulative probability {cdf} is below the previous {prev}; it must not decrease"),
            ));
        }
    }
    Ok(cdf)
}

/// The last cumulative probability must be 1 (to within 1e-9).
fn check_ends_at_one(source: &str, rows: &[Row], table: &[Point]) -> Result<()> {
    let last = table[table.len() - 1].cdf;
    if (last - 1.0).abs() > 1e-9 {
        return Err(line_err(
            source,
            rows[rows.len() - 1].0,
            format!("the last cumulative probability is {last}; the table must end at 1"),
        ));
    }
    Ok(())
}

/// A shipped table by name, or else one read from a CSV file at that path. Here, beside the tables, because both
/// the scenario's validation and the simulation load them (it was `sim::load_cdf`, which made `scenario` depend on
/// `sim`).
fn load_named<T>(spec: &str, builtin: fn(&str) -> Result<T>, from_csv: fn(&str, &str) -> Result<T>) -> Result<T> {
    match builtin(spec) {
        Ok(t) => Ok(t),
        Err(_) if std::path::Path::new(spec).exists() => {
            let text = std::fs::read_to_string(spec).map_err(|e| Error::Io(format!("{spec}: {e}")))?;
            from_csv(spec, &text)
        }
        Err(e) => Err(e),
    }
}

/// A flow-size CDF by shipped name (`websearch`, …) or CSV path.
pub fn load_cdf(spec: &str) -> Result<FlowSizeCdf> {
    load_named(spec, FlowSizeCdf::builtin, FlowSizeCdf::from_csv)
}

/// An RTT distribution by shipped name (`longtail_80_240us`, …) or CSV path.
pub fn load_rtt(spec: &str) -> Result<RttDist> {
    load_named(spec, RttDist::builtin, RttDist::from_csv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_path(e: Error) -> (String, String) {
        match e {
            Error::Config { path, msg } => (path, msg),
            other => panic!("expected a config error, got {other}"),
        }
    }

    /// Analytic means in bytes, cross-checked by an independent exact-rational computation (Python `fractions`
    /// summing ceil/floor over every integer step of every segment).
    const EXPECTED_MEANS: [(&str, f64); 7] = [
        ("websearch", 1_666_451.3),
        ("datamining", 7_470_601.0),
        ("cache", 911_164.1),
        ("hadoop", 4_135_953.7),
        ("websearch_bytes", 1_711_249.500015),
        ("datamining_bytes", 12_658_198.100555556),
        // ⌊3000 + u·57000⌋: 3000 + (0 + … + 56999)/57000.
        ("uniform_3k_60k_bytes", 31_499.5),
    ];

    #[test]
    fn builtin_analytic_means_match_reference_values() {
        for (name, want) in EXPECTED_MEANS {
            let got = FlowSizeCdf::builtin(name).unwrap().mean();
            assert!((got - want).abs() < 0.01, "{name}: analytic mean {got}, reference {want}");
        }
    }

    /// P(X = x) for every size, by walking each segment's whole steps: the drawn value v rounds to k·1460 on
    /// (k−1, k] under `PacketsNs2` and to max(1, k) on [k, k+1) under `BytesLinear`. Independent of `below`.
    fn enumerate(cdf: &FlowSizeCdf) -> std::collections::BTreeMap<u64, f64> {
        let mut pmf = std::collections::BTreeMap::new();
        let t = &cdf.table;
        let mut pieces = vec![(t[0].value, t[0].value, t[0].cdf)];
        pieces.extend(t.windows(2).map(|w| (w[0].value, w[1].value, w[1].cdf - w[0].cdf)));
        for (a, b, mass) in pieces.into_iter().filter(|p| p.2 > 0.0) {
            if a == b {
                *pmf.entry(cdf.to_bytes(a)).or_insert(0.0) += mass;
                continue;
            }
            for k in (a.floor() as u64)..=(b.ceil() as u64 + 1) {
                let (lo, hi, x) = match cdf.rule {
                    Rule::PacketsNs2 { payload } => (k as f64 - 1.0, k as f64, (k * payload as u64).max(1)),
                    Rule::BytesLinear => (k as f64, k as f64 + 1.0, k.max(1)),
                };
                let len = hi.min(b) - lo.max(a);
                if len > 0.0 {
                    *pmf.entry(x).or_insert(0.0) += mass * len / (b - a);
                }
            }
        }
        pmf
    }

    #[test]
    fn partial_moments_match_an_enumeration_of_every_size() {
        let tables = [
            FlowSizeCdf::builtin("websearch").unwrap(),
            FlowSizeCdf::builtin("datamining").unwrap(),
            FlowSizeCdf::builtin("cache").unwrap(),
            FlowSizeCdf::builtin("uniform_3k_60k_bytes").unwrap(),
            // First cdf above 0 (interpolated from the origin, so sizes 0 and below 1 byte become 1), a point mass.
            FlowSizeCdf::from_csv("t", "size_bytes,cumulative_probability\n7.5,0.2\n40,0.6\n40,0.7\n90.25,1\n")
                .unwrap(),
        ];
        for cdf in &tables {
            let pmf = enumerate(cdf);
            assert!((pmf.values().sum::<f64>() - 1.0).abs() < 1e-9);
            let (lo, hi) = cdf.range();
            assert_eq!((lo, hi), (*pmf.keys().next().unwrap(), *pmf.keys().last().unwrap()), "{:?}", cdf.rule);
            let mut cuts: Vec<f64> =
                cdf.breakpoints().iter().flat_map(|&b| [b as f64 - 1.0, b as f64, b as f64 + 0.5]).collect();
            cuts.extend([0.0, 0.99, 1.0, 1459.0, 1460.0, 100_000.0, 3.3e6, 1e9, f64::INFINITY]);
            for a in cuts {
                let want = pmf.range(..).filter(|(&x, _)| x as f64 <= a).fold(Below::default(), |b, (&x, &p)| Below {
                    prob: b.prob + p,
                    first: b.first + p * x as f64,
                    second: b.second + p * (x as f64).powi(2),
                });
                let got = cdf.below(a);
                let close = |g: f64, w: f64| (g - w).abs() <= 1e-9 * w.abs().max(1e-9);
                assert!(
                    close(got.prob, want.prob) && close(got.first, want.first) && close(got.second, want.second),
                    "{:?} a = {a}: {got:?} vs {want:?}",
                    cdf.rule
                );
            }
            assert_eq!(cdf.lattice_floor(hi as f64 + 0.5), hi);
        }
    }

    #[test]
    fn websearch_pkts_mean_is_about_1_67_mb() {
        // DCTCP web search: ~1.6 MB is the usual figure; the ns-2 table under ceil()×1460 gives 1.667 MB
        // (1141.405 packets).
        let m = FlowSizeCdf::builtin("websearch").unwrap().mean();
        assert!((1.6e6..1.7e6).contains(&m), "{m}");
        assert!((m / 1460.0 - 1141.405).abs() < 1e-6, "{}", m / 1460.0);
    }

    #[test]
    fn builtin_sample_means_within_2_percent_of_analytic() {
        // One standard error of a 10^6-draw mean is 0.23 % (web search) to 0.80 % (data mining pkts) of the mean,
        // so 2 % is a 2.5σ bound for the heaviest tails; the streams are fixed, so the test is deterministic.
        for (k, name) in FlowSizeCdf::BUILTIN.iter().enumerate() {
            let cdf = FlowSizeCdf::builtin(name).unwrap();
            let mut rng = Rng::stream(42, k as u64);
            let n = 1_000_000u64;
            let mut sum = 0u128;
            for _ in 0..n {
                let b = cdf.sample(&mut rng);
                assert!(b.0 >= 1);
                sum += b.0 as u128;
            }
            let sample_mean = sum as f64 / n as f64;
            let mean = cdf.mean();
            let rel = (sample_mean - mean).abs() / mean;
            assert!(rel < 0.02, "{name}: sample mean {sample_mean}, analytic {mean}, off by {:.2} %", rel * 100.0);
        }
    }

    #[test]
    fn unit_column_picks_the_rule() {
        assert_eq!(FlowSizeCdf::builtin("hadoop").unwrap().rule(), Rule::PacketsNs2 { payload: 1460 });
        assert_eq!(FlowSizeCdf::builtin("websearch_bytes").unwrap().rule(), Rule::BytesLinear);
        assert!(FlowSizeCdf::builtin("nope").is_err());
    }

    #[test]
    fn ns2_rule_point_mass_interpolation_and_ceil() {
        // Half the mass at exactly 1 packet, half uniform on (1, 3] packets.
        let cdf = FlowSizeCdf::from_csv("t", "size_packets,cumulative_probability\n1,0\n1,0.5\n3,1\n").unwrap();
        let t = &cdf.table;
        assert_eq!(inverse(t, 0.0), 1.0);
        assert_eq!(inverse(t, 0.5), 1.0);
        assert_eq!(inverse(t, 0.75), 2.0);
        assert_eq!(cdf.to_bytes(1.2), 2 * 1460);
        // E = 0.5·1 + 0.5·E⌈U(1,3)⌉ = 0.5 + 0.5·2.5 packets.
        assert!((cdf.mean() - 1.75 * 1460.0).abs() < 1e-6, "{}", cdf.mean());
    }

    #[test]
    fn bytes_rule_truncates_and_never_gives_zero() {
        let cdf = FlowSizeCdf::from_csv("t", "size_bytes,cumulative_probability\n0,0\n4,1\n").unwrap();
        assert_eq!(cdf.to_bytes(0.0), 1);
        assert_eq!(cdf.to_bytes(0.7), 1);
        assert_eq!(cdf.to_bytes(3.9), 3);
        // U(0,4) floored gives 0,1,2,3 equally; the 0 becomes 1: mean (1+1+2+3)/4.
        assert!((cdf.mean() - 1.75).abs() < 1e-12, "{}", cdf.mean());
        // A first cdf above 0 interpolates from the origin (ECN-sharp `gen_random_cdf`, i == 0).
        let cdf = FlowSizeCdf::from_csv("t", "size_bytes,cumulative_probability\n10,0.5\n10,1\n").unwrap();
        assert_eq!(inverse(&cdf.table, 0.25), 5.0);
    }

    #[test]
    fn malformed_cdf_csvs_name_the_line() {
        let cases: [(&str, &str); 9] = [
            ("# c\nsize_packets,cumulative_probability\n1,0\n2,0.5\n3,0.4\n4,1\n", "t:5"),
            ("size_packets,cumulative_probability\n1,0\n2,1.5\n", "t:3"),
            ("size_packets,cumulative_probability\n1,0\n2,0.9\n", "t:3"),
            ("size_packets,cumulative_probability\n5,0\n2,1\n", "t:3"),
            ("size_packets,cumulative_probability\n-1,0\n2,1\n", "t:2"),
            ("size_packets,cumulative_probability\n1,0\nx,1\n", "t:3"),
            ("size_packets,cumulative_probability\n1,0,3\n2,1\n", "t:2"),
            ("# only\nsize_kb,cumulative_probability\n1,1\n", "t:2"),
            ("# c\nsize_bytes,cumulative_probability\n\n", "t:3"),
        ];
        for (text, path) in cases {
            let (p, msg) = config_path(FlowSizeCdf::from_csv("t", text).unwrap_err());
            assert_eq!(p, path, "{text:?}: {msg}");
            assert!(msg.starts_with(&format!("line {}", &path[2..])), "{msg}");
        }
    }

    #[test]
    fn rtt_80_240_mean_median_p90_exact() {
        let d = RttDist::builtin("longtail_80_240us").unwrap();
        assert_eq!((d.lo(), d.hi()), (Time::from_us(80), Time::from_us(240)));
        assert_eq!(d.mean(), Time::from_ns(136_200));
        assert_eq!(d.quantile(0.5), Time::from_us(120));
        assert_eq!(d.quantile(0.9), Time::from_us(220));
        assert_eq!(d.quantile(0.0), Time::from_us(80));
        assert_eq!(d.quantile(1.0), Time::from_us(240));
        assert_eq!(d.quantile(0.39), Time::from_us(110));
    }

    #[test]
    fn rtt_70_210_matches_its_header_and_rescales_to_70_350() {
        let d = RttDist::builtin("longtail_70_210us").unwrap();
        assert_eq!(d.mean(), Time::from_ns(119_175)); // header: 119.2 us
        assert_eq!(d.quantile(0.5), Time::from_us(105));
        assert_eq!(d.quantile(0.9), Time::from_ns(192_500));
        let r = d.rescaled(Time::from_us(70), Time::from_us(350)).unwrap();
        assert_eq!(r.mean(), Time::from_ns(168_350)); // 70 + 0.35125 × 280
        assert_eq!(r.quantile(0.5), Time::from_us(140));
        assert_eq!(r.quantile(0.9), Time::from_us(315));
        assert_eq!(r.quantile(1.0), Time::from_us(350));
        // Same shape: rescaling 70–210 to 80–240 gives the 80–240 file.
        let b = RttDist::builtin("longtail_80_240us").unwrap();
        assert_eq!(d.rescaled(Time::from_us(80), Time::from_us(240)).unwrap(), b);
        assert!(d.rescaled(Time::from_us(10), Time::from_us(5)).is_err());
        let fixed = d.rescaled(Time::from_us(50), Time::from_us(50)).unwrap();
        assert_eq!(fixed.sample(&mut Rng::stream(1, 1)), Time::from_us(50));
    }

    #[test]
    fn rtt_sample_mean_close_to_analytic() {
        let d = RttDist::builtin("longtail_80_240us").unwrap();
        let mut rng = Rng::stream(7, 3);
        let n = 200_000u64;
        let sum: u128 = (0..n).map(|_| d.sample(&mut rng).0 as u128).sum();
        let m = sum as f64 / n as f64;
        assert!((m - d.mean().0 as f64).abs() / (d.mean().0 as f64) < 0.005, "{m}");
    }

    #[test]
    fn malformed_rtt_csvs_name_the_line() {
        let h = "rtt_us,fraction,cumulative_probability\n";
        let cases = [
            (format!("{h}80,0,0\n100,0.2,0.5\n240,1,1\n"), "t:3"), // 100 ≠ 80 + 0.2 × 160
            (format!("{h}80,0,0\n100,0.125,0.6\n240,1,0.5\n"), "t:4"),
            (format!("{h}80,0.1,0\n240,1,1\n"), "t:2"),
            (format!("{h}80,0,0\n240,1,0.8\n"), "t:3"),
            (format!("{h}80,0,0\n-5,1,1\n"), "t:3"),
            ("rtt,fraction,cumulative_probability\n80,0,1\n".to_string(), "t:1"),
        ];
        for (text, path) in cases {
            let (p, msg) = config_path(RttDist::from_csv("t", &text).unwrap_err());
            assert_eq!(p, path, "{text:?}: {msg}");
        }
    }
}
