//! A scenario's workloads as real clients: one thread per flow source, incast receiver or prober, in its host's
//! namespace, each recording into the run's shared records as it goes (so a run that ends with connections still
//! open reports them as unfinished rather than losing them).

use crate::error::{Error, Result};
use crate::netns::Testbed;
use crate::traffic::client::{self, Incast, Prober, SenderRecord};
use crate::traffic::now_ns;
use crate::traffic::report::{IncastResult, ProbeResult};
use crate::traffic::sock::SockOpts;
use ecnlab::engine::{rng::key, Rng};
use ecnlab::scenario::Workload;
use ecnlab::units::{Bytes, Rate, Time};
use ecnlab::Scenario;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The server port every host listens on.
pub const SERVER_PORT: u16 = 5001;

/// A sized flow that makes no progress for this long gives up (its path is gone: the run ended).
const FLOW_STALL: Duration = Duration::from_secs(2);

/// One flow as opened: who, its class and workload, and the sender's record (replaced when it ends).
#[derive(Clone, Debug)]
pub struct OpenedFlow {
    pub src: u32,
    pub dst: u32,
    pub class: u8,
    pub workload: usize,
    pub sender: SenderRecord,
}

/// What the clients record, shared with the thread that runs the emulation.
#[derive(Default)]
pub struct Records {
    /// The run's end: errors after it (connections cut by the end) are not the run's errors.
    end_ns: u64,
    /// Flow ids in order of opening, as the simulator numbers its flows.
    next_id: AtomicU32,
    pub flows: Mutex<Vec<OpenedFlow>>,
    /// Per incast and probe workload, in file order.
    pub incasts: Mutex<Vec<(usize, IncastResult)>>,
    pub probes: Mutex<Vec<(usize, ProbeResult)>>,
    /// Client errors (a connection reset, a timeout), one line each.
    pub errors: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Records {
    pub fn new(clock: Clock) -> Records {
        Records { end_ns: clock.end_ns, ..Default::default() }
    }

    fn error(&self, what: String) {
        if now_ns() < self.end_ns {
            lock(&self.errors).push(what);
        }
    }

    /// Opens flow `size` (0: long-lived) now: its id and its slot in `flows`.
    fn open(&self, src: u32, dst: u32, class: u8, workload: usize, size: u64) -> (u32, usize) {
        let mut flows = lock(&self.flows);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let sender = SenderRecord { flow: id, size, start_ns: now_ns(), ..Default::default() };
        flows.push(OpenedFlow { src, dst, class, workload, sender });
        (id, flows.len() - 1)
    }

    fn close(&self, slot: usize, r: std::io::Result<SenderRecord>) {
        match r {
            Ok(rec) => lock(&self.flows)[slot].sender = rec,
            Err(e) => {
                let f = lock(&self.flows)[slot].clone();
                self.error(format!("flow {} (h{} -> h{}): {e}", f.sender.flow, f.src, f.dst));
            }
        }
    }
}

/// The run's instants (CLOCK_MONOTONIC ns): its origin and its end.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    pub t0_ns: u64,
    pub end_ns: u64,
}

impl Clock {
    fn at(&self, t: Time) -> u64 {
        self.t0_ns + t.0 / 1000
    }
}

fn sleep_until(ns: u64) {
    let now = now_ns();
    if ns > now {
        std::thread::sleep(Duration::from_nanos(ns - now));
    }
}

/// Sizes and rates of the scenario as the sockets take them.
fn opts(class: u8, rate: Option<Rate>) -> SockOpts {
    // DSCP = class: the switch classifies by DSCP (dataplane::identity_dscp).
    SockOpts { dscp: class, cc: None, max_pacing_rate: rate }
}

/// Starts every workload's clients; each waits for its start instant.
pub fn start(
    sc: &Scenario,
    tb: &Testbed,
    clock: Clock,
    records: &Arc<Records>,
    host_cpus: u64,
) -> Result<Vec<JoinHandle<()>>> {
    let addr = |h: u32| SocketAddrV4::new(tb.host(h as usize).addr, SERVER_PORT);
    let mut threads = Vec::new();
    let mut spawn = |h: u32, name: String, f: Box<dyn FnOnce() + Send>| -> Result<()> {
        threads.push(tb.host(h as usize).ns.spawn(&name, move || {
            super::pin_mask(host_cpus);
            f()
        })?);
        Ok(())
    };
    for (w, wl) in sc.workloads.iter().enumerate() {
        let rec = records.clone();
        match wl.clone() {
            Workload::Flows { src, dst, size, start, jitter, stop, class, classes, rate } => {
                let until = stop.map_or(clock.end_ns, |s| clock.at(s).min(clock.end_ns));
                for (k, &s) in src.0.iter().enumerate() {
                    // The simulator's per-flow jitter stream of the seed: same start offsets for the same seed.
                    let u = Rng::stream(sc.seed, key::WORKLOAD + ((w as u64) << 20) + k as u64).uniform();
                    let at = clock.at(start) + (jitter.0 as f64 * u / 1000.0) as u64;
                    let class = classes.as_ref().map_or(class, |c| c[k % c.len()]);
                    let (rec, dst_addr, o) = (rec.clone(), addr(dst), opts(class, rate));
                    spawn(
                        s,
                        format!("ecnlab-w{w}-h{s}"),
                        Box::new(move || {
                            sleep_until(at);
                            if now_ns() >= clock.end_ns {
                                return; // starts after the run: never opened, as in the simulator
                            }
                            match size {
                                Some(b) => {
                                    let (id, slot) = rec.open(s, dst, class, w, b.0);
                                    rec.close(slot, client::sized_flow(dst_addr, id, b.0, &o, FLOW_STALL));
                                }
                                None => {
                                    let (id, slot) = rec.open(s, dst, class, w, 0);
                                    rec.close(slot, client::long_flow(dst_addr, id, until, &o));
                                }
                            }
                        }),
                    )?;
                }
            }
            Workload::BackToBack { src, dst, size, start, count, class } => {
                let (dst_addr, o) = (addr(dst), opts(class, None));
                spawn(
                    src,
                    format!("ecnlab-w{w}-h{src}"),
                    Box::new(move || {
                        sleep_until(clock.at(start));
                        let mut n = 0;
                        while count.is_none_or(|c| n < c) && now_ns() < clock.end_ns {
                            let (id, slot) = rec.open(src, dst, class, w, size.0);
                            let r = client::sized_flow(dst_addr, id, size.0, &o, FLOW_STALL);
                            let failed = r.is_err();
                            rec.close(slot, r);
                            if failed {
                                return;
                            }
                            n += 1;
                        }
                    }),
                )?;
            }
            Workload::Incast { senders, receiver, block, rounds, start, class } => {
                let servers: Vec<(u32, SocketAddrV4)> = senders.0.iter().map(|&h| (h, addr(h))).collect();
                let result = IncastResult { senders: servers.len() as u64, rounds, block, records: vec![] };
                lock(&records.incasts).push((w, result));
                let o = opts(class, None);
                spawn(
                    receiver,
                    format!("ecnlab-w{w}-h{receiver}"),
                    Box::new(move || incast(&rec, w, receiver, &servers, block, rounds, clock.at(start), clock, &o)),
                )?;
            }
            Workload::Probe { src, dst, interval, start, stop, class, size, .. } => {
                lock(&records.probes).push((w, ProbeResult { sent: 0, samples: vec![] }));
                let until = stop.map_or(clock.end_ns, |s| clock.at(s).min(clock.end_ns));
                // The simulator's probe size is its IP packet; the message is what TCP carries in it (IP and
                // TCP headers with timestamps: 52 bytes).
                let payload = size.0.saturating_sub(52).max(1) as usize;
                let (dst_addr, o) = (addr(dst), opts(class, None));
                let step = (interval.0 / 1000).max(1);
                spawn(
                    src,
                    format!("ecnlab-w{w}-h{src}"),
                    Box::new(move || {
                        let from = clock.at(start);
                        sleep_until(from);
                        if now_ns() >= until {
                            return;
                        }
                        let (id, _) = rec.open_probe();
                        let mut p = match Prober::connect(dst_addr, id, payload, &o) {
                            Ok(p) => p,
                            Err(e) => return rec.error(format!("probe h{src} -> h{dst}: {e}")),
                        };
                        let mut k = 0u64;
                        while from + k * step < until {
                            sleep_until(from + k * step);
                            rec.probe_sent(w);
                            match p.probe() {
                                Ok(s) => rec.probe_answered(w, s),
                                Err(e) => return rec.error(format!("probe h{src} -> h{dst}: {e}")),
                            }
                            k += 1;
                        }
                    }),
                )?;
            }
            Workload::Poisson { .. } | Workload::Query { .. } => {
                return Err(Error::config(format!("workloads.{w}.kind"), "not emulated (check_emulatable)"));
            }
        }
    }
    Ok(threads)
}

impl Records {
    /// A probe connection's id: numbered with the flows (it is a connection), not a flow of fct.csv.
    fn open_probe(&self) -> (u32, ()) {
        (self.next_id.fetch_add(1, Ordering::Relaxed), ())
    }

    fn probe_sent(&self, w: usize) {
        if let Some((_, p)) = lock(&self.probes).iter_mut().find(|(i, _)| *i == w) {
            p.sent += 1;
        }
    }

    fn probe_answered(&self, w: usize, s: client::ProbeSample) {
        if let Some((_, p)) = lock(&self.probes).iter_mut().find(|(i, _)| *i == w) {
            p.samples.push(s);
        }
    }
}

/// An incast receiver: kept connections to every sender, opened at the start, then rounds back to back.
#[allow(clippy::too_many_arguments)]
fn incast(
    rec: &Records,
    w: usize,
    receiver: u32,
    servers: &[(u32, SocketAddrV4)],
    block: Bytes,
    rounds: u32,
    start_ns: u64,
    clock: Clock,
    o: &SockOpts,
) {
    sleep_until(start_ns);
    if now_ns() >= clock.end_ns {
        return;
    }
    let ids: Vec<(u32, SocketAddrV4)> = servers.iter().map(|&(_, a)| (rec.open_probe().0, a)).collect();
    let mut inc = match Incast::connect(&ids, o) {
        Ok(i) => i,
        Err(e) => return rec.error(format!("incast into h{receiver}: {e}")),
    };
    for _ in 0..rounds {
        let left = clock.end_ns.saturating_sub(now_ns());
        if left == 0 {
            return;
        }
        // A round still running at the end is not completed (as in the simulator): it may wait that long.
        match inc.round(block.0, Duration::from_nanos(left).max(Duration::from_millis(10))) {
            Ok(r) if r.end_ns <= clock.end_ns => {
                if let Some((_, i)) = lock(&rec.incasts).iter_mut().find(|(i, _)| *i == w) {
                    i.records.push(r);
                }
            }
            Ok(_) => return,
            Err(e) => return rec.error(format!("incast into h{receiver}: {e}")),
        }
    }
}
