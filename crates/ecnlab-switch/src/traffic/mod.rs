//! Real TCP endpoints for the host namespaces: a server and the clients of every workload, with their records.
//!
//! Everything here runs on ordinary kernel TCP sockets in the calling thread's network namespace (a thread that
//! entered a host's namespace, or a process started in it); threads spawned from it inherit the namespace.
//!
//! - [`server::Server`] accepts connections and serves the small request protocol of [`proto`]: it sinks a flow
//!   (recording when each byte was read), sends a requested block (incast), or echoes a probe.
//! - [`client`]: long-lived flows, sized flows, incast rounds over kept connections, RTT probes.
//! - [`sock`]: socket options (DSCP through `IP_TOS`, `TCP_CONGESTION`, `TCP_INFO`).
//! - [`report`]: records → `fct.csv`, `series/delivered.csv` and the endpoint parts of `summary.json`.
//!
//! Times are `CLOCK_MONOTONIC` nanoseconds ([`now_ns`]): one clock for every namespace and process on the
//! machine, so a sender's start and a receiver's finish can be subtracted.

pub mod client;
pub mod proto;
pub mod report;
pub mod server;
pub mod sock;

/// `CLOCK_MONOTONIC` in nanoseconds: the same clock in every namespace and process of the machine.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
