//! Socket options of the endpoints: DSCP (`IP_TOS`), congestion control (`TCP_CONGESTION`), `TCP_INFO`.
//!
//! Options that shape the handshake are set before `connect`/`listen`: the SYN carries the DSCP, and an
//! algorithm with `TCP_CONG_NEEDS_ECN` (DCTCP) must be in place for the SYN to negotiate ECN. ECN itself has no
//! per-socket switch in Linux: it is the namespace's `net.ipv4.tcp_ecn` (1 = request it), or forced by such an
//! algorithm.

use crate::cc;
use ecnlab::units::Rate;
use std::ffi::c_int;
use std::io;
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// Per-socket options of an endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SockOpts {
    /// DSCP, 0..=63 (written as `IP_TOS = dscp << 2`; the kernel keeps the ECN bits its own).
    pub dscp: u8,
    /// Congestion control for this socket (`None`: the namespace default). Checked against the registered
    /// algorithms first, as a refused selection of a BPF algorithm leaks a reference in the kernel.
    pub cc: Option<String>,
    /// A cap on the sender's rate (`SO_MAX_PACING_RATE`; TCP paces its own segments when no fq qdisc does).
    pub max_pacing_rate: Option<Rate>,
}

impl SockOpts {
    /// Bad input is named with its range.
    pub fn validate(&self) -> Result<(), String> {
        if self.dscp > 63 {
            return Err(format!("dscp = {}: allowed 0..=63", self.dscp));
        }
        if let Some(cc) = &self.cc {
            if cc.is_empty() || cc.len() > 15 {
                return Err(format!("cc = {cc:?}: a congestion-control name of 1 to 15 bytes"));
            }
        }
        if let Some(r) = self.max_pacing_rate {
            if r.0 < 8 {
                return Err(format!("max_pacing_rate = {r}: at least 8 b/s (1 byte per second)"));
            }
        }
        Ok(())
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn check(r: c_int) -> io::Result<c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn setsockopt_bytes(fd: RawFd, level: c_int, name: c_int, v: &[u8]) -> io::Result<()> {
    // SAFETY: `v` is valid for its length during the call.
    check(unsafe { libc::setsockopt(fd, level, name, v.as_ptr().cast(), v.len() as libc::socklen_t) }).map(|_| ())
}

fn setsockopt_int(fd: RawFd, level: c_int, name: c_int, v: c_int) -> io::Result<()> {
    setsockopt_bytes(fd, level, name, &v.to_ne_bytes())
}

/// Sets the socket's DSCP.
pub fn set_dscp(fd: RawFd, dscp: u8) -> io::Result<()> {
    if dscp > 63 {
        return Err(invalid(format!("dscp = {dscp}: allowed 0..=63")));
    }
    setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, (dscp as c_int) << 2)
}

/// Selects the socket's congestion control, after checking the name is registered.
pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    cc::check_selectable(name).map_err(|e| invalid(e.to_string()))?;
    setsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_bytes())
}

/// The socket's congestion control, as the kernel reports it.
pub fn congestion(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `buf`.
    check(unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr().cast(), &mut len) })?;
    let end = buf[..len as usize].iter().position(|&b| b == 0).unwrap_or(len as usize);
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

fn apply(fd: RawFd, o: &SockOpts) -> io::Result<()> {
    o.validate().map_err(invalid)?;
    if o.dscp != 0 {
        set_dscp(fd, o.dscp)?;
    }
    if let Some(cc) = &o.cc {
        set_congestion(fd, cc)?;
    }
    if let Some(r) = o.max_pacing_rate {
        setsockopt_bytes(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &(r.0 / 8).to_ne_bytes())?;
    }
    Ok(())
}

fn tcp_socket() -> io::Result<RawFd> {
    // SAFETY: plain socket(2).
    check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

/// Connects with the options in place before the SYN; `TCP_NODELAY` on (requests and probes are small).
pub fn connect(dst: SocketAddrV4, o: &SockOpts) -> io::Result<TcpStream> {
    let fd = tcp_socket()?;
    // SAFETY: `fd` is a fresh socket owned from here by the TcpStream (closed on every path).
    let s = unsafe { TcpStream::from_raw_fd(fd) };
    apply(fd, o)?;
    let sa = sockaddr(dst);
    // SAFETY: `sa` is a valid sockaddr_in for the call.
    check(unsafe {
        libc::connect(fd, (&sa as *const libc::sockaddr_in).cast(), std::mem::size_of_val(&sa) as libc::socklen_t)
    })
    .map_err(|e| io::Error::new(e.kind(), format!("connect to {dst}: {e}")))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// A listening socket with the options in place (accepted sockets inherit the congestion control).
pub fn listen(addr: SocketAddrV4, o: &SockOpts) -> io::Result<TcpListener> {
    let fd = tcp_socket()?;
    // SAFETY: `fd` is a fresh socket owned from here by the TcpListener.
    let l = unsafe { TcpListener::from_raw_fd(fd) };
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    apply(fd, o)?;
    let sa = sockaddr(addr);
    // SAFETY: `sa` is a valid sockaddr_in for the call.
    check(unsafe {
        libc::bind(fd, (&sa as *const libc::sockaddr_in).cast(), std::mem::size_of_val(&sa) as libc::socklen_t)
    })
    .map_err(|e| io::Error::new(e.kind(), format!("bind {addr}: {e}")))?;
    // SAFETY: listen on a bound socket.
    check(unsafe { libc::listen(fd, 1024) })?;
    Ok(l)
}

/// `TCPI_OPT_ECN`: ECN was negotiated on the connection.
const TCPI_OPT_ECN: u8 = 8;

/// The fields of `struct tcp_info` (uapi/linux/tcp.h) the records use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// ECN negotiated.
    pub ecn: bool,
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// Retransmitted segments over the connection's life.
    pub total_retrans: u32,
    /// Segments delivered, and those delivered with ECE (CE echoed by the receiver).
    pub delivered: u32,
    pub delivered_ce: u32,
    /// Retransmission timeouts over the connection's life (`tcpi_total_rto`, Linux ≥ 6.7; `None` before).
    pub total_rto: Option<u16>,
}

/// Reads `TCP_INFO`.
pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    let mut buf = [0u8; 320];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `buf`.
    check(unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr().cast(), &mut len) })?;
    let len = len as usize;
    let u32_at = |o: usize| if o + 4 <= len { u32::from_ne_bytes(buf[o..o + 4].try_into().expect("4")) } else { 0 };
    Ok(TcpInfo {
        ecn: buf[5] & TCPI_OPT_ECN != 0,
        rtt_us: u32_at(68),
        snd_cwnd: u32_at(80),
        total_retrans: u32_at(100),
        delivered: u32_at(192),
        delivered_ce: u32_at(196),
        total_rto: (len >= 242).then(|| u16::from_ne_bytes(buf[240..242].try_into().expect("2"))),
    })
}

/// [`tcp_info`] of a stream.
pub fn stream_info(s: &TcpStream) -> io::Result<TcpInfo> {
    tcp_info(s.as_raw_fd())
}
