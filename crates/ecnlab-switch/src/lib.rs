//! ecnlab-switch: ecnlab's own egress ports forwarding real Ethernet frames between Linux network namespaces,
//! with real kernel TCP at the hosts (emulation beside the simulator).
//!
//! # Architecture map
//!
//! ```text
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
//! ```
//!
//! A frame's life: host TCP -> eth0 -> (veth) -> p<i> ring, stamped by the kernel -> copied into the frame
//! table, its `Packet` (wire size, class, ECN, flow) into the pool -> uplink delay line -> egress `Port::offer`
//! -> `Port::depart` at the end of the previous transmission -> CE written if the marker marked it -> link
//! delay line -> send() on the egress p<j> -> (veth) -> the receiving host's stack.

pub mod bench;
pub mod dataplane;
pub mod error;
pub mod frame;
pub mod netns;
pub mod pcap;
pub mod ring;

pub use error::{Error, Result};
