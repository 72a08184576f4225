//! The emulated switch against real kernel stacks: frames, forwarding, marks, weighted shares, cleanup; and
//! the real endpoints and ecnlab's DCTCP on their own (`endpoints`, each in a private namespace).
//!
//! Tests that build namespaces need root; without it they say why and pass. They run one at a time (each
//! busy-polls a core), at 100 Mb/s, each within a few seconds.

mod cleanup;
mod common;
mod emulate;
mod endpoints;
mod forwarding;
mod frames;
mod marks;
