//! ecnlab-switch: ecnlab's own egress ports forwarding real Ethernet frames between Linux network namespaces,
//! with real kernel TCP at the hosts (emulation beside the simulator).
//!
//! # Architecture map (read this first)
//!
//! ```text
//!   host namespaces (one per host)                 switch namespace
//!   ┌──────────────────────────────┐               ┌───────────────────────────────────────────────┐
//!   │ traffic::Server / clients    │   veth pair   │ dataplane::Switch: AF_PACKET rings → ecnlab   │
//!   │  real TCP sockets (std::net) │◀────────────▶│   Port (scheduler, marker, buffer) in virtual │
//!   │  kernel CC: reno, cubic, or  │               │   time → per-link delay line → egress ring     │
//!   │  cc::Dctcp (BPF struct_ops)  │               │ pcap: any port to a libpcap file               │
//!   └──────────────────────────────┘               └───────────────────────────────────────────────┘
//!
//!  netns::Testbed      namespaces h0..hN and sw, veth pairs eth0 <-> p<i>, static neighbours, offloads,
//!                      sysctls; removed on drop, on SIGINT/SIGTERM, and (leaked by a killed run) by
//!                      netns::cleanup_leaked
//!  dataplane::Switch   one busy-polling thread in the switch namespace, pinned to a core:
//!     ring::Ring         per port: AF_PACKET socket, TPACKET_V2 receive ring (kernel receive timestamps),
//!                        send() for transmission (PACKET_QDISC_BYPASS)
//!     frame              Ethernet/IPv4/IPv6 parsing: destination, DSCP -> class, ECN; CE set in place
//!     uplink             the host's link into the switch: ecnlab's NIC model (line rate + propagation delay)
//!     ecnlab::port::Port the egress port of the simulator (buffer, scheduler, marker) in virtual time: each
//!                        frame is offered at its kernel receive timestamp (+ its uplink), departures come at
//!                        the port's own instants; frames leave after the link's propagation delay
//!     pcap::PcapWriter   captures of any port, ingress or egress
//!  cc                  DCTCP (RFC 8257) as a BPF tcp_congestion_ops compiled from bpf/dctcp.bpf.c with clang
//!                      at run time, loaded through libbpf (dlopen) and registered through a BPF link (the
//!                      kernel unregisters it when the process ends, however it ends); Dctcp is the RAII
//!                      registration, DefaultCc the namespace default, cleanup_stale removes leftovers by name
//!  traffic             the endpoints inside host namespaces: a server that sinks, serves and echoes; clients
//!                      for long-lived flows, sized flows (application-measured FCT), incast rounds over kept
//!                      connections, RTT probes; per-socket DSCP and congestion control; traffic::report writes
//!                      fct.csv, series/delivered.csv and the endpoint parts of summary.json
//! ```
//!
//! A frame's life: host TCP -> eth0 -> (veth) -> p<i> ring, stamped by the kernel -> copied into the frame
//! table, its `Packet` (wire size, class, ECN, flow) into the pool -> uplink delay line -> egress `Port::offer`
//! -> `Port::depart` at the end of the previous transmission -> CE written if the marker marked it -> link
//! delay line -> send() on the egress p<j> -> (veth) -> the receiving host's stack.
//!
//! Everything a run creates on the machine (namespaces, veths, BPF registrations) is removed when it ends.

pub mod bench;
pub mod cc;
pub mod dataplane;
pub mod emulate;
pub mod error;
pub mod frame;
pub mod netns;
pub mod pcap;
pub mod ring;
pub mod traffic;

pub use error::{Error, Result};
