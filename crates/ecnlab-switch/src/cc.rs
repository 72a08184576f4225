//! DCTCP as a BPF `tcp_congestion_ops`: compile, load, register (RAII), select safely, and clean up.
//!
//! ecnlab's DCTCP is the BPF program in `bpf/dctcp.bpf.c` (RFC 8257 §3, DCTCP paper §3). Its lifecycle:
//!
//! 1. **Compile** at run time with clang (`clang -target bpf`, or `$ECNLAB_CLANG`), once per process. Run time
//!    rather than build.rs: a build would otherwise need clang on every machine that builds the workspace (or
//!    silently skip it and fail later); compiling takes about 0.1 s and only runs where DCTCP is used. The
//!    program declares the few kernel structures it reads and relies on CO-RE, so no kernel headers are needed.
//! 2. **Load** through libbpf, opened with `dlopen("libbpf.so.1")` (so the crate builds and links without it).
//! 3. **Register** through a BPF link: the struct_ops map is created with `BPF_F_LINK` and attached with
//!    `BPF_LINK_CREATE`. The registration lives exactly as long as the link's file descriptor, so when the process
//!    ends, on Ctrl-C, a panic or `kill -9`, the kernel unregisters the algorithm itself. [`Dctcp`] closes the link
//!    on drop. A registration not held by a link (`bpftool struct_ops register`, an older tool) survives its
//!    creator; [`cleanup_stale`] finds those by their name, `ecnlab_dctcp`, and removes them.
//! 4. **Select** it as a namespace's default ([`DefaultCc`]) or per socket (`traffic::sock::set_congestion`).
//!    The kernel leaks a reference to the struct_ops map on every refused selection (observed on this machine
//!    kind, Linux 6.18, issue 45), which keeps the map alive forever, so selections are checked before they are
//!    made and never expected to fail:
//!    the name must be in `tcp_available_congestion_control`, and the ops carry `TCP_CONG_NON_RESTRICTED`.
//!
//! A namespace default and every socket using the algorithm hold a reference to the map: after unregistering,
//! the map disappears only when they are gone (a [`DefaultCc`] guard restores the previous default on drop).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// The name DCTCP registers under (the `tcp_congestion_ops` name and the struct_ops map's name).
pub const DCTCP_NAME: &str = "ecnlab_dctcp";

/// The BPF source, compiled at run time.
pub const DCTCP_SOURCE: &str = include_str!("../bpf/dctcp.bpf.c");

/// Why DCTCP could not be provided. `Unavailable` means this machine cannot run it at all (DCTCP scenarios are
/// refused); the other kinds are failures of an attempt.
#[derive(Debug, thiserror::Error)]
pub enum CcError {
    #[error("DCTCP (BPF struct_ops) is unavailable here, DCTCP scenarios are refused: {0}")]
    Unavailable(String),
    #[error("DCTCP registration failed: {0}")]
    Register(String),
    #[error("congestion control selection refused: {0}")]
    Select(String),
    #[error("i/o error: {0}")]
    Io(String),
}

impl From<std::io::Error> for CcError {
    fn from(e: std::io::Error) -> CcError {
        CcError::Io(e.to_string())
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The raw bpf(2) commands used here (uapi/linux/bpf.h).

const BPF_MAP_DELETE_ELEM: c_int = 3;
const BPF_MAP_GET_NEXT_ID: c_int = 12;
const BPF_MAP_GET_FD_BY_ID: c_int = 14;
const BPF_OBJ_GET_INFO_BY_FD: c_int = 15;
const BPF_LINK_CREATE: c_int = 28;
const BPF_MAP_TYPE_STRUCT_OPS: u32 = 26;
const BPF_STRUCT_OPS: u32 = 44; // attach type
const BPF_F_LINK: u32 = 1 << 13;

/// A zeroed `union bpf_attr`, large enough for every command above.
#[repr(C, align(8))]
struct Attr([u8; 64]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 64])
    }
    fn put_u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn put_u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn get_u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes(self.0[off..off + 4].try_into().expect("4 bytes"))
    }
}

fn sys_bpf(cmd: c_int, attr: &mut Attr) -> std::io::Result<c_int> {
    // SAFETY: `attr` is a valid, writable buffer of the size passed; the kernel reads/writes only within it.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.0.as_mut_ptr(), attr.0.len() as u32) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as c_int)
    }
}

/// An owned file descriptor, closed on drop.
struct Fd(c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by this value and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// A struct_ops map as `bpftool struct_ops list` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructOpsMap {
    /// Map id.
    pub id: u32,
    /// Map name (the variable name of the ops in the BPF object: `ecnlab_dctcp` for ours).
    pub name: String,
    /// Whether it is registered through a BPF link (it then dies with its holder).
    pub link: bool,
}

/// Every struct_ops map on the machine (all namespaces: BPF objects are global).
pub fn struct_ops_maps() -> Result<Vec<StructOpsMap>, CcError> {
    let mut out = Vec::new();
    let mut id = 0u32;
    loop {
        let mut a = Attr::new();
        a.put_u32(0, id);
        match sys_bpf(BPF_MAP_GET_NEXT_ID, &mut a) {
            Ok(_) => id = a.get_u32(4),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
            Err(e) => return Err(bpf_unavailable("BPF_MAP_GET_NEXT_ID", e)),
        }
        let mut a = Attr::new();
        a.put_u32(0, id);
        let fd = match sys_bpf(BPF_MAP_GET_FD_BY_ID, &mut a) {
            Ok(fd) => Fd(fd),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue, // freed meanwhile
            Err(e) => return Err(bpf_unavailable("BPF_MAP_GET_FD_BY_ID", e)),
        };
        // struct bpf_map_info: type @0, id @4, map_flags @20, name[16] @24.
        let mut info = [0u8; 48];
        let mut a = Attr::new();
        a.put_u32(0, fd.0 as u32).put_u32(4, info.len() as u32).put_u64(8, info.as_mut_ptr() as u64);
        sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a).map_err(|e| bpf_unavailable("BPF_OBJ_GET_INFO_BY_FD", e))?;
        let word = |off: usize| u32::from_ne_bytes(info[off..off + 4].try_into().expect("4 bytes"));
        if word(0) != BPF_MAP_TYPE_STRUCT_OPS {
            continue;
        }
        let name = CStr::from_bytes_until_nul(&info[24..40]).map(|c| c.to_string_lossy().into_owned());
        out.push(StructOpsMap { id: word(4), name: name.unwrap_or_default(), link: word(20) & BPF_F_LINK != 0 });
    }
    Ok(out)
}

fn bpf_unavailable(what: &str, e: std::io::Error) -> CcError {
    CcError::Unavailable(format!("{what}: {e} (BPF needs root or CAP_BPF + CAP_NET_ADMIN)"))
}

/// Removes registrations named `ecnlab_dctcp` that no link holds (left by a tool that registered without a
/// link, e.g. `bpftool struct_ops register`, which outlive their creator); returns the map ids unregistered.
/// Link-held registrations belong to a live process and are left alone: the kernel removes them when it ends.
pub fn cleanup_stale() -> Result<Vec<u32>, CcError> {
    let mut removed = Vec::new();
    for m in struct_ops_maps()? {
        if m.name != DCTCP_NAME || m.link {
            continue;
        }
        let mut a = Attr::new();
        a.put_u32(0, m.id);
        let fd = match sys_bpf(BPF_MAP_GET_FD_BY_ID, &mut a) {
            Ok(fd) => Fd(fd),
            Err(_) => continue, // gone meanwhile
        };
        let key = 0u32;
        let mut a = Attr::new();
        a.put_u32(0, fd.0 as u32).put_u64(8, &key as *const u32 as u64);
        match sys_bpf(BPF_MAP_DELETE_ELEM, &mut a) {
            Ok(_) => removed.push(m.id),
            // Already unregistered, waiting for its last user (a socket, a namespace default) to let go.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(CcError::Register(format!("unregistering stale map id {}: {e}", m.id))),
        }
    }
    Ok(removed)
}

// ---------------------------------------------------------------------------------------------------------------
// Compilation.

/// The clang to use: `$ECNLAB_CLANG`, else `clang` on PATH.
fn clang() -> String {
    std::env::var("ECNLAB_CLANG").unwrap_or_else(|_| "clang".into())
}

/// Compiles the DCTCP source to a BPF object (in memory), once per process.
pub fn dctcp_object() -> Result<&'static [u8], CcError> {
    static OBJ: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    OBJ.get_or_init(|| compile(DCTCP_SOURCE)).as_deref().map_err(|e| CcError::Unavailable(e.clone()))
}

fn compile(source: &str) -> Result<Vec<u8>, String> {
    let cc = clang();
    let mut child = Command::new(&cc)
        .args(["-target", "bpf", "-O2", "-g", "-Wall", "-Werror", "-x", "c", "-c", "-", "-o", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `{cc}` to compile the BPF program ({e}); install clang (Debian: apt-get install clang) or set ECNLAB_CLANG"))?;
    child.stdin.take().expect("piped stdin").write_all(source.as_bytes()).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() || out.stdout.is_empty() {
        return Err(format!("`{cc} -target bpf` failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(out.stdout)
}

// ---------------------------------------------------------------------------------------------------------------
// libbpf, opened at run time.

/// `struct bpf_object_open_opts` of libbpf 1.x (its `sz` field makes a prefix of the struct valid for newer
/// versions). Padding is spelled out: libbpf refuses options whose bytes past the fields it knows are not zero.
#[repr(C)]
struct OpenOpts {
    sz: usize,
    object_name: *const c_char,
    relaxed_maps: bool,
    _pad0: [u8; 7],
    pin_root_path: *const c_char,
    _attach_prog_fd: u32,
    _pad1: u32,
    kconfig: *const c_char,
    btf_custom_path: *const c_char,
    kernel_log_buf: *mut c_char,
    kernel_log_size: usize,
    kernel_log_level: u32,
    _pad2: u32,
}

type Obj = c_void;
type Map = c_void;
type Link = c_void;

type OpenMemFn = unsafe extern "C" fn(*const c_void, usize, *const OpenOpts) -> *mut Obj;
type FindMapFn = unsafe extern "C" fn(*const Obj, *const c_char) -> *mut Map;
type SetMapFlagsFn = unsafe extern "C" fn(*mut Map, u32) -> c_int;
type LoadFn = unsafe extern "C" fn(*mut Obj) -> c_int;
type AttachFn = unsafe extern "C" fn(*const Map) -> *mut Link;
type DisconnectFn = unsafe extern "C" fn(*mut Link);
type DestroyFn = unsafe extern "C" fn(*mut Link) -> c_int;
type MapFdFn = unsafe extern "C" fn(*const Map) -> c_int;
type CloseFn = unsafe extern "C" fn(*mut Obj);

struct Libbpf {
    open_mem: OpenMemFn,
    find_map_by_name: FindMapFn,
    set_map_flags: SetMapFlagsFn,
    load: LoadFn,
    attach_struct_ops: AttachFn,
    link_disconnect: DisconnectFn,
    link_destroy: DestroyFn,
    map_fd: MapFdFn,
    close: CloseFn,
}

fn libbpf() -> Result<&'static Libbpf, CcError> {
    static LIB: OnceLock<Result<Libbpf, String>> = OnceLock::new();
    LIB.get_or_init(open_libbpf).as_ref().map_err(|e| CcError::Unavailable(e.clone()))
}

fn open_libbpf() -> Result<Libbpf, String> {
    let mut handle = std::ptr::null_mut();
    for name in [c"libbpf.so.1", c"libbpf.so"] {
        // SAFETY: dlopen with a valid NUL-terminated name; the handle is kept for the process's lifetime.
        handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if !handle.is_null() {
            break;
        }
    }
    if handle.is_null() {
        return Err("libbpf.so.1 not found (Debian: apt-get install libbpf1)".into());
    }
    let sym = |name: &CStr| -> Result<*mut c_void, String> {
        // SAFETY: looking up a symbol in a live handle.
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
        if p.is_null() {
            Err(format!("libbpf lacks {} (libbpf ≥ 0.8 needed)", name.to_string_lossy()))
        } else {
            Ok(p)
        }
    };
    // SAFETY: each symbol is libbpf's public function of exactly this C signature (libbpf.h, since 0.8).
    macro_rules! func {
        ($name:literal, $ty:ty) => {
            unsafe { std::mem::transmute::<*mut c_void, $ty>(sym($name)?) }
        };
    }
    Ok(Libbpf {
        open_mem: func!(c"bpf_object__open_mem", OpenMemFn),
        find_map_by_name: func!(c"bpf_object__find_map_by_name", FindMapFn),
        set_map_flags: func!(c"bpf_map__set_map_flags", SetMapFlagsFn),
        load: func!(c"bpf_object__load", LoadFn),
        attach_struct_ops: func!(c"bpf_map__attach_struct_ops", AttachFn),
        link_disconnect: func!(c"bpf_link__disconnect", DisconnectFn),
        link_destroy: func!(c"bpf_link__destroy", DestroyFn),
        map_fd: func!(c"bpf_map__fd", MapFdFn),
        close: func!(c"bpf_object__close", CloseFn),
    })
}

/// A loaded BPF object, closed on drop (its programs and map go with it unless something else holds them).
struct Object {
    lib: &'static Libbpf,
    obj: *mut Obj,
}

// SAFETY: the object is only touched at creation and at close (drop), never concurrently; libbpf objects have
// no thread affinity.
unsafe impl Send for Object {}
// SAFETY: no method reads or writes through `obj` via a shared reference.
unsafe impl Sync for Object {}

impl Drop for Object {
    fn drop(&mut self) {
        // SAFETY: `obj` came from bpf_object__open_mem and is closed once.
        unsafe { (self.lib.close)(self.obj) };
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Registration.

/// Checks what registering needs before trying: kernel BTF (CO-RE and struct_ops need it) and the BPF syscall.
pub fn check_available() -> Result<(), CcError> {
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Err(CcError::Unavailable(
            "the kernel has no BTF (/sys/kernel/btf/vmlinux; CONFIG_DEBUG_INFO_BTF)".into(),
        ));
    }
    struct_ops_maps()?;
    libbpf()?;
    dctcp_object()?;
    Ok(())
}

/// Fields drop in order: closing the link unregisters the algorithm, then the object's descriptors close.
struct Registration {
    _link: Fd,
    map_id: u32,
    _object: Object,
}

/// The process's registration, shared by every [`Dctcp`] handle (tests run in parallel threads).
static CURRENT: Mutex<Weak<Registration>> = Mutex::new(Weak::new());

/// ecnlab's DCTCP, registered as `ecnlab_dctcp` while any handle lives. Dropping the last handle (or the process
/// ending in any way) unregisters it.
#[derive(Clone)]
pub struct Dctcp {
    reg: Arc<Registration>,
}

impl std::fmt::Debug for Dctcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dctcp").field("name", &DCTCP_NAME).field("map_id", &self.reg.map_id).finish()
    }
}

impl Dctcp {
    /// Registers ecnlab's DCTCP, or joins this process's registration. Another process's live registration of
    /// the same name is waited for (up to `wait`), then reported; stale ones are removed first.
    pub fn register_waiting(wait: Duration) -> Result<Dctcp, CcError> {
        let mut cur = CURRENT.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(reg) = cur.upgrade() {
            return Ok(Dctcp { reg });
        }
        check_available()?;
        cleanup_stale()?;
        let t0 = Instant::now();
        let reg = loop {
            match register_once() {
                Err(CcError::Register(msg)) if msg.contains("File exists") && t0.elapsed() < wait => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                r => break Arc::new(r?),
            }
        };
        *cur = Arc::downgrade(&reg);
        Ok(Dctcp { reg })
    }

    /// [`Dctcp::register_waiting`] with a 3 s wait.
    pub fn register() -> Result<Dctcp, CcError> {
        Dctcp::register_waiting(Duration::from_secs(3))
    }

    /// The congestion-control name to select (`net.ipv4.tcp_congestion_control`, `TCP_CONGESTION`).
    pub fn name(&self) -> &'static str {
        DCTCP_NAME
    }

    /// The id of the registered struct_ops map (as `bpftool struct_ops list` shows it).
    pub fn map_id(&self) -> u32 {
        self.reg.map_id
    }
}

fn register_once() -> Result<Registration, CcError> {
    let lib = libbpf()?;
    let image = dctcp_object()?;
    let mut log = vec![0u8; 1 << 20];
    let oname = CString::new(DCTCP_NAME).expect("no NUL");
    let opts = OpenOpts {
        sz: std::mem::size_of::<OpenOpts>(),
        object_name: oname.as_ptr(),
        relaxed_maps: false,
        _pad0: [0; 7],
        pin_root_path: std::ptr::null(),
        _attach_prog_fd: 0,
        _pad1: 0,
        kconfig: std::ptr::null(),
        btf_custom_path: std::ptr::null(),
        kernel_log_buf: log.as_mut_ptr() as *mut c_char,
        kernel_log_size: log.len(),
        kernel_log_level: 0,
        _pad2: 0,
    };
    // SAFETY: the image and opts outlive the call; libbpf copies the image.
    let obj = unsafe { (lib.open_mem)(image.as_ptr() as *const c_void, image.len(), &opts) };
    if obj.is_null() {
        return Err(CcError::Register(format!("bpf_object__open_mem: {}", std::io::Error::last_os_error())));
    }
    let object = Object { lib, obj };
    // SAFETY: a live object and a NUL-terminated name.
    let map = unsafe { (lib.find_map_by_name)(obj, oname.as_ptr()) };
    if map.is_null() {
        return Err(CcError::Register(format!("the BPF object has no struct_ops map `{DCTCP_NAME}`")));
    }
    // SAFETY: a map of the live, not yet loaded object.
    let r = unsafe { (lib.set_map_flags)(map, BPF_F_LINK) };
    if r != 0 {
        return Err(CcError::Register(format!("bpf_map__set_map_flags: {}", errno_text(r))));
    }
    // SAFETY: loading a live object; `log` (referenced by opts) outlives the call.
    let r = unsafe { (lib.load)(obj) };
    if r != 0 {
        let text = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
        let tail: String =
            text.lines().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        return Err(CcError::Register(format!("bpf_object__load: {}\n{tail}", errno_text(r))));
    }
    // Writes the programs into the map's value. With BPF_F_LINK this does not register yet.
    // SAFETY: a map of the loaded object.
    let fake = unsafe { (lib.attach_struct_ops)(map) };
    if fake.is_null() {
        return Err(CcError::Register(format!(
            "writing the struct_ops map: {} (is `{DCTCP_NAME}` registered by another process?)",
            std::io::Error::last_os_error()
        )));
    }
    // libbpf's handle would delete the map element on destroy; the link below owns the registration instead.
    // SAFETY: `fake` is the live link just returned; disconnect makes destroy free it without detaching.
    unsafe {
        (lib.link_disconnect)(fake);
        (lib.link_destroy)(fake);
    }
    // SAFETY: a map of the loaded object.
    let map_fd = unsafe { (lib.map_fd)(map) };
    let mut a = Attr::new();
    a.put_u32(0, map_fd as u32).put_u32(8, BPF_STRUCT_OPS);
    let link = sys_bpf(BPF_LINK_CREATE, &mut a).map_err(|e| CcError::Register(format!("BPF_LINK_CREATE: {e}")))?;
    let link = Fd(link);
    let mut info = [0u8; 48];
    let mut a = Attr::new();
    a.put_u32(0, map_fd as u32).put_u32(4, info.len() as u32).put_u64(8, info.as_mut_ptr() as u64);
    sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a).map_err(|e| CcError::Register(format!("map info: {e}")))?;
    let map_id = u32::from_ne_bytes(info[4..8].try_into().expect("4 bytes"));
    Ok(Registration { _link: link, map_id, _object: object })
}

fn errno_text(r: c_int) -> String {
    std::io::Error::from_raw_os_error(-r).to_string()
}

// ---------------------------------------------------------------------------------------------------------------
// Selection in the current thread's network namespace.

const SYSCTL_CC: &str = "/proc/sys/net/ipv4/tcp_congestion_control";
const SYSCTL_AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Congestion-control algorithms the kernel offers (global: registrations are not per namespace).
pub fn available() -> Result<Vec<String>, CcError> {
    let s = std::fs::read_to_string(SYSCTL_AVAILABLE)?;
    Ok(s.split_whitespace().map(str::to_string).collect())
}

/// Refuses a selection the kernel would refuse: an unknown name (a refused selection leaks a reference to a
/// BPF algorithm's map). `reno` is always built in.
pub fn check_selectable(name: &str) -> Result<(), CcError> {
    let avail = available()?;
    if avail.iter().any(|a| a == name) {
        Ok(())
    } else {
        Err(CcError::Select(format!("`{name}` is not registered (available: {})", avail.join(" "))))
    }
}

/// The current thread's network namespace default congestion control, set for the guard's lifetime and
/// restored on drop (so the namespace stops referring to a BPF algorithm before it is unregistered).
#[derive(Debug)]
pub struct DefaultCc {
    previous: String,
    ns: NetNsId,
}

/// Identifies a network namespace (device and inode of /proc/thread-self/ns/net).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NetNsId(u64, u64);

fn current_netns() -> Result<NetNsId, CcError> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata("/proc/thread-self/ns/net")?;
    Ok(NetNsId(m.dev(), m.ino()))
}

impl DefaultCc {
    /// Selects `name` as the default of the current thread's network namespace (both ends of a DCTCP connection
    /// must use it, so set it in every host's namespace). The name is checked first; with `dctcp` given, the
    /// registration is what is selected.
    pub fn set(name: &str) -> Result<DefaultCc, CcError> {
        check_selectable(name)?;
        let previous = std::fs::read_to_string(SYSCTL_CC)?.trim().to_string();
        std::fs::write(SYSCTL_CC, name).map_err(|e| CcError::Select(format!("writing {SYSCTL_CC} = {name}: {e}")))?;
        Ok(DefaultCc { previous, ns: current_netns()? })
    }

    /// Selects ecnlab's DCTCP.
    pub fn dctcp(d: &Dctcp) -> Result<DefaultCc, CcError> {
        DefaultCc::set(d.name())
    }
}

/// The current thread's namespace default congestion control.
pub fn namespace_default() -> Result<String, CcError> {
    Ok(std::fs::read_to_string(SYSCTL_CC)?.trim().to_string())
}

impl Drop for DefaultCc {
    fn drop(&mut self) {
        // Only in the namespace it was set in (a thread may have moved); the previous default if it is still
        // registered, else the built-in Reno.
        if current_netns().ok() != Some(self.ns) {
            return;
        }
        let back = if check_selectable(&self.previous).is_ok() { self.previous.as_str() } else { "reno" };
        let _ = std::fs::write(SYSCTL_CC, back);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bpf_source_names_the_ops_as_the_rust_side_selects_it() {
        // The struct_ops map is found by this name and `ss` shows it: a rename on one side only would break both.
        assert!(DCTCP_SOURCE.contains(&format!("#define ECNLAB_CA_NAME \"{DCTCP_NAME}\"")));
        assert!(DCTCP_SOURCE.contains(&format!("struct tcp_congestion_ops {DCTCP_NAME} = {{")));
        assert!(DCTCP_NAME.len() < 16, "TCP_CA_NAME_MAX is 16 bytes with the NUL");
    }

    #[test]
    fn the_open_options_have_libbpf_1_layout() {
        // libbpf.h 1.1 (x86_64): kernel_log_buf at 56, kernel_log_level at 72, 80 bytes in all.
        assert_eq!(std::mem::offset_of!(OpenOpts, kconfig), 40);
        assert_eq!(std::mem::offset_of!(OpenOpts, kernel_log_buf), 56);
        assert_eq!(std::mem::offset_of!(OpenOpts, kernel_log_level), 72);
        assert_eq!(std::mem::size_of::<OpenOpts>(), 80);
    }

    #[test]
    fn the_ops_ask_for_ecn_and_any_namespace() {
        assert!(DCTCP_SOURCE.contains(".flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED"));
    }
}
