//! The clients: long-lived and sized flows, incast rounds over kept connections, RTT probes.

use super::now_ns;
use super::proto::{Kind, Request, SinkReport, HEADER, REPORT};
use super::server::ZEROS;
use super::sock::{self, SockOpts, TcpInfo};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// The sender's view of one flow (times are `now_ns()`).
#[derive(Clone, Debug, Default)]
pub struct SenderRecord {
    pub flow: u32,
    /// Payload size; 0 for a long-lived flow.
    pub size: u64,
    /// Before `connect`: the flow's start (the handshake is part of its FCT, as in ecnlab's simulator).
    pub start_ns: u64,
    /// Just before the first payload byte was handed to the kernel.
    pub first_write_ns: u64,
    /// When the last payload byte was handed to the kernel (it may still be in the socket buffer).
    pub last_write_ns: u64,
    /// Payload bytes written.
    pub bytes: u64,
    /// The receiver's report of the flow (None if it never came: the flow did not complete).
    pub receiver: Option<SinkReport>,
    /// When that report reached the sender: the sender's view of completion (about half an RTT after the
    /// receiver's).
    pub report_ns: Option<u64>,
    /// The socket's congestion control and `TCP_INFO` at the end (retransmissions, timeouts, CE echoes).
    pub cc: String,
    pub info: TcpInfo,
}

impl SenderRecord {
    /// The flow completion time the records report: from the start (before `connect`) to the receiver's
    /// application reading the last byte, ns. `None` unless the flow completed.
    pub fn fct_ns(&self) -> Option<u64> {
        let r = self.receiver?;
        (self.size > 0 && r.bytes == self.size).then(|| r.last_byte_ns.saturating_sub(self.start_ns))
    }
}

fn header(kind: Kind, flow: u32, size: u64, start_ns: u64, o: &SockOpts) -> [u8; HEADER] {
    Request { kind, dscp: o.dscp, flow, size, start_ns }.encode()
}

fn write_payload(s: &mut TcpStream, size: u64) -> io::Result<()> {
    let mut left = size;
    while left > 0 {
        let n = left.min(ZEROS.len() as u64) as usize;
        s.write_all(&ZEROS[..n])?;
        left -= n as u64;
    }
    Ok(())
}

fn finish(mut s: TcpStream, mut rec: SenderRecord) -> io::Result<SenderRecord> {
    let mut rep = [0u8; REPORT];
    match s.read_exact(&mut rep) {
        Ok(()) => {
            rec.report_ns = Some(now_ns());
            rec.receiver = Some(SinkReport::decode(&rep));
        }
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => {}
        Err(e) => return Err(e),
    }
    rec.info = sock::stream_info(&s)?;
    rec.cc = sock::congestion(s.as_raw_fd())?;
    Ok(rec)
}

/// A sized flow of `size` bytes to `dst`: connect, send, wait for the receiver's report. Blocks until done
/// (or `timeout` passes without progress: an error).
pub fn sized_flow(
    dst: SocketAddrV4,
    flow: u32,
    size: u64,
    o: &SockOpts,
    timeout: Duration,
) -> io::Result<SenderRecord> {
    if size == 0 {
        return Err(io::Error::new(ErrorKind::InvalidInput, "size = 0: a sized flow needs at least 1 byte"));
    }
    let start_ns = now_ns();
    let mut s = sock::connect(dst, o)?;
    s.set_write_timeout(Some(timeout))?;
    s.set_read_timeout(Some(timeout))?;
    s.write_all(&header(Kind::Sink, flow, size, start_ns, o))?;
    let first_write_ns = now_ns();
    write_payload(&mut s, size)?;
    let rec = SenderRecord {
        flow,
        size,
        start_ns,
        first_write_ns,
        last_write_ns: now_ns(),
        bytes: size,
        ..Default::default()
    };
    finish(s, rec)
}

/// A long-lived flow to `dst` sending as fast as TCP allows until `until_ns`, then closing its side; the
/// receiver's report closes the record.
pub fn long_flow(dst: SocketAddrV4, flow: u32, until_ns: u64, o: &SockOpts) -> io::Result<SenderRecord> {
    let start_ns = now_ns();
    let mut s = sock::connect(dst, o)?;
    // Short write timeouts keep the deadline within a few ms even when the window is closed.
    s.set_write_timeout(Some(Duration::from_millis(5)))?;
    s.write_all(&header(Kind::Sink, flow, 0, start_ns, o))?;
    let first_write_ns = now_ns();
    let mut bytes = 0u64;
    while now_ns() < until_ns {
        match s.write(&ZEROS) {
            Ok(n) => bytes += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(e) => return Err(e),
        }
    }
    let last_write_ns = now_ns();
    s.shutdown(Shutdown::Write)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let rec = SenderRecord { flow, start_ns, first_write_ns, last_write_ns, bytes, ..Default::default() };
    finish(s, rec)
}

/// One incast round: requests sent to every server at `start_ns`, the round over when the last block is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundRecord {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Per server (in connection order): when its block's last byte was read.
    pub done_ns: Vec<u64>,
    /// Payload bytes read in the round (servers × block when complete).
    pub bytes: u64,
}

/// An incast client: one kept connection per server; each round asks every server for a block at once.
pub struct Incast {
    conns: Vec<TcpStream>,
    flows: Vec<u32>,
    opts: SockOpts,
    buf: Vec<u8>,
}

impl Incast {
    /// Opens the connections (`servers`: flow id and address of each).
    pub fn connect(servers: &[(u32, SocketAddrV4)], o: &SockOpts) -> io::Result<Incast> {
        if servers.is_empty() {
            return Err(io::Error::new(ErrorKind::InvalidInput, "incast needs at least 1 server"));
        }
        let conns = servers.iter().map(|(_, a)| sock::connect(*a, o)).collect::<io::Result<Vec<_>>>()?;
        Ok(Incast { conns, flows: servers.iter().map(|s| s.0).collect(), opts: o.clone(), buf: vec![0; 256 * 1024] })
    }

    /// One round of `block` bytes from every server; an error if a round makes no progress for `timeout`.
    pub fn round(&mut self, block: u64, timeout: Duration) -> io::Result<RoundRecord> {
        if block == 0 {
            return Err(io::Error::new(ErrorKind::InvalidInput, "block = 0: an incast block needs at least 1 byte"));
        }
        let start_ns = now_ns();
        for (c, &flow) in self.conns.iter_mut().zip(&self.flows) {
            c.write_all(&header(Kind::Fetch, flow, block, start_ns, &self.opts))?;
        }
        let n = self.conns.len();
        let mut got = vec![0u64; n];
        let mut done_ns = vec![0u64; n];
        let mut fds: Vec<libc::pollfd> =
            self.conns.iter().map(|c| libc::pollfd { fd: c.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
        let mut left = n;
        while left > 0 {
            // SAFETY: `fds` is a valid array of `n` pollfds.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), n as libc::nfds_t, timeout.as_millis() as i32) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if r == 0 {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!("incast round: {left} of {n} blocks missing after {timeout:?}"),
                ));
            }
            for i in 0..n {
                if fds[i].revents == 0 || got[i] == block {
                    continue;
                }
                let want = (block - got[i]).min(self.buf.len() as u64) as usize;
                let k = self.conns[i].read(&mut self.buf[..want])?;
                if k == 0 {
                    return Err(io::Error::new(
                        ErrorKind::UnexpectedEof,
                        format!("incast server {i} closed mid-block"),
                    ));
                }
                got[i] += k as u64;
                if got[i] == block {
                    done_ns[i] = now_ns();
                    fds[i].events = 0; // finished for this round
                    left -= 1;
                }
            }
        }
        let end_ns = *done_ns.iter().max().expect("at least one server");
        Ok(RoundRecord { start_ns, end_ns, done_ns, bytes: got.iter().sum() })
    }

    /// `TCP_INFO` of each connection (retransmissions and timeouts of the servers' blocks are on their side).
    pub fn infos(&self) -> io::Result<Vec<TcpInfo>> {
        self.conns.iter().map(sock::stream_info).collect()
    }
}

/// An RTT prober: a kept connection on which each probe is a `size`-byte message echoed back.
pub struct Prober {
    conn: TcpStream,
    buf: Vec<u8>,
}

/// One probe: sent at `at_ns`, answered after `rtt_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeSample {
    pub at_ns: u64,
    pub rtt_ns: u64,
}

impl Prober {
    pub fn connect(dst: SocketAddrV4, flow: u32, size: usize, o: &SockOpts) -> io::Result<Prober> {
        if size == 0 || size > 256 * 1024 {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("probe size = {size}: allowed 1..=262144 bytes"),
            ));
        }
        let mut conn = sock::connect(dst, o)?;
        conn.set_read_timeout(Some(Duration::from_secs(5)))?;
        conn.write_all(&header(Kind::Echo, flow, size as u64, now_ns(), o))?;
        Ok(Prober { conn, buf: vec![0; size] })
    }

    /// Sends one probe and waits for its echo.
    pub fn probe(&mut self) -> io::Result<ProbeSample> {
        let at_ns = now_ns();
        self.conn.write_all(&self.buf)?;
        self.conn.read_exact(&mut self.buf)?;
        Ok(ProbeSample { at_ns, rtt_ns: now_ns() - at_ns })
    }

    /// `count` probes, one every `interval` (start to start; a probe slower than the interval delays the next).
    pub fn series(&mut self, count: usize, interval: Duration) -> io::Result<Vec<ProbeSample>> {
        let mut out = Vec::with_capacity(count);
        let step = interval.as_nanos() as u64;
        let t0 = now_ns();
        for i in 0..count as u64 {
            let due = t0 + i * step;
            let now = now_ns();
            if due > now {
                std::thread::sleep(Duration::from_nanos(due - now));
            }
            out.push(self.probe()?);
        }
        Ok(out)
    }
}
