//! Evaluates an experiment's checks over its grid results and writes check.json and check.md.

use super::def::{value_of, Definition, Over};
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
    pub pass: bool,
    /// A reported quantity without a bound (its expression yields a number): never fails.
    pub info: bool,
    pub rows: Vec<Row>,
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
            rows,
        });
    }
    Ok(out)
}

pub fn write_reports(
    def: &Definition,
    scale: &str,
    g: &GridResult,
    checks: &[CheckOutcome],
    wall_s: f64,
    out: &Path,
) -> Result<(), Error> {
    let all_pass = checks.iter().all(|c| c.pass);
    let json = serde_json::json!({
        "id": def.id,
        "paper": def.paper,
        "title": def.title,
        "paper_result": def.result,
        "scale": scale,
        "runs": g.points.len(),
        "wall_time_s": wall_s,
        "ecnlab_version": env!("CARGO_PKG_VERSION"),
        "builds": g.points.iter().map(|p| p.build.as_str()).collect::<std::collections::BTreeSet<_>>(),
        "pass": all_pass,
        "checks": checks,
    });
    let mut md = format!(
        "# {} — {}\n\n**Paper:** {}  \n**Setup:** {}  \n**Paper's result:** {}  \n**Scale:** {} ({} runs, {:.0} s wall)  \n**Verdict:** {}\n\n",
        def.id,
        def.title,
        def.paper,
        def.setup.trim(),
        def.result.trim(),
        scale,
        g.points.len(),
        wall_s,
        if all_pass { "all checks pass" } else { "**some checks FAIL**" }
    );
    for c in checks {
        md.push_str(&format!(
            "## {} — {}\n\nPaper: {}  \nRule: `{}` (over: {})\n\n| at | measured | |\n|---|---|---|\n",
            c.name,
            if c.info {
                "INFO"
            } else if c.pass {
                "PASS"
            } else {
                "FAIL"
            },
            c.claim,
            c.rule,
            c.over
        ));
        for r in &c.rows {
            md.push_str(&format!("| {} | {} | {} |\n", r.at, r.measured, if r.pass { "✓" } else { "✗" }));
        }
        md.push('\n');
    }
    // check.json last: a directory without it holds no finished reproduction (Python's loader requires it).
    crate::outdir::write_atomic(&out.join("check.md"), md)?;
    crate::outdir::write_atomic(&out.join("check.json"), serde_json::to_string_pretty(&json).expect("json") + "\n")
}
