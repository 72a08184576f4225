//! Threshold calculator: ECN marking thresholds and buffer sizes from the published rules (ECN*, MQ-ECN, PMSB, ECN♯).
//!
//! Every function returns [`Rule`]s that carry the paper and equation they come from. Inputs are checked and bad
//! ones come back as `Error::Config` naming the field the way the CLI flag is spelled (without its `--`): `rate`,
//! `mtu`, `rtt`, `rtt-file`, `percentile`, `flows`, `weights`, `buffer`, `k`, `lambda`.
//! [`Args`] parses the fronts' text arguments into [`Inputs`] (one parser for `ecnlab-sim thresholds` and
//! `ecnlab.thresholds`), each front respelling those names as its own.
//!
//! Rounding to whole bytes follows the direction of each rule, so the byte value always satisfies it: lower bounds
//! round up (a strict `>` bound gives the next byte), upper bounds round down, settings round to nearest. The
//! `packets` field keeps the exact, unrounded value in MTUs.
//!
//! Papers: ECN* = Wu et al., "Tuning ECN for data center networks", CoNEXT 2012; MQ-ECN = Bai et al., "Enabling
//! ECN in multi-service multi-queue data centers", NSDI 2016; PMSB = Pan et al., "Support ECN in multi-queue
//! datacenter networks via per-port marking with selective blindness"; ECN♯ = Zhang, Bai, Chen, "Enabling ECN for
//! datacenter networks with RTT variations".

use crate::units::{Bytes, Rate, Time, PS_PER_S};
use crate::{Error, Result};
use std::path::Path;

/// The port a rule is computed for: its rate C and the MTU packet counts are expressed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub rate: Rate,
    pub mtu: Bytes,
}

impl Link {
    pub fn new(rate: Rate, mtu: Bytes) -> Result<Link> {
        if rate.0 == 0 {
            return Err(Error::config("rate", "must be > 0 b/s (e.g. 10Gbps)"));
        }
        if mtu.0 == 0 {
            return Err(Error::config("mtu", "must be > 0 bytes (e.g. 1500B)"));
        }
        Ok(Link { rate, mtu })
    }

    /// C·t in bytes, unrounded (the bandwidth-delay product when t is an RTT).
    fn bdp(self, t: Time) -> f64 {
        (self.rate.0 as u128 * t.0 as u128) as f64 / (8 * PS_PER_S) as f64
    }
}

/// What a rule's value is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Quantity {
    /// A queue length or buffer size.
    Bytes(Bytes),
    /// A queue threshold given as a sojourn time (its queue-length form is C·t).
    Time(Time),
    /// A time interval that is not a queue length (ECN♯ `pst_interval`).
    Interval(Time),
}

/// One rule's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// What the value is, e.g. "ECN* lower bound h ≥ T·C/√N".
    pub name: String,
    /// Where it comes from, e.g. "ECN* Eq. 1".
    pub equation: &'static str,
    pub value: Quantity,
    /// The exact (unrounded) value in MTUs; `None` for intervals.
    pub packets: Option<f64>,
    /// Assumptions and the inputs used.
    pub note: String,
}

impl Rule {
    /// The value as bytes at `rate` (C·t for a sojourn time); `None` for intervals.
    pub fn bytes(&self, rate: Rate) -> Option<Bytes> {
        match self.value {
            Quantity::Bytes(b) => Some(b),
            Quantity::Time(t) => Some(rate.bytes_in(t)),
            Quantity::Interval(_) => None,
        }
    }
    /// The value as a time at `rate` (the time to drain it for a queue length).
    pub fn time(&self, rate: Rate) -> Time {
        match self.value {
            Quantity::Bytes(b) => rate.tx_time(b),
            Quantity::Time(t) | Quantity::Interval(t) => t,
        }
    }
    pub fn to_json(&self, rate: Rate) -> serde_json::Value {
        let t = self.time(rate);
        serde_json::json!({
            "rule": self.name,
            "equation": self.equation,
            "kind": match self.value {
                Quantity::Bytes(_) => "bytes",
                Quantity::Time(_) => "time",
                Quantity::Interval(_) => "interval",
            },
            "bytes": self.bytes(rate).map(|b| b.0),
            "packets": self.packets,
            "time": t.to_string(),
            "time_us": t.as_us_f64(),
            "note": self.note,
        })
    }
}

#[derive(Clone, Copy)]
enum Round {
    /// Settings: nearest byte.
    Nearest,
    /// `x ≥ bound`: the smallest whole byte count that satisfies it.
    Up,
    /// `x ≤ bound`: the largest whole byte count that satisfies it.
    Down,
    /// `x > bound`: the smallest whole byte count strictly above it.
    Above,
}

fn to_bytes(x: f64, r: Round) -> Bytes {
    // Snap float noise so that 50 000.000000001 does not round up to 50 001.
    let s = if (x - x.round()).abs() < 1e-6 { x.round() } else { x };
    let v = match r {
        Round::Nearest => x.round(),
        Round::Up => s.ceil(),
        Round::Down => s.floor(),
        Round::Above => s.floor() + 1.0,
    };
    Bytes(v.max(0.0) as u64) // `as` saturates: never panics on huge values
}

fn scale_time(t: Time, f: f64) -> Time {
    Time((t.0 as f64 * f).round() as u64)
}

fn bytes_rule(link: Link, name: String, equation: &'static str, x: f64, r: Round, note: String) -> Rule {
    Rule { name, equation, value: Quantity::Bytes(to_bytes(x, r)), packets: Some(x / link.mtu.0 as f64), note }
}

fn check_rtt(rtt: Time) -> Result<()> {
    if rtt.0 == 0 {
        return Err(Error::config("rtt", "must be > 0 (e.g. 85.2us)"));
    }
    Ok(())
}

fn check_lambda(lambda: f64) -> Result<()> {
    if !(lambda.is_finite() && lambda > 0.0 && lambda <= 1.0) {
        return Err(Error::config(
            "lambda",
            format!("must be in (0, 1] (1 for ECN*, 0.17 for DCTCP in theory), got {lambda}"),
        ));
    }
    Ok(())
}

fn check_weights(weights: &[u64]) -> Result<u128> {
    if weights.is_empty() {
        return Err(Error::config("weights", "needs at least one queue weight (e.g. 1,1,2)"));
    }
    if let Some(i) = weights.iter().position(|&w| w == 0) {
        return Err(Error::config("weights", format!("queue {} has weight 0; weights must be integers ≥ 1", i + 1)));
    }
    Ok(weights.iter().map(|&w| w as u128).sum())
}

/// ECN* Eq. 1, h ≥ T·C, and for N synchronized long flows h ≥ T·C/√N (ECN* §3.2.1).
pub fn ecnstar_lower(link: Link, rtt: Time, flows: u32) -> Result<Rule> {
    check_rtt(rtt)?;
    if flows == 0 {
        return Err(Error::config("flows", "must be an integer ≥ 1"));
    }
    // ECN* Eq. 1: h ≥ T × C, or T × C / √N for N synchronized flows.
    let h = link.bdp(rtt) / (flows as f64).sqrt();
    let (name, note) = if flows == 1 {
        (
            "ECN* lower bound h ≥ T·C".to_string(),
            format!("one long flow, T = {rtt}; queue never drains after a window halving (no throughput loss)"),
        )
    } else {
        (
            format!("ECN* lower bound h ≥ T·C/√N (N={flows})"),
            format!(
                "{flows} synchronized long flows, T = {rtt}; the paper says few flows stay close to T·C in practice"
            ),
        )
    };
    Ok(bytes_rule(link, name, "ECN* Eq. 1", h, Round::Up, note))
}

/// ECN* Eq. 2: the window when the queue reaches h is bounded by w_e ≤ h + T·C.
pub fn ecnstar_window(link: Link, rtt: Time, h: Bytes) -> Result<Rule> {
    check_rtt(rtt)?;
    // ECN* Eq. 2: w_e ≤ h + T × C (packets in the queue plus the pipe).
    let w = h.0 as f64 + link.bdp(rtt);
    let note = format!("h = {h}, T = {rtt}; slow start can add up to w_e more on top of h (tight when h ≥ T·C)");
    Ok(bytes_rule(link, "ECN* window at marking w_e ≤ h + T·C".into(), "ECN* Eq. 2", w, Round::Down, note))
}

/// ECN* Eq. 4 (from Eqs. 2 and 3): the largest threshold that avoids loss in a buffer B, h ≤ (B − T·C)/2.
pub fn ecnstar_upper(link: Link, rtt: Time, buffer: Bytes) -> Result<Rule> {
    check_rtt(rtt)?;
    let tc = link.bdp(rtt);
    if (buffer.0 as f64) < tc {
        return Err(Error::config(
            "buffer",
            format!(
                "must be at least T·C = {:.0}B at T = {rtt} for ECN* Eq. 4 to allow any threshold, got {buffer}",
                tc
            ),
        ));
    }
    // ECN* Eq. 4: h ≤ (B − T × C) / 2, from Eq. 3 (h + w_e ≤ B) with Eq. 2 (w_e ≤ h + T × C).
    let h = (buffer.0 as f64 - tc) / 2.0;
    let note = format!("B = {buffer}, T = {rtt}; peak queue h + w_e after slow start stays within B (no loss)");
    Ok(bytes_rule(link, "ECN* upper bound h ≤ (B − T·C)/2".into(), "ECN* Eq. 4", h, Round::Down, note))
}

/// ECN* Eq. 5: the buffer a threshold h needs, B ≥ 2h + T·C (≥ 3·T·C when h = T·C).
pub fn ecnstar_buffer(link: Link, rtt: Time, h: Bytes) -> Result<Rule> {
    check_rtt(rtt)?;
    let tc = link.bdp(rtt);
    // ECN* Eq. 5: B ≥ 2h + T × C ≥ 3 T × C.
    let b = 2.0 * h.0 as f64 + tc;
    let note = format!(
        "h = {h}, T = {rtt}; Eq. 3 h + w_e ≤ B with Eq. 2; 3·T·C = {:.0}B is the floor at the Eq. 1 bound",
        3.0 * tc
    );
    Ok(bytes_rule(link, "ECN* buffer B ≥ 2h + T·C".into(), "ECN* Eq. 5", b, Round::Up, note))
}

/// MQ-ECN Eq. 1 (the standard single-queue threshold): K = C·RTT·λ.
pub fn dctcp_k(link: Link, rtt: Time, lambda: f64) -> Result<Rule> {
    check_rtt(rtt)?;
    check_lambda(lambda)?;
    // MQ-ECN Eq. 1 (= ECN♯ Eq. 1, PMSB Eq. 1): K = C × RTT × λ.
    let k = link.bdp(rtt) * lambda;
    let note =
        format!("RTT = {rtt}, λ = {lambda}; λ = 1 for ECN* (halves the window), 0.17 for DCTCP in theory (ECN♯ §2.1)");
    Ok(bytes_rule(
        link,
        format!("standard threshold K = C·RTT·λ (λ={lambda})"),
        "MQ-ECN Eq. 1",
        k,
        Round::Nearest,
        note,
    ))
}

/// MQ-ECN Eq. 2: the per-queue minimum thresholds K_i = w_i/Σw · K, one rule per queue.
///
/// Rounded down, as the `QueueWeighted` marker scope computes it.
pub fn mqecn_min(link: Link, k: Bytes, weights: &[u64]) -> Result<Vec<Rule>> {
    let sum = check_weights(weights)?;
    let rules = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            // MQ-ECN Eq. 2: K_i = W_i / Σ_j W_j × C × RTT × λ = W_i / Σ_j W_j × K.
            let exact = k.0 as f64 * w as f64 / sum as f64;
            let floor = (k.0 as u128 * w as u128 / sum) as u64;
            Rule {
                name: format!("MQ-ECN per-queue minimum K_{} (w={w})", i + 1),
                equation: "MQ-ECN Eq. 2",
                value: Quantity::Bytes(Bytes(floor)),
                packets: Some(exact / link.mtu.0 as f64),
                note: format!(
                    "K = {k} split by weight over {} queues; ΣK_i = K, throttles few-active-queue throughput",
                    weights.len()
                ),
            }
        })
        .collect();
    Ok(rules)
}

/// PMSB Theorem IV.1: per-queue lower bounds k_i > w_i/Σw · C·RTT/7, and the port threshold as their sum
/// (PMSB §VI: "we can obtain the port's threshold by summing up the thresholds of all queues").
///
/// The bounds are strict: each byte value is the next whole byte above the bound. The sum of the bounds is
/// C·RTT/7 whatever the weights (DCTCP's K > C·RTT/7 for one queue).
pub fn pmsb_queue_bounds(link: Link, rtt: Time, weights: &[u64]) -> Result<(Vec<Rule>, Rule)> {
    check_rtt(rtt)?;
    let sum = check_weights(weights)?;
    let c_rtt = link.bdp(rtt);
    let queues = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            // PMSB Theorem IV.1 (Eq. 12): k_i > w_i / Σ_j w_j · C · RTT / 7.
            let k = w as f64 / sum as f64 * c_rtt / 7.0;
            let note = format!("strict (k_i must exceed it); synchronized DCTCP flows with identical RTT = {rtt}");
            bytes_rule(
                link,
                format!("PMSB queue {} bound k_{} > γ_i·C·RTT/7 (w={w})", i + 1, i + 1),
                "PMSB Thm IV.1",
                k,
                Round::Above,
                note,
            )
        })
        .collect::<Vec<_>>();
    // PMSB §VI: port threshold = Σ_i k_i; the bounds sum to C · RTT / 7.
    let port = bytes_rule(
        link,
        "PMSB port threshold Σ k_i > C·RTT/7".into(),
        "PMSB Thm IV.1, sum over queues",
        c_rtt / 7.0,
        Round::Above,
        format!("sum over {} queue(s) at RTT = {rtt}; equals C·RTT/7 (DCTCP's K bound) for any weights", weights.len()),
    );
    Ok((queues, port))
}

/// ECN♯ §3.4 rule of thumb, returned as `(ins_target, pst_interval, pst_target)`:
/// - `ins_target = λ × RTT_high` (ECN♯ Eq. 2 with a high-percentile RTT, e.g. p90);
/// - `pst_interval ≈ RTT_high` ("around the high percentile RTT");
/// - `pst_target ≥ λ × RTT_mean` (the conservative setting the paper recommends; the bound is returned).
pub fn ecnsharp(rtt: &RttSummary, lambda: f64, link: Link) -> Result<(Rule, Rule, Rule)> {
    check_rtt(rtt.mean)?;
    check_rtt(rtt.high)?;
    check_lambda(lambda)?;
    let which = match rtt.percentile {
        Some(p) => format!("p{p} RTT"),
        None => "RTT".to_string(),
    };
    let mtu = link.mtu.0 as f64;
    // ECN♯ Eq. 2: T = K / C = λ × RTT, with the high-percentile RTT (§3.4).
    let ins = scale_time(rtt.high, lambda);
    let ins_target = Rule {
        name: format!("ECN♯ ins_target = λ·{which}"),
        equation: "ECN♯ Eq. 2, §3.4",
        value: Quantity::Time(ins),
        packets: Some(link.bdp(rtt.high) * lambda / mtu),
        note: format!("λ = {lambda}, {which} = {}; instantaneous sojourn-time threshold", rtt.high),
    };
    // ECN♯ §3.4: pst_interval around the high-percentile RTT (TCP needs one RTT to react).
    let pst_interval = Rule {
        name: format!("ECN♯ pst_interval ≈ {which}"),
        equation: "ECN♯ §3.4",
        value: Quantity::Interval(rtt.high),
        packets: None,
        note: "an observation interval, not a queue length; may be set smaller for very bursty traffic".into(),
    };
    // ECN♯ §3.4: pst_target ≥ λ × RTT, RTT the average.
    let pst = scale_time(rtt.mean, lambda);
    let pst_target = Rule {
        name: "ECN♯ pst_target ≥ λ·mean RTT".into(),
        equation: "ECN♯ §3.4",
        value: Quantity::Time(pst),
        packets: Some(link.bdp(rtt.mean) * lambda / mtu),
        note: format!(
            "λ = {lambda}, mean RTT = {}; lowest recommended value (smaller works in theory, but queues oscillate)",
            rtt.mean
        ),
    };
    Ok((ins_target, pst_interval, pst_target))
}

/// The RTT figures the rules use: a mean, and a high percentile (both equal for a single RTT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RttSummary {
    pub mean: Time,
    pub high: Time,
    /// Which percentile `high` is; `None` when a single RTT was given.
    pub percentile: Option<f64>,
}

impl RttSummary {
    pub fn fixed(rtt: Time) -> Result<RttSummary> {
        check_rtt(rtt)?;
        Ok(RttSummary { mean: rtt, high: rtt, percentile: None })
    }
    pub fn from_dist(dist: &RttDist, percentile: f64) -> Result<RttSummary> {
        Ok(RttSummary { mean: dist.mean(), high: dist.percentile(percentile)?, percentile: Some(percentile) })
    }
}

/// A piecewise-linear RTT distribution: points (rtt_us, cumulative probability), linear between points.
#[derive(Clone, Debug, PartialEq)]
pub struct RttDist {
    points: Vec<(f64, f64)>,
}

impl RttDist {
    /// Checks the points: at least two, RTTs > 0 and non-decreasing, probabilities non-decreasing from 0 to 1.
    pub fn new(points: Vec<(f64, f64)>) -> Result<RttDist> {
        let bad = |msg: String| Err(Error::config("rtt-file", msg));
        if points.len() < 2 {
            return bad(format!("needs at least 2 points, got {}", points.len()));
        }
        for (i, &(x, p)) in points.iter().enumerate() {
            if !(x.is_finite() && x > 0.0) {
                return bad(format!("point {}: rtt_us must be > 0, got {x}", i + 1));
            }
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                return bad(format!("point {}: cumulative_probability must be in [0, 1], got {p}", i + 1));
            }
            if i > 0 && (x < points[i - 1].0 || p < points[i - 1].1) {
                return bad(format!("point {}: rtt_us and cumulative_probability must not decrease", i + 1));
            }
        }
        if points[0].1 != 0.0 || (points[points.len() - 1].1 - 1.0).abs() > 1e-9 {
            return bad("cumulative_probability must start at 0 and end at 1".into());
        }
        Ok(RttDist { points })
    }

    /// Parses CSV with columns `rtt_us` and `cumulative_probability` (others ignored); `#` lines are comments.
    pub fn from_csv(text: &str) -> Result<RttDist> {
        let bad = |msg: String| Error::config("rtt-file", msg);
        let mut rows = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let (_, header) = rows.next().ok_or_else(|| bad("no header line".into()))?;
        let cols: Vec<&str> = header.split(',').map(str::trim).collect();
        let col = |name: &str| {
            cols.iter()
                .position(|c| *c == name)
                .ok_or_else(|| bad(format!("header needs columns rtt_us and cumulative_probability, got `{header}`")))
        };
        let (xi, pi) = (col("rtt_us")?, col("cumulative_probability")?);
        let mut points = vec![];
        for (line, row) in rows {
            let cells: Vec<&str> = row.split(',').map(str::trim).collect();
            let num = |i: usize, name: &str| -> Result<f64> {
                cells
                    .get(i)
                    .and_then(|c| c.parse::<f64>().ok())
                    .ok_or_else(|| bad(format!("line {line}: `{name}` is not a number in `{row}`")))
            };
            points.push((num(xi, "rtt_us")?, num(pi, "cumulative_probability")?));
        }
        RttDist::new(points)
    }

    /// Reads [`RttDist::from_csv`] from a file; an unreadable file is a config error at `rtt-file`.
    pub fn from_file(path: &Path) -> Result<RttDist> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::config("rtt-file", format!("cannot read {}: {e}", path.display())))?;
        RttDist::from_csv(&text).map_err(|e| match e {
            Error::Config { path: p, msg } => Error::Config { path: p, msg: format!("{}: {msg}", path.display()) },
            e => e,
        })
    }

    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// The mean of the piecewise-linear CDF: Σ over segments of Δp · (x_i + x_{i+1}) / 2, exactly.
    pub fn mean(&self) -> Time {
        let us: f64 = self.points.windows(2).map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0).sum();
        us_to_time(us)
    }

    /// The q-quantile (q in [0, 1]) by linear interpolation; q outside [0, 1] is clamped.
    pub fn quantile(&self, q: f64) -> Time {
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let pts = &self.points;
        if q <= pts[0].1 {
            return us_to_time(pts[0].0);
        }
        for w in pts.windows(2) {
            let ((x0, p0), (x1, p1)) = (w[0], w[1]);
            // The first segment whose probability range (p0, p1] holds q; p1 > p0 there, so no division by 0.
            if q > p0 && q <= p1 {
                return us_to_time(x0 + (q - p0) / (p1 - p0) * (x1 - x0));
            }
        }
        us_to_time(pts[pts.len() - 1].0)
    }

    /// The p-th percentile, p in (0, 100).
    pub fn percentile(&self, p: f64) -> Result<Time> {
        if !(p.is_finite() && p > 0.0 && p < 100.0) {
            return Err(Error::config("percentile", format!("must be in (0, 100), got {p}")));
        }
        Ok(self.quantile(p / 100.0))
    }

    /// One RTT by inverse transform sampling: `u` uniform in [0, 1) from the caller's generator.
    pub fn sample(&self, u: f64) -> Time {
        self.quantile(u)
    }
}

fn us_to_time(us: f64) -> Time {
    Time((us * 1e6).round() as u64)
}

/// The calculator's arguments as text, as both fronts receive them (`ecnlab-sim thresholds --rate …`,
/// `ecnlab.thresholds(rate, …)`), each optional: one parser, so the two accept the same values and fail alike.
/// Unset fields take the calculator's defaults: MTU 1500B, 1 flow, λ = 1, the 90th percentile of an RTT file.
#[derive(Clone, Debug, Default)]
pub struct Args {
    pub rate: Option<String>,
    pub rtt: Option<String>,
    pub rtt_file: Option<std::path::PathBuf>,
    pub percentile: Option<String>,
    pub flows: Option<String>,
    /// Comma-separated (`1,1,2`).
    pub weights: Option<String>,
    pub buffer: Option<String>,
    pub mtu: Option<String>,
    /// A queue length (`65pkt`, `97.5KB`, `78us`), resolved at the link's MTU and rate.
    pub k: Option<String>,
    pub lambda: Option<String>,
}

impl Args {
    /// The inputs and every rule that applies to them (`rules`). Every error is a config error at the argument
    /// it concerns, spelled by `name` from the library's name (`rtt-file`; the module doc lists them): the CLI
    /// passes `--{name}`, Python its parameter names; messages that point to another argument spell it the same.
    pub fn rules(&self, name: &dyn Fn(&str) -> String) -> Result<(Inputs, Vec<Rule>)> {
        let respell = |e: Error| match e {
            Error::Config { path, msg } if ARGS.contains(&path.as_str()) => Error::Config { path: name(&path), msg },
            e => e,
        };
        let inp = self.inputs(name).map_err(respell)?;
        let rules = rules(&inp).map_err(respell)?;
        Ok((inp, rules))
    }

    /// Parses the arguments, in the order the CLI always reported them: each value's syntax, then what is
    /// missing or contradictory, then the values' ranges. Errors carry the library's names (`rules` respells).
    fn inputs(&self, name: &dyn Fn(&str) -> String) -> Result<Inputs> {
        use crate::units::QueueLen;
        let rate: Option<Rate> = parse("rate", &self.rate, "a rate > 0 such as 10Gbps")?;
        let rtt: Option<Time> = parse("rtt", &self.rtt, "a time > 0 such as 85.2us")?;
        let percentile: Option<f64> = parse("percentile", &self.percentile, "a number in (0, 100)")?;
        let flows: Option<u32> = parse("flows", &self.flows, "an integer ≥ 1")?;
        let buffer: Option<Bytes> = parse("buffer", &self.buffer, "a size such as 300KB")?;
        let mtu: Option<Bytes> = parse("mtu", &self.mtu, "a size > 0 such as 1500B")?;
        let k: Option<QueueLen> = parse("k", &self.k, "a queue length such as 65pkt, 97.5KB or 78us")?;
        let lambda: Option<f64> = parse("lambda", &self.lambda, "a number in (0, 1]")?;

        let rate = rate.ok_or_else(|| Error::config("rate", "missing: the link rate C (e.g. 10Gbps)"))?;
        let link = Link::new(rate, mtu.unwrap_or(Bytes(1500)))?;
        let rtt = match (rtt, &self.rtt_file) {
            (Some(_), Some(_)) => {
                return Err(Error::config("rtt", format!("give one of {} and {}", name("rtt"), name("rtt-file"))))
            }
            (None, None) => {
                let msg = format!("missing: a mean RTT (e.g. 85.2us) or {} F.csv", name("rtt-file"));
                return Err(Error::config("rtt", msg));
            }
            (Some(_), None) if percentile.is_some() => {
                return Err(Error::config("percentile", format!("applies to {} only", name("rtt-file"))))
            }
            (Some(t), None) => RttSummary::fixed(t)?,
            (None, Some(f)) => RttSummary::from_dist(&RttDist::from_file(f)?, percentile.unwrap_or(90.0))?,
        };
        let weights = match &self.weights {
            None => None,
            // No weights at all (Python's `weights=[]`): `rules` says one is needed, which says more than a
            // syntax error would.
            Some(w) if w.trim().is_empty() => Some(vec![]),
            Some(w) => {
                Some(w.split(',').map(|x| x.trim().parse::<u64>()).collect::<Result<Vec<u64>, _>>().map_err(|_| {
                    Error::config("weights", format!("`{w}`: comma-separated integers ≥ 1 (e.g. 1,1,2)"))
                })?)
            }
        };
        Ok(Inputs {
            link,
            rtt,
            flows: flows.unwrap_or(1),
            weights,
            buffer,
            k: k.map(|q| q.resolve(link.mtu, link.rate)),
            lambda: lambda.unwrap_or(1.0),
        })
    }
}

/// The arguments' library names: the config paths `Args::rules` respells.
const ARGS: [&str; 10] = ["rate", "rtt", "rtt-file", "percentile", "flows", "weights", "buffer", "mtu", "k", "lambda"];

/// `v`, if given, parsed as a `T`; the error names the argument and says what it takes (`hint`).
fn parse<T: std::str::FromStr>(arg: &str, v: &Option<String>, hint: &str) -> Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    v.as_deref()
        .map(|s| {
            s.parse::<T>().map_err(|e| {
                let e = e.to_string();
                // Unit parsers quote the value themselves; others (numbers) do not.
                let e = if e.contains(&format!("`{s}`")) { e } else { format!("`{s}`: {e}") };
                Error::config(arg, format!("{e}; {hint}"))
            })
        })
        .transpose()
}

/// Everything the `thresholds` command takes.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub link: Link,
    pub rtt: RttSummary,
    /// N long flows for ECN* Eq. 1.
    pub flows: u32,
    /// Per-queue weights for MQ-ECN Eq. 2 and PMSB (per-queue rows only when given).
    pub weights: Option<Vec<u64>>,
    /// Buffer per port for ECN* Eq. 4.
    pub buffer: Option<Bytes>,
    /// A chosen threshold K (else K = C·RTT·λ).
    pub k: Option<Bytes>,
    pub lambda: f64,
}

/// Every rule that applies to `inp`, in paper order.
///
/// RTT choice: ECN* sizes T·C with the high percentile (its §3.3 uses the 90th percentile, 400 us); MQ-ECN Eq. 1
/// and PMSB use the average RTT as they define it (and MQ-ECN Eq. 1 is also given at the high percentile when a
/// distribution was given, the "current practice" ECN♯ §2.3 describes); ECN♯ uses both as its §3.4 says.
pub fn rules(inp: &Inputs) -> Result<Vec<Rule>> {
    let (link, rtt) = (inp.link, inp.rtt);
    let mut out = vec![];
    let lower = ecnstar_lower(link, rtt.high, 1)?;
    let h = lower.bytes(link.rate).unwrap_or_default();
    out.push(lower);
    if inp.flows != 1 {
        out.push(ecnstar_lower(link, rtt.high, inp.flows)?);
    }
    if let Some(b) = inp.buffer {
        let mut up = ecnstar_upper(link, rtt.high, b)?;
        if matches!(up.value, Quantity::Bytes(u) if u < h) {
            up.note.push_str("; INFEASIBLE: below the Eq. 1 lower bound, the buffer is under 3·T·C (Eq. 5)");
        }
        out.push(up);
    }
    out.push(ecnstar_buffer(link, rtt.high, h)?);
    if let Some(k) = inp.k {
        for mut r in [ecnstar_window(link, rtt.high, k)?, ecnstar_buffer(link, rtt.high, k)?] {
            r.name.push_str(" at the given K");
            out.push(r);
        }
    }
    if let Some(p) = rtt.percentile {
        for r in out.iter_mut() {
            r.note.push_str(&format!("; T = p{p} RTT, as ECN* §3.3 sizes T·C with the 90th percentile"));
        }
    }
    let k_mean = dctcp_k(link, rtt.mean, inp.lambda)?;
    out.push(k_mean.clone());
    if rtt.percentile.is_some() {
        let mut k_high = dctcp_k(link, rtt.high, inp.lambda)?;
        k_high.name.push_str(" at the high percentile");
        out.push(k_high);
    }
    if let Some(w) = &inp.weights {
        let k = inp.k.or(k_mean.bytes(link.rate)).unwrap_or_default();
        out.extend(mqecn_min(link, k, w)?);
    }
    let (queues, port) = pmsb_queue_bounds(link, rtt.mean, inp.weights.as_deref().unwrap_or(&[1]))?;
    if inp.weights.is_some() {
        out.extend(queues);
    }
    out.push(port);
    let (ins, interval, pst) = ecnsharp(&rtt, inp.lambda, link)?;
    out.extend([ins, interval, pst]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(gbps: u64) -> Link {
        Link::new(Rate::gbps(gbps), Bytes(1500)).unwrap()
    }
    fn bytes(r: &Rule) -> u64 {
        r.bytes(Rate::gbps(1)).unwrap().0
    }
    fn pkts(r: &Rule) -> f64 {
        r.packets.unwrap()
    }
    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }
    fn config_field(e: Error) -> String {
        match e {
            Error::Config { path, .. } => path,
            e => panic!("expected a config error, got {e}"),
        }
    }

    /// /work/shared/data/rtt/longtail_80_240us.csv (ECN♯ §5.3: 80-240 us, mean ~137 us, p90 ~220 us).
    const LONGTAIL_80_240: [(f64, f64); 8] = [
        (80.0, 0.0),
        (100.0, 0.28),
        (120.0, 0.5),
        (140.0, 0.64),
        (160.0, 0.74),
        (200.0, 0.84),
        (220.0, 0.9),
        (240.0, 1.0),
    ];

    #[test]
    fn ecnstar_worked_example_1g_400us_is_50kb_33_packets() {
        // ECN* §3.3: BDP = T × C = 1G × 400us = 50KB, "33 full sized packets".
        let r = ecnstar_lower(link(1), Time::from_us(400), 1).unwrap();
        assert_eq!(r.equation, "ECN* Eq. 1");
        assert_eq!(bytes(&r), 50_000);
        assert!(close(pkts(&r), 33.33, 0.01));
        assert_eq!(r.packets.unwrap().floor(), 33.0);
    }

    #[test]
    fn ecnstar_table1_bdp_30_packets_at_360us() {
        // ECN* §3.2.2: "assume the BDP is 30 packets while h is set to 6 packets" (1 GbE: 30 × 1500 B = 360 us).
        let l = link(1);
        let r = ecnstar_lower(l, Time::from_us(360), 1).unwrap();
        assert_eq!(bytes(&r), 45_000);
        assert!(close(pkts(&r), 30.0, 1e-9));
        // Eq. 2 bound is h + T·C = 36 packets; Table 1 shows the real w_e (13) far below it for a small h.
        let w = ecnstar_window(l, Time::from_us(360), Bytes(6 * 1500)).unwrap();
        assert_eq!(w.equation, "ECN* Eq. 2");
        assert!(close(pkts(&w), 36.0, 1e-9) && 13.0 < pkts(&w));
        // N synchronized flows: T·C/√N.
        let r4 = ecnstar_lower(l, Time::from_us(360), 4).unwrap();
        assert!(close(pkts(&r4), 15.0, 1e-9));
    }

    #[test]
    fn ecnstar_eq5_buffer_is_2h_plus_20_with_bdp_20() {
        // ECN* §3.2.3: testbed BDP ≈ 20 packets, "buffer size requirement as 2h + 20 in equation 5".
        let l = link(1);
        let t = Time::from_us(240); // 20 packets at 1 Gb/s
        for h in [0u64, 6, 20, 30] {
            let b = ecnstar_buffer(l, t, Bytes(h * 1500)).unwrap();
            assert_eq!(b.equation, "ECN* Eq. 5");
            assert!(close(pkts(&b), 2.0 * h as f64 + 20.0, 1e-9), "h = {h}");
        }
        // At the Eq. 1 bound h = T·C the buffer is 3·T·C (60 MTU, inside §5.1's 40-100 MTU sweep at h = 20).
        assert_eq!(bytes(&ecnstar_buffer(l, t, Bytes(30_000)).unwrap()), 90_000);
        // Eq. 4 inverts Eq. 5: with B = 100 MTU (§3.4 testbed) h ≤ (100 − 20)/2 = 40 packets.
        let up = ecnstar_upper(l, t, Bytes(150_000)).unwrap();
        assert_eq!(up.equation, "ECN* Eq. 4");
        assert!(close(pkts(&up), 40.0, 1e-9));
        // B = 3·T·C makes the upper bound equal the lower bound.
        let up = ecnstar_upper(l, Time::from_us(400), Bytes(150_000)).unwrap();
        assert_eq!(bytes(&up), 50_000);
    }

    #[test]
    fn rounding_follows_the_direction_of_each_bound() {
        let l = link(1);
        // T·C/√3 at 400 us = 28 867.51 B: a lower bound rounds up.
        assert_eq!(bytes(&ecnstar_lower(l, Time::from_us(400), 3).unwrap()), 28_868);
        // (B − T·C)/2 = (100 001 − 50 000)/2 = 25 000.5: an upper bound rounds down.
        assert_eq!(bytes(&ecnstar_upper(l, Time::from_us(400), Bytes(100_001)).unwrap()), 25_000);
    }

    #[test]
    fn dctcp_k_at_10g() {
        let l = link(10);
        // 65 packets (DCTCP's 10G setting, MQ-ECN §5.2) is C × 78 us at 10 Gb/s, i.e. λ = 1 at RTT = 78 us.
        let k = dctcp_k(l, Time::from_us(78), 1.0).unwrap();
        assert_eq!(k.equation, "MQ-ECN Eq. 1");
        assert_eq!(bytes(&k), 97_500);
        assert!(close(pkts(&k), 65.0, 1e-9));
        // MQ-ECN §5.2 pairs K = 65 packets with base RTT 85.2 us: K / (C·RTT) = 97 500 / 106 500 ≈ 0.915.
        let at_85 = dctcp_k(l, "85.2us".parse().unwrap(), 1.0).unwrap();
        assert_eq!(bytes(&at_85), 106_500);
        assert!(close(97_500.0 / bytes(&at_85) as f64, 0.915, 0.001));
        // λ = 0.17 (DCTCP theory, ECN♯ §2.1) at 85.2 us: 18 105 B ≈ 12.07 packets (PMSB §VI-B uses 12 packets).
        let th = dctcp_k(l, "85.2us".parse().unwrap(), 0.17).unwrap();
        assert_eq!(bytes(&th), 18_105);
        assert!(close(pkts(&th), 12.07, 0.01));
        // MQ-ECN §5.1 testbed: 1 Gb/s, base RTT ~250 us, standard threshold 32KB (C·RTT = 31.25 KB).
        let tb = dctcp_k(link(1), Time::from_us(250), 1.0).unwrap();
        assert!(close(bytes(&tb) as f64, 32_000.0, 0.03 * 32_000.0));
    }

    #[test]
    fn mqecn_eq2_splits_k_by_weight() {
        // MQ-ECN §2.2.2 / PMSB §II: standard K = 16 packets, 8 equal queues → 2 packets per queue.
        let l = link(10);
        let per = mqecn_min(l, Bytes(16 * 1500), &[1; 8]).unwrap();
        assert_eq!(per.len(), 8);
        for r in &per {
            assert_eq!(r.equation, "MQ-ECN Eq. 2");
            assert_eq!(bytes(r), 3_000);
            assert!(close(pkts(r), 2.0, 1e-12));
        }
        let per = mqecn_min(l, Bytes(97_500), &[1, 1, 2]).unwrap();
        let got: Vec<u64> = per.iter().map(bytes).collect();
        assert_eq!(got, [24_375, 24_375, 48_750]);
    }

    #[test]
    fn pmsb_theorem_iv1_bounds_sum_to_c_rtt_over_7() {
        // PMSB §VI-B: 10 Gb/s, RTT 85.2 us, 8 equal queues, port threshold 12 packets "according to Theorem IV.1".
        let l = link(10);
        let (queues, port) = pmsb_queue_bounds(l, "85.2us".parse().unwrap(), &[1; 8]).unwrap();
        assert_eq!(queues.len(), 8);
        // k_i > (1/8) · C·RTT/7 = 106 500 / 56 = 1901.79 B; the byte value is the next byte above.
        for q in &queues {
            assert_eq!(q.equation, "PMSB Thm IV.1");
            assert!(close(pkts(q), 106_500.0 / 56.0 / 1500.0, 1e-12));
            assert_eq!(bytes(q), 1902);
        }
        // Σ = C·RTT/7 = 15 214.29 B = 10.14 packets; the paper's 12 packets satisfies it.
        assert!(close(pkts(&port), 10.143, 0.001));
        assert_eq!(bytes(&port), 15_215);
        assert!(12.0 > pkts(&port));
        // Unequal weights: the bounds scale with w_i and still sum to C·RTT/7.
        let (queues, port2) = pmsb_queue_bounds(l, "85.2us".parse().unwrap(), &[1, 3]).unwrap();
        assert!(close(pkts(&queues[1]), 3.0 * pkts(&queues[0]), 1e-12));
        assert!(close(pkts(&queues[0]) + pkts(&queues[1]), pkts(&port2), 1e-12));
    }

    #[test]
    fn rtt_distribution_mean_and_percentiles_are_analytic() {
        let d = RttDist::new(LONGTAIL_80_240.to_vec()).unwrap();
        // The CSV header: mean 136.2 us, median 120.0 us, p90 220.0 us (ECN♯ §5.3: mean ~137, p90 ~220).
        assert_eq!(d.mean(), Time(136_200_000));
        assert_eq!(d.percentile(50.0).unwrap(), Time::from_us(120));
        assert_eq!(d.percentile(90.0).unwrap(), Time::from_us(220));
        // Between points: linear interpolation (p95 is halfway from 220 to 240).
        assert_eq!(d.percentile(95.0).unwrap(), Time::from_us(230));
        assert_eq!(d.quantile(0.0), Time::from_us(80));
        assert_eq!(d.quantile(1.0), Time::from_us(240));
        // Inverse-transform sampling: a uniform grid of u gives a sample mean near the analytic mean.
        let n = 100_000;
        let mean = (0..n).map(|i| d.sample((i as f64 + 0.5) / n as f64).as_us_f64()).sum::<f64>() / n as f64;
        assert!(close(mean, 136.2, 0.01), "sample mean {mean}");
    }

    #[test]
    fn ecnsharp_rule_of_thumb_on_80_240us() {
        let d = RttDist::new(LONGTAIL_80_240.to_vec()).unwrap();
        let rtt = RttSummary::from_dist(&d, 90.0).unwrap();
        let l = link(10);
        let (ins, interval, pst) = ecnsharp(&rtt, 1.0, l).unwrap();
        // ins_target = λ·p90 = 220 us, i.e. C × p90 = 275 KB at 10 Gb/s (K from the p90 RTT, "DCTCP-RED-Tail").
        assert_eq!(ins.value, Quantity::Time(Time::from_us(220)));
        assert_eq!(ins.bytes(l.rate), Some(Bytes(275_000)));
        assert!(close(pkts(&ins), 183.33, 0.01));
        // pst_interval ≈ p90; pst_target ≥ λ·mean = 136.2 us.
        assert_eq!(interval.value, Quantity::Interval(Time::from_us(220)));
        assert_eq!(interval.packets, None);
        assert_eq!(pst.value, Quantity::Time(Time(136_200_000)));
        // With DCTCP's theoretical λ = 0.17 both targets scale by λ; the interval does not.
        let (ins, interval, pst) = ecnsharp(&rtt, 0.17, l).unwrap();
        assert_eq!(ins.value, Quantity::Time(Time(37_400_000)));
        assert_eq!(interval.value, Quantity::Interval(Time::from_us(220)));
        assert_eq!(pst.value, Quantity::Time(Time(23_154_000)));
    }

    #[test]
    fn rtt_file_loads_from_csv() {
        let text = "# comment line\n# another\nrtt_us,fraction,cumulative_probability\n80,0,0\n100,0.125,0.28\n\
                    120,0.25,0.5\n140,0.375,0.64\n160,0.5,0.74\n200,0.75,0.84\n220,0.875,0.9\n240,1.0,1.0\n";
        let dir = std::env::temp_dir().join(format!("ecnlab-thresholds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("longtail.csv");
        std::fs::write(&f, text).unwrap();
        let d = RttDist::from_file(&f).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(d, RttDist::new(LONGTAIL_80_240.to_vec()).unwrap());
        assert_eq!(d.mean(), Time(136_200_000));
        // Missing file and malformed contents are config errors at `rtt-file`.
        assert_eq!(config_field(RttDist::from_file(&dir.join("nope.csv")).unwrap_err()), "rtt-file");
        for bad in [
            "",
            "rtt,p\n1,0\n2,1\n",
            "rtt_us,cumulative_probability\n80,0\n",
            "rtt_us,cumulative_probability\n80,0\n70,1\n",
            "rtt_us,cumulative_probability\n80,0.1\n90,1\n",
            "rtt_us,cumulative_probability\n80,0\n90,0.9\n",
            "rtt_us,cumulative_probability\n0,0\n90,1\n",
            "rtt_us,cumulative_probability\n80,0\nx,1\n",
            "rtt_us,cumulative_probability\n80,0\n90,0.5\n100,0.4\n110,1\n",
        ] {
            assert_eq!(config_field(RttDist::from_csv(bad).unwrap_err()), "rtt-file", "{bad:?}");
        }
    }

    #[test]
    fn bad_inputs_name_their_field() {
        let l = link(10);
        let t = Time::from_us(100);
        assert_eq!(config_field(Link::new(Rate(0), Bytes(1500)).unwrap_err()), "rate");
        assert_eq!(config_field(Link::new(Rate::gbps(1), Bytes(0)).unwrap_err()), "mtu");
        assert_eq!(config_field(ecnstar_lower(l, Time::ZERO, 1).unwrap_err()), "rtt");
        assert_eq!(config_field(ecnstar_lower(l, t, 0).unwrap_err()), "flows");
        assert_eq!(config_field(ecnstar_upper(l, t, Bytes(100_000)).unwrap_err()), "buffer");
        assert_eq!(config_field(dctcp_k(l, t, 0.0).unwrap_err()), "lambda");
        assert_eq!(config_field(dctcp_k(l, t, f64::NAN).unwrap_err()), "lambda");
        assert_eq!(config_field(dctcp_k(l, t, 1.5).unwrap_err()), "lambda");
        assert_eq!(config_field(mqecn_min(l, Bytes(1), &[]).unwrap_err()), "weights");
        assert_eq!(config_field(mqecn_min(l, Bytes(1), &[1, 0]).unwrap_err()), "weights");
        assert_eq!(config_field(pmsb_queue_bounds(l, t, &[]).unwrap_err()), "weights");
        assert_eq!(config_field(RttSummary::fixed(Time::ZERO).unwrap_err()), "rtt");
        let d = RttDist::new(LONGTAIL_80_240.to_vec()).unwrap();
        for p in [0.0, 100.0, -5.0, 150.0, f64::NAN, f64::INFINITY] {
            assert_eq!(config_field(d.percentile(p).unwrap_err()), "percentile", "p = {p}");
        }
    }

    #[test]
    fn rules_lists_every_applicable_rule() {
        let d = RttDist::new(LONGTAIL_80_240.to_vec()).unwrap();
        let inp = Inputs {
            link: link(10),
            rtt: RttSummary::from_dist(&d, 90.0).unwrap(),
            flows: 2,
            weights: Some(vec![1, 1, 2]),
            buffer: Some(Bytes(1_000_000)),
            k: None,
            lambda: 1.0,
        };
        let rs = rules(&inp).unwrap();
        let eqs: Vec<&str> = rs.iter().map(|r| r.equation).collect();
        for e in
            ["ECN* Eq. 1", "ECN* Eq. 4", "ECN* Eq. 5", "MQ-ECN Eq. 1", "MQ-ECN Eq. 2", "PMSB Thm IV.1", "ECN♯ §3.4"]
        {
            assert!(eqs.contains(&e), "{e} missing from {eqs:?}");
        }
        assert_eq!(eqs.iter().filter(|e| **e == "MQ-ECN Eq. 2").count(), 3);
        // The JSON form carries bytes, packets and time for every rule.
        for r in &rs {
            let j = r.to_json(inp.link.rate);
            assert!(j["equation"].is_string() && j["time_us"].is_number());
        }
        // A buffer below 3·T·C is flagged, a buffer below T·C is an error at `buffer`.
        let small = Inputs { buffer: Some(Bytes(400_000)), ..inp.clone() };
        assert!(rules(&small).unwrap().iter().any(|r| r.note.contains("INFEASIBLE")));
        let tiny = Inputs { buffer: Some(Bytes(100_000)), ..inp };
        assert_eq!(config_field(rules(&tiny).unwrap_err()), "buffer");
    }

    #[test]
    fn args_parse_with_the_defaults_and_name_fields_as_the_front_spells_them() {
        let text = |v: &str| Some(v.to_string());
        let py = |n: &str| n.replace('-', "_");
        let a = Args { rate: text("10Gbps"), rtt: text("85.2us"), weights: text("1, 1,2"), ..Args::default() };
        let (inp, rules) = a.rules(&py).unwrap();
        assert_eq!((inp.link, inp.flows, inp.lambda), (link(10), 1, 1.0));
        assert_eq!(inp.weights.as_deref(), Some(&[1, 1, 2][..]));
        assert_eq!(rules.len(), super::rules(&inp).unwrap().len());
        let err = |a: Args| match a.rules(&py) {
            Err(Error::Config { path, msg }) => (path, msg),
            other => panic!("want a config error, got {:?}", other.map(|_| ())),
        };
        let (path, msg) =
            err(Args { rate: text("10Gbps"), rtt: text("85us"), percentile: text("90"), ..Args::default() });
        assert_eq!((path.as_str(), msg.as_str()), ("percentile", "applies to rtt_file only"));
        let (path, _) = err(Args { rate: text("10Gbps"), rtt_file: Some("/nonexistent".into()), ..Args::default() });
        assert_eq!(path, "rtt_file");
        let (path, msg) = err(Args { rate: text("fast"), rtt: text("85us"), ..Args::default() });
        assert!(path == "rate" && msg.starts_with("`fast`") && msg.ends_with("such as 10Gbps"), "{path}: {msg}");
        let (path, msg) = err(Args { rate: text("10Gbps"), rtt: text("85us"), weights: text(""), ..Args::default() });
        assert!(path == "weights" && msg.contains("at least one"), "{msg}");
        let (path, _) = err(Args { rate: text("10Gbps"), rtt: text("85us"), lambda: text("NaN"), ..Args::default() });
        assert_eq!(path, "lambda");
    }
}
