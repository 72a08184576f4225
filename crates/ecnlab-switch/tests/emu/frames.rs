//! Frames, checksums and captures against independent computations (no privileges needed).

use ecnlab_switch::frame::{self, L3};
use ecnlab_switch::pcap::{PcapWriter, MAGIC_NS};

/// A deterministic stream of bytes for the random headers.
fn lcg(x: &mut u64) -> u64 {
    *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *x >> 33
}

/// An Ethernet frame carrying an IPv4/TCP packet of `payload` bytes with a valid header checksum.
fn ipv4_tcp(tos: u8, payload: usize, x: &mut u64) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 20 + payload];
    f[..6].copy_from_slice(&[2, 0xec, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[1] = tos;
    let total = (40 + payload) as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    for b in &mut ip[4..9] {
        *b = lcg(x) as u8;
    }
    ip[6] &= 0x40; // DF or nothing: not a fragment
    ip[7] = 0;
    ip[9] = 6;
    for b in &mut ip[12..] {
        *b = lcg(x) as u8;
    }
    let c = frame::ipv4_header_checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f
}

#[test]
fn setting_ce_updates_the_ipv4_checksum_as_a_full_recomputation_does() {
    let mut x = 7;
    for i in 0..20_000 {
        // Every DSCP with ECT(0) or ECT(1), random addresses, ids and TTLs.
        let tos = ((i % 64) as u8) << 2 | if i % 2 == 0 { 0b10 } else { 0b01 };
        let mut f = ipv4_tcp(tos, (lcg(&mut x) % 1400) as usize, &mut x);
        let before = f.clone();
        let h = frame::parse(&f).expect("a frame");
        assert_eq!((h.l3, h.dscp, h.ecn), (L3::Ipv4, tos >> 2, tos & 3));
        assert!(frame::set_ce(&mut f, &h));
        let ip = &f[14..34];
        assert_eq!(ip[1], tos | 3, "CE set, DSCP kept");
        assert_eq!(u16::from_be_bytes([ip[10], ip[11]]), frame::ipv4_header_checksum(ip), "header {ip:02x?}");
        assert_eq!(frame::ones_sum(ip), 0xffff, "the header verifies");
        let changed: Vec<usize> = (0..f.len()).filter(|&k| f[k] != before[k]).collect();
        assert!(changed.iter().all(|&k| k == 15 || k == 24 || k == 25), "only TOS and checksum change");
    }
}

#[test]
fn only_ect_ip_packets_are_marked() {
    let mut x = 3;
    for tos in [0x00u8, 0x03, 0xb8, 0xbb] {
        // Not-ECT (00) and CE (11): nothing to do.
        let mut f = ipv4_tcp(tos, 100, &mut x);
        let h = frame::parse(&f).unwrap();
        let before = f.clone();
        assert!(!frame::set_ce(&mut f, &h));
        assert_eq!(f, before);
    }
    // An ARP frame is forwarded by its address, never marked.
    let mut arp = vec![0xffu8; 60];
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    let h = frame::parse(&arp).unwrap();
    assert_eq!((h.l3, h.ecn, h.l3_len), (L3::Other, 0, 46));
    assert!(frame::is_group(&h.dst));
    assert!(!frame::set_ce(&mut arp.clone(), &h));
    // A truncated IPv4 header is not trusted.
    let mut short = ipv4_tcp(0x02, 0, &mut x);
    short.truncate(14 + 12);
    assert_eq!(frame::parse(&short).unwrap().l3, L3::Other);
}

#[test]
fn a_padded_minimum_frame_counts_its_ip_length_not_the_padding() {
    let mut x = 5;
    let mut f = ipv4_tcp(0x02, 0, &mut x);
    f.resize(60, 0); // Ethernet's minimum frame: 40 B of IP padded to 46.
    let h = frame::parse(&f).unwrap();
    assert_eq!(h.l3_len, 40);
}

#[test]
fn ipv6_ce_sets_the_traffic_class_ecn_bits_only() {
    let mut f = vec![0u8; 14 + 40 + 20];
    f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    let tclass: u8 = 0b1011_1010; // DSCP 46, ECT(0)
    f[14] = 0x60 | tclass >> 4;
    f[15] = (tclass & 0x0f) << 4 | 0x5; // flow label's top bits 0x5
    f[18..20].copy_from_slice(&20u16.to_be_bytes());
    f[20] = 6;
    let h = frame::parse(&f).unwrap();
    assert_eq!((h.l3, h.dscp, h.ecn, h.l3_len), (L3::Ipv6, 46, 0b10, 60));
    assert!(frame::set_ce(&mut f, &h));
    let tc = (f[14] & 0x0f) << 4 | f[15] >> 4;
    assert_eq!(tc, tclass | 3);
    assert_eq!(f[15] & 0x0f, 0x5, "flow label untouched");
}

/// The TCP checksum computed from scratch: pseudo-header (RFC 793 §3.1) and segment, field taken as zero.
fn tcp_checksum(f: &[u8]) -> u16 {
    let ip = &f[14..];
    let len = ip.len() - 20;
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&ip[12..20]);
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(len as u16).to_be_bytes());
    let mut seg = ip[20..].to_vec();
    seg[16] = 0;
    seg[17] = 0;
    pseudo.extend_from_slice(&seg);
    !frame::ones_sum(&pseudo)
}

#[test]
fn a_checksum_left_to_hardware_is_completed_as_computed_from_scratch() {
    let mut x = 11;
    for _ in 0..2_000 {
        let mut f = ipv4_tcp(0x02, (lcg(&mut x) % 1400) as usize + 1, &mut x);
        // CHECKSUM_PARTIAL: the field holds the folded pseudo-header sum (tcp_v4_send_check).
        let ip = &f[14..];
        let len = (ip.len() - 20) as u16;
        let mut pseudo = ip[12..20].to_vec();
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&len.to_be_bytes());
        let partial = frame::ones_sum(&pseudo);
        f[14 + 20 + 16..14 + 20 + 18].copy_from_slice(&partial.to_be_bytes());
        let h = frame::parse(&f).unwrap();
        assert!(frame::complete_l4_checksum(&mut f, &h));
        assert_eq!(u16::from_be_bytes([f[50], f[51]]), tcp_checksum(&f));
    }
}

#[test]
fn a_capture_reads_back_as_libpcap_with_nanosecond_stamps() {
    let mut w = PcapWriter::new(Vec::new(), 64).unwrap();
    let big = vec![0xabu8; 100];
    w.write(1_700_000_000_123_456_789, &[1, 2, 3]).unwrap();
    w.write(1_700_000_001_000_000_001, &big).unwrap();
    assert_eq!(w.frames(), 2);
    let b = w.finish().unwrap();
    let u32_at = |k: usize| u32::from_ne_bytes(b[k..k + 4].try_into().unwrap());
    let u16_at = |k: usize| u16::from_ne_bytes(b[k..k + 2].try_into().unwrap());
    assert_eq!((u32_at(0), MAGIC_NS), (0xa1b2_3c4d, 0xa1b2_3c4d));
    assert_eq!((u16_at(4), u16_at(6), u32_at(16), u32_at(20)), (2, 4, 64, 1));
    // Record 1: seconds, nanoseconds, captured and original lengths, the bytes.
    assert_eq!((u32_at(24), u32_at(28), u32_at(32), u32_at(36)), (1_700_000_000, 123_456_789, 3, 3));
    assert_eq!(&b[40..43], &[1, 2, 3]);
    // Record 2: cut at the snapshot length, its original length kept.
    assert_eq!((u32_at(43), u32_at(47), u32_at(51), u32_at(55)), (1_700_000_001, 1, 64, 100));
    assert_eq!(b.len(), 59 + 64);
}

#[test]
fn tcp_segments_are_read_as_written_by_hand() {
    let mut x = 3;
    let mut f = ipv4_tcp(0x04 << 2 | 0b10, 1448, &mut x);
    let ip = 14;
    f[ip + 12..ip + 20].copy_from_slice(&[10, 0, 0, 3, 10, 0, 0, 1]);
    let tcp = ip + 20;
    f[tcp..tcp + 4].copy_from_slice(&[0x9c, 0x40, 0x13, 0x88]); // ports 40000 → 5000
    f[tcp + 4..tcp + 8].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
    f[tcp + 8..tcp + 12].copy_from_slice(&77u32.to_be_bytes());
    f[tcp + 12] = 5 << 4; // 20-byte header
    f[tcp + 13] = 0x10 | 0x01; // ACK, FIN
    let t = frame::tcp_v4(&f).expect("an IPv4 TCP frame");
    assert_eq!(t.key, [10, 0, 0, 3, 10, 0, 0, 1, 0x9c, 0x40, 0x13, 0x88]);
    assert_eq!((t.seq, t.ack, t.has_ack, t.fin, t.seq_len), (0xffff_fff0, 77, true, true, 1448 + 1));
    assert_eq!(frame::TcpSegment::reverse(&t.key), [10, 0, 0, 1, 10, 0, 0, 3, 0x13, 0x88, 0x9c, 0x40]);
    // A bare SYN takes one sequence number; options (data offset 8 words) are not payload.
    let mut syn = ipv4_tcp(0, 12, &mut x);
    syn[tcp + 12] = 8 << 4;
    syn[tcp + 13] = 0x02;
    let t = frame::tcp_v4(&syn).expect("a SYN");
    assert_eq!((t.has_ack, t.fin, t.seq_len), (false, false, 1));
    // Not TCP, or a header that claims more than the packet holds: nothing.
    let mut udp = f.clone();
    udp[ip + 9] = 17;
    assert_eq!(frame::tcp_v4(&udp), None);
    let mut bad = f.clone();
    bad[tcp + 12] = 15 << 4;
    bad.truncate(tcp + 40);
    bad[ip + 2..ip + 4].copy_from_slice(&60u16.to_be_bytes());
    assert_eq!(frame::tcp_v4(&bad), None);
}
