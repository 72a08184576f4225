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
pub use runner::{Options, ScaleKind};

use crate::error::Error;

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
