//! Stopping a running simulation from outside it: a `Cancel` token, shared between whoever wants the run to stop
//! (a signal handler, a Python binding polling for KeyboardInterrupt, a grid runner) and the run loop, which looks
//! at it every 2^16 events (`Sim::run_with`) and then ends with `Error::Interrupted`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shared flag: once set it stays set, and every clone sees it. `Default` gives a fresh, unset token.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks every run holding a clone of this token to stop. Only an atomic store: safe in a signal handler.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Relaxed is enough: the flag orders nothing else, and a run notices it at its next check (within a few ms).
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(Error::Interrupted)` once cancelled: for checks between steps (grid points, experiments).
    pub fn check(&self) -> crate::Result<()> {
        if self.is_cancelled() {
            Err(crate::Error::Interrupted)
        } else {
            Ok(())
        }
    }
}

/// How `run_with` runs a scenario.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// A progress line on stderr every wall second.
    pub progress: bool,
    /// The run stops with `Error::Interrupted` soon after this is cancelled.
    pub cancel: Cancel,
    /// Every fast path off (`Sim::without_fast_paths`): the same results, more events and time. For checking
    /// that the fast paths change nothing (`ecnlab-sim run --no-fast-paths`, the `identity` tests).
    pub no_fast_paths: bool,
}
