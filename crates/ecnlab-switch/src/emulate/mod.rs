//! `ecnlab-sim emulate`: an ordinary scenario run on the software switch with the hosts' kernels as its TCP
//! stacks, reported in the simulator's run-directory layout.
//!
//! A run: the scenario is checked (`Scenario::check_emulatable`); DCTCP is registered if the scenario asks for
//! it; the testbed (a namespace per host) is built with each host's kernel set up as the scenario's TCP
//! (congestion control, ECN, SACK, restart after idle, the route's minimum RTO and initial window); a server
//! listens in every host; the switch starts with the scenario's ports; the workloads start as clients at their
//! instants; the statistics window opens at `observe.warmup` and closes at `duration`; then everything stops
//! and is removed, and the records become summary.json, fct.csv and series/ with the simulator's keys.
//!
//! Which kernel algorithm stands for each ecnlab congestion control (`host_stack`):
//! - `reno` (ecnlab: loss-based, not ECN-capable) → the kernel's `reno`, `net.ipv4.tcp_ecn = 0`;
//! - `ecnstar` (RFC 3168 ECN over standard TCP, as ECN*'s hosts ran it) → `reno` with `tcp_ecn = 1`;
//! - `dctcp` → ecnlab's own DCTCP as BPF struct_ops (`cc::Dctcp`, RFC 8257), the default of every host.

mod output;
mod tasks;

pub use output::{Emulated, SIMULATOR_ONLY};
pub use tasks::SERVER_PORT;

use crate::cc::{self, CcError, Dctcp};
use crate::dataplane::{Capture, Direction, Report, Sampling, Switch, SwitchConfig};
use crate::error::{Error, Result};
use crate::netns::{Offloads, Testbed, TestbedSpec};
use crate::traffic::now_ns;
use crate::traffic::report::Timeline;
use crate::traffic::server::{Server, ServerConfig, ServerResult};
use crate::traffic::sock::SockOpts;
use ecnlab::scenario::PcapDirection;
use ecnlab::transport::{CcConfig, Recovery};
use ecnlab::units::Time;
use ecnlab::Scenario;
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasks::{Clock, Records};

/// How a run is driven.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Stops the run (Ctrl-C): everything is removed and `ecnlab::Error::Interrupted` returned.
    pub cancel: ecnlab::Cancel,
    /// A progress line on stderr about once a second.
    pub progress: bool,
}

/// What the hosts' kernels run for a scenario's congestion control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostStack {
    /// `net.ipv4.tcp_congestion_control` of every host.
    pub cc: &'static str,
    /// `net.ipv4.tcp_ecn` of every host (1: request ECN, RFC 3168).
    pub tcp_ecn: u8,
}

/// The kernel algorithm standing for an ecnlab congestion control (`None`: not emulated).
pub fn host_stack(cc: &CcConfig) -> Option<HostStack> {
    match cc {
        CcConfig::Reno => Some(HostStack { cc: "reno", tcp_ecn: 0 }),
        CcConfig::Ecnstar => Some(HostStack { cc: "reno", tcp_ecn: 1 }),
        // DCTCP negotiates ECN whatever tcp_ecn says (TCP_CONG_NEEDS_ECN); 1 keeps the namespaces alike.
        CcConfig::Dctcp { .. } => Some(HostStack { cc: cc::DCTCP_NAME, tcp_ecn: 1 }),
        CcConfig::Pmsbe { .. } | CcConfig::Dcqcn(_) => None,
    }
}

/// The kernel's minimum RTO for a scenario's `min_rto`: the route attribute is whole milliseconds, so it is
/// rounded up.
pub fn rto_min_ms(min_rto: Time) -> u64 {
    min_rto.0.div_ceil(Time::from_ms(1).0).max(1)
}

fn cc_error(e: CcError) -> Error {
    match e {
        CcError::Unavailable(msg) => Error::config("transport.cc", format!("DCTCP cannot run here: {msg}")),
        e => Error::Switch(e.to_string()),
    }
}

/// The cores: the switch's and the hosts' (a bit mask), checked against the machine.
fn cores(sc: &Scenario) -> Result<(usize, Vec<usize>)> {
    let em = sc.emulation_settings();
    let n = std::thread::available_parallelism().map_or(1, |n| n.get()).min(64);
    let switch = em.switch_core.map_or(n - 1, |c| c as usize);
    if switch >= n {
        return Err(Error::config("emulation.switch_core", format!("core {switch}; this machine has 0 to {}", n - 1)));
    }
    let hosts: Vec<usize> = if em.host_cores.is_empty() {
        (0..n).filter(|&c| c != switch).collect()
    } else {
        em.host_cores.iter().map(|&c| c as usize).collect()
    };
    if let Some(c) = hosts.iter().find(|&&c| c >= n) {
        return Err(Error::config("emulation.host_cores", format!("core {c}; this machine has 0 to {}", n - 1)));
    }
    if hosts.is_empty() {
        #[rustfmt::skip]
        return Err(Error::config("emulation.host_cores", "no core is left for the hosts: the switch's thread busy-polls its own core; \
                                                          emulation needs at least 2 cores"));
    }
    Ok((switch, hosts))
}

/// Pins the calling thread to the cores of `mask`.
fn pin_mask(mask: u64) {
    // SAFETY: cpu_set_t is plain data; pid 0 is the calling thread; a failure leaves the thread where it was.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in (0..64).filter(|c| mask & (1 << c) != 0) {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// One emulation at a time on a machine: they would share the switch's core. The lock is an abstract Unix
/// socket's name, held while the socket is open: it leaves nothing on the machine when the process ends.
struct MachineLock(#[allow(dead_code)] std::os::unix::net::UnixListener);

impl MachineLock {
    fn take(cancel: &ecnlab::Cancel) -> Result<MachineLock> {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(b"ecnlab-emulate")
            .map_err(|e| Error::os("the emulation lock's name", e))?;
        let mut told = false;
        loop {
            match std::os::unix::net::UnixListener::bind_addr(&addr) {
                Ok(l) => return Ok(MachineLock(l)),
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    if !told {
                        eprintln!("emulate: another emulation runs on this machine; waiting for it to end");
                        told = true;
                    }
                    if cancel.is_cancelled() {
                        return Err(Error::Ecnlab(ecnlab::Error::Interrupted));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(Error::os("the emulation lock", e)),
            }
        }
    }
}

/// Sets the route to the other hosts with the scenario's minimum RTO and initial window (Linux takes both per
/// route: `rto_min`, `initcwnd`).
fn set_routes(tb: &Testbed, rto_ms: u64, initcwnd: u32) -> Result<()> {
    for h in tb.hosts() {
        let mut cmd = h.ns.command("ip")?;
        #[rustfmt::skip]
        cmd.args(["route", "replace", "10.0.0.0/16", "dev", &h.ifname, "proto", "kernel", "scope", "link",
                  "src", &h.addr.to_string(), "rto_min", &format!("{rto_ms}ms"), "initcwnd", &initcwnd.to_string()]);
        let out = cmd.output().map_err(|e| Error::Io { what: "running `ip route`".into(), source: e })?;
        if !out.status.success() {
            let cmd = format!("ip route replace … rto_min {rto_ms}ms initcwnd {initcwnd} (in {})", h.ns.name());
            return Err(Error::Command { cmd, stderr: String::from_utf8_lossy(&out.stderr).trim().into() });
        }
    }
    Ok(())
}

/// Waits until `ns`, showing progress and watching for cancellation.
fn wait_until(ns: u64, clock: &Clock, opts: &Options, name: &str) -> Result<()> {
    let mut shown = 0u64;
    loop {
        let now = now_ns();
        if opts.cancel.is_cancelled() {
            return Err(Error::Ecnlab(ecnlab::Error::Interrupted));
        }
        if now >= ns {
            return Ok(());
        }
        if opts.progress && now.saturating_sub(shown) >= 1_000_000_000 {
            shown = now;
            let (t, d) = (now.saturating_sub(clock.t0_ns) as f64 / 1e9, (clock.end_ns - clock.t0_ns) as f64 / 1e9);
            eprint!("\r\x1b[2Kemulating {name}: {t:.1} of {d:.1} s");
        }
        std::thread::sleep(Duration::from_nanos((ns - now).min(50_000_000)));
    }
}

/// What the run measured, before it becomes the run directory.
pub(crate) struct Measured {
    pub clock: Clock,
    pub timeline: Timeline,
    pub at_close: Report,
    pub last: Report,
    pub records: Arc<Records>,
    pub servers: Vec<ServerResult>,
    pub stack: HostStack,
    pub rto_min_ms: u64,
    pub switch_core: usize,
    pub host_cores: Vec<usize>,
    pub pcaps: Vec<String>,
    pub wall_time_s: f64,
}

/// Runs `sc` on the software switch; pcap files (if `[emulation] pcap` names ports) are written into
/// `pcap_dir`, which is created. Everything the run creates on the machine is removed before it returns.
pub fn run(sc: &Scenario, pcap_dir: Option<&Path>, opts: &Options) -> Result<Emulated> {
    let wall = Instant::now();
    sc.check_emulatable()?;
    let (switch_core, host_cores) = cores(sc)?;
    let host_mask: u64 = host_cores.iter().map(|c| 1u64 << c).sum();
    let stack = host_stack(&sc.transport.cc).expect("check_emulatable refuses the others");
    let rto_ms = rto_min_ms(sc.transport.min_rto);
    crate::netns::require_capabilities()?;
    let _lock = MachineLock::take(&opts.cancel)?;
    // Registered before any namespace refers to it; unregistered when the last namespace using it is gone.
    let _dctcp = match sc.transport.cc {
        CcConfig::Dctcp { .. } => {
            let d = Dctcp::register().map_err(cc_error)?;
            cc::check_selectable(d.name()).map_err(cc_error)?;
            Some(d)
        }
        _ => None,
    };
    let t = &sc.transport;
    let sysctls = [
        ("net.ipv4.tcp_congestion_control", stack.cc.to_string()),
        ("net.ipv4.tcp_ecn", stack.tcp_ecn.to_string()),
        ("net.ipv4.tcp_sack", ((t.recovery == Recovery::Sack) as u8).to_string()),
        ("net.ipv4.tcp_slow_start_after_idle", (t.restart_after_idle as u8).to_string()),
        // A run that is killed leaves its senders' sockets to the kernel as orphans, retrying into a switch that
        // is gone; with the default (8 retries from a 200 ms base) they hold their namespace, and a BPF DCTCP's
        // map, for minutes. One retry lets them go within about a second.
        ("net.ipv4.tcp_orphan_retries", "1".to_string()),
    ];
    let spec = TestbedSpec {
        hosts: sc.host_count() as usize,
        mtu: sc.mtu.0 as u32,
        offloads: Offloads::Off,
        host_sysctls: sysctls.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        host_rx_cpus: Some(host_mask),
    };
    let tb = Testbed::new(&spec)?;
    set_routes(&tb, rto_ms, t.initial_window)?;
    opts.cancel.check()?;

    // The run's origin leaves time to start the servers and the switch; every client waits for it.
    let t0_ns = now_ns() + 300_000_000;
    let clock = Clock { t0_ns, end_ns: t0_ns + sc.duration.0 / 1000 };
    let sample_ns = sc.observe.sample_interval.0 / 1000;
    let timeline =
        Timeline { t0_ns, sample_ns, window_from_ns: t0_ns + sc.observe.warmup.0 / 1000, window_to_ns: clock.end_ns };
    let mut servers = Vec::with_capacity(tb.hosts().len());
    for h in tb.hosts() {
        let cfg = ServerConfig { addr: SocketAddrV4::new(h.addr, SERVER_PORT), opts: SockOpts::default(), timeline };
        let server = h.ns.run(move || {
            // The server's threads inherit this thread's cores.
            pin_mask(host_mask);
            Server::start(cfg)
        })?;
        servers.push(server.map_err(|e| Error::os(format!("starting the server of {}", h.ns.name()), e))?);
    }

    let mut cfg = SwitchConfig::from_scenario(sc, &tb)?;
    cfg.core = Some(switch_core);
    let mut pcaps = Vec::new();
    let em = sc.emulation_settings();
    cfg.capture_snaplen = em.pcap_snaplen.0 as u32;
    if let (false, Some(dir)) = (em.pcap.is_empty(), pcap_dir) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Io { what: format!("creating {}", dir.display()), source: e })?;
        let plan = ecnlab::scenario::EmulatedPorts::of(&sc.topology);
        for p in &em.pcap {
            let link = plan.host_of(&p.port).expect("checked") as usize;
            let dirs: &[(Direction, &str)] = match p.direction {
                PcapDirection::Egress => &[(Direction::Egress, "egress")],
                PcapDirection::Ingress => &[(Direction::Ingress, "ingress")],
                PcapDirection::Both => &[(Direction::Egress, "egress"), (Direction::Ingress, "ingress")],
            };
            for &(direction, d) in dirs {
                let file = format!("{}-{d}.pcap", p.port.replace("->", "-"));
                cfg.captures.push(Capture { link, direction, path: dir.join(&file) });
                pcaps.push(format!("pcap/{file}"));
            }
        }
    }
    if sample_ns > 0 {
        let rows = (sc.duration.0 / sc.observe.sample_interval.0) as usize + 1;
        cfg.sampling = Some(Sampling { t0: Time::from_ns(t0_ns), step: sc.observe.sample_interval, rows });
    }
    let sw = Switch::start(tb.switch(), cfg)?;
    let records = Arc::new(Records::new(clock));
    let threads = tasks::start(sc, &tb, clock, &records, host_mask)?;

    let name = if sc.name.is_empty() { "scenario" } else { sc.name.as_str() };
    wait_until(timeline.window_from_ns, &clock, opts, name)?;
    sw.open_window();
    wait_until(clock.end_ns, &clock, opts, name)?;
    let at_close = sw.report()?;
    if opts.progress {
        eprint!("\r\x1b[2K");
    }
    // Long-lived flows close their side at the end and wait for their receiver's report: a moment for that.
    let grace = Instant::now();
    while threads.iter().any(|t| !t.is_finished()) && grace.elapsed() < Duration::from_millis(500) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let last = sw.stop()?;
    // With the switch stopped, connections still open stall and their servers give them up.
    let servers: Vec<ServerResult> = servers.into_iter().map(Server::stop).collect();
    // Clients still running (cut by the end) are left to time out; their flows are reported unfinished.
    drop(threads);
    let measured = Measured {
        clock,
        timeline,
        at_close,
        last,
        records,
        servers,
        stack,
        rto_min_ms: rto_ms,
        switch_core,
        host_cores,
        pcaps,
        wall_time_s: wall.elapsed().as_secs_f64(),
    };
    drop(tb);
    Ok(output::build(sc, measured))
}

/// Removes what killed emulations left: namespaces of dead runs and DCTCP registrations no process holds.
/// Returns one line per thing removed.
pub fn cleanup() -> Result<Vec<String>> {
    crate::netns::require_capabilities()?;
    let mut done: Vec<String> = crate::netns::cleanup_leaked()?.into_iter().map(|n| format!("namespace {n}")).collect();
    match cc::cleanup_stale() {
        Ok(ids) => done.extend(ids.into_iter().map(|id| format!("DCTCP registration (struct_ops map id {id})"))),
        // Without BPF there is nothing of ours to remove.
        Err(CcError::Unavailable(_)) => {}
        Err(e) => return Err(Error::Switch(e.to_string())),
    }
    Ok(done)
}

/// Where the pcap files of a run directory being written go.
pub fn pcap_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("pcap")
}
