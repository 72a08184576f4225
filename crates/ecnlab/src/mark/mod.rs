//! Marking schemes: each decides Pass / Mark / Drop for one packet from a read-only `PortState`.
//!
//! A marker never moves packets; the port applies its verdict (a Mark on a non-ECT packet passes it or drops
//! it, per the port's `non_ect` option). Each scheme is one file citing its paper; `AnyMarker` dispatches.

pub mod codel;
pub mod ecnsharp;
pub mod mqecn;
pub mod pmsb;
pub mod red;
pub mod tcn;
pub mod threshold;

pub use codel::Codel;
pub use ecnsharp::EcnSharp;
pub use mqecn::MqEcn;
pub use pmsb::Pmsb;
pub use red::Red;
pub use tcn::Tcn;
pub use threshold::Threshold;

use crate::packet::Packet;
use crate::port::Queue;
use crate::units::{Bytes, Rate, Time};

/// Where in the port a marker looks at packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum At {
    Enqueue,
    Dequeue,
}

/// Queue-length comparison; each paper pins its own (DESIGN, "Occupancy").
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compare {
    /// `queue ≥ K` (ECN* §3.1, PMSB Alg. 1).
    Ge,
    /// `queue > K`, "exceeds" (MQ-ECN §2.1, DCTCP).
    Gt,
}

impl At {
    /// `decide()` when the marker acts at `here`, else Pass: one rule for every marker that may sit at
    /// either point.
    #[inline]
    pub fn only(self, here: At, decide: impl FnOnce() -> Verdict) -> Verdict {
        if self == here {
            decide()
        } else {
            Verdict::Pass
        }
    }
}

impl Compare {
    pub fn holds(self, value: u64, threshold: u64) -> bool {
        match self {
            Compare::Ge => value >= threshold,
            Compare::Gt => value > threshold,
        }
    }
}

/// Why a packet was marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkReason {
    /// Instantaneous queue length over a threshold.
    Threshold,
    /// RED's probabilistic or forced mark on the average queue.
    Red,
    /// Sojourn time over a target (TCN; ECN♯'s instantaneous part).
    Sojourn,
    /// ECN♯'s persistent-queue part.
    Persistent,
    /// CoDel's control law, marking where it would drop.
    Codel,
}

impl MarkReason {
    pub const ALL: [MarkReason; 5] =
        [MarkReason::Threshold, MarkReason::Red, MarkReason::Sojourn, MarkReason::Persistent, MarkReason::Codel];
    pub fn name(self) -> &'static str {
        match self {
            MarkReason::Threshold => "threshold",
            MarkReason::Red => "red",
            MarkReason::Sojourn => "sojourn",
            MarkReason::Persistent => "persistent",
            MarkReason::Codel => "codel",
        }
    }
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// No room in the port buffer (tail drop).
    BufferFull,
    /// The marker decided to drop (an AQM drop).
    Aqm,
    /// A mark verdict on a non-ECT packet under `non_ect = "drop"`.
    NonEct,
}

impl DropReason {
    pub const ALL: [DropReason; 3] = [DropReason::BufferFull, DropReason::Aqm, DropReason::NonEct];
    pub fn name(self) -> &'static str {
        match self {
            DropReason::BufferFull => "buffer_full",
            DropReason::Aqm => "aqm",
            DropReason::NonEct => "non_ect",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Mark(MarkReason),
    Drop(DropReason),
}

/// What a marker may read about its port. At enqueue the arriving packet is already counted; at dequeue
/// the departing packet no longer is (DESIGN, "Occupancy"). The packet in transmission is never counted.
#[derive(Clone, Copy, Debug)]
pub struct PortState<'a> {
    pub now: Time,
    pub rate: Rate,
    pub mtu: Bytes,
    pub buffer: Bytes,
    /// The port's queues. Read them through `queue_bytes(q)` and `weight(q)`: the backlog counts the arriving
    /// packet at enqueue, while a queue's other fields (`pkts`, `occupancy`, counters) do not.
    pub queues: &'a [Queue],
    /// Σ of every queue's weight.
    pub weight_sum: u64,
    pub port_bytes: u64,
    /// Occupancy of the switch's shared buffer pool (0 without one).
    pub pool_bytes: u64,
}

impl PortState<'_> {
    /// Backlog of queue `q`, bytes.
    #[inline]
    pub fn queue_bytes(&self, q: usize) -> u64 {
        self.queues[q].bytes
    }

    /// Scheduler weight of queue `q` (quantum bytes for (D)WRR, weight for WFQ, 1 for SP).
    #[inline]
    pub fn weight(&self, q: usize) -> u64 {
        self.queues[q].weight
    }
}

/// The scheduler reports its round events straight to the port's marker.
impl crate::sched::RoundSink for AnyMarker {
    #[inline]
    fn round(&mut self, ev: crate::sched::RoundEvent) {
        self.on_round(&ev);
    }
}

/// Every marking scheme, dispatched without virtual calls in the hot path. Line-aligned, so in a port's record
/// it starts a cache line.
#[derive(Clone, Debug)]
#[repr(align(64))]
pub enum AnyMarker {
    /// Drop-tail only: never marks.
    None,
    Threshold(Threshold),
    Red(Red),
    MqEcn(MqEcn),
    Pmsb(Pmsb),
    Tcn(Tcn),
    Codel(Codel),
    EcnSharp(EcnSharp),
}

impl AnyMarker {
    pub fn on_enqueue(&mut self, st: &PortState, q: usize, p: &Packet) -> Verdict {
        match self {
            AnyMarker::None => Verdict::Pass,
            AnyMarker::Threshold(m) => m.on_enqueue(st, q),
            AnyMarker::Red(m) => m.on_enqueue(st, q, p),
            AnyMarker::MqEcn(m) => m.on_enqueue(st, q),
            AnyMarker::Pmsb(m) => m.on_enqueue(st, q),
            AnyMarker::Tcn(_) | AnyMarker::Codel(_) | AnyMarker::EcnSharp(_) => Verdict::Pass,
        }
    }

    /// Whether `on_dequeue` can return anything but Pass: the port builds the marker's view at a departure
    /// only then.
    #[inline(always)]
    pub fn acts_at_dequeue(&self) -> bool {
        !matches!(self, AnyMarker::None | AnyMarker::Red(_) | AnyMarker::MqEcn(_))
    }

    /// `sojourn` = now − the packet's enqueue time.
    pub fn on_dequeue(&mut self, st: &PortState, q: usize, p: &Packet, sojourn: Time) -> Verdict {
        match self {
            AnyMarker::None | AnyMarker::Red(_) | AnyMarker::MqEcn(_) => Verdict::Pass,
            AnyMarker::Threshold(m) => m.on_dequeue(st, q),
            AnyMarker::Pmsb(m) => m.on_dequeue(st, q),
            AnyMarker::Tcn(m) => m.on_dequeue(st, q, p, sojourn),
            AnyMarker::Codel(m) => m.on_dequeue(st, q, p, sojourn),
            AnyMarker::EcnSharp(m) => m.on_dequeue(st, q, p, sojourn),
        }
    }

    /// A scheduler round event (MQ-ECN's round-time estimator listens).
    pub fn on_round(&mut self, ev: &crate::sched::RoundEvent) {
        if let AnyMarker::MqEcn(m) = self {
            m.on_round(ev)
        }
    }

    /// The port went idle at `now` (RED ages its average over idle time).
    pub fn on_idle(&mut self, now: Time) {
        match self {
            AnyMarker::Red(m) => m.on_idle(now),
            AnyMarker::MqEcn(m) => m.on_idle(now),
            _ => {}
        }
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;

    const ONES: [u64; 32] = [1; 32];

    /// Queue records made so far, by (backlogs, weights).
    type Records = std::collections::HashMap<(Vec<u64>, Vec<u64>), &'static [Queue]>;

    thread_local! {
        static RECORDS: std::cell::RefCell<Records> = Default::default();
    }

    /// Queue records with these backlogs and weights, made once per distinct pair and kept for the test
    /// thread's life (views borrow them; a test that builds 10^5 views of one backlog makes one record set).
    fn queue_records(queue_bytes: &[u64], weights: &[u64]) -> &'static [Queue] {
        RECORDS.with(|m| {
            *m.borrow_mut().entry((queue_bytes.to_vec(), weights.to_vec())).or_insert_with(|| {
                let queues: Vec<Queue> = queue_bytes
                    .iter()
                    .zip(weights)
                    .map(|(&bytes, &w)| {
                        let mut q = Queue::new(w, false);
                        q.bytes = bytes;
                        q
                    })
                    .collect();
                Box::leak(queues.into_boxed_slice())
            })
        })
    }

    /// A hand-made port view: 10 Gb/s, MTU 1500, the given per-queue backlogs, equal weights.
    pub fn state(queue_bytes: &[u64], now: Time) -> PortState<'static> {
        weighted(queue_bytes, &ONES[..queue_bytes.len()], now)
    }

    /// As `state`, with per-queue weights.
    pub fn weighted(queue_bytes: &[u64], weights: &[u64], now: Time) -> PortState<'static> {
        assert_eq!(queue_bytes.len(), weights.len(), "one weight per queue");
        PortState {
            now,
            rate: Rate::gbps(10),
            mtu: Bytes(1500),
            buffer: Bytes(1_000_000),
            queues: queue_records(queue_bytes, weights),
            weight_sum: weights.iter().sum(),
            port_bytes: queue_bytes.iter().sum(),
            pool_bytes: queue_bytes.iter().sum(),
        }
    }
}
