//! ecnlab: a fast, deterministic packet-level simulator for ECN marking in multi-queue datacenter switches.
//!
//! # Architecture map (read this first)
//!
//! ```text
//!  scenario::Scenario ──(validate, build)──▶ sim::Sim ──(run)──▶ sim::RunReport ──▶ run directory
//!        TOML + --set                          │                                   summary.json, fct.csv,
//!                                              │                                   series/*.csv, trace.csv
//!   engine::EventQueue  (time, phase, seq) ────┤
//!   net::Network        hosts, switches, one egress port per link direction, BFS routes by switch + ECMP; net::pfc
//!   port::Port          THE mechanism: buffer admission, per-class FIFOs, occupancy, counters
//!     ├─ sched::AnyScheduler   which queue sends next (no ECN knowledge)
//!     └─ mark::AnyMarker       Pass / Mark / Drop at enqueue and dequeue, from a read-only PortState
//!   transport::{Sender, Receiver}   sans-IO endpoints: TCP (congestion control in transport::cc, PIAS
//!                       tagging in transport::pias, its thresholds derived by transport::pias::derive when the
//!                       scenario is loaded) or RoCE with DCQCN (transport::dcqcn)
//!   sim::workload       flows, back-to-back connections, incast rounds, probes
//!   observe             histograms, series, trace records
//!   experiment          experiment definitions (grids + checks), the runner, result tables
//! ```
//!
//! A packet's life: a transport emits it → the host's NIC port → link (a line of arrival events) → switch routes
//! it → egress port enqueue (marker may mark/drop) → scheduler picks it → dequeue (marker again) → link → host
//! → transport.
//! Everything is owned by one `Sim` in `Vec`s indexed by ids; events name components, never hold state.

pub mod builtin;
pub mod cancel;
pub mod dist;
pub mod engine;
pub mod error;
pub mod experiment;
pub mod mark;
pub mod net;
pub mod observe;
pub mod outdir;
pub mod packet;
pub mod port;
pub mod scenario;
pub mod sched;
pub mod sim;
pub mod thresholds;
pub mod transport;
pub mod units;

pub use cancel::{Cancel, RunOptions};
pub use error::{Error, Result};
pub use scenario::Scenario;
pub use sim::{RunReport, Sim};

/// Validates, builds and runs a scenario; checks packet conservation at the end.
pub fn run(sc: &Scenario) -> Result<RunReport> {
    run_with_progress(sc, false)
}

/// As `run`, printing a progress line on stderr every wall second when `progress` is set.
pub fn run_with_progress(sc: &Scenario, progress: bool) -> Result<RunReport> {
    run_with(sc, &RunOptions { progress, ..RunOptions::default() })
}

/// As `run`, with a progress line (`opts.progress`) and a token that stops the run with `Error::Interrupted`
/// (`opts.cancel`, checked before the build and every 2^16 events).
pub fn run_with(sc: &Scenario, opts: &RunOptions) -> Result<RunReport> {
    let t0 = std::time::Instant::now();
    opts.cancel.check()?;
    let mut sim = Sim::new(sc)?;
    if opts.no_fast_paths {
        sim.without_fast_paths();
    }
    sim.run_with(opts)?;
    sim.check_conservation().map_err(|e| Error::Run(format!("conservation violated: {e}")))?;
    let wall = t0.elapsed().as_secs_f64();
    Ok(sim.report(sc, wall))
}
