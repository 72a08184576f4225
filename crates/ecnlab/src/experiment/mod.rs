//! Experiment definitions (grids and checks over scenarios), the parallel runner and result tables.
