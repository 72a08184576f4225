//! The harness: a network namespace per host and one for the switch, joined by veth pairs, and its removal.
//!
//! Setup calls `ip` (iproute2): it runs once per run and is not timed. Each host `h<i>` gets `eth0` with
//! address 10.0.0.<i+1>/24 and MAC 02:ec:00:00:00:<i+1>, whose peer `p<i>` sits in the switch's namespace.
//! The veths are created straight inside their namespaces, so they never exist in the caller's namespace and
//! go when their namespaces go. Neighbours are static (permanent entries for every other host), so no ARP
//! crosses the switch; IPv6 is off in every namespace, so no neighbour discovery or MLD does either.
//!
//! Offloads are set with the SIOCETHTOOL ioctl (the legacy per-feature commands) from a thread inside the
//! namespace rather than with `ethtool`: it needs no extra package on the machine, and it reads every
//! setting back. Sysctls are written through /proc/sys from a thread inside the namespace (/proc/sys/net
//! resolves against the writer's namespace).
//!
//! Everything is named `ecnlab-<pid>-<n>-<role>`; a `Testbed` removes what it created when dropped (also
//! while a panic unwinds), and on SIGINT/SIGTERM a handler removes every live testbed's namespaces before
//! the process dies. `cleanup_leaked` removes what a killed run left: namespaces whose pid is dead.

use crate::error::{Error, Result};
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Once};

/// What every name the harness creates starts with.
pub const PREFIX: &str = "ecnlab-";
/// Where `ip netns` keeps its named namespaces (bind mounts of nsfs files).
pub const NETNS_DIR: &str = "/run/netns";

static SEQ: AtomicU32 = AtomicU32::new(0);
/// Every namespace a live testbed of this process owns: what the cleanup on a signal removes.
static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A named network namespace. Cheap to clone; it does not own the namespace (a `Testbed` does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Netns {
    name: String,
}

impl Netns {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn path(&self) -> PathBuf {
        Path::new(NETNS_DIR).join(&self.name)
    }

    fn open(&self) -> Result<File> {
        File::open(self.path()).map_err(|e| Error::os(format!("opening namespace {}", self.name), e))
    }

    /// Moves the calling thread into the namespace (`setns(CLONE_NEWNET)`): sockets it opens from then on
    /// live there. Only for threads the caller owns; `run` and `spawn` are the usual way.
    pub fn enter(&self) -> Result<()> {
        let f = self.open()?;
        // SAFETY: setns on a valid namespace file descriptor changes only this thread's network namespace.
        if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(Error::last_os(format!("entering namespace {}", self.name)));
        }
        Ok(())
    }

    /// Runs `f` on a thread inside the namespace and returns its result (a panic in `f` is passed on).
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        std::thread::scope(|s| {
            let h = s.spawn(|| self.enter().map(|()| f()));
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// Starts a thread inside the namespace running `f`; fails if it could not enter.
    pub fn spawn<T: Send + 'static>(
        &self,
        name: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<std::thread::JoinHandle<T>> {
        let ns = self.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let h = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let entered = ns.enter();
                let ok = entered.is_ok();
                let _ = tx.send(entered);
                // The caller gets the error and drops this handle; nothing is run outside the namespace.
                assert!(ok, "thread {} did not enter its namespace", std::thread::current().name().unwrap_or("?"));
                f()
            })
            .map_err(|e| Error::Io { what: format!("spawning thread {name}"), source: e })?;
        match rx.recv() {
            Ok(Ok(())) => Ok(h),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::Switch(format!("thread {name} died before entering {}", self.name))),
        }
    }

    /// A command whose process starts inside the namespace (setns between fork and exec).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Result<Command> {
        let f = self.open()?;
        let mut cmd = Command::new(program);
        // SAFETY: the closure only calls setns, which is async-signal-safe, on a descriptor it owns.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(cmd)
    }

    /// Writes a sysctl of the namespace (`net.ipv4.tcp_ecn` → /proc/sys/net/ipv4/tcp_ecn).
    pub fn sysctl(&self, key: &str, value: &str) -> Result<()> {
        let path = sysctl_path(key)?;
        self.run(|| std::fs::write(&path, value)).and_then(|r| {
            r.map_err(|e| Error::config(format!("sysctl {key}"), format!("cannot set to `{value}`: {e}")))
        })
    }

    /// Reads a sysctl of the namespace.
    pub fn read_sysctl(&self, key: &str) -> Result<String> {
        let path = sysctl_path(key)?;
        self.run(|| std::fs::read_to_string(&path))?
            .map(|s| s.trim().to_string())
            .map_err(|e| Error::Io { what: format!("reading sysctl {key}"), source: e })
    }

    /// The namespace's nsfs inode (what identifies it in /proc/<pid>/ns/net).
    fn inode(&self) -> Option<u64> {
        std::fs::metadata(self.path()).ok().map(|m| m.ino())
    }
}

/// Only namespaced keys (`net.…`) of sysctl's alphabet: a key naming anything else is refused, not written.
fn sysctl_path(key: &str) -> Result<PathBuf> {
    let ok = key.starts_with("net.")
        && key.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    if !ok {
        return Err(Error::config(
            format!("sysctl {key}"),
            "only a network namespace's keys (net.<name>.<name>…, letters, digits and _) can be set",
        ));
    }
    Ok(Path::new("/proc/sys").join(key.replace('.', "/")))
}

/// Which offloads the veths keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Offloads {
    /// Every segmentation, checksum and receive offload off on both ends of every link: the frames the
    /// switch sees are what a NIC without offloads would put on the wire.
    #[default]
    Off,
    /// Hosts keep generic segmentation (GSO, with the scatter-gather and checksum offloads it needs), so their
    /// stacks hand 64 KB bursts to the link as with TSO; TSO itself stays off so that the burst is cut into
    /// MTU frames before the switch sees it. The switch completes the checksums the hosts leave to hardware.
    KeepSegmentation,
}

/// What to build.
#[derive(Clone, Debug)]
pub struct TestbedSpec {
    pub hosts: usize,
    /// IP MTU of every link, bytes.
    pub mtu: u32,
    pub offloads: Offloads,
    /// Sysctls written in every host's namespace (`net.ipv4.tcp_ecn = 1`, …), in order.
    pub host_sysctls: Vec<(String, String)>,
    /// Cores (a bit mask) that process what a host receives (RPS on its `eth0`). A veth delivers a frame
    /// on the sending core, so without it every host's receive path (TCP, its ACKs) would run on the
    /// switch's core, inside the switch's send(); `None` leaves that as is.
    pub host_rx_cpus: Option<u64>,
}

/// Every core but the last (the switch's by default); `None` on a one-core machine.
pub fn all_but_last_core() -> Option<u64> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get()).min(64);
    (n > 1).then(|| (1u64 << (n - 1)) - 1)
}

impl Default for TestbedSpec {
    fn default() -> Self {
        let host_rx_cpus = all_but_last_core();
        TestbedSpec { hosts: 2, mtu: 1500, offloads: Offloads::Off, host_sysctls: Vec::new(), host_rx_cpus }
    }
}

/// A host: its namespace, its interface, and the switch port its link ends at.
#[derive(Clone, Debug)]
pub struct Host {
    pub ns: Netns,
    pub ifname: String,
    pub mac: [u8; 6],
    pub addr: Ipv4Addr,
    /// The veth in the switch's namespace.
    pub switch_port: String,
}

/// Hosts' and switch ports' MACs: locally administered (02:…), host i at 02:ec:00:00:00:<i+1>.
pub fn host_mac(i: usize) -> [u8; 6] {
    [0x02, 0xec, 0, 0, ((i + 1) >> 8) as u8, (i + 1) as u8]
}
fn switch_port_mac(i: usize) -> [u8; 6] {
    [0x02, 0xec, 1, 0, ((i + 1) >> 8) as u8, (i + 1) as u8]
}
pub fn host_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, ((i + 1) >> 8) as u8, (i + 1) as u8)
}

pub fn fmt_mac(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// Namespaces, veths, addresses, neighbours and sysctls of one run; removed when dropped.
pub struct Testbed {
    prefix: String,
    switch: Netns,
    hosts: Vec<Host>,
    /// Every namespace created so far, removed in reverse order on drop.
    created: Vec<Netns>,
}

impl Testbed {
    /// Builds the testbed: namespaces, links, addresses, static neighbours, offloads and sysctls. On any
    /// error, what was built is removed before the error returns.
    pub fn new(spec: &TestbedSpec) -> Result<Testbed> {
        if spec.hosts == 0 || spec.hosts > 250 {
            return Err(Error::config("hosts", format!("{} hosts; allowed 1 to 250", spec.hosts)));
        }
        if !(576..=9000).contains(&spec.mtu) {
            return Err(Error::config("mtu", format!("{} B; allowed 576 to 9000", spec.mtu)));
        }
        for (k, _) in &spec.host_sysctls {
            sysctl_path(k)?;
        }
        require_capabilities()?;
        install_signal_cleanup()?;
        // A run killed earlier left these behind: a run cleans before it builds.
        cleanup_leaked()?;
        let prefix = format!("{PREFIX}{}-{}-", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let mut tb =
            Testbed { switch: Netns { name: format!("{prefix}sw") }, prefix, hosts: Vec::new(), created: vec![] };
        tb.build(spec)?;
        Ok(tb)
    }

    fn add_ns(&mut self, name: String) -> Result<Netns> {
        let ns = Netns { name };
        // Registered before it exists: a signal arriving between the two finds nothing to remove, not a leak.
        LIVE.lock().unwrap_or_else(|p| p.into_inner()).push(ns.name.clone());
        self.created.push(ns.clone());
        ip(&["netns", "add", ns.name()])?;
        // No IPv6: nothing but the hosts' own traffic crosses the switch.
        for key in ["net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"] {
            ns.sysctl(key, "1")?;
        }
        Ok(ns)
    }

    fn build(&mut self, spec: &TestbedSpec) -> Result<()> {
        let sw = self.switch.name.clone();
        self.add_ns(sw.clone())?;
        let mtu = spec.mtu.to_string();
        for i in 0..spec.hosts {
            let ns = self.add_ns(format!("{}h{i}", self.prefix))?;
            for (k, v) in &spec.host_sysctls {
                ns.sysctl(k, v)?;
            }
            let host =
                Host { ifname: "eth0".into(), mac: host_mac(i), addr: host_addr(i), switch_port: format!("p{i}"), ns };
            let (hmac, smac) = (fmt_mac(&host.mac), fmt_mac(&switch_port_mac(i)));
            let n = host.ns.name();
            #[rustfmt::skip]
            ip(&["-n", n, "link", "add", "eth0", "address", &hmac, "mtu", &mtu, "type", "veth",
                 "peer", "name", &host.switch_port, "address", &smac, "mtu", &mtu, "netns", &sw])?;
            ip(&["-n", n, "addr", "add", &format!("{}/16", host.addr), "dev", "eth0"])?;
            set_offloads(&host.ns, "eth0", spec.offloads == Offloads::KeepSegmentation)?;
            set_offloads(&self.switch, &host.switch_port, false)?;
            if let Some(mask) = spec.host_rx_cpus {
                // sysfs shows the devices of the namespace that mounted it: `ip netns exec` mounts the
                // host's own before the write.
                let write = format!("echo {mask:x} > /sys/class/net/eth0/queues/rx-0/rps_cpus");
                ip(&["netns", "exec", n, "sh", "-c", &write])?;
            }
            ip(&["-n", n, "link", "set", "lo", "up"])?;
            ip(&["-n", n, "link", "set", "eth0", "up"])?;
            ip(&["-n", &sw, "link", "set", &host.switch_port, "up"])?;
            self.hosts.push(host);
        }
        for h in &self.hosts {
            for o in self.hosts.iter().filter(|o| o.addr != h.addr) {
                let (addr, mac) = (o.addr.to_string(), fmt_mac(&o.mac));
                ip(&["-n", h.ns.name(), "neigh", "add", &addr, "lladdr", &mac, "dev", "eth0", "nud", "permanent"])?;
            }
        }
        Ok(())
    }

    /// The run's unique prefix (`ecnlab-<pid>-<n>-`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
    pub fn switch(&self) -> &Netns {
        &self.switch
    }
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }
    pub fn host(&self, i: usize) -> &Host {
        &self.hosts[i]
    }
    /// Every namespace this testbed created.
    pub fn namespaces(&self) -> &[Netns] {
        &self.created
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for ns in self.created.iter().rev() {
            remove_namespace(ns);
            LIVE.lock().unwrap_or_else(|p| p.into_inner()).retain(|n| *n != ns.name);
        }
    }
}

fn path_cstring(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).expect("namespace paths hold no NUL")
}

/// Kills the processes inside a namespace (other than this one: its threads end with their closures), then
/// unmounts and unlinks its name, as `ip netns del` does. The namespace itself goes when its last user does.
fn remove_namespace(ns: &Netns) {
    if let Some(ino) = ns.inode() {
        for pid in pids_in(ino) {
            // SAFETY: sending a signal has no memory effects here.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    remove_mount(&path_cstring(&ns.path()));
}

/// `umount2(MNT_DETACH)` then `unlink`, as `ip netns del` does.
fn remove_mount(path: &CString) {
    // SAFETY: both calls take a valid NUL-terminated path; failures (already gone) are harmless.
    unsafe {
        libc::umount2(path.as_ptr(), libc::MNT_DETACH);
        libc::unlink(path.as_ptr());
    }
}

/// Processes (other than this one) whose network namespace has inode `ino`.
fn pids_in(ino: u64) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else { return vec![] };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| std::fs::metadata(format!("/proc/{pid}/ns/net")).is_ok_and(|m| m.ino() == ino))
        .collect()
}

/// Removes namespaces a run that died left behind: names with the harness's prefix whose pid no longer runs.
/// Returns the names removed.
pub fn cleanup_leaked() -> Result<Vec<String>> {
    let dir = match std::fs::read_dir(NETNS_DIR) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(Error::os(format!("listing {NETNS_DIR}"), e)),
    };
    let mut removed = vec![];
    for e in dir.flatten() {
        let Some(name) = e.file_name().to_str().map(String::from) else { continue };
        let Some(pid) = name.strip_prefix(PREFIX).and_then(|r| r.split('-').next()?.parse::<i32>().ok()) else {
            continue;
        };
        if !pid_alive(pid) {
            remove_namespace(&Netns { name: name.clone() });
            removed.push(name);
        }
    }
    Ok(removed)
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

/// Runs `ip` with `args`; its error output becomes the error.
fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| Error::Io { what: "running `ip` (iproute2 must be installed)".into(), source: e })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let cmd = format!("ip {}", args.join(" "));
    if stderr.contains("Operation not permitted") || stderr.contains("Permission denied") {
        return Err(Error::Permission { what: cmd, capability: "CAP_NET_ADMIN and CAP_SYS_ADMIN", detail: stderr });
    }
    Err(Error::Command { cmd, stderr })
}

/// The harness needs CAP_NET_ADMIN (veths, addresses, packet sockets' settings), CAP_SYS_ADMIN (mounting
/// namespace names, setns) and CAP_NET_RAW (packet sockets): checked first, for one clear error.
pub fn require_capabilities() -> Result<()> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| Error::Io { what: "reading /proc/self/status".into(), source: e })?;
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    for (bit, name) in [(12, "CAP_NET_ADMIN"), (21, "CAP_SYS_ADMIN"), (13, "CAP_NET_RAW")] {
        if eff & (1 << bit) == 0 {
            return Err(Error::Permission {
                what: "building network namespaces".into(),
                capability: name,
                detail: format!("the process's effective capabilities are {eff:#x}"),
            });
        }
    }
    Ok(())
}

// SIOCETHTOOL's legacy per-feature commands (linux/ethtool.h): get is set − 1.
const ETHTOOL_SRXCSUM: u32 = 0x15;
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfreqData {
    name: [u8; libc::IFNAMSIZ],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

/// Sets the offloads of `ifname` in `ns` (from a thread inside it) and reads each back. With
/// `segmentation`, GSO and what it depends on (scatter-gather, transmit checksums) stay on, TSO goes off.
fn set_offloads(ns: &Netns, ifname: &str, segmentation: bool) -> Result<()> {
    let s = segmentation as u32;
    // Order matters: the kernel drops GSO without SG, and SG without checksum offload.
    let wanted = [
        (ETHTOOL_STSO, 0),
        (ETHTOOL_SGRO, 0),
        (ETHTOOL_SGSO, s),
        (ETHTOOL_SSG, s),
        (ETHTOOL_STXCSUM, s),
        (ETHTOOL_SRXCSUM, 0),
    ];
    let ifname = ifname.to_string();
    ns.run(move || {
        // SAFETY: a datagram socket only carries the ioctls below and is closed at the end.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(Error::last_os("socket for SIOCETHTOOL"));
        }
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let ioctl = |cmd: u32, data: u32| -> Result<u32> {
            let mut v = EthtoolValue { cmd, data };
            let mut req = IfreqData { name: [0; libc::IFNAMSIZ], data: &mut v, _pad: [0; 16] };
            req.name[..ifname.len()].copy_from_slice(ifname.as_bytes());
            // SAFETY: SIOCETHTOOL reads the ifreq and the ethtool_value it points to, both live here.
            if unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL, &mut req) } != 0 {
                return Err(Error::last_os(format!("SIOCETHTOOL {cmd:#x} on {ifname}")));
            }
            Ok(v.data)
        };
        for (cmd, on) in wanted {
            ioctl(cmd, on)?;
        }
        for (cmd, on) in wanted {
            let got = ioctl(cmd - 1, 0)?;
            if (got != 0) != (on != 0) {
                return Err(Error::Switch(format!("{ifname}: offload {cmd:#x} is {got}, wanted {on}")));
            }
        }
        Ok(())
    })?
}

/// SIGINT and SIGTERM remove every live testbed's namespaces, then end the process as the signal would.
/// The handler only writes a byte to a pipe (what a handler may do); a watcher thread does the removal and
/// re-raises the signal with its default action.
pub fn install_signal_cleanup() -> Result<()> {
    static ONCE: Once = Once::new();
    static mut PIPE_W: i32 = -1;
    let mut err = None;
    ONCE.call_once(|| {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 fills `fds`.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            err = Some(Error::last_os("pipe for the signal cleanup"));
            return;
        }
        // SAFETY: written once here, before the handler that reads it is installed.
        unsafe { PIPE_W = fds[1] };
        let r = fds[0];
        let watcher = std::thread::Builder::new().name("ecnlab-netns-cleanup".into()).spawn(move || loop {
            let mut sig = 0u8;
            // SAFETY: reads one byte into `sig`.
            if unsafe { libc::read(r, (&mut sig as *mut u8).cast(), 1) } != 1 {
                continue;
            }
            for name in LIVE.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                remove_namespace(&Netns { name: name.clone() });
            }
            // SAFETY: restoring the default action and raising the signal ends the process as it would have.
            unsafe {
                libc::signal(sig as i32, libc::SIG_DFL);
                libc::raise(sig as i32);
            }
        });
        if let Err(e) = watcher {
            err = Some(Error::Io { what: "starting the signal cleanup thread".into(), source: e });
            return;
        }
        extern "C" fn on_signal(sig: i32) {
            let b = sig as u8;
            // SAFETY: write(2) is async-signal-safe; PIPE_W was set before the handler was installed.
            unsafe { libc::write(PIPE_W, (&b as *const u8).cast(), 1) };
        }
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: installs a handler that only calls write(2).
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
    });
    err.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_keys_outside_a_network_namespace_are_refused() {
        assert!(sysctl_path("net.ipv4.tcp_ecn").is_ok());
        for bad in ["kernel.panic", "net..x", "net.ipv4/../../kernel", "net.ipv4.tcp ecn", "net"] {
            let e = sysctl_path(bad).expect_err(bad);
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn addresses_and_macs_are_distinct_per_host() {
        let macs: std::collections::HashSet<_> = (0..250).map(host_mac).collect();
        let addrs: std::collections::HashSet<_> = (0..250).map(host_addr).collect();
        assert_eq!((macs.len(), addrs.len()), (250, 250));
        assert_eq!(host_addr(0), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(fmt_mac(&host_mac(1)), "02:ec:00:00:00:02");
    }
}
