//! Evaluates an experiment's checks over its grid results and writes check.json and check.md.

use super::def::{value_of, within, Definition, MagnitudeDef, Over};
use super::expr::{self, Scope, Value};
use super::runner::{Binding, GridResult};
use crate::error::Error;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The binding of the check's axes, `h=20,cc=dctcp`.
    pub at: String,
    /// The compared values, `59 <= 62`.
    pub measured: String,
    pub pass: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckOutcome {
    pub name: String,
    pub claim: String,
    pub rule: String,
    pub over: String,
    /// Whether the check holds; an info check never fails (`pass` true) but is never counted as a pass:
    /// see `status`.
    pub pass: bool,
    /// A reported quantity without a bound (its expression yields a number): never fails.
    pub info: bool,
    /// `pass`, `fail`, or `reported` (an info check).
    pub status: &'static str,
    pub rows: Vec<Row>,
}

impl CheckOutcome {
    /// A direction check (not an info check) that holds.
    pub fn passed(&self) -> bool {
        self.pass && !self.info
    }
    pub fn failed(&self) -> bool {
        !self.pass && !self.info
    }
}

/// One of the paper's numbers against ecnlab's.
#[derive(Clone, Debug, Serialize)]
pub struct MagnitudeOutcome {
    pub name: String,
    pub claim: String,
    /// `absolute` or `relative` (a fraction: −0.437 = −43.7 %).
    pub kind: String,
    /// The expression that computes ecnlab's value.
    pub rule: String,
    pub paper: f64,
    /// ecnlab's value; `None` (null) when it could not be computed (no run matches, NaN).
    pub ecnlab: Option<f64>,
    /// Where the value was taken: the binding (for `min`/`max`), `mean of N`, or `—`.
    pub at: String,
    pub tolerance: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// (ecnlab − paper) / |paper|.
    pub deviation: Option<f64>,
    /// `within` or `outside` the tolerance.
    pub verdict: &'static str,
    /// Why ecnlab has no value, when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl MagnitudeOutcome {
    pub fn within(&self) -> bool {
        self.verdict == "within"
    }
    /// The paper's value and ecnlab's as shown in reports: percentages for a relative change.
    pub fn show(&self, x: Option<f64>) -> String {
        match x {
            None => "—".into(),
            Some(x) if self.kind == "relative" => format!("{:+.1} %", x * 100.0),
            Some(x) => Value::Num(x).to_string(),
        }
    }
}

/// The experiment's verdict: `not_reproduced` if a direction check fails, else `direction` if some
/// magnitude is outside its tolerance, else `reproduced`. Info checks count for nothing.
pub fn verdict(checks: &[CheckOutcome], magnitudes: &[MagnitudeOutcome]) -> &'static str {
    if checks.iter().any(|c| c.failed()) {
        "not_reproduced"
    } else if magnitudes.iter().all(|m| m.within()) {
        "reproduced"
    } else {
        "direction"
    }
}

/// The magnitude outcome of ecnlab's value `x` (None: not computed) against the claim.
pub fn judge(m: &MagnitudeDef, x: Option<f64>, at: String, note: Option<String>) -> MagnitudeOutcome {
    let tol = m.tolerance();
    let x = x.filter(|v| v.is_finite());
    let ok = x.is_some_and(|x| within(m.paper, x, tol));
    MagnitudeOutcome {
        name: m.name.clone(),
        claim: m.claim.clone(),
        kind: m.kind.clone(),
        rule: m.expr.clone(),
        paper: m.paper,
        ecnlab: x,
        at,
        tolerance: tol,
        why: m.why.clone(),
        deviation: x.map(|x| (x - m.paper) / m.paper.abs()),
        verdict: if ok { "within" } else { "outside" },
        note: if x.is_none() { Some(note.unwrap_or_else(|| "no value".into())) } else { None },
    }
}

/// Evaluates every magnitude claim over the grid. An expression that is not numeric, or ambiguous, is a
/// config error; one that cannot be computed (a run missing at this scale, NaN) gives no value, `outside`.
pub fn evaluate_magnitudes(def: &Definition, g: &GridResult) -> Result<Vec<MagnitudeOutcome>, Error> {
    let mut out = vec![];
    for (i, m) in def.magnitude.iter().enumerate() {
        let err = |e: String| Error::config(format!("{}: magnitude.{i} ({})", def.id, m.name), e);
        let ast = expr::parse(&m.expr).map_err(err)?;
        let mut vals: Vec<(Binding, f64)> = vec![];
        let mut note = None;
        for b in bindings(def, g, &m.for_axes, m.where_.as_deref()).map_err(err)? {
            let scope = GridScope { def, g, binding: &b };
            match ast.eval(&scope) {
                Ok(Value::Num(x)) => vals.push((b, x)),
                Ok(v) => return Err(err(format!("evaluates to {v}, not a number"))),
                Err(e) if e.contains("ambiguous") || e.contains("unknown name") => return Err(err(e)),
                Err(e) => {
                    note = Some(format!("at {}: {e}", show(&b)));
                    vals.push((b, f64::NAN));
                }
            }
        }
        let (x, at) = match (vals.len(), m.reduce.as_deref()) {
            (0, _) => (None, "—".to_string()),
            (1, _) => (Some(vals[0].1), show(&vals[0].0)),
            (n, None) => return Err(err(format!("{n} bindings of `for`: set reduce = min, max or mean"))),
            (_, Some(_)) if vals.iter().any(|v| !v.1.is_finite()) => (None, "—".to_string()),
            (n, Some("mean")) => (Some(vals.iter().map(|v| v.1).sum::<f64>() / n as f64), format!("mean of {n}")),
            (_, Some(r)) => {
                let best = vals
                    .iter()
                    .min_by(|a, b| if r == "min" { a.1.total_cmp(&b.1) } else { b.1.total_cmp(&a.1) })
                    .expect("non-empty");
                (Some(best.1), format!("{r} at {}", show(&best.0)))
            }
        };
        if x.is_none() && note.is_none() {
            note = Some(if vals.is_empty() { "no binding matches".into() } else { "not a finite number".into() });
        }
        out.push(judge(m, x, at, note));
    }
    Ok(out)
}

/// Metrics of the grid seen from one binding; selectors move to other grid coordinates.
struct GridScope<'a> {
    def: &'a Definition,
    g: &'a GridResult,
    binding: &'a Binding,
}

fn matches(b: &Binding, target: &Binding) -> bool {
    target.iter().all(|(k, v)| b.get(k) == Some(v))
}

fn group_key(b: &Binding) -> String {
    b.iter().filter(|(k, _)| *k != "seed").map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

impl GridScope<'_> {
    fn target(&self, sel: &[(String, Value)]) -> Binding {
        let mut t = self.binding.clone();
        for (k, v) in sel {
            // Selector values written as bare words arrive as strings; numeric axes compare as numbers.
            let v = match v {
                Value::Str(s) => s.parse::<f64>().map(Value::Num).unwrap_or_else(|_| v.clone()),
                v => v.clone(),
            };
            t.insert(k.clone(), v);
        }
        t
    }

    /// Mean over seeds of the values at the one combination matching `target`.
    fn mean_of<'b>(
        &self,
        name: &str,
        target: &Binding,
        it: impl Iterator<Item = (&'b Binding, f64)>,
    ) -> Result<Value, String> {
        let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for (b, x) in it {
            if matches(b, target) {
                groups.entry(group_key(b)).or_default().push(x);
            }
        }
        match groups.len() {
            0 => Err(format!("no run matches `{name}` at {}", group_key(target))),
            1 => {
                let xs = groups.into_values().next().expect("one group");
                Ok(Value::Num(xs.iter().sum::<f64>() / xs.len() as f64))
            }
            n => Err(format!("`{name}` is ambiguous at {} ({n} runs match): add selectors", group_key(target))),
        }
    }
}

impl Scope for GridScope<'_> {
    fn lookup(&self, name: &str, sel: &[(String, Value)]) -> Result<Value, String> {
        if sel.is_empty() {
            if let Some(v) = self.binding.get(name) {
                return Ok(v.clone());
            }
            if let Some(&c) = self.def.constants.get(name) {
                return Ok(Value::Num(c));
            }
        }
        let target = self.target(sel);
        if let Some(s) = &self.def.search {
            if s.name == name {
                return self.mean_of(name, &target, self.g.searched.iter().map(|(b, v)| (b, *v)));
            }
        }
        if self.def.metrics.contains_key(name) {
            return self.mean_of(
                name,
                &target,
                self.g.points.iter().map(|p| (&p.binding, p.metrics.get(name).copied().unwrap_or(f64::NAN))),
            );
        }
        Err(format!("unknown name `{name}` (not an axis, constant or metric)"))
    }
}

fn show(b: &Binding) -> String {
    if b.is_empty() {
        "—".into()
    } else {
        b.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }
}

/// Distinct bindings of `axes` in grid order, filtered by `where`.
fn bindings(def: &Definition, g: &GridResult, axes: &[String], where_: Option<&str>) -> Result<Vec<Binding>, String> {
    let mut out: Vec<Binding> = vec![];
    let all = g.points.iter().map(|p| &p.binding).chain(g.searched.iter().map(|s| &s.0));
    for b in all {
        let proj: Binding = axes.iter().filter_map(|a| b.get(a).map(|v| (a.clone(), v.clone()))).collect();
        if proj.len() == axes.len() && !out.contains(&proj) {
            out.push(proj);
        }
    }
    if let Some(w) = where_ {
        let e = expr::parse(w)?;
        let mut kept = vec![];
        for b in out {
            let sc = super::runner::BindingScope { binding: &b, constants: &def.constants };
            if e.eval(&sc)? == Value::Bool(true) {
                kept.push(b);
            }
        }
        out = kept;
    }
    Ok(out)
}

pub fn evaluate(def: &Definition, g: &GridResult, scale: &str) -> Result<Vec<CheckOutcome>, Error> {
    let mut out = vec![];
    let search_param = def.search.as_ref().map(|s| s.param.clone());
    for (i, c) in def.check.iter().enumerate() {
        if c.scales.as_ref().is_some_and(|s| !s.iter().any(|x| x == scale)) {
            continue;
        }
        let err = |m: String| Error::config(format!("{}: check.{i} ({})", def.id, c.name), m);
        let over = Over::parse(c.over.as_deref()).map_err(err)?;
        let default_axes: Vec<String> = def
            .axis
            .iter()
            .map(|a| a.name.clone())
            .filter(|a| Some(a) != c.monotone.as_ref().map(|m| &m.axis) && Some(a) != search_param.as_ref())
            .collect();
        let axes = c.for_axes.clone().unwrap_or(default_axes);
        let mut rows = vec![];
        let mut info = false;
        for b in bindings(def, g, &axes, c.where_.as_deref()).map_err(err)? {
            let scope = GridScope { def, g, binding: &b };
            if let Some(e) = &c.expr {
                let ast = expr::parse(e).map_err(err)?;
                let pass = match ast.eval(&scope) {
                    Ok(Value::Bool(p)) => p,
                    Ok(Value::Num(_)) => {
                        info = true;
                        true
                    }
                    Ok(v) => return Err(err(format!("evaluates to {v}, not true/false"))),
                    Err(m) if m.contains("ambiguous") || m.contains("unknown name") => return Err(err(m)),
                    Err(_) => false,
                };
                rows.push(Row { at: show(&b), measured: ast.describe(&scope), pass });
            } else if let Some(m) = &c.monotone {
                let axis =
                    def.axis.iter().find(|a| a.name == m.axis).ok_or_else(|| err(format!("no axis {}", m.axis)))?;
                let mut seq = vec![];
                for v in &axis.values {
                    let v = value_of(v);
                    match scope.lookup(&m.metric, &[(m.axis.clone(), v.clone())]) {
                        Ok(Value::Num(x)) => seq.push((v, x)),
                        Ok(_) => {}
                        Err(e) if e.contains("no run matches") => {} // values not run at this scale
                        Err(e) => return Err(err(e)),
                    }
                }
                let ok = |a: f64, b: f64| match m.direction.as_str() {
                    "increasing" => b > a,
                    "decreasing" => b < a,
                    "non_decreasing" => b >= a * (1.0 - m.tolerance) - 1e-12,
                    "non_increasing" => b <= a * (1.0 + m.tolerance) + 1e-12,
                    _ => false,
                };
                if !["increasing", "decreasing", "non_decreasing", "non_increasing"].contains(&m.direction.as_str()) {
                    return Err(err(format!("direction `{}` unknown", m.direction)));
                }
                let pass = seq.len() >= 2 && seq.windows(2).all(|w| ok(w[0].1, w[1].1));
                let measured = seq
                    .iter()
                    .map(|(v, x)| format!("{}={v}: {}", m.axis, Value::Num(*x)))
                    .collect::<Vec<_>>()
                    .join(", ");
                rows.push(Row { at: show(&b), measured, pass });
            }
        }
        let passed = rows.iter().filter(|r| r.pass).count();
        let rule = match (&c.expr, &c.monotone) {
            (Some(e), _) => e.clone(),
            (_, Some(m)) => format!("{} {} in {} (tolerance {})", m.metric, m.direction, m.axis, m.tolerance),
            _ => unreachable!("validated"),
        };
        out.push(CheckOutcome {
            name: c.name.clone(),
            claim: c.claim.clone(),
            rule,
            over: c.over.clone().unwrap_or_else(|| "all".into()),
            pass: info || over.holds(passed, rows.len()),
            info,
            status: if info {
                "reported"
            } else if over.holds(passed, rows.len()) {
                "pass"
            } else {
                "fail"
            },
            rows,
        });
    }
    Ok(out)
}

/// How a run or a recheck produced the outcomes: the numbers the header shows.
pub struct ReportInfo {
    pub scale: String,
    pub wall_time_s: f64,
    /// Set when the checks were re-evaluated from an existing table (`reproduce --recheck`).
    pub rechecked: bool,
}

pub fn write_reports(
    def: &Definition,
    info: &ReportInfo,
    g: &GridResult,
    checks: &[CheckOutcome],
    magnitudes: &[MagnitudeOutcome],
    out: &Path,
) -> Result<(), Error> {
    let all_pass = checks.iter().all(|c| c.pass);
    let verdict = verdict(checks, magnitudes);
    let builds: std::collections::BTreeSet<&str> =
        g.points.iter().map(|p| p.build.as_str()).filter(|b| !b.is_empty()).collect();
    let mut json = serde_json::json!({
        "id": def.id,
        "paper": def.paper,
        "title": def.title,
        "paper_result": def.result,
        "scale": info.scale,
        "runs": g.points.len(),
        "wall_time_s": info.wall_time_s,
        "ecnlab_version": env!("CARGO_PKG_VERSION"),
        "verdict": verdict,
        "pass": all_pass,
        "checks": checks,
        "magnitudes": magnitudes,
    });
    if !builds.is_empty() {
        json["builds"] = serde_json::json!(builds);
    }
    if let Some(n) = &def.magnitude_note {
        json["magnitude_note"] = serde_json::json!(n);
    }
    if let Some(n) = &def.notes {
        json["notes"] = serde_json::json!(n.trim());
    }
    if info.rechecked {
        json["rechecked"] = serde_json::json!(true);
    }
    let (passed, failed, reported) = (
        checks.iter().filter(|c| c.passed()).count(),
        checks.iter().filter(|c| c.failed()).count(),
        checks.iter().filter(|c| c.info).count(),
    );
    let within = magnitudes.iter().filter(|m| m.within()).count();
    let mut md = format!(
        "# {} — {}\n\n**Paper:** {}  \n**Setup:** {}  \n**Paper's result:** {}  \n**Scale:** {} ({} runs, {:.0} s wall{})  \n**Verdict:** {} — direction checks: {passed}/{} pass{}; magnitudes: {within}/{} within tolerance\n\n",
        def.id,
        def.title,
        def.paper,
        def.setup.trim(),
        def.result.trim(),
        info.scale,
        g.points.len(),
        info.wall_time_s,
        if info.rechecked { "; checks re-evaluated from table.csv" } else { "" },
        match verdict {
            "reproduced" => "**reproduced**",
            "direction" => "**direction only** (some magnitude outside its tolerance)",
            _ => "**not reproduced** (some direction check FAILS)",
        },
        passed + failed,
        if reported > 0 { format!(", {reported} reported") } else { String::new() },
        magnitudes.len(),
    );
    if magnitudes.is_empty() {
        md.push_str(&format!(
            "## Magnitudes\n\nNo magnitude claim: {}\n\n",
            def.magnitude_note.as_deref().unwrap_or("the definition states none.")
        ));
    } else {
        md.push_str("## Magnitudes\n\n| claim | paper | ecnlab | at | tolerance | |\n|---|---|---|---|---|---|\n");
        for m in magnitudes {
            md.push_str(&format!(
                "| **{}**: {} | {} | {} | {} | {:.0} %{} | {} |\n",
                m.name,
                m.claim.replace('|', "\\|"),
                m.show(Some(m.paper)),
                m.show(m.ecnlab),
                m.at,
                m.tolerance * 100.0,
                m.why.as_ref().map(|w| format!(" ({w})")).unwrap_or_default().replace('|', "\\|"),
                if m.within() {
                    "✓ within".to_string()
                } else {
                    format!("✗ outside{}", m.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default())
                },
            ));
        }
        md.push_str("\nRules: ");
        md.push_str(&magnitudes.iter().map(|m| format!("{} = `{}`", m.name, m.rule)).collect::<Vec<_>>().join("; "));
        md.push_str(". Within tolerance: |ecnlab − paper| ≤ tolerance × |paper|.\n\n");
    }
    if let Some(n) = &def.notes {
        md.push_str(&format!("## Notes: where ecnlab and the paper differ\n\n{}\n\n", n.trim()));
    }
    for c in checks {
        md.push_str(&format!(
            "## {} — {}\n\nPaper: {}  \nRule: `{}` (over: {})\n\n| at | measured | |\n|---|---|---|\n",
            c.name,
            match c.status {
                "reported" => "REPORTED",
                "pass" => "PASS",
                _ => "FAIL",
            },
            c.claim,
            c.rule,
            c.over
        ));
        for r in &c.rows {
            let mark = if c.info {
                "—"
            } else if r.pass {
                "✓"
            } else {
                "✗"
            };
            md.push_str(&format!("| {} | {} | {} |\n", r.at, r.measured, mark));
        }
        md.push('\n');
    }
    // check.json last: a directory without it holds no finished reproduction (Python's loader requires it).
    crate::outdir::write_atomic(&out.join("check.md"), md)?;
    crate::outdir::write_atomic(&out.join("check.json"), serde_json::to_string_pretty(&json).expect("json") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::def::within;
    use crate::experiment::runner::PointResult;

    fn def(magnitudes: &str) -> Definition {
        Definition::parse(&format!(
            "id = \"t\"\npaper = \"p\"\ntitle = \"t\"\nsetup = \"s\"\nresult = \"r\"\nbase = \"\"\n\
             [[axis]]\nname = \"x\"\nvalues = [1, 2]\n[metrics]\ny = \"y\"\n{magnitudes}"
        ))
        .unwrap()
    }

    /// y = 10 at x = 1 and 6 at x = 2 (one seed).
    fn grid() -> GridResult {
        let pt = |x: f64, y: f64| PointResult {
            binding: [("x".to_string(), Value::Num(x)), ("seed".to_string(), Value::Num(1.0))].into(),
            metrics: [("y".to_string(), y)].into(),
            build: String::new(),
        };
        GridResult {
            points: vec![pt(1.0, 10.0), pt(2.0, 6.0)],
            searched: vec![],
            axes: vec!["x".into(), "seed".into()],
            runs_executed: 0,
            runs_cached: 0,
        }
    }

    fn claim(paper: f64, kind: &str, expr: &str, extra: &str) -> String {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("[[magnitude]]\nname = \"m{n}\"\nclaim = \"c\"\npaper = {paper}\nkind = \"{kind}\"\nexpr = \"{expr}\"\n{extra}\n")
    }

    #[test]
    fn within_is_relative_to_the_papers_value_edges_included() {
        assert!(within(-0.4, -0.3, 0.25)); // |−0.3 − (−0.4)| = 0.1 = 0.25 · 0.4
        assert!(within(-0.4, -0.5, 0.25));
        assert!(!within(-0.4, -0.29, 0.25));
        assert!(!within(-0.4, -0.51, 0.25));
        assert!(!within(-0.4, 0.4, 0.25)); // the opposite sign is never within
        assert!(within(100.0, 125.0, 0.25) && !within(100.0, 125.5, 0.25));
        assert!(!within(1.0, f64::NAN, 0.25) && !within(1.0, f64::INFINITY, 10.0));
    }

    #[test]
    fn absolute_and_relative_claims_against_hand_computed_values() {
        // Relative: y[x=2] / y[x=1] − 1 = 6/10 − 1 = −0.4.
        let d = def(&(claim(-0.437, "relative", "y[x=2] / y[x=1] - 1", "")
            + &claim(-0.6, "relative", "y[x=2] / y[x=1] - 1", "")
            + &claim(8.0, "absolute", "y", "for = [\"x\"]\nreduce = \"mean\"")
            + &claim(7.0, "absolute", "y", "for = [\"x\"]\nreduce = \"min\"")
            + &claim(7.0, "absolute", "y", "for = [\"x\"]\nreduce = \"max\"")
            + &claim(7.0, "absolute", "y", "for = [\"x\"]\nreduce = \"max\"\ntolerance = 0.5\nwhy = \"a range\"")))
        .magnitude;
        let mut dd = def("");
        dd.magnitude = d;
        let m = evaluate_magnitudes(&dd, &grid()).unwrap();
        let got: Vec<(Option<f64>, &str, &str)> = m.iter().map(|m| (m.ecnlab, m.verdict, m.at.as_str())).collect();
        assert!((got[0].0.unwrap() + 0.4).abs() < 1e-12);
        assert_eq!(got[0].1, "within"); // |−0.4 + 0.437| = 0.037 ≤ 0.109
        assert_eq!(got[1].1, "outside"); // |−0.4 + 0.6| = 0.2 > 0.15
        assert_eq!((got[2].0, got[2].1, got[2].2), (Some(8.0), "within", "mean of 2"));
        assert_eq!((got[3].0, got[3].1, got[3].2), (Some(6.0), "within", "min at x=2")); // |6 − 7| ≤ 1.75
        assert_eq!((got[4].0, got[4].1), (Some(10.0), "outside")); // |10 − 7| = 3 > 1.75
        assert_eq!((got[5].0, got[5].1, m[5].tolerance), (Some(10.0), "within", 0.5)); // 3 ≤ 3.5
        assert_eq!(m[1].show(Some(-0.6)), "-60.0 %");
        assert!((m[0].deviation.unwrap() - (0.037 / 0.437)).abs() < 1e-9);
    }

    #[test]
    fn a_missing_point_gives_no_value_and_several_bindings_need_reduce() {
        let mut d = def("");
        d.magnitude = def(&claim(1.0, "absolute", "y[x=3]", "")).magnitude;
        let m = evaluate_magnitudes(&d, &grid()).unwrap();
        assert_eq!((m[0].ecnlab, m[0].verdict), (None, "outside"));
        assert!(m[0].note.as_deref().unwrap().contains("no run matches"), "{:?}", m[0].note);
        d.magnitude = def(&claim(1.0, "absolute", "y", "for = [\"x\"]")).magnitude;
        assert!(evaluate_magnitudes(&d, &grid()).is_err());
        d.magnitude = def(&claim(1.0, "absolute", "y > 1", "")).magnitude;
        assert!(evaluate_magnitudes(&d, &grid()).is_err(), "a boolean is not a magnitude");
    }

    #[test]
    fn a_claim_is_validated() {
        let bad = |extra: &str| {
            Definition::parse(&format!(
                "id = \"t\"\npaper = \"p\"\ntitle = \"t\"\nsetup = \"s\"\nresult = \"r\"\nbase = \"\"\n[metrics]\ny = \"y\"\n{extra}"
            ))
            .is_err()
        };
        assert!(bad(&claim(1.0, "ratio", "y", "")));
        assert!(bad(&claim(1.0, "absolute", "y", "tolerance = 0.5")), "a tolerance needs a why");
        assert!(bad(&claim(0.0, "absolute", "y", "")), "zero has no relative tolerance");
        assert!(bad(&claim(1.0, "absolute", "y", "reduce = \"median\"")));
        assert!(!bad(&claim(1.0, "absolute", "y", "tolerance = 0.5\nwhy = \"w\"")));
    }

    fn check(info: bool, pass: bool) -> CheckOutcome {
        CheckOutcome {
            name: "c".into(),
            claim: "c".into(),
            rule: "r".into(),
            over: "all".into(),
            pass: info || pass,
            info,
            status: if info {
                "reported"
            } else if pass {
                "pass"
            } else {
                "fail"
            },
            rows: vec![],
        }
    }

    #[test]
    fn verdicts_and_info_checks() {
        let d = def(&(claim(1.0, "absolute", "y[x=1] / 10", "") + &claim(1.0, "absolute", "y[x=2] / 10", "")));
        let m = evaluate_magnitudes(&d, &grid()).unwrap();
        let (hit, miss) = (&m[0..1], &m[..]);
        assert_eq!(verdict(&[check(false, true)], hit), "reproduced");
        assert_eq!(verdict(&[check(false, true)], miss), "direction"); // 0.6 vs 1: outside
        assert_eq!(verdict(&[check(false, false)], hit), "not_reproduced");
        assert_eq!(verdict(&[check(false, true), check(false, false)], miss), "not_reproduced");
        assert_eq!(verdict(&[], &[]), "reproduced", "no checks, no claims: nothing missed");
        // An info check is never a pass and never a failure.
        let info = check(true, false);
        assert!(!info.passed() && !info.failed() && info.status == "reported");
        assert_eq!(verdict(std::slice::from_ref(&info), hit), "reproduced");
        assert_eq!(verdict(&[info, check(false, false)], hit), "not_reproduced");
    }
}
