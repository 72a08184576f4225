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
    pub runs: usize,
    pub runs_executed: usize,
    pub wall_time_s: f64,
}

impl Outcome {
    pub fn pass(&self) -> bool {
        self.checks.iter().all(|c| c.pass)
    }
}

/// Runs experiment `id` at the given scale into `opts.out`.
pub fn reproduce(id: &str, opts: &Options) -> Result<Outcome, Error> {
    let def = registry::get(id)?;
    reproduce_def(&def, opts)
}

pub fn reproduce_def(def: &Definition, opts: &Options) -> Result<Outcome, Error> {
    let t0 = std::time::Instant::now();
    let mut def = def.clone();
    if let Some(s) = def.scale.get(opts.scale.name()) {
        let overrides = s.constants.clone();
        def.constants.extend(overrides);
    }
    let def = &def;
    let out = crate::outdir::open_experiment(&opts.out)?;
    let opts = &Options { out, ..opts.clone() };
    let g = runner::run_grid(def, opts)?;
    runner::write_tables(def, &g, &opts.out)?;
    let checks = check::evaluate(def, &g, opts.scale.name())?;
    let wall = t0.elapsed().as_secs_f64();
    check::write_reports(def, opts.scale.name(), &g, &checks, wall, &opts.out)?;
    Ok(Outcome { checks, runs: g.points.len(), runs_executed: g.runs_executed, wall_time_s: wall })
}
