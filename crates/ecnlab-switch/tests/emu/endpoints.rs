//! Real endpoints on real kernel TCP, each test in a private network namespace (a thread that unshares its
//! network namespace and brings `lo` up: nothing to clean up beyond the thread), and ecnlab's DCTCP as a BPF
//! struct_ops: registered, selected, carrying a transfer, and gone afterwards however the run ended.
//! Without root (or without BPF, for DCTCP) a test prints why and returns.

use ecnlab::units::{Bytes, Rate, Time};
use ecnlab_switch::cc::{self, Dctcp, DefaultCc, DCTCP_NAME};
use ecnlab_switch::traffic::client::{self, Incast, Prober};
use ecnlab_switch::traffic::now_ns;
use ecnlab_switch::traffic::report::{Endpoints, FlowResult, IncastResult, LinkModel, ProbeResult, Timeline};
use ecnlab_switch::traffic::server::{Server, ServerConfig};
use ecnlab_switch::traffic::sock::SockOpts;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const LO: Ipv4Addr = Ipv4Addr::LOCALHOST;
const MS: u64 = 1_000_000;

/// Runs `body` on a thread in a fresh network namespace with `lo` up at a 1500-byte MTU (as the emulated
/// links: MSS 1448 with timestamps, not lo's 65 483); `None` (after saying why) where that is not permitted.
/// A panic in `body` fails the test.
fn in_private_netns<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let h = std::thread::spawn(move || {
        // SAFETY: unshare affects only this thread's network namespace.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(format!("unshare(CLONE_NEWNET): {}", std::io::Error::last_os_error()));
        }
        lo_up().map_err(|e| format!("bringing lo up: {e}"))?;
        Ok(body())
    });
    match h.join() {
        Ok(Ok(v)) => Some(v),
        Ok(Err(why)) => {
            eprintln!("skipped: needs root for a private network namespace ({why})");
            None
        }
        Err(p) => std::panic::resume_unwind(p),
    }
}

fn lo_up() -> std::io::Result<()> {
    // SAFETY: an ifreq for "lo" read then written back with IFF_UP, on a throwaway datagram socket.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        ifr.ifr_ifru.ifru_mtu = 1500;
        let mut r = libc::ioctl(fd, libc::SIOCSIFMTU, &ifr);
        if r == 0 {
            r = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr);
        }
        if r == 0 {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            r = libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr);
        }
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if r != 0 {
            return Err(err);
        }
    }
    Ok(())
}

fn timeline(sample_ms: u64, window_ms: (u64, u64)) -> Timeline {
    let t0 = now_ns();
    Timeline {
        t0_ns: t0,
        sample_ns: sample_ms * MS,
        window_from_ns: t0 + window_ms.0 * MS,
        window_to_ns: t0 + window_ms.1 * MS,
    }
}

fn server(tl: Timeline, opts: SockOpts) -> Server {
    Server::start(ServerConfig { addr: SocketAddrV4::new(LO, 0), opts, timeline: tl }).expect("server")
}

#[test]
fn paced_sized_flows_finish_no_sooner_than_size_over_rate_and_in_size_order() {
    // Three flows, 10 KB, 100 KB and 1 MB, one after another, each sender paced at 100 Mb/s. Linux paces a
    // connection's data only from its 10th segment on (tcp_update_skb_after_send), and the segment (a GSO
    // burst of at most 64 KiB) that crosses it leaves at once too, so the analytic bound is
    // FCT ≥ (size − 10 MSS − 64 KiB) × 8 / rate; and a larger flow takes longer.
    let rows = in_private_netns(|| {
        let tl = timeline(0, (0, 10_000));
        let srv = server(tl, SockOpts::default());
        let rate = Rate(100_000_000);
        let opts = SockOpts { max_pacing_rate: Some(rate), ..Default::default() };
        let mut flows = Vec::new();
        for (id, size) in [(0u32, 10_000u64), (1, 100_000), (2, 1_000_000)] {
            let s = client::sized_flow(srv.addr(), id, size, &opts, Duration::from_secs(5)).expect("sized flow");
            flows.push(FlowResult { id, src: 1, dst: 0, class: 0, sender: s, receiver: None });
        }
        let res = srv.stop();
        assert!(res.errors.is_empty(), "{:?}", res.errors);
        assert!(res.records.iter().all(|r| r.complete && r.tally.total == r.size));
        let link = LinkModel { rate, base_rtt: Time::ZERO };
        let e = Endpoints { timeline: tl, link: Some(link), flows, incasts: vec![], probes: vec![] };
        (e.fct_rows(), e.fct_csv())
    });
    let Some((rows, csv)) = rows else { return };
    let fct: Vec<f64> = rows.iter().map(|r| r.fct_s.expect("finished")).collect();
    eprintln!("FCTs at 100 Mb/s pacing: {fct:?}\n{csv}");
    for (r, f) in rows.iter().zip(&fct) {
        let size = r.size_bytes.unwrap();
        let bound = size.saturating_sub(10 * 1448 + 65_536) as f64 * 8.0 / 1e8;
        assert!(*f > 0.0 && *f >= bound, "flow {} of {size} B: FCT {f} s below the bound {bound} s", r.id);
        assert_eq!(r.delivered_bytes, size);
        assert!(r.finish_s.unwrap() >= r.start_s && r.first_data_s.unwrap() >= r.start_s);
    }
    assert!(fct[0] < fct[1] && fct[1] < fct[2], "FCTs not ordered by size: {fct:?}");
    // The 1 MB flow: at 100 Mb/s the bound is 73.6 ms, its slowdown against size / rate at least 0.92.
    assert!(rows[2].slowdown.unwrap() >= 0.92);
}

#[test]
fn a_paced_long_flow_reaches_its_rate_and_never_exceeds_it() {
    // One long-lived flow paced at 100 Mb/s for 400 ms. Linux paces payload bytes from the 10th segment on and
    // lets a late sender catch up (by up to half of each gap), so over any window the rate may exceed the cap,
    // but from the start it cannot: bytes read by t ≤ 10 MSS + one 64 KiB burst + rate × t. An idle loopback
    // should carry nearly all of the rate over the window [100 ms, 400 ms].
    let got = in_private_netns(|| {
        let tl = timeline(10, (100, 400));
        let srv = server(tl, SockOpts::default());
        let opts = SockOpts { max_pacing_rate: Some(Rate(100_000_000)), ..Default::default() };
        let s = client::long_flow(srv.addr(), 0, tl.t0_ns + 420 * MS, &opts).expect("long flow");
        let mut res = srv.stop();
        let r = res.records.pop().expect("a receiver record");
        assert!(r.complete && s.receiver.expect("report").bytes == s.bytes && r.tally.total == s.bytes);
        let e = Endpoints {
            timeline: tl,
            link: None,
            flows: vec![FlowResult { id: 0, src: 1, dst: 0, class: 0, sender: s, receiver: Some(r) }],
            incasts: vec![],
            probes: vec![],
        };
        (e.summary().goodput.total_gbps, e.delivered_csv(tl.t0_ns + 400 * MS).unwrap())
    });
    let Some((gbps, series)) = got else { return };
    eprintln!("goodput {gbps} Gb/s");
    assert!(gbps >= 0.085, "goodput {gbps} Gb/s against a 0.1 Gb/s pacing rate");
    let vals: Vec<u64> = series.lines().skip(1).map(|l| l.split(',').nth(1).unwrap().parse().unwrap()).collect();
    assert_eq!(vals.len(), 41);
    assert!(vals.windows(2).all(|w| w[0] <= w[1]), "a cumulative series never decreases");
    for (k, v) in vals.iter().enumerate() {
        let bound = 10 * 1448 + 65_536 + 125_000 * k as u64; // 125 000 B per 10 ms at 100 Mb/s
        assert!(*v <= bound, "{v} B read by {} ms, above the pacing bound {bound} B", 10 * k);
    }
}

#[test]
fn an_incast_round_of_n_servers_brings_n_times_b() {
    // 8 servers, each asked for 64 KB per round, 3 rounds over the same connections.
    const N: usize = 8;
    const B: u64 = 64_000;
    let rounds = in_private_netns(|| {
        let tl = timeline(0, (0, 10_000));
        let servers: Vec<Server> = (0..N).map(|_| server(tl, SockOpts::default())).collect();
        let addrs: Vec<(u32, SocketAddrV4)> = servers.iter().enumerate().map(|(i, s)| (i as u32, s.addr())).collect();
        let mut inc = Incast::connect(&addrs, &SockOpts::default()).expect("connect");
        let recs: Vec<_> = (0..3).map(|_| inc.round(B, Duration::from_secs(5)).expect("round")).collect();
        drop(inc);
        for s in servers {
            let r = s.stop();
            assert!(r.errors.is_empty(), "{:?}", r.errors);
        }
        let e = Endpoints {
            timeline: tl,
            link: None,
            flows: vec![],
            incasts: vec![IncastResult { senders: N as u64, rounds: 3, block: Bytes(B), records: recs.clone() }],
            probes: vec![],
        };
        (recs, serde_json::to_value(e.summary().workloads).unwrap())
    });
    let Some((recs, summary)) = rounds else { return };
    for r in &recs {
        assert_eq!(r.bytes, N as u64 * B);
        assert_eq!(r.done_ns.len(), N);
        assert!(r.done_ns.iter().all(|&d| d > r.start_ns && d <= r.end_ns));
    }
    assert!(recs.windows(2).all(|w| w[1].start_ns >= w[0].end_ns), "rounds overlap");
    assert_eq!(summary[0]["rounds_completed"], 3);
    assert_eq!(summary[0]["round_times_s"].as_array().unwrap().len(), 3);
}

/// IPv4 TCP packets seen on `lo` by an AF_PACKET socket: (DS field, source port, destination port, payload).
type Seen = Vec<(u8, u16, u16, usize)>;

/// Captures on `lo` until `stop` is set.
fn capture(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Seen> {
    // SAFETY: an AF_PACKET socket for all protocols; closed at the end of the thread.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, (libc::ETH_P_ALL as u16).to_be() as i32) };
    assert!(fd >= 0, "AF_PACKET socket: {}", std::io::Error::last_os_error());
    let tv = libc::timeval { tv_sec: 0, tv_usec: 20_000 };
    // A burst of a few hundred small-MTU packets must fit in the receive buffer: 16 MiB.
    let rcvbuf: libc::c_int = 16 << 20;
    // SAFETY: valid option values for their lengths.
    unsafe {
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, (&tv as *const libc::timeval).cast(), 16);
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, (&rcvbuf as *const libc::c_int).cast(), 4);
    }
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !stop.load(Ordering::SeqCst) {
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut flen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: buffers valid for their lengths; MSG_TRUNC returns the full length.
            let n = unsafe {
                libc::recvfrom(
                    fd,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_TRUNC,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut flen,
                )
            };
            // lo delivers each packet twice (out and in): keep the outgoing copy only.
            if n < 54 || from.sll_pkttype != libc::PACKET_OUTGOING {
                continue;
            }
            let ip = &buf[14..];
            if u16::from_be_bytes([buf[12], buf[13]]) != 0x0800 || ip[9] != 6 {
                continue;
            }
            let ihl = (ip[0] & 0x0f) as usize * 4;
            let tot = u16::from_be_bytes([ip[2], ip[3]]) as usize;
            let tcp = &ip[ihl..];
            let doff = (tcp[12] >> 4) as usize * 4;
            let sport = u16::from_be_bytes([tcp[0], tcp[1]]);
            let dport = u16::from_be_bytes([tcp[2], tcp[3]]);
            seen.push((ip[1], sport, dport, tot - ihl - doff));
        }
        // SAFETY: closing the socket this thread owns.
        unsafe { libc::close(fd) };
        seen
    })
}

#[test]
fn the_dscp_set_on_a_socket_is_on_the_wire_both_ways_and_probes_measure_rtt() {
    // A 200 KB flow in class EF (DSCP 46) and an RTT prober in class AF41 (34): every payload-carrying packet of
    // the flow, in both directions after the request, carries its DSCP; probes come back with an RTT > 0.
    let got = in_private_netns(|| {
        let tl = timeline(0, (0, 10_000));
        let srv = server(tl, SockOpts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let cap = capture(stop.clone());
        let ef = SockOpts { dscp: 46, ..Default::default() };
        let s = client::sized_flow(srv.addr(), 0, 200_000, &ef, Duration::from_secs(5)).expect("flow");
        let mut p = Prober::connect(srv.addr(), 1, 64, &SockOpts { dscp: 34, ..Default::default() }).expect("prober");
        let samples = p.series(20, Duration::from_millis(2)).expect("probes");
        drop(p);
        std::thread::sleep(Duration::from_millis(50));
        stop.store(true, Ordering::SeqCst);
        let seen = cap.join().unwrap();
        srv.stop();
        let e = Endpoints {
            timeline: tl,
            link: None,
            flows: vec![],
            incasts: vec![],
            probes: vec![ProbeResult { sent: samples.len() as u64, samples: samples.clone() }],
        };
        (s, srv_port(&seen, 200_000), seen, samples, serde_json::to_value(e.summary().workloads).unwrap())
    });
    let Some((flow, port, seen, samples, summary)) = got else { return };
    assert_eq!(flow.receiver.expect("report").bytes, 200_000);
    let (srv, cli) = port.expect("the flow's packets were captured");
    // The flow's connection: its payload to the server all in EF; the server's side in EF once it read the
    // request (its SYN-ACK predates it).
    let data_to_srv: Vec<_> = seen.iter().filter(|p| (p.1, p.2) == (cli, srv) && p.3 > 0).collect();
    assert!(!data_to_srv.is_empty() && data_to_srv.iter().all(|p| p.0 >> 2 == 46), "{data_to_srv:?}");
    assert!(seen.iter().any(|p| (p.1, p.2) == (srv, cli) && p.0 >> 2 == 46), "the server's ACKs carry EF");
    // The probe's connection: 64-byte echoes from the server in AF41.
    let echoes: Vec<_> = seen.iter().filter(|p| p.1 == srv && p.2 != cli && p.3 == 64).collect();
    assert!(echoes.len() >= 20 && echoes.iter().all(|p| p.0 >> 2 == 34), "{echoes:?}");
    assert_eq!(samples.len(), 20);
    assert!(samples.iter().all(|s| s.rtt_ns > 0));
    assert_eq!(summary[0]["rtt"]["count"], 20);
}

/// (server port, client port) of the connection that carried at least `payload` bytes to one port.
fn srv_port(seen: &Seen, payload: usize) -> Option<(u16, u16)> {
    let mut by_conn: std::collections::BTreeMap<(u16, u16), usize> = Default::default();
    for p in seen {
        *by_conn.entry((p.2, p.1)).or_default() += p.3;
    }
    by_conn.into_iter().find(|&(_, b)| b >= payload).map(|(c, _)| c)
}

// ---- DCTCP ----------------------------------------------------------------------------------------------------

/// DCTCP tests check the machine-wide list of struct_ops maps: one at a time.
static DCTCP_TESTS: Mutex<()> = Mutex::new(());

fn dctcp_or_skip() -> Option<Dctcp> {
    match Dctcp::register() {
        Ok(d) => Some(d),
        Err(e @ cc::CcError::Unavailable(_)) => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// The ids of `ecnlab_dctcp` struct_ops maps that exist now: a run killed shortly before (the CLI's tests kill
/// one) leaves its map to the kernel, which frees it only when the dead run's orphaned sockets are gone, some
/// seconds later. A test judges only the maps it made itself.
fn maps_before() -> Vec<u32> {
    cc::struct_ops_maps().unwrap().into_iter().filter(|m| m.name == DCTCP_NAME).map(|m| m.id).collect()
}

/// Waits (up to 3 s: sockets and namespaces let go of the map asynchronously) until no struct_ops map of ours
/// is left but those that existed `before`; returns what remains.
fn our_maps_after_release(before: &[u32]) -> Vec<cc::StructOpsMap> {
    let t0 = std::time::Instant::now();
    loop {
        let left: Vec<_> = cc::struct_ops_maps()
            .unwrap()
            .into_iter()
            .filter(|m| m.name == DCTCP_NAME && !before.contains(&m.id))
            .collect();
        if left.is_empty() || t0.elapsed() > Duration::from_secs(3) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `bpftool struct_ops list`, where bpftool is installed (an independent view of the kernel's list), when no
/// map of another run lingered `before` (bpftool names maps, and theirs share our name).
fn bpftool_lists_ours(before: &[u32]) -> Option<bool> {
    if !before.is_empty() {
        return None;
    }
    let out = std::process::Command::new("bpftool").args(["struct_ops", "list"]).output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).contains(DCTCP_NAME))
}

#[test]
fn dctcp_registers_is_the_namespace_default_at_both_ends_carries_a_transfer_and_leaves_nothing() {
    let _one = DCTCP_TESTS.lock().unwrap_or_else(|p| p.into_inner());
    let before = maps_before();
    let Some(d) = dctcp_or_skip() else { return };
    assert!(cc::available().unwrap().iter().any(|a| a == DCTCP_NAME));
    let map_id = d.map_id();
    assert!(cc::struct_ops_maps().unwrap().iter().any(|m| m.id == map_id && m.name == DCTCP_NAME && m.link));
    let dd = d.clone();
    let got = in_private_netns(move || {
        let _default = DefaultCc::dctcp(&dd).expect("select");
        assert_eq!(cc::namespace_default().unwrap(), DCTCP_NAME);
        let tl = timeline(0, (0, 10_000));
        let srv = server(tl, SockOpts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let cap = capture(stop.clone());
        let s =
            client::sized_flow(srv.addr(), 0, 2_000_000, &SockOpts::default(), Duration::from_secs(5)).expect("flow");
        stop.store(true, Ordering::SeqCst);
        let seen = cap.join().unwrap();
        let rec = srv.stop().records.pop().expect("receiver record");
        (s, rec, seen)
    });
    let Some((s, rec, seen)) = got else { return };
    // Both ends run ecnlab's DCTCP, ECN negotiated on both (TCP_CONG_NEEDS_ECN), all 2 MB delivered.
    assert_eq!((s.cc.as_str(), rec.cc.as_str()), (DCTCP_NAME, DCTCP_NAME));
    assert!(s.info.ecn && rec.ecn, "ECN negotiated: sender {} receiver {}", s.info.ecn, rec.ecn);
    assert_eq!(s.receiver.expect("report").bytes, 2_000_000);
    // Linux with an ECN-needing algorithm sends ECT(0) on every data segment (RFC 8257 §3.6's recommendation).
    let data: Vec<_> = seen.iter().filter(|p| p.3 > 0).collect();
    assert!(!data.is_empty() && data.iter().all(|p| p.0 & 3 == 2), "ECN field of data: {data:?}");
    drop(d);
    let left = our_maps_after_release(&before);
    assert!(left.is_empty(), "struct_ops maps left after unregistering: {left:?}");
    assert!(!cc::available().unwrap().iter().any(|a| a == DCTCP_NAME));
    assert_ne!(bpftool_lists_ours(&before), Some(true));
}

#[test]
fn a_panicking_body_and_a_killed_process_leave_no_registration() {
    let _one = DCTCP_TESTS.lock().unwrap_or_else(|p| p.into_inner());
    let before = maps_before();
    let Some(probe) = dctcp_or_skip() else { return };
    drop(probe);
    assert!(our_maps_after_release(&before).is_empty());

    // A test body that registers, selects DCTCP in its namespace, opens a connection with it, then panics.
    let body = std::thread::spawn(|| {
        // SAFETY: this thread's network namespace only.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
        lo_up().unwrap();
        let d = Dctcp::register().unwrap();
        let _default = DefaultCc::dctcp(&d).unwrap();
        let srv = server(timeline(0, (0, 1_000)), SockOpts::default());
        let _s = client::sized_flow(srv.addr(), 0, 100_000, &SockOpts::default(), Duration::from_secs(5)).unwrap();
        panic!("the test body fails with DCTCP registered");
    });
    assert!(body.join().is_err());
    let left = our_maps_after_release(&before);
    assert!(left.is_empty(), "after a panic: {left:?}");

    // A process that registers and is killed with SIGKILL (no destructor runs): the kernel closes its link.
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args(["--exact", "endpoints::child_registers_dctcp_and_waits", "--nocapture", "--test-threads=1"])
        .env("ECNLAB_TEST_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !cc::struct_ops_maps().unwrap().iter().any(|m| m.name == DCTCP_NAME && !before.contains(&m.id)) {
        assert!(t0.elapsed() < Duration::from_secs(5), "the child never registered");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = our_maps_after_release(&before);
    assert!(left.is_empty(), "after SIGKILL: {left:?}");
    assert_ne!(bpftool_lists_ours(&before), Some(true));
}

/// The child of the test above (a no-op unless started by it).
#[test]
fn child_registers_dctcp_and_waits() {
    if std::env::var_os("ECNLAB_TEST_CHILD").is_none() {
        return;
    }
    let _d = Dctcp::register().unwrap();
    std::thread::sleep(Duration::from_secs(30));
}

#[test]
fn selecting_an_unregistered_algorithm_is_refused_before_the_kernel_sees_it() {
    // A refused selection of a BPF algorithm leaks a kernel reference: the name is checked first.
    let got = in_private_netns(|| {
        let before = cc::namespace_default().unwrap();
        let e = DefaultCc::set("no_such_cc").unwrap_err().to_string();
        let after = cc::namespace_default().unwrap();
        let sock = client::sized_flow(
            SocketAddrV4::new(LO, 9),
            0,
            1,
            &SockOpts { cc: Some("no_such_cc".into()), ..Default::default() },
            Duration::from_secs(1),
        )
        .unwrap_err()
        .to_string();
        (before, e, after, sock)
    });
    let Some((before, e, after, sock)) = got else { return };
    assert_eq!(before, after);
    assert!(e.contains("`no_such_cc` is not registered"), "{e}");
    assert!(sock.contains("`no_such_cc` is not registered"), "{sock}");
}

/// What the kernel reports of a socket (`TCP_INFO`).
fn tcp_info_of(s: &std::net::TcpStream) -> libc::tcp_info {
    use std::os::fd::AsRawFd;
    // SAFETY: a tcp_info filled by the kernel up to `len` bytes; the rest stays zeroed.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        assert_eq!(rc, 0, "TCP_INFO");
        info
    }
}

/// One DCTCP connection over loopback in a fresh namespace: a 4 MB transfer opens its window, the connection then
/// idles `idle`, and one more write starts it again. Returns cwnd (segments) after the transfer and after the
/// restart, and the RTO (us) before the idle, with `net.ipv4.tcp_slow_start_after_idle` set to `restart`.
fn dctcp_window_across_idle(d: &Dctcp, restart: bool, idle: Duration) -> Option<(u32, u32, u32)> {
    use std::io::{Read, Write};
    let d = d.clone();
    in_private_netns(move || {
        std::fs::write("/proc/sys/net/ipv4/tcp_slow_start_after_idle", if restart { "1" } else { "0" }).unwrap();
        let _default = DefaultCc::dctcp(&d).expect("select");
        let listener = std::net::TcpListener::bind((LO, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; 1 << 16];
            let mut total = 0usize;
            while total < 4_000_001 {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "early end");
                total += n;
            }
        });
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        s.write_all(&vec![7u8; 4_000_000]).unwrap();
        // Wait until everything is acknowledged: nothing in flight, so the next write starts from idle.
        let t0 = std::time::Instant::now();
        while tcp_info_of(&s).tcpi_unacked > 0 && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let info = tcp_info_of(&s);
        std::thread::sleep(idle);
        s.write_all(&[1u8]).unwrap();
        let after = tcp_info_of(&s).tcpi_snd_cwnd;
        reader.join().unwrap();
        (info.tcpi_snd_cwnd, after, info.tcpi_rto)
    })
}

/// RFC 5681 §4.1 (restart window): a connection idle for longer than its RTO starts again from a smaller window
/// when the host asks for it (`net.ipv4.tcp_slow_start_after_idle`), and keeps its window when it does not. With
/// `cong_control` the kernel leaves this to the algorithm, so ecnlab's DCTCP does it as the kernel's own
/// tcp_cwnd_restart does (RFC 2861's decay): cwnd halves for each RTO the connection idled beyond the first, never
/// below the initial window of 10.
#[test]
fn dctcp_restarts_with_a_window_halved_per_idle_rto_only_when_asked() {
    let _one = DCTCP_TESTS.lock().unwrap_or_else(|p| p.into_inner());
    let Some(d) = dctcp_or_skip() else { return };
    // Linux's RTO is at least 200 ms; 1.5 s is several of them on loopback (RTT of microseconds).
    let idle = Duration::from_millis(1500);
    let Some((before, after, rto_us)) = dctcp_window_across_idle(&d, true, idle) else { return };
    assert!(before > 10, "the transfer opened the window beyond the initial 10: {before}");
    // k RTOs fit in the idle time; the first only makes it idle, each further one halves (jiffies: k - 1 to k).
    let k = (idle.as_micros() as u32 / rto_us).max(1);
    let (low, high) = ((before >> k).max(10), (before >> (k - 1)).max(10));
    assert!(
        (low..=high).contains(&after),
        "restart after idle: cwnd {before} -> {after}, expected {low}..={high} (RTO {rto_us} us, {k} RTOs idle)"
    );
    let Some((before, after, _)) = dctcp_window_across_idle(&d, false, idle) else { return };
    assert!(before > 10 && after >= before, "no restart when not asked: cwnd {before} -> {after}");
}
