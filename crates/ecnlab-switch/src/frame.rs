//! Ethernet, IPv4 and IPv6 headers as the switch reads them: destination, DSCP, ECN, flow hash; CE set in place.
//!
//! A frame that is not IP (or whose IP header is malformed) is still forwarded by its destination address, as
//! a switch forwards what it does not parse, but it is never marked: its ECN field is unknown, so it counts as
//! not ECN-capable (RFC 3168 §5 lets a router mark only ECT packets).

/// Bytes of an Ethernet II header (no VLAN tag: the harness's links carry none).
pub const ETH_HDR: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
/// The ECN codepoints in the low two bits of the IPv4 TOS / IPv6 traffic class (RFC 3168 §5).
pub const ECN_CE: u8 = 0b11;

/// The network layer the frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L3 {
    Ipv4,
    Ipv6,
    /// Anything else, or an IP header too short or inconsistent to trust.
    Other,
}

/// What the switch reads of one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headers {
    pub dst: [u8; 6],
    pub l3: L3,
    /// Differentiated services codepoint (six bits; 0 for non-IP frames).
    pub dscp: u8,
    /// The two ECN bits (0 for non-IP frames: not ECN-capable).
    pub ecn: u8,
    /// The IP packet's length (header and payload, without Ethernet's header and padding): the size the
    /// simulator's ports count on the wire. For a non-IP frame, the frame less its Ethernet header.
    pub l3_len: u32,
    /// A hash of the 5-tuple (addresses, protocol, ports for TCP and UDP): the flow as ECMP and per-flow
    /// state see it.
    pub flow: u32,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Parses a frame's headers; `None` if it is shorter than an Ethernet header.
pub fn parse(frame: &[u8]) -> Option<Headers> {
    if frame.len() < ETH_HDR {
        return None;
    }
    let mut dst = [0u8; 6];
    dst.copy_from_slice(&frame[..6]);
    let other = Headers { dst, l3: L3::Other, dscp: 0, ecn: 0, l3_len: (frame.len() - ETH_HDR) as u32, flow: 0 };
    let ip = &frame[ETH_HDR..];
    let parsed = match be16(frame, 12) {
        ETHERTYPE_IPV4 => parse_v4(ip),
        ETHERTYPE_IPV6 => parse_v6(ip),
        _ => None,
    };
    Some(parsed.map_or(other, |(l3, dscp, ecn, l3_len, flow)| Headers { dst, l3, dscp, ecn, l3_len, flow }))
}

type Ip = (L3, u8, u8, u32, u32);

/// An IPv4 header's length and the packet's total length, if `ip` holds a well-formed IPv4 packet.
fn v4_lengths(ip: &[u8]) -> Option<(usize, usize)> {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let ihl = (ip[0] & 0x0f) as usize * 4;
    let total = be16(ip, 2) as usize;
    if ihl < 20 || total < ihl || total > ip.len() {
        return None;
    }
    Some((ihl, total))
}

fn parse_v4(ip: &[u8]) -> Option<Ip> {
    let (ihl, total) = v4_lengths(ip)?;
    let tos = ip[1];
    let proto = ip[9];
    // Ports only in a first (or only) fragment: later fragments carry no transport header.
    let first_fragment = be16(ip, 6) & 0x1fff == 0;
    let ports = if first_fragment && (proto == PROTO_TCP || proto == PROTO_UDP) && total >= ihl + 4 {
        u32::from_be_bytes([ip[ihl], ip[ihl + 1], ip[ihl + 2], ip[ihl + 3]])
    } else {
        0
    };
    let h = mix(mix(mix(read32(ip, 12) as u64, read32(ip, 16) as u64), ports as u64), proto as u64);
    Some((L3::Ipv4, tos >> 2, tos & 0b11, total as u32, h as u32))
}

fn read32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn parse_v6(ip: &[u8]) -> Option<Ip> {
    if ip.len() < 40 || ip[0] >> 4 != 6 {
        return None;
    }
    let total = 40 + be16(ip, 4) as usize;
    if total > ip.len() {
        return None;
    }
    let tclass = (ip[0] & 0x0f) << 4 | ip[1] >> 4;
    let next = ip[6];
    // Extension headers are not walked: ports are read only when the transport header follows at once.
    let ports = if (next == PROTO_TCP || next == PROTO_UDP) && total >= 44 { read32(ip, 40) } else { 0 };
    let mut h = 0u64;
    for w in (8..40).step_by(4) {
        h = mix(h, read32(ip, w) as u64);
    }
    let h = mix(mix(h, ports as u64), next as u64);
    Some((L3::Ipv6, tclass >> 2, tclass & 0b11, total as u32, h as u32))
}

/// What the switch's RTT meter reads of a TCP segment over IPv4 (the harness's links carry no IPv6 traffic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpSegment {
    /// Source address and port, then destination address and port, as on the wire: one direction of a
    /// connection. [`TcpSegment::reverse`] is the other direction's key.
    pub key: [u8; 12],
    pub seq: u32,
    /// The cumulative acknowledgment, meaningful only when `has_ack`.
    pub ack: u32,
    pub has_ack: bool,
    pub fin: bool,
    /// Bytes of payload, plus one for SYN and FIN (each takes a sequence number).
    pub seq_len: u32,
}

impl TcpSegment {
    /// The key of the connection's other direction (its ACKs travel under it).
    pub fn reverse(key: &[u8; 12]) -> [u8; 12] {
        let mut r = [0u8; 12];
        r[..4].copy_from_slice(&key[4..8]);
        r[4..8].copy_from_slice(&key[..4]);
        r[8..10].copy_from_slice(&key[10..12]);
        r[10..12].copy_from_slice(&key[8..10]);
        r
    }
}

/// Parses a frame's IPv4 TCP header; `None` for anything else (IPv6, other protocols, later fragments, or a
/// header too short or inconsistent to trust).
pub fn tcp_v4(frame: &[u8]) -> Option<TcpSegment> {
    if frame.len() < ETH_HDR || be16(frame, 12) != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = &frame[ETH_HDR..];
    let (ihl, total) = v4_lengths(ip)?;
    // A first (or only) fragment with a whole TCP header.
    if ip[9] != PROTO_TCP || be16(ip, 6) & 0x1fff != 0 || total < ihl + 20 {
        return None;
    }
    let tcp = &ip[ihl..total];
    let doff = (tcp[12] >> 4) as usize * 4;
    if doff < 20 || doff > tcp.len() {
        return None;
    }
    let flags = tcp[13];
    let (fin, syn, ack) = (flags & 0x01 != 0, flags & 0x02 != 0, flags & 0x10 != 0);
    let mut key = [0u8; 12];
    key[..8].copy_from_slice(&ip[12..20]);
    key[8..12].copy_from_slice(&tcp[..4]);
    Some(TcpSegment {
        key,
        seq: read32(tcp, 4),
        ack: read32(tcp, 8),
        has_ack: ack,
        fin,
        seq_len: (tcp.len() - doff) as u32 + syn as u32 + fin as u32,
    })
}

/// One multiply-xorshift round: enough to spread 5-tuples over ECMP paths and hash tables.
fn mix(h: u64, v: u64) -> u64 {
    let x = (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 29)
}

/// Sets CE in an ECN-capable IP packet's header, updating IPv4's header checksum incrementally (RFC 1624
/// eqn. 3: HC' = ~(~HC + ~m + m'), over the 16-bit word holding the TOS byte). Returns whether the frame
/// changed (false for non-ECT, already-CE and non-IP frames).
pub fn set_ce(frame: &mut [u8], h: &Headers) -> bool {
    if h.ecn == 0 || h.ecn == ECN_CE {
        return false;
    }
    let ip = &mut frame[ETH_HDR..];
    match h.l3 {
        L3::Ipv4 => {
            let old = be16(ip, 0);
            ip[1] |= ECN_CE;
            let new = be16(ip, 0);
            let sum = csum_replace(be16(ip, 10), old, new);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
            true
        }
        L3::Ipv6 => {
            // The traffic class straddles bytes 0 and 1; its ECN bits are bits 4–5 of byte 1. No checksum.
            ip[1] |= ECN_CE << 4;
            true
        }
        L3::Other => false,
    }
}

/// RFC 1624 eqn. 3: the checksum after one 16-bit word of the summed data changes from `old` to `new`.
fn csum_replace(checksum: u16, old: u16, new: u16) -> u16 {
    let sum = (!checksum) as u32 + (!old) as u32 + new as u32;
    !fold(sum)
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The 16-bit one's complement sum of `data` (RFC 1071), odd lengths padded with a zero byte.
pub fn ones_sum(data: &[u8]) -> u16 {
    let mut sum = 0u64;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u64) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// An IPv4 header's checksum computed afresh over `header` (its checksum field taken as zero).
pub fn ipv4_header_checksum(header: &[u8]) -> u16 {
    let mut h = header.to_vec();
    h[10] = 0;
    h[11] = 0;
    !ones_sum(&h)
}

/// Completes the TCP or UDP checksum of a frame a sender left to "hardware" (a kernel `CHECKSUM_PARTIAL`
/// packet, flagged `TP_STATUS_CSUMNOTREADY` by the receive ring): its checksum field holds the pseudo-header
/// sum, so the checksum is the complement of the sum over the transport segment as it stands. A frame
/// forwarded through a packet socket loses the flag, and its receiver would otherwise drop it as corrupt.
/// Returns whether a checksum was written.
pub fn complete_l4_checksum(frame: &mut [u8], h: &Headers) -> bool {
    let ip = &mut frame[ETH_HDR..];
    let (l4, proto) = match h.l3 {
        L3::Ipv4 => ((ip[0] & 0x0f) as usize * 4, ip[9]),
        L3::Ipv6 => (40, ip[6]),
        L3::Other => return false,
    };
    let field = match proto {
        PROTO_TCP => 16,
        PROTO_UDP => 6,
        _ => return false,
    };
    let end = h.l3_len as usize;
    if end < l4 + field + 2 {
        return false;
    }
    let mut sum = !ones_sum(&ip[l4..end]);
    if proto == PROTO_UDP && sum == 0 {
        // UDP sends a computed zero as all ones (RFC 768).
        sum = 0xffff;
    }
    ip[l4 + field..l4 + field + 2].copy_from_slice(&sum.to_be_bytes());
    true
}

/// The frame's destination is a group (broadcast or multicast) address.
pub fn is_group(dst: &[u8; 6]) -> bool {
    dst[0] & 1 != 0
}
