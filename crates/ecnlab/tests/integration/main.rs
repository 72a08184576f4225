//! Integration tests: one binary, one module per theme. Each reads like an experiment: a scenario, a run,
//! an assertion about a property with an independent expectation.

mod bad_input;
mod common;
mod connections;
mod core;
mod experiments;
mod flowsched;
mod host_queue;
mod identity;
mod modules;
mod rdma;
mod scale;
mod schemes;
mod theory;
