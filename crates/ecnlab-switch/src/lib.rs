//! ecnlab-switch: ecnlab's own ports forwarding real Ethernet frames between Linux network namespaces, with real
//! kernel TCP at the hosts.
//!
//! # Architecture map (read this first)
//!
//! ```text
//!   host namespaces (one per host)                 switch namespace
//!   ┌──────────────────────────────┐               ┌───────────────────────────────────────────────┐
//!   │ traffic::Server / clients    │   veth pair   │ dataplane: AF_PACKET rings → ecnlab Port      │
//!   │  real TCP sockets (std::net) │◀────────────▶│   (scheduler, marker, buffer) on a wall clock │
//!   │  kernel CC: reno, cubic, or  │               │   → per-link delay line → egress ring          │
//!   │  cc::Dctcp (BPF struct_ops)  │               │ pcap: any port to a libpcap file               │
//!   └──────────────────────────────┘               └───────────────────────────────────────────────┘
//! ```
//!
//! - `cc`: DCTCP (RFC 8257) as a BPF `tcp_congestion_ops` compiled from `bpf/dctcp.bpf.c` with clang at run
//!   time, loaded through libbpf (opened with `dlopen`) and registered through a BPF link, so the kernel
//!   unregisters it when the process ends however it ends; `Dctcp` is the RAII registration, `DefaultCc` the
//!   namespace default that never refers to an unregistered algorithm, `cleanup_stale` removes registrations
//!   left by other tools by their name.
//! - `traffic`: the endpoints that run inside host namespaces: a server that sinks, serves and echoes, and the
//!   clients (long-lived flows, sized flows with application-measured FCT, incast rounds over kept connections,
//!   RTT probes), per-socket DSCP and congestion control; `traffic::report` aggregates their records into the
//!   run directory's `fct.csv`, `series/delivered.csv` and the endpoint parts of `summary.json`.
//! - The data plane (`netns`, `ring`, `frame`, `pcap`, `dataplane`) forwards the frames between the namespaces.
//!
//! Everything a run creates on the machine (namespaces, veths, BPF registrations) is removed when it ends.

pub mod cc;
pub mod traffic;
