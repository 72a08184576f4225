//! What the switch reports: per link, the port's counters and occupancy (virtual time), the data plane's own
//! counters, and the timing of its transmissions against the port's ideal instants (wall time).

use ecnlab::observe::LogHist;
use ecnlab::port::{Counters, OccupancyStats};
use ecnlab::units::Time;

/// Quantiles of a distribution of nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quantiles {
    pub samples: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: u64,
}

impl Quantiles {
    pub fn of(h: &LogHist) -> Quantiles {
        let q = |p| h.quantile(p).unwrap_or(0.0);
        Quantiles { samples: h.samples(), p50: q(0.5), p90: q(0.9), p99: q(0.99), max: h.max() }
    }

    /// As JSON, in microseconds: `{ samples, p50_us, p90_us, p99_us, max_us }`.
    pub fn json_us(&self) -> serde_json::Value {
        serde_json::json!({ "samples": self.samples, "p50_us": self.p50 / 1e3, "p90_us": self.p90 / 1e3,
                            "p99_us": self.p99 / 1e3, "max_us": self.max as f64 / 1e3 })
    }
}

impl LinkReport {
    /// The data plane's own figures of the link as JSON (frames, drops before the port, CE written, send
    /// timing against the port's ideal instants): what `emulate` and its benchmark report beside the port's.
    pub fn data_plane_json(&self) -> serde_json::Value {
        serde_json::json!({
            "rx_frames": self.rx_frames,
            "tx_frames": self.tx_frames,
            "ce_written": self.ce_written,
            "ring_drops": self.ring_drops,
            "uplink_overflow": self.uplink_overflow,
            "unknown_dst": self.unknown_dst,
            "oversize": self.oversize,
            "tx_retries": self.tx_retries,
            "departure_gap": self.gap_ns.json_us(),
            "ideal_gap": self.ideal_gap_ns.json_us(),
            "lateness": self.lateness_ns.json_us(),
        })
    }
}

/// One link's figures.
#[derive(Clone, Debug)]
pub struct LinkReport {
    pub ifname: String,
    /// The egress port's counters over the window (arrivals, departures, marks and drops by reason).
    pub counters: Counters,
    /// The same counters since the switch started.
    pub run_counters: Counters,
    /// Over the window, the smallest backlog an arriving frame found (bytes queued plus the one in
    /// transmission); `None` if nothing arrived.
    pub arrival_backlog_min: Option<u64>,
    /// When the port first marked a frame CE (virtual time: the monotonic clock).
    pub first_mark: Option<Time>,
    /// Its time-weighted occupancy over the window, bytes (virtual time).
    pub occupancy: OccupancyStats,
    /// Per queue: counters over the run and occupancy over the window.
    pub queues: Vec<(Counters, OccupancyStats)>,
    /// Fraction of the window the port's transmitter was busy.
    pub utilization: f64,
    /// Frames received from the host, and their bytes (frames).
    pub rx_frames: u64,
    pub rx_bytes: u64,
    /// Frames the kernel dropped because the receive ring was full.
    pub ring_drops: u64,
    /// Frames addressed to no host of the switch (group addresses, unknown MACs): dropped.
    pub unknown_dst: u64,
    /// Frames longer than the MTU (or than a ring slot): dropped.
    pub oversize: u64,
    /// Frames the host's NIC model could not hold (`uplink_limit`): dropped.
    pub uplink_overflow: u64,
    /// Frames and bytes sent to the host; sends retried because the socket's buffer was full.
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub tx_retries: u64,
    /// Frames whose ECN field the switch set to CE.
    pub ce_written: u64,
    /// Over the window, in wall time: gaps between sends of frames the port sent back to back, and the
    /// ideal gaps (their transmission times at the port's rate).
    pub gap_ns: Quantiles,
    pub ideal_gap_ns: Quantiles,
    /// How long after its ideal instant (the last bit reaching the host) each frame was sent.
    pub lateness_ns: Quantiles,
    /// Sojourn in the port (offer to start of transmission), virtual time.
    pub sojourn_ns: Quantiles,
    /// Frames the port has sent whose last bit has not reached the far end yet (its host, or the next
    /// switch): sent = delivered (`tx_frames`) + in flight.
    pub in_flight: u64,
}

/// The switch's figures at one instant.
#[derive(Clone, Debug)]
pub struct Report {
    /// The virtual instant read, and the window's length up to it.
    pub at: Time,
    pub window: Time,
    pub links: Vec<LinkReport>,
    /// The ports between switches (`SwitchConfig::trunks`, in their order), named: their port figures, and
    /// as `tx_frames` what they delivered to the far switch.
    pub trunks: Vec<LinkReport>,
    /// Frames offered after the virtual clock had passed their instant (seen later than `lag`), and by how
    /// much at most: the virtual-time figures are exact when this is 0.
    pub late_offers: u64,
    pub max_late_ns: u64,
    /// Where the thread ran: the core it was pinned to, whether memory was locked.
    pub core: Option<usize>,
    pub memory_locked: bool,
    /// Rounds of the forwarding loop.
    pub loops: u64,
    /// Over the window: pauses of the loop longer than 50 us (descheduled, or held up in the kernel), its
    /// own rests excluded.
    pub stalls_ns: Quantiles,
    /// Over the window: TCP RTT samples per class of the data, taken at the switch (`RttMeter`).
    pub rtt: super::RttSamples,
    /// The shared buffer pool's occupancy over the window, when the ports draw from one.
    pub pool: Option<OccupancyStats>,
    /// The queues' backlogs sampled in virtual time (`SwitchConfig::sampling`).
    pub samples: Option<QueueSamples>,
}

/// Every queue's backlog at t0, t0 + step, … (`SwitchConfig::sampling`): the state after every arrival and
/// departure at or before each instant, as the simulator's series/queues.csv rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueSamples {
    pub t0: Time,
    pub step: Time,
    /// Queues per port: the hosts' links in order, then the ports between switches.
    pub queues: Vec<usize>,
    /// Row-major: one row per instant, one column per queue of every port in order; bytes.
    pub bytes: Vec<u64>,
}

impl QueueSamples {
    /// Rows taken.
    pub fn rows(&self) -> usize {
        let cols: usize = self.queues.iter().sum();
        self.bytes.len().checked_div(cols).unwrap_or(0)
    }
}

impl Report {
    /// Sums over links: (frames sent to hosts, CE written, drops at the ports (those between switches too),
    /// drops before them).
    pub fn totals(&self) -> (u64, u64, u64, u64) {
        let mut t = (0, 0, 0, 0);
        for l in &self.links {
            t.0 += l.tx_frames;
            t.1 += l.ce_written;
            t.2 += l.counters.total_drops();
            t.3 += l.ring_drops + l.unknown_dst + l.oversize + l.uplink_overflow;
        }
        t.2 += self.trunks.iter().map(|l| l.counters.total_drops()).sum::<u64>();
        t
    }
}
