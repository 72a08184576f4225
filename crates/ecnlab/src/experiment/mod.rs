//! Experiment definitions (grids and checks over scenarios), the parallel runner and result tables.
//!
//! `reproduce(id)` = parse the embedded definition → run its grid (cached per point) → table.csv →
//! evaluate checks → check.json + check.md. A failed check is reported, never hidden.

pub mod check;
pub mod def;
pub mod expr;
pub mod registry;
pub mod runner;

pub use def::Definition;
pub use runner::{Backend, Options, ScaleKind};

use crate::error::Error;
use std::path::Path;

/// What `reproduce` returns: the checks and where the results are.
pub struct Outcome {
    pub checks: Vec<check::CheckOutcome>,
    pub magnitudes: Vec<check::MagnitudeOutcome>,
    pub runs: usize,
    pub runs_executed: usize,
    pub wall_time_s: f64,
}

impl Outcome {
    pub fn pass(&self) -> bool {
        self.checks.iter().all(|c| c.pass)
    }
    /// `reproduced`, `direction` or `not_reproduced` (see `check::verdict`).
    pub fn verdict(&self) -> &'static str {
        check::verdict(&self.checks, &self.magnitudes)
    }
}

/// The definition with the scale's constants in place of its own.
fn at_scale(def: &Definition, scale: &str) -> Definition {
    let mut def = def.clone();
    if let Some(s) = def.scale.get(scale) {
        let overrides = s.constants.clone();
        def.constants.extend(overrides);
    }
    def
}

/// `def` as `reproduce ID --emulate` runs it at `scale`: its `[emulate]` overrides and axis values added to the
/// scale's, for the simulator's runs and the real stack's alike. An experiment without `[emulate]` is refused.
pub fn for_emulation(def: &Definition, scale: ScaleKind) -> Result<Definition, Error> {
    let Some(em) = &def.emulate else {
        return Err(Error::config(
            "--emulate",
            format!("experiment `{}` has no [emulate] section: its setup has not been made emulatable", def.id),
        ));
    };
    let mut def = def.clone();
    // After the axes' own overrides, which may set the same fields (a rate axis sets the rate).
    def.final_set = em.set.clone();
    let sc = def.scale.entry(scale.name().to_string()).or_default();
    sc.axis.extend(em.axis.clone());
    sc.search_lo = em.search_lo.or(sc.search_lo);
    sc.search_hi = em.search_hi.or(sc.search_hi);
    sc.search_also = em.search_also.clone().or(sc.search_also.take());
    if let (Some(s), Some(x)) = (def.search.as_mut(), em.search_at_least) {
        s.at_least = x;
    }
    Ok(def)
}

/// Re-evaluates the checks and magnitude claims of experiment `id` over the table already in `dir`
/// (DIR/table.csv, and search.csv for searches) without running anything, and rewrites check.json and
/// check.md only. The scale is `scale` if given, else the one DIR/check.json names, else default; the wall
/// time and run count reported are the original run's (from check.json, when present).
pub fn recheck(id: &str, dir: &std::path::Path, scale: Option<ScaleKind>) -> Result<Outcome, Error> {
    let def = registry::get(id)?;
    // It rewrites check.json and check.md: only in a directory ecnlab wrote as an experiment's.
    if crate::outdir::kind_of(dir) != Some(crate::outdir::Kind::Experiment) {
        return Err(Error::config(
            "--out",
            format!(
                "`{}` is not an ecnlab experiment directory (no `.ecnlab` marker of kind experiment)",
                dir.display()
            ),
        ));
    }
    let old: Option<serde_json::Value> =
        std::fs::read_to_string(dir.join("check.json")).ok().and_then(|t| serde_json::from_str(&t).ok());
    let scale = match (scale, old.as_ref().and_then(|o| o["scale"].as_str())) {
        (Some(s), _) => s.name().to_string(),
        (None, Some(s)) => s.to_string(),
        (None, None) => ScaleKind::Default.name().to_string(),
    };
    if !["quick", "default", "paper"].contains(&scale.as_str()) {
        return Err(Error::config(dir.join("check.json").display().to_string(), format!("unknown scale `{scale}`")));
    }
    let def = at_scale(&def, &scale);
    let g = runner::read_tables(&def, dir)?;
    let checks = check::evaluate(&def, &g, &scale)?;
    let magnitudes = check::evaluate_magnitudes(&def, &g)?;
    let wall = old.as_ref().and_then(|o| o["wall_time_s"].as_f64()).unwrap_or(0.0);
    let info = check::ReportInfo { scale, wall_time_s: wall, rechecked: true };
    check::write_reports(&def, &info, &g, &checks, &magnitudes, dir)?;
    Ok(Outcome { checks, magnitudes, runs: g.points.len(), runs_executed: 0, wall_time_s: wall })
}

/// Runs experiment `id` at the given scale into `opts.out`.
pub fn reproduce(id: &str, opts: &Options) -> Result<Outcome, Error> {
    let def = registry::get(id)?;
    reproduce_def(&def, opts)
}

pub fn reproduce_def(def: &Definition, opts: &Options) -> Result<Outcome, Error> {
    let t0 = std::time::Instant::now();
    let def = &at_scale(def, opts.scale.name());
    let out = crate::outdir::open_experiment(&opts.out)?;
    let opts = &Options { out, ..opts.clone() };
    let g = runner::run_grid(def, opts)?;
    runner::write_tables(def, &g, &opts.out)?;
    let checks = check::evaluate(def, &g, opts.scale.name())?;
    let magnitudes = check::evaluate_magnitudes(def, &g)?;
    let wall = t0.elapsed().as_secs_f64();
    let info = check::ReportInfo { scale: opts.scale.name().into(), wall_time_s: wall, rechecked: false };
    check::write_reports(def, &info, &g, &checks, &magnitudes, &opts.out)?;
    Ok(Outcome { checks, magnitudes, runs: g.points.len(), runs_executed: g.runs_executed, wall_time_s: wall })
}

/// `reproduce ID --emulate`: the experiment's points at its `[emulate]` settings, once in the simulator (into
/// `out/sim`) and once through `backend` (the software switch with real TCP stacks, into `out/real`), then
/// `out/compare.md`: the paper's numbers, the simulator's and the real stack's side by side. Emulated points run
/// one at a time (they are real-time and pinned to cores).
pub fn reproduce_emulated(id: &str, opts: &Options, backend: Backend) -> Result<(Outcome, Outcome), Error> {
    let def = for_emulation(&registry::get(id)?, opts.scale)?;
    let sim_opts = Options { out: opts.out.join("sim"), backend: None, ..opts.clone() };
    let real_opts = Options { out: opts.out.join("real"), backend: Some(backend), jobs: 1, ..opts.clone() };
    for o in [&sim_opts, &real_opts] {
        crate::outdir::check_experiment(&o.out)?;
    }
    // Every point must be emulatable before the simulator's half runs.
    check_emulatable_points(&def, opts.scale)?;
    let sim = reproduce_def(&def, &sim_opts)?;
    let real = reproduce_def(&def, &real_opts)?;
    let text = comparison(&at_scale(&def, opts.scale.name()), &sim, &real, &sim_opts.out, &real_opts.out)?;
    crate::outdir::write_atomic(&opts.out.join("compare.md"), text)?;
    Ok((sim, real))
}

/// Refuses (naming the field) if any point `def` may run at `scale` cannot be emulated: for a search, at every
/// value of its parameter the bisection may try.
pub fn check_emulatable_points(def: &Definition, scale: ScaleKind) -> Result<(), Error> {
    let plan = runner::Plan::new(def, scale)?;
    for b in plan.combos()? {
        match (&def.search, plan.search_bounds()) {
            (Some(s), Some((lo, hi, also))) => {
                for n in (lo..=hi).chain(also) {
                    let mut b = b.clone();
                    b.insert(s.param.clone(), expr::Value::Num(n as f64));
                    plan.scenario(&b)?.check_emulatable()?;
                }
            }
            _ => plan.scenario(&b)?.check_emulatable()?,
        }
    }
    Ok(())
}

/// compare.md: magnitudes, checks and every point's metrics, simulator beside real stack.
fn comparison(
    def: &Definition,
    sim: &Outcome,
    real: &Outcome,
    sim_dir: &Path,
    real_dir: &Path,
) -> Result<String, Error> {
    use std::fmt::Write;
    let num = |x: Option<f64>| x.filter(|v| v.is_finite()).map_or("—".to_string(), |v| format!("{v:.4}"));
    let mut t = String::new();
    let em = def.emulate.as_ref().expect("for_emulation checked it");
    let _ = writeln!(t, "# {} — paper / simulator / real stack\n", def.id);
    let _ = writeln!(t, "**Paper:** {}  \n**Paper's result:** {}  \n", def.paper, def.result.trim());
    let _ = writeln!(t, "**Emulated setup** (both columns ran it): `{}`  \n{}\n", em.set.join("`, `"), em.note.trim());
    let _ = writeln!(t, "Simulator: `sim/` ({}). Real stack: `real/` ({}).\n", sim.verdict(), real.verdict());
    if !sim.magnitudes.is_empty() {
        let _ = writeln!(t, "## The paper's numbers\n\n| claim | paper | simulator | real stack |\n|---|---|---|---|");
        for (s, r) in sim.magnitudes.iter().zip(&real.magnitudes) {
            let _ = writeln!(t, "| {} | {} | {} | {} |", s.name, s.paper, num(s.ecnlab), num(r.ecnlab));
        }
        t.push('\n');
    }
    if !sim.checks.is_empty() {
        let _ = writeln!(t, "## Direction checks\n\n| check | paper | simulator | real stack |\n|---|---|---|---|");
        for (s, r) in sim.checks.iter().zip(&real.checks) {
            let _ = writeln!(t, "| {} | {} | {} | {} |", s.name, s.claim, s.status, r.status);
        }
        t.push('\n');
    }
    let (gs, gr) = (runner::read_tables(def, sim_dir)?, runner::read_tables(def, real_dir)?);
    if let Some(s) = &def.search {
        let _ = writeln!(
            t,
            "## Search: {} (largest {} in the search's range with {} ≥ {})\n\n| point | simulator | real stack |\n|---|---|---|",
            s.name, s.param, s.metric, s.at_least
        );
        for (b, v) in &gs.searched {
            let r = gr.searched.iter().find(|q| &q.0 == b).map(|q| q.1);
            let _ = writeln!(t, "| {} | {} | {} |", runner::key_of(b), num(Some(*v)), num(r));
        }
        t.push('\n');
    }
    let names: Vec<&String> = def.metrics.keys().collect();
    let _ = write!(t, "## Every point (simulator / real stack)\n\n| point |");
    for n in &names {
        let _ = write!(t, " {n} |");
    }
    let _ = write!(t, "\n|---|{}\n", "---|".repeat(names.len()));
    for p in &gs.points {
        let key = runner::key_of(&p.binding);
        let other = gr.points.iter().find(|q| q.binding == p.binding);
        let _ = write!(t, "| {key} |");
        for n in &names {
            let r = other.and_then(|q| q.metrics.get(*n).copied());
            let _ = write!(t, " {} / {} |", num(p.metrics.get(*n).copied()), num(r));
        }
        t.push('\n');
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Topology;

    /// A rate axis (as ecnstar-fig4's) whose own overrides set the rate and delay the emulation must replace.
    const DEF: &str = r#"
id = "t"
paper = "p"
title = "t"
setup = "s"
result = "r"
base = """
duration = "1s"
[topology]
kind = "star"
hosts = 3
rate = "1Gbps"
delay = "10us"
"""
[[axis]]
name = "g"
values = [1, 10]
set = ["topology.rate={g}Gbps", "topology.delay={g}us"]
[metrics]
q = "ports/s0->h0/occupancy/mean_pkts"
[emulate]
set = ["topology.rate=100Mbps", "topology.delay={g * 20}us"]
axis.g = [1]
note = "n"
"#;

    #[test]
    fn emulation_overrides_come_after_the_axes_and_its_axis_values_replace_theirs() {
        let def = Definition::parse(DEF).expect("valid");
        let em = for_emulation(&def, ScaleKind::Default).expect("has [emulate]");
        let plan = runner::Plan::new(&em, ScaleKind::Default).expect("plan");
        let combos = plan.combos().expect("combos");
        assert_eq!(combos.len(), 1, "axis g narrowed to [1]");
        match plan.scenario(&combos[0]).expect("scenario").topology {
            Topology::Star { rate, delay, .. } => {
                assert_eq!(rate.0, 100_000_000, "the emulation's rate, not the axis's 1 Gb/s");
                assert_eq!(delay, crate::units::Time::from_ns(20_000), "templates see the axis value");
            }
            t => panic!("{t:?}"),
        }
        // The plain definition is untouched: both rates, the axis's own overrides.
        assert_eq!(runner::Plan::new(&def, ScaleKind::Default).unwrap().combos().unwrap().len(), 2);
    }

    #[test]
    fn an_experiment_without_emulate_is_refused_naming_the_flag() {
        let plain = DEF[..DEF.find("[emulate]").unwrap()].to_string();
        let def = Definition::parse(&plain).expect("valid without [emulate]");
        let e = for_emulation(&def, ScaleKind::Default).unwrap_err().to_string();
        assert!(e.contains("--emulate") && e.contains("no [emulate] section"), "{e}");
    }

    /// DEF with a search over n (a setting only it sets) and the emulation's search fields.
    fn with_search(emulate_search: &str) -> String {
        DEF.replace("[metrics]", "[search]\nparam = \"n\"\nlo = 2\nhi = 100\nmetric = \"q\"\nat_least = 600\nname = \"max_n\"\nalso = [4]\nset = [\"topology.hosts={n + 1}\"]\n[metrics]")
            .replace("note = \"n\"", &format!("note = \"n\"\n{emulate_search}"))
    }

    #[test]
    fn an_emulated_search_takes_the_emulation_s_bounds_and_criterion() {
        let text = with_search("search_lo = 3\nsearch_hi = 15\nsearch_also = [5]\nsearch_at_least = 60");
        let def = Definition::parse(&text).expect("valid");
        let em = for_emulation(&def, ScaleKind::Default).expect("has [emulate]");
        let plan = runner::Plan::new(&em, ScaleKind::Default).expect("plan");
        assert_eq!(plan.search_bounds(), Some((3, 15, vec![5])));
        assert_eq!(em.search.as_ref().unwrap().at_least, 60.0);
        // Without the fields the search keeps its own bounds and criterion.
        let def = Definition::parse(&with_search("")).expect("valid");
        let em = for_emulation(&def, ScaleKind::Default).expect("has [emulate]");
        assert_eq!(runner::Plan::new(&em, ScaleKind::Default).unwrap().search_bounds(), Some((2, 100, vec![4])));
        assert_eq!(em.search.as_ref().unwrap().at_least, 600.0);
    }

    #[test]
    fn emulated_search_fields_are_checked_naming_the_field() {
        let e = Definition::parse(&DEF.replace("note = \"n\"", "note = \"n\"\nsearch_hi = 10")).unwrap_err();
        assert!(e.to_string().contains("emulate.search_hi") && e.to_string().contains("no [search]"), "{e}");
        let e = Definition::parse(&with_search("search_lo = 20\nsearch_hi = 10")).unwrap_err();
        assert!(e.to_string().contains("emulate.search_hi"), "{e}");
    }

    #[test]
    fn an_emulated_search_is_checked_at_every_n_it_may_try() {
        // hosts = n + 1 and an emulated star has at most MAX_EMULATED_HOSTS hosts: the default range up to 100
        // is refused naming the field; one that stops at MAX_EMULATED_HOSTS − 1 senders is accepted.
        let max = crate::scenario::MAX_EMULATED_HOSTS as i64;
        let def = for_emulation(&Definition::parse(&with_search("")).unwrap(), ScaleKind::Default).unwrap();
        let e = check_emulatable_points(&def, ScaleKind::Default).unwrap_err().to_string();
        assert!(e.contains("topology.hosts"), "{e}");
        let fits = with_search(&format!("search_hi = {}", max - 1));
        let def = for_emulation(&Definition::parse(&fits).unwrap(), ScaleKind::Default).unwrap();
        check_emulatable_points(&def, ScaleKind::Default).expect("every n up to hi fits");
        let over = with_search(&format!("search_hi = {max}"));
        let def = for_emulation(&Definition::parse(&over).unwrap(), ScaleKind::Default).unwrap();
        assert!(check_emulatable_points(&def, ScaleKind::Default).is_err(), "n = {max} needs {} hosts", max + 1);
    }
}
