//! The switch: one busy-polling thread forwarding frames through ecnlab's egress ports in virtual time.
//!
//! DESIGN. Time is the monotonic clock in nanoseconds, as `Time`. Every frame is an event at its kernel
//! receive timestamp: the host's NIC model (`Port::nic`, the link's rate and propagation delay) gives the
//! instant its last bit reaches the switch, and the frame waits in the link's line until the wall clock has
//! passed that instant by `lag`; then it is offered to its egress port at that instant. Each port asks for a
//! wake-up at the end of a transmission when a packet waits; the thread makes the departure at that very
//! instant. Arrivals and departures of all ports are taken in the order of their instants, so the ports see
//! what they would see in the simulator driven by the same arrival instants, and their occupancy and
//! sojourn figures are exact in virtual time even when the thread is descheduled for a few ms: it catches
//! up, late in wall time but in order. A departed frame is sent when its last bit would reach the host (the
//! departure instant + transmission time + propagation delay): the link's delay line.
//!
//! Several switches (a dumbbell's two) are driven by the same thread, with the same clock. A port between
//! two switches (`s0->s1`) is ecnlab's `Port` like any other; what it sends is not written to a veth but put
//! in its delay line, and when its last bit reaches the far switch (the departure instant plus transmission
//! time plus propagation delay, in virtual time) it is offered there to the next port on its way, as a frame
//! received at that instant. So queueing, marking and drops at the bottleneck are the simulator's, and an
//! arrival at the far switch is in order with its own hosts' arrivals.

mod config;
mod report;
mod rtt;

pub use config::{build_port, identity_dscp, Capture, Direction, Fifo, Link, Sampling, SwitchConfig, Trunk};
pub use report::{LinkReport, Quantiles, QueueSamples, Report};
pub use rtt::{RttMeter, RttSamples};

use crate::error::{Error, Result};
use crate::frame::{self, Headers, TcpSegment, ETH_HDR};
use crate::netns::Netns;
use crate::pcap::PcapWriter;
use crate::ring::Ring;
use ecnlab::mark::DropReason;
use ecnlab::observe::LogHist;
use ecnlab::packet::{Ecn, Packet, PacketId, PacketPool};
use ecnlab::port::{Admit, Departure, FifoPool, Port, SharedBuffer};
use ecnlab::units::{Bytes, Time};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

/// CLOCK_MONOTONIC now, nanoseconds.
pub fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime fills `ts`.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC, nanoseconds, read between two monotonic reads (the tightest of a few):
/// the kernel stamps received frames in real time, the switch runs on the monotonic clock.
fn realtime_offset() -> i64 {
    let mut best = (u64::MAX, 0i64);
    for _ in 0..5 {
        let a = mono_ns();
        let r = clock_ns(libc::CLOCK_REALTIME);
        let b = mono_ns();
        if b - a < best.0 {
            best = (b - a, r as i64 - (a + (b - a) / 2) as i64);
        }
    }
    best.1
}

/// Pins the calling thread to `core`.
pub fn pin_to_core(core: usize) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(Error::last_os(format!("pinning to core {core}")));
        }
    }
    Ok(())
}

/// The frames in flight, by packet id: their bytes, length, and the instant they were offered to a port.
struct FrameTable {
    slot: usize,
    bytes: Vec<u8>,
    len: Vec<u32>,
    offered: Vec<Time>,
}

impl FrameTable {
    fn ensure(&mut self, id: PacketId) {
        let need = id.0 as usize + 1;
        if self.len.len() < need {
            let n = need.next_power_of_two();
            self.bytes.resize(n * self.slot, 0);
            self.len.resize(n, 0);
            self.offered.resize(n, Time::ZERO);
        }
    }
    /// A received frame's packet (wire size, class, ECN, flow, egress) in the pool and its bytes here.
    fn store(
        &mut self,
        pool: &mut PacketPool,
        h: &Headers,
        egress: usize,
        class_of_dscp: &[u8; 64],
        data: &[u8],
        csum_not_ready: bool,
    ) -> PacketId {
        let ecn = match h.ecn {
            0 => Ecn::NotEct,
            frame::ECN_CE => Ecn::Ce,
            _ => Ecn::Ect,
        };
        #[rustfmt::skip]
        let p = Packet { flow: h.flow, dst: egress as u32, wire: h.l3_len.max(1), ecn,
                         class: class_of_dscp[h.dscp as usize], ..Packet::default() };
        let id = pool.alloc(p);
        self.ensure(id);
        self.len[id.0 as usize] = data.len() as u32;
        let slot = self.frame_mut(id);
        slot.copy_from_slice(data);
        if csum_not_ready {
            frame::complete_l4_checksum(slot, h);
        }
        id
    }

    fn frame(&self, id: PacketId) -> &[u8] {
        let i = id.0 as usize;
        &self.bytes[i * self.slot..i * self.slot + self.len[i] as usize]
    }

    fn frame_mut(&mut self, id: PacketId) -> &mut [u8] {
        let i = id.0 as usize;
        &mut self.bytes[i * self.slot..i * self.slot + self.len[i] as usize]
    }
}

/// A frame on a link: when it is due (the instant its last bit arrives), which packet, and for the uplink
/// line its egress link, for the downlink line whether its port sent it back to back with the one before.
#[derive(Clone, Copy)]
struct InFlight {
    due: Time,
    id: PacketId,
    tag: u32,
}

/// An egress port as the forwarding thread drives it, toward a host or toward another switch.
struct Out {
    port: Port,
    /// The wake-up the port asked for (the end of its transmission, a packet waiting).
    wake: Option<Time>,
    /// When the port's latest transmission ends.
    tx_end: Time,
    /// What it sent, until the last bit reaches the far end (a host: then it is written to the veth; a
    /// switch: then it is offered there).
    line: VecDeque<InFlight>,
    /// Offer to start of transmission, virtual time.
    sojourn: LogHist,
}

impl Out {
    fn new(port: Port, slots: usize) -> Out {
        Out { port, wake: None, tx_end: Time::ZERO, line: VecDeque::with_capacity(slots), sojourn: hist() }
    }
}

/// One link's state in the forwarding thread.
struct LinkState {
    ifname: String,
    ring: Ring,
    uplink: Port,
    up: VecDeque<InFlight>,
    /// The switch toward the host.
    out: Out,
    capture_in: Option<PcapWriter>,
    capture_out: Option<PcapWriter>,
    c: LinkCounters,
    /// Wall and ideal instants of the last frame sent.
    last_sent: Option<(u64, Time)>,
    gap: LogHist,
    ideal_gap: LogHist,
    lateness: LogHist,
}

/// A port from one switch to another, and what it has delivered there.
struct TrunkState {
    name: String,
    to: usize,
    out: Out,
    delivered: u64,
    delivered_bytes: u64,
}

/// Which egress port a frame takes at each switch. Egress ports are numbered host links first (port e
/// toward host link e), then the ports between switches (`links + t` for trunk t).
struct Routes {
    switch_of: Vec<usize>,
    switches: usize,
    /// At `from × switches + to`: the egress number of the port from switch `from` toward switch `to`.
    trunk: Vec<Option<usize>>,
}

impl Routes {
    /// `switch_of[e]`: the switch host link e hangs on; `trunks[t]`: the switches trunk t joins (from, to).
    fn new(switch_of: Vec<usize>, trunks: &[(usize, usize)]) -> Routes {
        let switches = switch_of.iter().chain(trunks.iter().flat_map(|(a, b)| [a, b])).max().map_or(1, |m| m + 1);
        let mut trunk = vec![None; switches * switches];
        for (t, &(a, b)) in trunks.iter().enumerate() {
            trunk[a * switches + b] = Some(switch_of.len() + t);
        }
        Routes { switch_of, switches, trunk }
    }

    /// The egress port at `switch` of a frame for host link `dst`: the host's own port on its switch, else
    /// the port toward the host's switch (`None`: no link there).
    fn hop(&self, switch: usize, dst: usize) -> Option<usize> {
        let to = self.switch_of[dst];
        if to == switch {
            Some(dst)
        } else {
            self.trunk[switch * self.switches + to]
        }
    }
}

/// The egress port numbered `e` (`Routes`).
fn out_mut<'a>(links: &'a mut [LinkState], trunks: &'a mut [TrunkState], e: usize) -> &'a mut Out {
    let n = links.len();
    match links.get_mut(e) {
        Some(l) => &mut l.out,
        None => &mut trunks[e - n].out,
    }
}

#[derive(Default, Clone, Copy)]
struct LinkCounters {
    rx_frames: u64,
    rx_bytes: u64,
    unknown_dst: u64,
    oversize: u64,
    uplink_overflow: u64,
    tx_frames: u64,
    tx_bytes: u64,
    tx_retries: u64,
    ce_written: u64,
}

/// Requests from the controlling thread.
enum Command {
    OpenWindow,
    Report(mpsc::SyncSender<Result<Report>>),
}

/// A running switch; `stop` (or drop) ends its thread.
pub struct Switch {
    stop: Arc<AtomicBool>,
    commands: mpsc::Sender<Command>,
    thread: Option<std::thread::JoinHandle<Result<Report>>>,
}

impl Switch {
    /// Starts the forwarding thread in the switch's namespace; returns once every ring is open.
    pub fn start(ns: &Netns, cfg: SwitchConfig) -> Result<Switch> {
        if cfg.links.is_empty() {
            return Err(Error::config("links", "a switch needs at least one link"));
        }
        if !(64..=65_535).contains(&cfg.capture_snaplen) {
            #[rustfmt::skip]
            return Err(Error::config("capture_snaplen", format!("{} B; allowed 64 to 65535", cfg.capture_snaplen)));
        }
        if !(64..=1 << 20).contains(&cfg.ring_frames) {
            return Err(Error::config("ring_frames", format!("{}; allowed 64 to 1048576", cfg.ring_frames)));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if let Some(c) = cfg.core.filter(|&c| c >= cores) {
            return Err(Error::config("core", format!("{c}; this machine has cores 0 to {}", cores - 1)));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let stop2 = stop.clone();
        let thread = ns.spawn("ecnlab-switch", move || {
            let mut engine = match Engine::new(cfg) {
                Ok(e) => e,
                Err(e) => {
                    let msg = e.to_string();
                    let _ = ready_tx.send(Err(e));
                    return Err(Error::Switch(msg));
                }
            };
            let _ = ready_tx.send(Ok(()));
            engine.run(&stop2, &rx)
        })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Switch { stop, commands: tx, thread: Some(thread) }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(Error::Switch("the forwarding thread died while starting".into())),
        }
    }

    /// Restarts the statistics window (occupancy, counters' differences, timing histograms) now.
    pub fn open_window(&self) {
        let _ = self.commands.send(Command::OpenWindow);
    }

    /// The figures now, the switch still running.
    pub fn report(&self) -> Result<Report> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.commands.send(Command::Report(tx)).map_err(|_| Error::Switch("the forwarding thread ended".into()))?;
        rx.recv().map_err(|_| Error::Switch("the forwarding thread ended".into()))?
    }

    /// Stops the thread; its last report.
    pub fn stop(mut self) -> Result<Report> {
        self.finish()
    }

    fn finish(&mut self) -> Result<Report> {
        self.stop.store(true, Ordering::Release);
        match self.thread.take() {
            Some(t) => t.join().unwrap_or_else(|_| Err(Error::Switch("the forwarding thread panicked".into()))),
            None => Err(Error::Switch("already stopped".into())),
        }
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.finish();
        }
    }
}

/// The forwarding thread's state.
struct Engine {
    links: Vec<LinkState>,
    trunks: Vec<TrunkState>,
    routes: Routes,
    /// Destination MAC → link.
    table: Vec<([u8; 6], usize)>,
    pool: PacketPool,
    fifos: FifoPool,
    shared: Option<SharedBuffer>,
    frames: FrameTable,
    dropped: Vec<(PacketId, usize, DropReason)>,
    class_of_dscp: [u8; 64],
    mtu: u32,
    lag: Time,
    uplink_limit: Bytes,
    /// The instant of the last event made (arrival or departure): events never go back before it.
    vnow: Time,
    window_start: Time,
    late_offers: u64,
    max_late_ns: u64,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC, and when it was last read.
    offset: i64,
    offset_read: u64,
    core: Option<usize>,
    memory_locked: bool,
    fifo: Option<Fifo>,
    loops: u64,
    /// Rounds of the loop that came more than 50 us after the one before (the thread descheduled or held
    /// up in the kernel), by their length.
    stalls: LogHist,
    /// Queue samples taken so far, the next instant due, and the most rows kept.
    samples: Option<(QueueSamples, usize)>,
    /// The TCP connections' round-trip times, from the data and ACK frames forwarded.
    rtt: RttMeter,
}

fn hist() -> LogHist {
    LogHist::default()
}

impl Engine {
    fn new(cfg: SwitchConfig) -> Result<Engine> {
        let core = match cfg.core {
            Some(c) => pin_to_core(c).map(|()| Some(c))?,
            None => None,
        };
        if let Some(f) = cfg.fifo {
            if !(1..=99).contains(&f.priority) {
                return Err(Error::config("fifo.priority", format!("{}; allowed 1 to 99", f.priority)));
            }
            let share = f.rest.0 as f64 / (f.run.0 + f.rest.0).max(1) as f64;
            if share < 0.06 {
                #[rustfmt::skip]
                return Err(Error::config("fifo.rest", format!(
                    "rests {:.1} % of the time; at least 6 % (the kernel throttles real-time threads above 95 %)",
                    share * 100.0)));
            }
            let param = libc::sched_param { sched_priority: f.priority };
            // SAFETY: sets the calling thread's (pid 0) policy; needs CAP_SYS_NICE.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
                return Err(Error::last_os("SCHED_FIFO for the forwarding thread (needs CAP_SYS_NICE)"));
            }
        }
        if let Some(n) = cfg.nice {
            // SAFETY: sets this thread's (its tid's) nice value.
            if unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as u32, n) } != 0 {
                return Err(Error::last_os(format!("setting the forwarding thread's nice value to {n}")));
            }
        }
        let mut links = Vec::with_capacity(cfg.links.len());
        let mut switch_of = Vec::with_capacity(cfg.links.len());
        let mut table = Vec::new();
        for (i, l) in cfg.links.into_iter().enumerate() {
            let ring = Ring::open(&l.ifname, cfg.ring_frames, cfg.mtu)?;
            let capture = |d| -> Result<Option<PcapWriter>> {
                match cfg.captures.iter().find(|c| c.link == i && c.direction == d) {
                    None => Ok(None),
                    Some(c) => PcapWriter::create(&c.path, cfg.capture_snaplen)
                        .map(Some)
                        .map_err(|e| Error::Io { what: format!("creating {}", c.path.display()), source: e }),
                }
            };
            table.push((l.host_mac, i));
            switch_of.push(l.switch);
            links.push(LinkState {
                ifname: l.ifname,
                ring,
                uplink: Port::nic(l.up_rate, l.up_delay, Bytes(cfg.mtu as u64)),
                up: VecDeque::with_capacity(cfg.ring_frames),
                out: Out::new(l.port, cfg.ring_frames),
                capture_in: capture(Direction::Ingress)?,
                capture_out: capture(Direction::Egress)?,
                c: LinkCounters::default(),
                last_sent: None,
                gap: hist(),
                ideal_gap: hist(),
                lateness: hist(),
            });
        }
        let joins: Vec<(usize, usize)> = cfg.trunks.iter().map(|t| (t.from, t.to)).collect();
        let routes = Routes::new(switch_of, &joins);
        // A trunk's line holds what its port sends in one propagation delay: never more than every ring's worth.
        let slots = cfg.ring_frames * links.len().max(1);
        #[rustfmt::skip]
        let trunks: Vec<TrunkState> = cfg.trunks.into_iter().map(|t| TrunkState {
            name: t.name, to: t.to, out: Out::new(t.port, slots), delivered: 0, delivered_bytes: 0,
        }).collect();
        if let Some(c) = cfg.captures.iter().find(|c| c.link >= links.len()) {
            return Err(Error::config("captures.link", format!("link {}; the switch has {}", c.link, links.len())));
        }
        let samples = cfg.sampling.map(|s| {
            let ports = links.iter().map(|l| &l.out).chain(trunks.iter().map(|t| &t.out));
            let queues: Vec<usize> = ports.map(|o| o.port.queue_count()).collect();
            let cols: usize = queues.iter().sum();
            let bytes = Vec::with_capacity(cols * s.rows);
            (QueueSamples { t0: s.t0, step: s.step.max(Time::from_ns(1)), queues, bytes }, s.rows)
        });
        let slot = (cfg.mtu as usize + ETH_HDR).next_multiple_of(64);
        let mut e = Engine {
            table,
            pool: PacketPool::default(),
            fifos: FifoPool::new(),
            shared: cfg.shared,
            frames: FrameTable { slot, bytes: vec![], len: vec![], offered: vec![] },
            dropped: Vec::with_capacity(64),
            class_of_dscp: cfg.class_of_dscp,
            mtu: cfg.mtu,
            lag: cfg.lag,
            uplink_limit: cfg.uplink_limit,
            vnow: Time::ZERO,
            window_start: Time::ZERO,
            late_offers: 0,
            max_late_ns: 0,
            offset: realtime_offset(),
            offset_read: mono_ns(),
            core,
            memory_locked: false,
            fifo: cfg.fifo,
            loops: 0,
            stalls: hist(),
            samples,
            rtt: RttMeter::default(),
            links,
            trunks,
            routes,
        };
        // Grow the packet pool and frame table to a full ring per link before the first frame, so that the
        // steady state allocates nothing.
        let warm: Vec<PacketId> =
            (0..cfg.ring_frames * e.links.len()).map(|_| e.pool.alloc(Packet::default())).collect();
        if let Some(&last) = warm.last() {
            e.frames.ensure(last);
        }
        warm.into_iter().for_each(|id| e.pool.free(id));
        if cfg.lock_memory {
            // SAFETY: locks the pages mapped now (rings, tables); fails without CAP_IPC_LOCK or a limit.
            e.memory_locked = unsafe { libc::mlockall(libc::MCL_CURRENT) } == 0;
        }
        let now = Time::from_ns(mono_ns());
        e.open_window(now);
        Ok(e)
    }

    fn run(&mut self, stop: &AtomicBool, commands: &mpsc::Receiver<Command>) -> Result<Report> {
        let mut last_ns = mono_ns();
        let mut rested_ns = last_ns;
        while !stop.load(Ordering::Acquire) {
            let mut now_ns = mono_ns();
            if let Some(f) = self.fifo.filter(|f| now_ns - rested_ns >= f.run.0 / 1000) {
                let rest = libc::timespec { tv_sec: 0, tv_nsec: (f.rest.0 / 1000) as i64 };
                // SAFETY: sleeps for `rest`; the interval is not needed back.
                unsafe { libc::nanosleep(&rest, std::ptr::null_mut()) };
                now_ns = mono_ns();
                rested_ns = now_ns;
                last_ns = now_ns;
            }
            if now_ns - last_ns > 50_000 {
                self.stalls.add(now_ns - last_ns, 1);
            }
            last_ns = now_ns;
            if now_ns - self.offset_read > 1_000_000 {
                self.offset = realtime_offset();
                self.offset_read = now_ns;
            }
            self.receive(now_ns);
            let horizon = Time::from_ns(now_ns).saturating_sub(self.lag);
            self.advance(horizon);
            self.transmit(now_ns)?;
            self.loops += 1;
            if self.loops.is_multiple_of(64) {
                while let Ok(c) = commands.try_recv() {
                    let at = self.vnow.max(horizon);
                    match c {
                        Command::OpenWindow => self.open_window(at),
                        Command::Report(tx) => {
                            let _ = tx.send(self.report(at));
                        }
                    }
                }
            }
        }
        let at = self.vnow.max(Time::from_ns(mono_ns()).saturating_sub(self.lag));
        let report = self.report(at).map(|mut r| {
            r.samples = self.samples.take().map(|(s, _)| s);
            r
        });
        for l in &mut self.links {
            for w in [l.capture_in.take(), l.capture_out.take()].into_iter().flatten() {
                w.finish()
                    .map_err(|e| Error::Io { what: format!("writing the capture of {}", l.ifname), source: e })?;
            }
        }
        if self.memory_locked {
            // SAFETY: undoes this thread's mlockall.
            unsafe { libc::munlockall() };
        }
        report
    }

    /// Takes every frame the rings hold: parsed, copied into the frame table, given a packet, and put in its
    /// uplink's line at the instant the host's NIC model delivers it.
    fn receive(&mut self, now_ns: u64) {
        let Engine { links, table, routes, pool, fifos, frames, class_of_dscp, mtu, uplink_limit, offset, rtt, .. } =
            self;
        for (i, l) in links.iter_mut().enumerate() {
            while let Some(f) = l.ring.peek() {
                let stamp = Time::from_ns(((f.stamp_ns as i64 - *offset) as u64).min(now_ns));
                l.c.rx_frames += 1;
                l.c.rx_bytes += f.len as u64;
                if let Some(w) = &mut l.capture_in {
                    let _ = w.write(f.stamp_ns, f.data);
                }
                let h = frame::parse(f.data);
                let dst = h.and_then(|h| table.iter().find(|(m, _)| *m == h.dst).map(|&(_, e)| e));
                // Its first egress port: its host's, or the one toward its host's switch.
                let first = dst.filter(|&e| e != i).and_then(|e| Some((e, routes.hop(routes.switch_of[i], e)?)));
                match (h, first) {
                    (Some(h), Some((e, first))) => {
                        if f.truncated || h.l3_len > *mtu {
                            l.c.oversize += 1;
                        } else if l.uplink.settled(stamp).holds_more_than(*uplink_limit) {
                            l.c.uplink_overflow += 1;
                        } else {
                            let id = frames.store(pool, &h, e, class_of_dscp, f.data, f.csum_not_ready);
                            if let Some(t) = frame::tcp_v4(f.data) {
                                let class = class_of_dscp[h.dscp as usize];
                                rtt.sent(t.key, t.seq, t.seq_len, t.fin, class, stamp);
                            }
                            // The host's NIC: FIFO at line rate from the instant the kernel saw the frame
                            // leave the host, then the link's propagation delay.
                            let due = match l.uplink.offer(stamp, id, 0, pool, fifos, None) {
                                Admit::Sent(d) => d.arrives,
                                other => unreachable!("a NIC sends what it is offered: {other:?}"),
                            };
                            l.up.push_back(InFlight { due, id, tag: first as u32 });
                        }
                    }
                    _ => l.c.unknown_dst += 1,
                }
                l.ring.release();
            }
        }
    }

    /// Makes every arrival and departure due by `horizon`, in the order of their instants (departures first
    /// at equal instants, as the simulator makes the end of a transmission before an arrival then). Arrivals
    /// come from the hosts' links and from the links between switches alike.
    fn advance(&mut self, horizon: Time) {
        let n = self.links.len();
        loop {
            let from_hosts = self.links.iter().enumerate().filter_map(|(i, l)| Some((l.up.front()?.due, i)));
            let from_switches =
                self.trunks.iter().enumerate().filter_map(|(t, k)| Some((k.out.line.front()?.due, n + t)));
            let arrival = from_hosts.chain(from_switches).min();
            let outs = self.links.iter().map(|l| &l.out).chain(self.trunks.iter().map(|t| &t.out));
            let wake = outs.enumerate().filter_map(|(e, o)| Some((o.wake?, e))).min();
            match (arrival, wake) {
                (_, Some((t, e))) if t <= horizon && arrival.is_none_or(|(ta, _)| t <= ta) => {
                    self.sample_before(t);
                    self.wake(e, t)
                }
                (Some((t, i)), _) if t <= horizon && i < n => {
                    self.sample_before(t);
                    let f = self.links[i].up.pop_front().expect("a frame waits");
                    self.offer(f.tag as usize, f.id, t);
                }
                (Some((t, i)), _) if t <= horizon => {
                    self.sample_before(t);
                    let k = &mut self.trunks[i - n];
                    let f = k.out.line.pop_front().expect("a frame waits");
                    k.delivered += 1;
                    k.delivered_bytes += self.frames.len[f.id.0 as usize] as u64;
                    // Received by the far switch at the instant its last bit got there: on to its next port.
                    let dst = self.pool.get(f.id).dst as usize;
                    match self.routes.hop(k.to, dst) {
                        Some(e) => self.offer(e, f.id, t),
                        None => self.pool.free(f.id),
                    }
                }
                _ => break,
            }
        }
        // Every event up to the horizon is made: instants up to it are final.
        self.sample_before(horizon + Time(1));
    }

    /// Takes the queue samples due strictly before `t`: the state after every event up to each instant.
    fn sample_before(&mut self, t: Time) {
        let Some((s, rows)) = &mut self.samples else { return };
        let cols: usize = s.queues.iter().sum();
        loop {
            let taken = s.bytes.len() / cols.max(1);
            let at = s.t0 + Time(s.step.0 * taken as u64);
            if taken >= *rows || at >= t {
                return;
            }
            let outs = self.links.iter_mut().map(|l| &mut l.out).chain(self.trunks.iter_mut().map(|t| &mut t.out));
            for o in outs {
                // Settled at `at`: every event before `t` is made, and none of this port was due in between.
                let view = o.port.settled(at.max(self.vnow));
                s.bytes.extend(view.queue_backlogs());
            }
        }
    }

    /// Offers a frame to egress port `e` (`Routes`) at its instant `due`.
    fn offer(&mut self, e: usize, id: PacketId, due: Time) {
        let t = if due < self.vnow {
            // Seen after the virtual clock passed its instant (the ring handed it over more than `lag`
            // late): offered now, and counted.
            self.late_offers += 1;
            self.max_late_ns = self.max_late_ns.max((self.vnow.0 - due.0) / 1000);
            self.vnow
        } else {
            due
        };
        self.vnow = t;
        self.frames.offered[id.0 as usize] = t;
        let o = out_mut(&mut self.links, &mut self.trunks, e);
        match o.port.offer(t, id, 0, &mut self.pool, &mut self.fifos, self.shared.as_mut()) {
            Admit::Sent(d) => self.departed(e, t, d),
            Admit::Queued { wake: Some(w), .. } => o.wake = Some(w),
            Admit::Queued { wake: None, .. } => {
                if o.port.is_free(t) {
                    let d = o.port.depart(t, &mut self.pool, &mut self.fifos, self.shared.as_mut(), &mut self.dropped);
                    if let Some(d) = d {
                        self.departed(e, t, d);
                    }
                }
            }
            Admit::Dropped(_) => self.pool.free(id),
        }
        self.free_dropped();
    }

    /// Port `e`'s transmission ended at `t` with a packet waiting: its next departure, back to back.
    fn wake(&mut self, e: usize, t: Time) {
        self.vnow = t;
        let o = out_mut(&mut self.links, &mut self.trunks, e);
        o.wake = None;
        o.port.wake(t);
        if let Some(d) = o.port.depart(t, &mut self.pool, &mut self.fifos, self.shared.as_mut(), &mut self.dropped) {
            self.departed(e, t, d);
        }
        self.free_dropped();
    }

    fn free_dropped(&mut self) {
        for (id, _, _) in self.dropped.drain(..) {
            self.pool.free(id);
        }
    }

    fn departed(&mut self, e: usize, t: Time, d: Departure) {
        let to_host = e < self.links.len();
        let o = out_mut(&mut self.links, &mut self.trunks, e);
        o.wake = d.wake;
        // Back to back: it starts the instant the one before ended (a wake-up's departure, or an arrival
        // that found the transmitter just free).
        let back_to_back = t == o.tx_end;
        o.tx_end = t + o.port.tx_time(d.wire);
        o.sojourn.add((t.0 - self.frames.offered[d.id.0 as usize].0) / 1000, 1);
        // Due when its last bit reaches the far end: its host, or the next switch, where it arrives then.
        o.line.push_back(InFlight { due: d.arrives, id: d.id, tag: back_to_back as u32 });
        // An ACK's sample is taken when it reaches the data's sender (its last bit, in virtual time): at the
        // port toward a host, so a frame crossing an inter-switch port is not parsed for it there.
        if !to_host {
            return;
        }
        if let Some(t) = frame::tcp_v4(self.frames.frame(d.id)).filter(|t| t.has_ack) {
            self.rtt.acked(&TcpSegment::reverse(&t.key), t.ack, d.arrives);
        }
    }

    /// Sends every frame whose last bit has reached its host by now (`now_ns`), CE written where its port
    /// marked it.
    fn transmit(&mut self, now_ns: u64) -> Result<()> {
        for l in &mut self.links {
            while let Some(&f) = l.out.line.front() {
                if f.due.0 / 1000 > now_ns {
                    break;
                }
                let p = self.pool.get_mut(f.id);
                let bytes = self.frames.frame_mut(f.id);
                if p.ecn == Ecn::Ce {
                    // `cwr` (unused by a switch) remembers a CE written before a send that must be retried.
                    p.cwr |= frame::parse(bytes).is_some_and(|h| frame::set_ce(bytes, &h));
                }
                if !l.ring.send(bytes)? {
                    l.c.tx_retries += 1;
                    break;
                }
                l.c.ce_written += p.cwr as u64;
                let sent_ns = mono_ns();
                if let Some(w) = &mut l.capture_out {
                    let _ = w.write((sent_ns as i64 + self.offset) as u64, bytes);
                }
                l.c.tx_frames += 1;
                l.c.tx_bytes += bytes.len() as u64;
                l.lateness.add(sent_ns.saturating_sub(f.due.0 / 1000), 1);
                if let (Some((wall, ideal)), true) = (l.last_sent, f.tag == 1) {
                    l.gap.add(sent_ns - wall, 1);
                    l.ideal_gap.add((f.due.0 - ideal.0) / 1000, 1);
                }
                l.last_sent = Some((sent_ns, f.due));
                self.pool.free(f.id);
                l.out.line.pop_front();
            }
        }
        Ok(())
    }

    fn open_window(&mut self, at: Time) {
        self.vnow = self.vnow.max(at);
        self.window_start = self.vnow;
        for l in &mut self.links {
            l.out.port.start_window(self.vnow);
            for h in [&mut l.gap, &mut l.ideal_gap, &mut l.lateness, &mut l.out.sojourn] {
                h.clear();
            }
        }
        for t in &mut self.trunks {
            t.out.port.start_window(self.vnow);
            t.out.sojourn.clear();
        }
        self.stalls.clear();
        self.rtt.clear();
        if let Some(s) = &mut self.shared {
            s.occupancy.reset(self.vnow);
        }
    }

    fn report(&mut self, at: Time) -> Result<Report> {
        self.vnow = self.vnow.max(at);
        let (at, window) = (self.vnow, self.vnow - self.window_start);
        let mut links = Vec::with_capacity(self.links.len());
        for l in &mut self.links {
            let (_, ring_drops) = l.ring.statistics()?;
            let c = l.c;
            links.push(LinkReport {
                ifname: l.ifname.clone(),
                ring_drops,
                unknown_dst: c.unknown_dst,
                oversize: c.oversize,
                uplink_overflow: c.uplink_overflow,
                tx_retries: c.tx_retries,
                ce_written: c.ce_written,
                gap_ns: Quantiles::of(&l.gap),
                ideal_gap_ns: Quantiles::of(&l.ideal_gap),
                lateness_ns: Quantiles::of(&l.lateness),
                ..port_report(&mut l.out, at, window, (c.rx_frames, c.rx_bytes), (c.tx_frames, c.tx_bytes))
            });
        }
        let mut trunks = Vec::with_capacity(self.trunks.len());
        for t in &mut self.trunks {
            // Between switches the port's figures are all there is (no ring, no veth); what it "sent" is what it
            // delivered to the far switch.
            #[rustfmt::skip]
            trunks.push(LinkReport { ifname: t.name.clone(),
                                     ..port_report(&mut t.out, at, window, (0, 0), (t.delivered, t.delivered_bytes)) });
        }
        Ok(Report {
            at,
            window,
            links,
            trunks,
            late_offers: self.late_offers,
            max_late_ns: self.max_late_ns,
            core: self.core,
            memory_locked: self.memory_locked,
            loops: self.loops,
            stalls_ns: Quantiles::of(&self.stalls),
            rtt: self.rtt.samples(),
            pool: self.shared.as_mut().map(|p| p.occupancy.stats(at)),
            // Only the last report carries them (`run`): a report asked for while forwarding copies nothing big.
            samples: None,
        })
    }
}

/// An egress port's own figures at `at` (virtual time), with the frames received and sent (count, bytes);
/// the data plane's other counters zero.
fn port_report(o: &mut Out, at: Time, window: Time, rx: (u64, u64), tx: (u64, u64)) -> LinkReport {
    let mut s = o.port.settled(at);
    LinkReport {
        ifname: String::new(),
        counters: s.window_counters(),
        run_counters: s.counters(),
        arrival_backlog_min: s.arrival_backlog_min(),
        first_mark: s.first_mark().map(|(t, _)| t),
        occupancy: s.port_occupancy(),
        queues: s.queue_reports(),
        utilization: s.utilization(window),
        rx_frames: rx.0,
        rx_bytes: rx.1,
        ring_drops: 0,
        unknown_dst: 0,
        oversize: 0,
        uplink_overflow: 0,
        tx_frames: tx.0,
        tx_bytes: tx.1,
        tx_retries: 0,
        ce_written: 0,
        gap_ns: Quantiles::default(),
        ideal_gap_ns: Quantiles::default(),
        lateness_ns: Quantiles::default(),
        sojourn_ns: Quantiles::of(&o.sojourn),
        in_flight: o.line.len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::Routes;

    #[test]
    fn a_frame_crosses_to_the_other_switch_only_when_its_host_is_there() {
        // A dumbbell of 2 + 1 hosts: links 0 and 1 on s0, link 2 on s1; trunk 0 = s0->s1 (egress 3), trunk 1
        // = s1->s0 (egress 4).
        let r = Routes::new(vec![0, 0, 1], &[(0, 1), (1, 0)]);
        assert_eq!(r.switches, 2);
        assert_eq!([r.hop(0, 1), r.hop(0, 0), r.hop(0, 2)], [Some(1), Some(0), Some(3)], "at s0");
        assert_eq!([r.hop(1, 2), r.hop(1, 0), r.hop(1, 1)], [Some(2), Some(4), Some(4)], "at s1");
        // A star: one switch, every frame straight to its host's port.
        let star = Routes::new(vec![0, 0, 0], &[]);
        assert_eq!((star.switches, star.hop(0, 2)), (1, Some(2)));
        // Two switches with no link between them: nowhere to send it.
        assert_eq!(Routes::new(vec![0, 1], &[]).hop(0, 1), None);
    }
}
