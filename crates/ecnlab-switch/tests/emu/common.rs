//! What the emulation tests share: the privilege check, one-at-a-time running, scenarios, TCP endpoints.

use ecnlab_switch::dataplane::{Switch, SwitchConfig};
use ecnlab_switch::netns::{Testbed, TestbedSpec};
use ecnlab_switch::Result;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Emulation tests take a core each and the kernel's stacks: one at a time.
static HEAVY: Mutex<()> = Mutex::new(());

/// The lock every namespace-building test holds, or `None` (and why, printed) when the process cannot
/// build namespaces.
pub fn exclusive() -> Option<MutexGuard<'static, ()>> {
    if let Err(e) = ecnlab_switch::netns::require_capabilities() {
        eprintln!("skipped: {e}");
        return None;
    }
    Some(HEAVY.lock().unwrap_or_else(|p| p.into_inner()))
}

/// A star scenario of `hosts` hosts at 100 Mb/s, 50 us links, with `switch` as its `[switch]` table body.
pub fn star(hosts: u32, switch: &str) -> ecnlab::Scenario {
    let text = format!(
        "duration = \"1s\"\n[topology]\nkind = \"star\"\nhosts = {hosts}\nrate = \"100Mbps\"\ndelay = \"50us\"\n\
         [switch]\n{switch}\n"
    );
    ecnlab::Scenario::from_toml(&text, &[]).expect("a valid scenario")
}

/// The testbed and the switch of a star scenario, every host with `sysctls`; the switch on the last core.
pub fn emulate(sc: &ecnlab::Scenario, sysctls: &[(&str, &str)]) -> Result<(Testbed, Switch)> {
    emulate_with(sc, sysctls, vec![])
}

/// As `emulate`, with captures.
pub fn emulate_with(
    sc: &ecnlab::Scenario,
    sysctls: &[(&str, &str)],
    captures: Vec<ecnlab_switch::dataplane::Capture>,
) -> Result<(Testbed, Switch)> {
    let spec = TestbedSpec {
        hosts: sc.topology.host_count() as usize,
        host_sysctls: sysctls.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..TestbedSpec::default()
    };
    let tb = Testbed::new(&spec)?;
    let mut cfg = SwitchConfig::from_scenario(sc, &tb)?;
    cfg.captures = captures;
    let sw = Switch::start(tb.switch(), cfg)?;
    Ok((tb, sw))
}

/// Keeps a host's threads off the switch's core (the last one), where the machine has more than one.
pub fn off_switch_core() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores > 1 {
        // SAFETY: cpu_set_t is plain data; pid 0 is the calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for c in 0..cores - 1 {
                libc::CPU_SET(c, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
}

pub const PORT: u16 = 5001;

/// Sets IP_TOS (DSCP << 2 | ECN bits the kernel manages) on a socket.
pub fn set_dscp(s: &impl AsRawFd, dscp: u8) {
    let tos = (dscp as i32) << 2;
    // SAFETY: passes an int option.
    let r = unsafe { libc::setsockopt(s.as_raw_fd(), libc::IPPROTO_IP, libc::IP_TOS, (&tos as *const i32).cast(), 4) };
    assert_eq!(r, 0, "IP_TOS");
}

/// A receiver: accepts `n` connections and counts each one's bytes into `counts` until `stop`.
pub fn sink(
    listener: TcpListener,
    n: usize,
    counts: std::sync::Arc<Vec<std::sync::atomic::AtomicU64>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use std::sync::atomic::Ordering;
    std::thread::scope(|s| {
        for _ in 0..n {
            let (mut c, _) = listener.accept().expect("accept");
            let mut tag = [0u8; 1];
            c.read_exact(&mut tag).expect("flow tag");
            let counts = &counts;
            let stop = &stop;
            s.spawn(move || {
                off_switch_core();
                c.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
                let mut buf = vec![0u8; 1 << 16];
                while !stop.load(Ordering::Relaxed) {
                    match c.read(&mut buf) {
                        Ok(0) => break,
                        Ok(k) => {
                            counts[tag[0] as usize].fetch_add(k as u64, Ordering::Relaxed);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(_) => break,
                    }
                }
            });
        }
    });
}

/// A long-lived sender: connects to `dst`, writes its tag byte, then writes until `stop`; returns the
/// socket's TCP_INFO at the end.
pub fn source(dst: Ipv4Addr, tag: u8, dscp: u8, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> TcpInfo {
    off_switch_core();
    let mut s = connect(dst);
    set_dscp(&s, dscp);
    s.write_all(&[tag]).unwrap();
    let buf = vec![0x5au8; 1 << 16];
    s.set_write_timeout(Some(Duration::from_millis(100))).unwrap();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if let Err(e) = s.write(&buf) {
            if !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
                panic!("send: {e}");
            }
        }
    }
    tcp_info(&s)
}

/// Connects to `dst`:PORT, retrying while the listener starts.
pub fn connect(dst: Ipv4Addr) -> TcpStream {
    let t0 = Instant::now();
    loop {
        match TcpStream::connect_timeout(&SocketAddr::from((dst, PORT)), Duration::from_secs(1)) {
            Ok(s) => return s,
            Err(e) if t0.elapsed() < Duration::from_secs(3) => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("connect to {dst}: {e}"),
        }
    }
}

/// The head of the kernel's `struct tcp_info` (linux/tcp.h) up to tcpi_delivered_ce.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub flags: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
}

pub fn tcp_info(s: &impl AsRawFd) -> TcpInfo {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as u32;
    // SAFETY: the kernel writes at most `len` bytes of tcp_info.
    let r = unsafe {
        libc::getsockopt(s.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, (&mut info as *mut TcpInfo).cast(), &mut len)
    };
    assert_eq!(r, 0, "TCP_INFO");
    assert!(len as usize >= std::mem::size_of::<TcpInfo>(), "this kernel's tcp_info lacks delivered_ce");
    info
}

/// A counter of /proc/net/netstat or /proc/net/snmp (`IpExt`, `InCEPkts`) as the calling thread's
/// namespace has it.
pub fn netstat(group: &str, name: &str) -> u64 {
    for file in ["/proc/thread-self/net/netstat", "/proc/thread-self/net/snmp"] {
        let text = std::fs::read_to_string(file).expect(file);
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(&format!("{group}:"))).collect();
        for pair in lines.chunks(2) {
            if let [names, values] = pair {
                if let Some(i) = names.split_whitespace().position(|n| n == name) {
                    return values.split_whitespace().nth(i).and_then(|v| v.parse().ok()).expect("a number");
                }
            }
        }
    }
    panic!("no counter {group} {name}");
}
