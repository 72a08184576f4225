//! The server of a host namespace: sinks flows (the receiver's records), serves incast blocks, echoes probes.

use super::now_ns;
use super::proto::{Kind, Request, SinkReport, HEADER};
use super::report::Timeline;
use super::sock::{self, SockOpts};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a blocked read or accept waits before looking at the stop flag.
const POLL: Duration = Duration::from_millis(50);
/// How long a write may make no progress before its connection is given up.
const STALLED_WRITE: Duration = Duration::from_secs(1);
/// Receive buffer of a connection, allocated once per connection.
const READ_BUF: usize = 256 * 1024;

/// Zeros to send: payload content does not matter to TCP or to the switch.
pub(crate) static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// Bytes read by the application, tallied against the run's timeline: the cumulative count at every sampling
/// instant t0 + kΔ and at the window's edges (a read at time t counts at every instant ≥ t).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tally {
    tl: Timeline,
    /// Payload bytes read so far.
    pub total: u64,
    /// Index of the first sampling instant at or after the connection was accepted.
    pub k0: u64,
    /// Cumulative bytes at instants k0, k0 + 1, … (up to the last read; later instants hold `total`).
    pub grid: Vec<u64>,
    /// Cumulative bytes at the window's start and end (`None`: not reached while reading).
    pub at_from: Option<u64>,
    pub at_to: Option<u64>,
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
}

impl Tally {
    pub fn new(tl: Timeline, opened_ns: u64) -> Tally {
        let k0 = if tl.sample_ns == 0 { 0 } else { opened_ns.saturating_sub(tl.t0_ns).div_ceil(tl.sample_ns) };
        Tally {
            tl,
            total: 0,
            k0,
            grid: Vec::new(),
            at_from: (tl.window_from_ns <= opened_ns).then_some(0),
            at_to: (tl.window_to_ns <= opened_ns).then_some(0),
            first_ns: None,
            last_ns: None,
        }
    }

    /// `n` bytes were read at `now`.
    pub fn read(&mut self, now: u64, n: u64) {
        if self.tl.sample_ns > 0 {
            while self.tl.t0_ns + (self.k0 + self.grid.len() as u64) * self.tl.sample_ns < now {
                self.grid.push(self.total);
            }
        }
        if self.at_from.is_none() && self.tl.window_from_ns < now {
            self.at_from = Some(self.total);
        }
        if self.at_to.is_none() && self.tl.window_to_ns < now {
            self.at_to = Some(self.total);
        }
        self.total += n;
        self.first_ns.get_or_insert(now);
        self.last_ns = Some(now);
    }

    /// Bytes read inside the window.
    pub fn window_bytes(&self) -> u64 {
        self.at_to.unwrap_or(self.total) - self.at_from.unwrap_or(self.total)
    }

    /// Cumulative bytes at sampling instant `k` (0 before the connection, `total` after the last read).
    pub fn at(&self, k: u64) -> u64 {
        if k < self.k0 {
            0
        } else {
            self.grid.get((k - self.k0) as usize).copied().unwrap_or(self.total)
        }
    }
}

/// The receiver's view of one sunk flow.
#[derive(Clone, Debug)]
pub struct ReceiverRecord {
    pub flow: u32,
    pub dscp: u8,
    /// Bytes announced (0: until the sender closed).
    pub size: u64,
    /// The sender's clock at the flow's start, from the request.
    pub start_ns: u64,
    pub accepted_ns: u64,
    /// All announced bytes arrived (for size 0: the sender closed cleanly).
    pub complete: bool,
    pub tally: Tally,
    /// The accepted socket's congestion control and whether ECN was negotiated.
    pub cc: String,
    pub ecn: bool,
}

/// What [`Server::stop`] returns.
#[derive(Debug, Default)]
pub struct ServerResult {
    pub records: Vec<ReceiverRecord>,
    /// Connections that failed (bad request, reset), one line each.
    pub errors: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub addr: SocketAddrV4,
    /// Options of the listening socket (its congestion control is inherited by accepted connections; the
    /// DSCP of each connection comes from its request).
    pub opts: SockOpts,
    pub timeline: Timeline,
}

/// A running server (acceptor thread + one thread per connection, all in the caller's network namespace).
pub struct Server {
    addr: SocketAddrV4,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    result: Arc<Mutex<ServerResult>>,
}

impl Server {
    /// Binds and starts accepting (port 0 picks a free port: see [`Server::addr`]).
    pub fn start(cfg: ServerConfig) -> io::Result<Server> {
        let listener = sock::listen(cfg.addr, &cfg.opts)?;
        let addr = match listener.local_addr()? {
            std::net::SocketAddr::V4(a) => a,
            a => return Err(io::Error::other(format!("listening on {a}: expected IPv4"))),
        };
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let result = Arc::new(Mutex::new(ServerResult::default()));
        let (s, r, tl) = (stop.clone(), result.clone(), cfg.timeline);
        let acceptor = std::thread::Builder::new()
            .name(format!("ecnlab-srv-{}", addr.port()))
            .spawn(move || accept_loop(listener, tl, s, r))?;
        Ok(Server { addr, stop, acceptor: Some(acceptor), result })
    }

    pub fn addr(&self) -> SocketAddrV4 {
        self.addr
    }

    /// Stops accepting, lets every connection finish (a connection still open is abandoned within 50 ms) and
    /// returns the records.
    pub fn stop(mut self) -> ServerResult {
        self.shutdown();
        std::mem::take(&mut *self.result.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: TcpListener, tl: Timeline, stop: Arc<AtomicBool>, result: Arc<Mutex<ServerResult>>) {
    let mut conns: Vec<JoinHandle<()>> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((s, peer)) => {
                let accepted_ns = now_ns();
                let (stop, res) = (stop.clone(), result.clone());
                let spawned = std::thread::Builder::new().name("ecnlab-conn".into()).spawn(move || {
                    let out = serve(s, tl, accepted_ns, &stop);
                    let mut res = res.lock().unwrap_or_else(|p| p.into_inner());
                    match out {
                        Ok(Some(rec)) => res.records.push(rec),
                        Ok(None) => {}
                        Err(e) => res.errors.push(format!("connection from {peer}: {e}")),
                    }
                });
                match spawned {
                    Ok(h) => conns.push(h),
                    Err(e) => result.lock().unwrap_or_else(|p| p.into_inner()).errors.push(format!("spawn: {e}")),
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => {
                result.lock().unwrap_or_else(|p| p.into_inner()).errors.push(format!("accept: {e}"));
                std::thread::sleep(POLL);
            }
        }
        conns.retain(|h| !h.is_finished());
    }
    for h in conns {
        let _ = h.join();
    }
}

/// Reads exactly `buf.len()` bytes, looking at the stop flag between timeouts. `Ok(false)`: clean end of stream
/// before the first byte.
fn read_exact_or_eof(s: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::Error::new(ErrorKind::UnexpectedEof, "stream ended inside a message")),
            Ok(n) => got += n,
            Err(e) if is_timeout(&e) => {
                if stop.load(Ordering::SeqCst) {
                    return Err(io::Error::new(ErrorKind::Interrupted, "server stopped"));
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

fn serve(mut s: TcpStream, tl: Timeline, accepted_ns: u64, stop: &AtomicBool) -> io::Result<Option<ReceiverRecord>> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(POLL))?;
    // A block or an echo that makes no progress for this long (its path stopped: the switch ended) ends the
    // connection, so that stopping the server never waits on a peer that is gone.
    s.set_write_timeout(Some(STALLED_WRITE))?;
    s.set_nodelay(true)?;
    let mut hdr = [0u8; HEADER];
    if !read_exact_or_eof(&mut s, &mut hdr, stop)? {
        return Ok(None);
    }
    let req = Request::decode(&hdr).map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
    if req.dscp != 0 {
        // This side's ACKs and data travel in the flow's class too.
        sock::set_dscp(s.as_raw_fd(), req.dscp)?;
    }
    match req.kind {
        Kind::Sink => sink(s, req, tl, accepted_ns, stop).map(Some),
        Kind::Fetch => fetch(s, req, stop).map(|_| None),
        Kind::Echo => echo(s, req, stop).map(|_| None),
    }
}

fn sink(
    mut s: TcpStream,
    req: Request,
    tl: Timeline,
    accepted_ns: u64,
    stop: &AtomicBool,
) -> io::Result<ReceiverRecord> {
    let mut tally = Tally::new(tl, accepted_ns);
    let mut buf = vec![0u8; READ_BUF];
    let want = if req.size == 0 { u64::MAX } else { req.size };
    let mut complete = false;
    while tally.total < want {
        let room = (want - tally.total).min(buf.len() as u64) as usize;
        match s.read(&mut buf[..room]) {
            Ok(0) => {
                complete = req.size == 0;
                break;
            }
            Ok(n) => tally.read(now_ns(), n as u64),
            Err(e) if is_timeout(&e) => {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    complete |= req.size > 0 && tally.total == req.size;
    let info = sock::stream_info(&s).unwrap_or_default();
    let cc = sock::congestion(s.as_raw_fd()).unwrap_or_default();
    if complete {
        let rep = SinkReport {
            first_byte_ns: tally.first_ns.unwrap_or(0),
            last_byte_ns: tally.last_ns.unwrap_or(0),
            bytes: tally.total,
        };
        // The sender may already be gone (a long flow's sender does not wait): not an error of the flow.
        let _ = s.write_all(&rep.encode());
    }
    Ok(ReceiverRecord {
        flow: req.flow,
        dscp: req.dscp,
        size: req.size,
        start_ns: req.start_ns,
        accepted_ns,
        complete,
        tally,
        cc,
        ecn: info.ecn,
    })
}

/// Incast: one block per request, requests repeated over the kept connection until it closes.
fn fetch(mut s: TcpStream, first: Request, stop: &AtomicBool) -> io::Result<()> {
    let mut req = first;
    loop {
        let mut left = req.size;
        while left > 0 {
            let n = left.min(ZEROS.len() as u64) as usize;
            s.write_all(&ZEROS[..n])?;
            left -= n as u64;
        }
        let mut hdr = [0u8; HEADER];
        if !read_exact_or_eof(&mut s, &mut hdr, stop)? {
            return Ok(());
        }
        req = Request::decode(&hdr).map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
        if req.kind != Kind::Fetch {
            return Err(io::Error::new(
                ErrorKind::InvalidData,
                format!("{:?} request on a fetch connection", req.kind),
            ));
        }
    }
}

/// Probes: every message of `size` bytes is sent back as soon as it is complete.
fn echo(mut s: TcpStream, req: Request, stop: &AtomicBool) -> io::Result<()> {
    if req.size == 0 || req.size > READ_BUF as u64 {
        return Err(io::Error::new(ErrorKind::InvalidData, format!("probe size {}: allowed 1..={READ_BUF}", req.size)));
    }
    let mut buf = vec![0u8; req.size as usize];
    while read_exact_or_eof(&mut s, &mut buf, stop)? {
        s.write_all(&buf)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tl() -> Timeline {
        Timeline { t0_ns: 1_000, sample_ns: 100, window_from_ns: 1_250, window_to_ns: 1_450 }
    }

    #[test]
    fn the_tally_counts_what_was_read_before_each_instant() {
        // A connection opened at 1 120 ns: its first sampling instant is k = 2 (1 200 ns).
        let mut t = Tally::new(tl(), 1_120);
        assert_eq!(t.k0, 2);
        t.read(1_150, 10); // before 1 200
        t.read(1_200, 5); // at 1 200: read by then
        t.read(1_310, 3); // after 1 200, the window start 1 250 and 1 300
        t.read(1_420, 7); // after 1 400
        assert_eq!(t.grid, vec![15, 15, 18]); // at 1 200, 1 300, 1 400
        assert_eq!((t.at(0), t.at(2), t.at(3), t.at(4), t.at(9)), (0, 15, 15, 18, 25));
        assert_eq!(t.at_from, Some(15));
        assert_eq!(t.at_to, None);
        // The window [1 250, 1 450] holds the reads at 1 310 and 1 420 (its end carried from `total`).
        assert_eq!(t.window_bytes(), 10);
        t.read(1_500, 100);
        assert_eq!(t.at_to, Some(25));
        assert_eq!(t.window_bytes(), 10);
        assert_eq!(t.total, 125);
    }

    #[test]
    fn a_flow_outside_the_window_has_no_window_bytes() {
        let mut before = Tally::new(tl(), 1_000);
        before.read(1_100, 50);
        assert_eq!(before.window_bytes(), 0);
        let mut after = Tally::new(tl(), 1_460);
        after.read(1_500, 50);
        assert_eq!(after.window_bytes(), 0);
    }
}
