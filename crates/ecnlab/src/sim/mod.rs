//! `Sim`: a simulation made of its parts, each owning its state: the clock (the instant and the events to
//! come), the fabric (ports, links, packets), the hosts, the flows, the workloads and the observer. The event
//! loop hands each event to the part it names; the glue between parts lives here and in the parts' files.

mod build;
mod busiest;
mod clock;
mod fabric;
mod flows;
mod hosts;
mod observer;
pub(crate) mod report;
pub mod summary;
mod traffic;
mod workload;

pub use busiest::busiest_port;
pub use flows::Flow;
pub use report::{counters, fct_csv, fct_stats, jain, occupancy, FlowRecord, RunReport};
pub use summary::RunSummary;
// Their old home: `ecnlab::sim::load_cdf` stays public API.
pub use crate::dist::{load_cdf, load_rtt};

use crate::engine::{Event, Rng};
use crate::error::Error;
use crate::port::Settled;
use crate::units::Time;
use clock::Clock;
use fabric::{Fabric, Reached};
use flows::Flows;
use hosts::Hosts;
use observer::Observer;
use workload::WorkloadState;

/// An endpoint of a flow (`Sim::pump_side`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Sender,
    Receiver,
}

pub struct Sim {
    clock: Clock,
    fabric: Fabric,
    hosts: Hosts,
    flows: Flows,
    workloads: Vec<WorkloadState>,
    observer: Observer,
    duration: Time,
    max_events: u64,
    events_processed: u64,
}

impl Sim {
    /// Turns every fast path off, before the run: each departure by its own `TxDone` event (no lazy
    /// departures), every packet through its port's FIFO and scheduler (no idle pass-through), both endpoints
    /// drained after every input (no one-sided pumps), and every host-port departure reading its flow's extra
    /// delay. Each is an optimisation that must change no result; running both ways and comparing outputs is
    /// the test of all of them together (`tests/integration/identity.rs`).
    pub fn without_fast_paths(&mut self) {
        for port in 0..self.fabric.port_count() {
            let p = self.fabric.raw_mut(port);
            p.set_deferred_departures(false);
            p.set_pass_idle(false);
        }
        self.hosts.drain_both_sides();
        self.fabric.always_look_up_flow_delays();
    }

    /// The port named `name` (`"s0->h1"`: the egress of s0 toward h1), as an index for the accessors below.
    pub fn port_index(&self, name: &str) -> Option<u32> {
        self.fabric.net().port_by_name(name)
    }

    /// A port's counters now, every departure due by now made.
    pub fn port_counters(&mut self, port: u32) -> crate::port::Counters {
        self.port(port).counters()
    }

    /// A port's marker, as it stands now.
    pub fn marker(&self, port: u32) -> &crate::mark::AnyMarker {
        &self.fabric.raw(port).marker
    }

    /// Replaces a port's marker before the run, e.g. with research code as `AnyMarker::Custom`.
    pub fn set_marker(&mut self, port: u32, marker: crate::mark::AnyMarker) {
        assert_eq!(self.events_processed, 0, "a marker is set before the run");
        self.fabric.raw_mut(port).marker = marker;
    }

    /// Every flow opened so far, by id.
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// The port caught up to now, for reading (`Fabric::port`).
    #[inline(always)]
    fn port(&mut self, port: u32) -> Settled<'_> {
        self.fabric.port(&mut self.clock, port)
    }

    /// Runs to `duration` (or until nothing is left to do).
    pub fn run(&mut self) -> Result<(), Error> {
        self.run_with_progress(false)
    }

    /// As `run`; with `progress`, a line on stderr every second of wall time: simulated time, events, rate.
    pub fn run_with_progress(&mut self, progress: bool) -> Result<(), Error> {
        self.run_with(&crate::RunOptions { progress, ..Default::default() })
    }

    /// As `run`, with a progress line (`opts.progress`), stopping with `Error::Interrupted` within 2^16 events
    /// (a few milliseconds) of `opts.cancel` being cancelled.
    pub fn run_with(&mut self, opts: &crate::RunOptions) -> Result<(), Error> {
        let progress = opts.progress;
        let cancel = &opts.cancel;
        let started = std::time::Instant::now();
        let mut last_print = 0u64;
        self.observer.schedule(&mut self.clock);
        // The event budget, the cancel token and the progress line are looked at every 2^16 events, or at the
        // event past the budget if that comes first: one comparison per event in the hot loop.
        const EVERY: u64 = 1 << 16;
        let next_check =
            |done: u64, budget: u64| (done / EVERY + 1).saturating_mul(EVERY).min(budget.saturating_add(1));
        let mut check_at = next_check(self.events_processed, self.max_events);
        while let Some((t, ev)) = self.clock.pop_until(self.duration) {
            self.clock.set(t);
            self.events_processed += 1;
            if self.events_processed >= check_at {
                if self.events_processed > self.max_events {
                    return Err(Error::Run(format!(
                        "event budget exhausted: {} events by t = {} (limits.max_events)",
                        self.max_events,
                        self.clock.now()
                    )));
                }
                // The token is an atomic load a few wall milliseconds apart (2.6 ms at 25 M events/s).
                if cancel.is_cancelled() {
                    return Err(Error::Interrupted);
                }
                if progress && self.events_processed.is_multiple_of(16 * EVERY) {
                    let secs = started.elapsed().as_secs();
                    if secs > last_print {
                        last_print = secs;
                        eprint!(
                            "\r\x1b[2K{:.3}/{:.3} s simulated, {} events, {:.1} M events/s",
                            self.clock.now().as_secs_f64(),
                            self.duration.as_secs_f64(),
                            self.events_processed,
                            self.events_processed as f64 / started.elapsed().as_secs_f64() / 1e6
                        );
                    }
                }
                check_at = next_check(self.events_processed, self.max_events);
            }
            if !matches!(ev, Event::Sample | Event::Phase { .. } | Event::WindowStart) {
                self.clock.traffic_at(t);
            }
            // Starts loading the first records the next event reads, while this one is handled: an arrival's
            // packet header (written when the packet left, long since out of cache) and its link's next arrival
            // (which joins the event order as it leaves: `EventQueue::peek_near`), a transmitter's port record.
            // A hint only; handlers pushing an earlier event make it a wasted load.
            self.fabric.prefetch(self.clock.peek_near());
            match ev {
                Event::TxDone { port } => self.tx_done(port),
                Event::Arrive { port, id, hop } => self.arrive(port, id, hop),
                Event::FlowTimer { flow } => self.flow_timer(flow),
                Event::NicReady { host } => self.nic_ready(host),
                Event::LateArrive { port } => self.late_arrive(port),
                Event::WindowStart => self.start_window(),
                Event::Workload { idx } => self.workload_event(idx),
                Event::Sample => self.sample(),
                Event::Phase { idx } => self.observer.phase(idx),
                Event::Pfc { port, prio, pause } => self.pfc_frame(port, prio as usize, pause),
            }
            if let Some(e) = self.fabric.take_pfc_error() {
                return Err(Error::Run(format!("PFC: {e} (t = {})", self.clock.now())));
            }
        }
        self.clock.set(self.duration);
        self.fabric.catch_up_all(&mut self.clock);
        if progress && last_print > 0 {
            eprintln!();
        }
        Ok(())
    }

    /// The wake-up a port asked for: its transmission ended with packets waiting.
    fn tx_done(&mut self, port: u32) {
        if self.fabric.tx_done(&mut self.clock, port) {
            if let Some(host) = self.fabric.host_of_port(port) {
                self.host_port_drained(host);
            }
        }
    }

    fn arrive(&mut self, port: u32, id: crate::packet::PacketId, hop: u32) {
        if let Reached::Host(h, pkt, sack) = self.fabric.arrive(&mut self.clock, port, id, hop) {
            self.host_receive(h, pkt, &sack);
        }
    }

    /// Packets of RTT-varied flows reach the far end of their host's link.
    fn late_arrive(&mut self, port: u32) {
        while let Some(reached) = self.fabric.late_arrival(&mut self.clock, port) {
            if let Reached::Host(h, pkt, sack) = reached {
                self.host_receive(h, pkt, &sack);
            }
        }
    }

    /// A PAUSE/RESUME frame reaches a transmitter (`Fabric::pfc_frame`); a resumed host's flows go on.
    fn pfc_frame(&mut self, port: u32, prio: usize, pause: bool) {
        if let Some(host) = self.fabric.pfc_frame(&mut self.clock, port, prio, pause) {
            self.nic_ready(host);
        }
    }

    fn start_window(&mut self) {
        self.fabric.start_window(&mut self.clock);
        for f in self.flows.iter_mut() {
            f.delivered_at_warmup = f.receiver.rcv_nxt();
        }
        self.observer.start_window();
    }

    fn sample(&mut self) {
        self.observer.sample(&mut self.clock, &mut self.fabric, &self.flows);
    }

    /// Conservation at the end of a run: every packet a host injected was consumed by a host, dropped, or is
    /// still queued or on a link (a packet being sent is already on its link).
    pub fn check_conservation(&mut self) -> Result<(), String> {
        self.fabric.check_conservation(self.clock.now())
    }
}

/// The RNG stream for workload `idx`, item `i`.
fn item_rng(seed: u64, idx: u32, i: u64) -> Rng {
    Rng::stream(seed, crate::engine::rng::key::WORKLOAD + ((idx as u64) << 24) + i)
}

#[cfg(test)]
mod tests;
