//! Marking schemes: each decides Pass / Mark / Drop for one packet from a read-only view of its port.
//!
//! A marker never moves packets; the port applies its verdict (a Mark on a non-ECT packet passes it or drops
//! it, per the port's `non_ect` option). Each scheme is one file citing its paper that holds its state, its
//! `Marker` impl (where it acts is a constant of the type), its `switch.marker` table (a serde struct), that
//! table's validation and its build. The `registry!` list at the end of this file generates `AnyMarker` (the
//! enum dispatch of the hot path), `MarkerConfig` (the `kind` tags) and the validate/build dispatch: a new
//! scheme is one file plus one line there (docs/EXTENDING.md, "Adding a marker").
//!
//! A marker sees its port only through `PortState` over `Queues`, both defined here, so `mark` knows nothing of
//! the port's records: the port fills the view, and the view itself counts an arriving packet in its queue.

pub mod codel;
pub mod ecnsharp;
pub mod mqecn;
pub mod pmsb;
pub mod red;
pub mod tcn;
pub mod threshold;
#[cfg(test)]
mod toy;

pub use codel::Codel;
pub use ecnsharp::EcnSharp;
pub use mqecn::MqEcn;
pub use pmsb::Pmsb;
pub use red::Red;
pub use tcn::Tcn;
pub use threshold::Threshold;

use crate::engine::Rng;
use crate::error::Error;
use crate::packet::Packet;
use crate::sched::{AnyScheduler, RoundEvent};
use crate::units::{Bytes, QueueLen, Rate, Time};

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

/// The port's queues as a marker reads them. The port implements it over its own queue records (so `mark`
/// never sees them); `[QueueLoad]` implements it for tests and research code.
pub trait Queues {
    /// Bytes waiting in queue `q`, not counting a packet that is arriving (the view adds that one).
    fn bytes(&self, q: usize) -> u64;
    /// Scheduler weight of queue `q` (quantum bytes for (D)WRR, weight for WFQ, 1 for SP).
    fn weight(&self, q: usize) -> u64;
    /// Σ of every queue's weight (PMSB's and the weighted shares' denominator).
    fn weight_sum(&self) -> u64;
}

impl<T: Queues + ?Sized> Queues for &T {
    #[inline]
    fn bytes(&self, q: usize) -> u64 {
        (**self).bytes(q)
    }
    #[inline]
    fn weight(&self, q: usize) -> u64 {
        (**self).weight(q)
    }
    #[inline]
    fn weight_sum(&self) -> u64 {
        (**self).weight_sum()
    }
}

/// One queue's backlog and weight, for a hand-made view (tests, research code driving a marker on its own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueLoad {
    pub bytes: u64,
    pub weight: u64,
}

impl Queues for [QueueLoad] {
    fn bytes(&self, q: usize) -> u64 {
        self[q].bytes
    }
    fn weight(&self, q: usize) -> u64 {
        self[q].weight
    }
    fn weight_sum(&self) -> u64 {
        self.iter().map(|l| l.weight).sum()
    }
}

/// The port's link as its marker reads it.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    pub rate: Rate,
    pub mtu: Bytes,
    /// The port's buffer.
    pub buffer: Bytes,
}

/// What a marker may read about its port. At enqueue the arriving packet is counted (in its queue, the port
/// and the pool); at dequeue the departing packet no longer is (DESIGN, "Occupancy"). The packet in
/// transmission is never counted.
#[derive(Clone, Copy, Debug)]
pub struct PortState<Q> {
    pub now: Time,
    pub rate: Rate,
    pub mtu: Bytes,
    pub buffer: Bytes,
    /// Σ of every queue's weight.
    pub weight_sum: u64,
    pub port_bytes: u64,
    /// Occupancy of the switch's shared buffer pool (0 without one).
    pub pool_bytes: u64,
    queues: Q,
    /// The arriving packet's queue and wire size at enqueue (0 bytes at dequeue): `queue_bytes` adds it, so
    /// the port never changes its records around the marker call.
    arriving_queue: usize,
    arriving_wire: u64,
}

impl<Q: Queues> PortState<Q> {
    /// The view at a packet's arrival into queue `q`: `waiting` bytes were queued at the port before it, and
    /// `pool` bytes in the shared pool if the port draws from one. The packet's `wire` bytes count in all three.
    #[inline]
    pub fn arrival(now: Time, link: Link, queues: Q, waiting: u64, pool: Option<u64>, q: usize, wire: u64) -> Self {
        let pool = pool.map_or(0, |b| b + wire);
        PortState { arriving_queue: q, arriving_wire: wire, ..Self::departure(now, link, queues, waiting + wire, pool) }
    }

    /// The view at a departure: `waiting` and `pool` no longer count the departing packet.
    #[inline]
    pub fn departure(now: Time, link: Link, queues: Q, waiting: u64, pool: u64) -> Self {
        PortState {
            now,
            rate: link.rate,
            mtu: link.mtu,
            buffer: link.buffer,
            weight_sum: queues.weight_sum(),
            port_bytes: waiting,
            pool_bytes: pool,
            queues,
            arriving_queue: 0,
            arriving_wire: 0,
        }
    }

    /// Backlog of queue `q`, bytes, the arriving packet included at enqueue.
    #[inline]
    pub fn queue_bytes(&self, q: usize) -> u64 {
        self.queues.bytes(q) + if q == self.arriving_queue { self.arriving_wire } else { 0 }
    }

    /// Scheduler weight of queue `q` (quantum bytes for (D)WRR, weight for WFQ, 1 for SP).
    #[inline]
    pub fn weight(&self, q: usize) -> u64 {
        self.queues.weight(q)
    }

    /// The same view behind a trait object, for a `DynMarker`.
    pub fn as_dyn(&self) -> PortState<&dyn Queues> {
        PortState {
            now: self.now,
            rate: self.rate,
            mtu: self.mtu,
            buffer: self.buffer,
            weight_sum: self.weight_sum,
            port_bytes: self.port_bytes,
            pool_bytes: self.pool_bytes,
            queues: &self.queues,
            arriving_queue: self.arriving_queue,
            arriving_wire: self.arriving_wire,
        }
    }
}

/// Where a marker type may act. The port builds a marker's view at a departure only if its type may act
/// there, and `AnyMarker` calls a hook only where the type acts: a type that declares it does not act at a
/// point is never asked there, so the declaration cannot drift from the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acts {
    pub enqueue: bool,
    pub dequeue: bool,
}

impl Acts {
    pub const NEVER: Acts = Acts { enqueue: false, dequeue: false };
    pub const ENQUEUE: Acts = Acts { enqueue: true, dequeue: false };
    pub const DEQUEUE: Acts = Acts { enqueue: false, dequeue: true };
    /// At either point (a marker with an `at` option, or one that keeps state from both).
    pub const BOTH: Acts = Acts { enqueue: true, dequeue: true };
}

/// A marking scheme. Every hook has a default (Pass, or nothing), so a scheme writes only the ones its paper
/// uses; `ACTS` says where it may return anything but Pass.
pub trait Marker {
    const ACTS: Acts;

    /// A packet arriving into queue `q`, admitted by the buffer; the view counts it.
    #[inline]
    fn on_enqueue(&mut self, st: &PortState<impl Queues>, q: usize, p: &Packet) -> Verdict {
        let _ = (st, q, p);
        Verdict::Pass
    }

    /// A packet leaving queue `q` to start its transmission; `sojourn` = now − its enqueue time.
    #[inline]
    fn on_dequeue(&mut self, st: &PortState<impl Queues>, q: usize, p: &Packet, sojourn: Time) -> Verdict {
        let _ = (st, q, p, sojourn);
        Verdict::Pass
    }

    /// A scheduler round event (MQ-ECN's round-time estimator listens).
    #[inline]
    fn on_round(&mut self, ev: &RoundEvent) {
        let _ = ev;
    }

    /// The port went idle at `now` (told lazily, before the marker next sees a packet).
    #[inline]
    fn on_idle(&mut self, now: Time) {
        let _ = now;
    }
}

/// A marker behind a trait object, for `AnyMarker::Custom`: research code's own scheme, built with the
/// library API (not from TOML). Every `Marker` that is `Clone + Debug + Send` is one.
pub trait DynMarker: std::fmt::Debug + Send {
    fn acts(&self) -> Acts;
    fn on_enqueue(&mut self, st: &PortState<&dyn Queues>, q: usize, p: &Packet) -> Verdict;
    fn on_dequeue(&mut self, st: &PortState<&dyn Queues>, q: usize, p: &Packet, sojourn: Time) -> Verdict;
    fn on_round(&mut self, ev: &RoundEvent);
    fn on_idle(&mut self, now: Time);
    fn clone_box(&self) -> Box<dyn DynMarker>;
}

impl<M: Marker + Clone + std::fmt::Debug + Send + 'static> DynMarker for M {
    fn acts(&self) -> Acts {
        M::ACTS
    }
    fn on_enqueue(&mut self, st: &PortState<&dyn Queues>, q: usize, p: &Packet) -> Verdict {
        Marker::on_enqueue(self, st, q, p)
    }
    fn on_dequeue(&mut self, st: &PortState<&dyn Queues>, q: usize, p: &Packet, sojourn: Time) -> Verdict {
        Marker::on_dequeue(self, st, q, p, sojourn)
    }
    fn on_round(&mut self, ev: &RoundEvent) {
        Marker::on_round(self, ev)
    }
    fn on_idle(&mut self, now: Time) {
        Marker::on_idle(self, now)
    }
    fn clone_box(&self) -> Box<dyn DynMarker> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn DynMarker> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// A scheme's `switch.marker` table: checked against the port it will run on, then built into its state.
pub trait MarkerSpec {
    type Marker: Marker;
    /// Field paths and ranges as every other config error (`Check` prefixes the marker's path).
    fn validate(&self, c: &Check) -> Result<(), Error>;
    fn build(&self, b: Build) -> Result<Self::Marker, Error>;
}

/// What a marker table is validated against: its path (`switch.marker`, `ports.3.marker`) and the port.
pub struct Check<'a> {
    pub path: &'a str,
    pub mtu: Bytes,
    pub rate: Rate,
    pub buffer: Bytes,
    /// The port's name (`s0->h4`), for thresholds given as times.
    pub port: &'a str,
    /// Some queue is served by round robin (what MQ-ECN needs).
    pub round_robin: bool,
    /// The switch has a shared buffer pool.
    pub pool: bool,
}

impl Check<'_> {
    /// An error at the marker's `field` (the marker table itself when empty).
    pub fn fail(&self, field: &str, msg: impl Into<String>) -> Result<(), Error> {
        Err(Error::config_field(self.path, field, msg))
    }

    /// A queue length in bytes at this port, in u128 so absurd values cannot wrap.
    pub fn bytes(&self, k: QueueLen) -> u128 {
        k.resolve_wide(self.mtu, self.rate)
    }

    /// A queue-length threshold fits the port's buffer (thresholds given as times resolve at the port's rate,
    /// K = C·t).
    pub fn threshold(&self, field: &str, k: QueueLen) -> Result<(), Error> {
        let b = self.bytes(k);
        if b > self.buffer.0 as u128 {
            let at = match k {
                QueueLen::Time(_) => format!(" at {} ({})", self.rate, self.port),
                _ => String::new(),
            };
            return self
                .fail(field, format!("{k} = {b}B{at} exceeds the buffer ({}); must be ≤ the buffer", self.buffer));
        }
        Ok(())
    }

    /// `min` and `max` thresholds that fit the buffer, in order.
    pub fn band(&self, min: QueueLen, max: QueueLen) -> Result<(), Error> {
        self.threshold("min", min)?;
        self.threshold("max", max)?;
        if self.bytes(min) > self.bytes(max) {
            return self.fail("min", "must be ≤ max");
        }
        Ok(())
    }

    pub fn positive(&self, field: &str, t: Time) -> Result<(), Error> {
        if t == Time::ZERO {
            return self.fail(field, "must be > 0");
        }
        Ok(())
    }

    /// A probability in (0, 1].
    pub fn probability(&self, field: &str, p: f64) -> Result<(), Error> {
        if !(p > 0.0 && p <= 1.0) {
            return self.fail(field, format!("must be in (0, 1], got {p}"));
        }
        Ok(())
    }
}

/// What a marker is built for: its port's link, queues, scheduler and random stream.
pub struct Build<'a> {
    pub mtu: Bytes,
    pub rate: Rate,
    pub buffer: Bytes,
    /// The port's name, for errors.
    pub port: &'a str,
    pub queues: usize,
    pub sched: &'a AnyScheduler,
    /// The port's own stream of the seed.
    pub rng: Rng,
}

impl Build<'_> {
    pub fn bytes(&self, k: QueueLen) -> Bytes {
        k.resolve(self.mtu, self.rate)
    }

    /// Per queue: served by round robin.
    pub fn round_robin(&self) -> Vec<bool> {
        (0..self.queues).map(|q| self.sched.is_round_robin(q)).collect()
    }

    /// A resolved threshold still fits this port's buffer (validation checked it at each port's rate; this is
    /// the last word once the port is known).
    pub fn fits(&self, k: Bytes) -> Result<(), Error> {
        if k > self.buffer {
            let msg = format!("threshold {k} exceeds port {}'s buffer {}", self.port, self.buffer);
            return Err(Error::config("switch.marker", msg));
        }
        Ok(())
    }
}

/// The scheduler reports its round events straight to the port's marker.
impl crate::sched::RoundSink for AnyMarker {
    #[inline]
    fn round(&mut self, ev: crate::sched::RoundEvent) {
        self.on_round(&ev);
    }
}

/// A `Custom` marker's hooks, out of line and cold: the built-in schemes' dispatch, which the port inlines,
/// stays as small as it was before `Custom` existed (its view behind a trait object costs code, not time).
#[cold]
#[inline(never)]
fn custom_on_enqueue<Q: Queues>(m: &mut Box<dyn DynMarker>, st: &PortState<Q>, q: usize, p: &Packet) -> Verdict {
    m.on_enqueue(&st.as_dyn(), q, p)
}

#[cold]
#[inline(never)]
fn custom_on_dequeue<Q: Queues>(
    m: &mut Box<dyn DynMarker>,
    st: &PortState<Q>,
    q: usize,
    p: &Packet,
    sojourn: Time,
) -> Verdict {
    m.on_dequeue(&st.as_dyn(), q, p, sojourn)
}

/// Generates, from the registry list below, `AnyMarker` (one variant per marker type, plus `None` and
/// `Custom`), `MarkerConfig` (one serde `kind` per config table, plus `none`) and their exhaustive dispatch.
/// An entry is `Variant(marker type) { ConfigVariant(config type), … }`, optionally behind `#[cfg(…)]`; a
/// config variant's `kind` tag is its name in snake_case.
macro_rules! registry {
    // Normalise each entry to carry one cfg predicate (`all()` when none is given).
    (@norm [$($done:tt)*] #[cfg($c:meta)] $V:ident($T:ty) { $($k:tt)* } $(, $($rest:tt)*)?) => {
        registry!(@norm [$($done)* {($c) $V ($T) { $($k)* }}] $($($rest)*)?);
    };
    (@norm [$($done:tt)*] $V:ident($T:ty) { $($k:tt)* } $(, $($rest:tt)*)?) => {
        registry!(@norm [$($done)* {(all()) $V ($T) { $($k)* }}] $($($rest)*)?);
    };
    (@norm [$({($c:meta) $V:ident ($T:ty) { $($Kind:ident($Config:ty)),+ $(,)? }})*]) => {
        /// Every marking scheme, dispatched without virtual calls in the hot path (but for `Custom`).
        /// Line-aligned, so in a port's record it starts a cache line.
        #[derive(Clone, Debug)]
        #[repr(align(64))]
        pub enum AnyMarker {
            /// Drop-tail only: never marks.
            None,
            $( #[cfg($c)] $V($T), )*
            /// Research code's own scheme, from the library API (not from TOML): one virtual call per hook.
            Custom(Box<dyn DynMarker>),
        }

        impl AnyMarker {
            pub fn on_enqueue(&mut self, st: &PortState<impl Queues>, q: usize, p: &Packet) -> Verdict {
                match self {
                    AnyMarker::None => Verdict::Pass,
                    $( #[cfg($c)] AnyMarker::$V(m) => {
                        if <$T as Marker>::ACTS.enqueue { Marker::on_enqueue(m, st, q, p) } else { Verdict::Pass }
                    } )*
                    AnyMarker::Custom(m) => custom_on_enqueue(m, st, q, p),
                }
            }

            /// Whether `on_dequeue` can return anything but Pass: the port builds the marker's view at a
            /// departure only then. Derived from each type's `ACTS`.
            #[inline(always)]
            pub fn acts_at_dequeue(&self) -> bool {
                match self {
                    AnyMarker::None => false,
                    $( #[cfg($c)] AnyMarker::$V(_) => <$T as Marker>::ACTS.dequeue, )*
                    AnyMarker::Custom(m) => m.acts().dequeue,
                }
            }

            /// `sojourn` = now − the packet's enqueue time.
            pub fn on_dequeue(&mut self, st: &PortState<impl Queues>, q: usize, p: &Packet, sojourn: Time) -> Verdict {
                match self {
                    AnyMarker::None => Verdict::Pass,
                    $( #[cfg($c)] AnyMarker::$V(m) => {
                        if <$T as Marker>::ACTS.dequeue { Marker::on_dequeue(m, st, q, p, sojourn) } else { Verdict::Pass }
                    } )*
                    AnyMarker::Custom(m) => custom_on_dequeue(m, st, q, p, sojourn),
                }
            }

            /// A scheduler round event (MQ-ECN's round-time estimator listens).
            pub fn on_round(&mut self, ev: &RoundEvent) {
                match self {
                    AnyMarker::None => {}
                    $( #[cfg($c)] AnyMarker::$V(m) => Marker::on_round(m, ev), )*
                    AnyMarker::Custom(m) => m.on_round(ev),
                }
            }

            /// The port went idle at `now` (RED ages its average over idle time).
            pub fn on_idle(&mut self, now: Time) {
                match self {
                    AnyMarker::None => {}
                    $( #[cfg($c)] AnyMarker::$V(m) => Marker::on_idle(m, now), )*
                    AnyMarker::Custom(m) => m.on_idle(now),
                }
            }
        }

        /// A port's `marker = { kind = "…", … }` table: one variant per scheme's config, tagged by `kind`.
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
        pub enum MarkerConfig {
            /// Drop-tail, no marking.
            None,
            $( $( #[cfg($c)] $Kind($Config), )+ )*
        }

        impl MarkerConfig {
            /// Checks the table against the port it configures (`c.path` is the table's path).
            pub fn validate(&self, c: &Check) -> Result<(), Error> {
                match self {
                    MarkerConfig::None => Ok(()),
                    $( $( #[cfg($c)] MarkerConfig::$Kind(m) => MarkerSpec::validate(m, c), )+ )*
                }
            }

            /// The marker state for one port.
            pub fn build(&self, b: Build) -> Result<AnyMarker, Error> {
                match self {
                    MarkerConfig::None => Ok(AnyMarker::None),
                    $( $( #[cfg($c)] MarkerConfig::$Kind(m) => MarkerSpec::build(m, b).map(AnyMarker::$V), )+ )*
                }
            }
        }

        /// Every registered marker type's variant name and `ACTS` (the test that ties where a marker acts to
        /// what it does drives each one).
        #[cfg(test)]
        pub(crate) fn registered() -> Vec<(&'static str, Acts)> {
            vec![$( #[cfg($c)] (stringify!($V), <$T as Marker>::ACTS), )*]
        }

        #[cfg(test)]
        impl AnyMarker {
            /// The marker's own hooks, past the dispatch's `ACTS` guard: what the type would answer if asked.
            pub(crate) fn unguarded(&mut self, st: &PortState<impl Queues>, q: usize, p: &Packet, sojourn: Time) -> (Verdict, Verdict) {
                match self {
                    AnyMarker::None => (Verdict::Pass, Verdict::Pass),
                    $( #[cfg($c)] AnyMarker::$V(m) => {
                        (Marker::on_enqueue(m, st, q, p), Marker::on_dequeue(m, st, q, p, sojourn))
                    } )*
                    AnyMarker::Custom(m) => (m.on_enqueue(&st.as_dyn(), q, p), m.on_dequeue(&st.as_dyn(), q, p, sojourn)),
                }
            }

            /// The variant's name, as `registered` lists it.
            pub(crate) fn variant(&self) -> &'static str {
                match self {
                    AnyMarker::None => "None",
                    $( #[cfg($c)] AnyMarker::$V(_) => stringify!($V), )*
                    AnyMarker::Custom(_) => "Custom",
                }
            }
        }
    };
    ($($entries:tt)*) => {
        registry!(@norm [] $($entries)*);
    };
}

// The registry: one line per marker type, its config tables in the order their `kind`s are listed in errors.
registry! {
    Threshold(threshold::Threshold) { Threshold(threshold::ThresholdConfig) },
    MqEcn(mqecn::MqEcn) { Mqecn(mqecn::MqecnConfig), MqecnRed(mqecn::MqecnRedConfig) },
    Pmsb(pmsb::Pmsb) { Pmsb(pmsb::PmsbConfig) },
    Tcn(tcn::Tcn) { Tcn(tcn::TcnConfig) },
    Codel(codel::Codel) { Codel(codel::CodelConfig) },
    EcnSharp(ecnsharp::EcnSharp) { Ecnsharp(ecnsharp::EcnsharpConfig), EcnsharpQueue(ecnsharp::EcnsharpQueueConfig), EcnsharpRed(ecnsharp::EcnsharpRedConfig) },
    Red(red::Red) { Red(red::RedConfig) },
    #[cfg(test)]
    Toy(toy::EveryNth) { Toy(toy::ToyConfig) },
}
#[cfg(test)]
pub(crate) mod test_util {
    use super::*;

    const ONES: [u64; 32] = [1; 32];

    /// Queue loads made so far, by (backlogs, weights).
    type Loads = std::collections::HashMap<(Vec<u64>, Vec<u64>), &'static [QueueLoad]>;

    thread_local! {
        static LOADS: std::cell::RefCell<Loads> = Default::default();
    }

    /// Queue loads with these backlogs and weights, made once per distinct pair and kept for the test
    /// thread's life (views borrow them; a test that builds 10^5 views of one backlog makes one set).
    fn queue_loads(queue_bytes: &[u64], weights: &[u64]) -> &'static [QueueLoad] {
        LOADS.with(|m| {
            *m.borrow_mut().entry((queue_bytes.to_vec(), weights.to_vec())).or_insert_with(|| {
                let loads: Vec<QueueLoad> =
                    queue_bytes.iter().zip(weights).map(|(&bytes, &weight)| QueueLoad { bytes, weight }).collect();
                Box::leak(loads.into_boxed_slice())
            })
        })
    }

    /// A hand-made port view: 10 Gb/s, MTU 1500, the given per-queue backlogs, equal weights.
    pub fn state(queue_bytes: &[u64], now: Time) -> PortState<&'static [QueueLoad]> {
        weighted(queue_bytes, &ONES[..queue_bytes.len()], now)
    }

    /// As `state`, with per-queue weights.
    pub fn weighted(queue_bytes: &[u64], weights: &[u64], now: Time) -> PortState<&'static [QueueLoad]> {
        assert_eq!(queue_bytes.len(), weights.len(), "one weight per queue");
        let link = Link { rate: Rate::gbps(10), mtu: Bytes(1500), buffer: Bytes(1_000_000) };
        let total = queue_bytes.iter().sum();
        PortState::departure(now, link, queue_loads(queue_bytes, weights), total, total)
    }

    /// An ECT data packet of one MTU.
    pub fn pkt() -> Packet {
        Packet { wire: 1500, ecn: crate::packet::Ecn::Ect, ..Packet::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::{pkt, weighted};
    use super::*;

    /// A config table of every registered kind (and both points of those with `at`), each set to act on the
    /// congestion `where_it_acts` drives.
    const TABLES: &[&str] = &[
        r#"{ kind = "threshold", threshold = "1pkt" }"#,
        r#"{ kind = "threshold", threshold = "1pkt", at = "dequeue" }"#,
        r#"{ kind = "mqecn", threshold = "1pkt" }"#,
        r#"{ kind = "mqecn_red", min = "1pkt", max = "2pkt", max_p = 1.0 }"#,
        r#"{ kind = "pmsb", threshold = "1pkt" }"#,
        r#"{ kind = "pmsb", threshold = "1pkt", at = "dequeue" }"#,
        r#"{ kind = "tcn", threshold = "1us" }"#,
        r#"{ kind = "codel", target = "1us", interval = "10us" }"#,
        r#"{ kind = "ecnsharp", ins_target = "1us", pst_target = "1us", pst_interval = "10us" }"#,
        r#"{ kind = "ecnsharp_queue", ins_threshold = "1pkt", pst_threshold = "1pkt", pst_interval = "10us" }"#,
        r#"{ kind = "ecnsharp_red", min = "1pkt", max = "2pkt", max_p = 1.0, pst_target = "1us", pst_interval = "10us" }"#,
        r#"{ kind = "red", min = "1pkt", max = "1pkt" }"#,
        r#"{ kind = "toy", n = 1 }"#,
    ];

    fn build(table: &str) -> AnyMarker {
        let c: MarkerConfig = toml::from_str(&format!("m = {table}"))
            .map(|t: std::collections::BTreeMap<String, MarkerConfig>| t["m"].clone())
            .expect("a valid table");
        let sched = AnyScheduler::dwrr(vec![1500, 1500]);
        let b = Build {
            mtu: Bytes(1500),
            rate: Rate::gbps(10),
            buffer: Bytes(1_000_000),
            port: "s0->h0",
            queues: 2,
            sched: &sched,
            rng: Rng::stream(1, 1),
        };
        c.build(b).expect("builds")
    }

    /// Every registered marker type, driven with a long queue and long sojourns for 2 ms (past any interval
    /// above), acts where its `ACTS` says and nowhere else: asked at a point it does not declare, it passes.
    #[test]
    fn each_marker_acts_where_its_type_declares() {
        let mut acted: std::collections::BTreeMap<&str, (bool, bool)> = Default::default();
        for table in TABLES {
            let mut m = build(table);
            let (mut at_enqueue, mut at_dequeue) = (false, false);
            for i in 0..200 {
                let st = weighted(&[150_000, 150_000], &[1500, 1500], Time::from_us(10 * i));
                let (e, d) = m.unguarded(&st, 0, &pkt(), Time::from_us(500));
                at_enqueue |= e != Verdict::Pass;
                at_dequeue |= d != Verdict::Pass;
            }
            let seen = acted.entry(m.variant()).or_default();
            seen.0 |= at_enqueue;
            seen.1 |= at_dequeue;
        }
        let registered = registered();
        for (name, acts) in &registered {
            let Some(&(e, d)) = acted.get(name) else { panic!("{name}: no table drives it") };
            assert_eq!(Acts { enqueue: e, dequeue: d }, *acts, "{name}: where it acted vs its ACTS");
        }
        assert_eq!(acted.len(), registered.len(), "a table of an unregistered type");
    }

    /// The dispatch asks a marker only where its type acts, and derives `acts_at_dequeue` from `ACTS`.
    #[test]
    fn dispatch_follows_acts() {
        for table in TABLES {
            let mut m = build(table);
            let acts = registered().into_iter().find(|(n, _)| *n == m.variant()).unwrap().1;
            assert_eq!(m.acts_at_dequeue(), acts.dequeue, "{table}");
            let st = weighted(&[150_000, 150_000], &[1500, 1500], Time::from_us(1000));
            if !acts.enqueue {
                assert_eq!(m.on_enqueue(&st, 0, &pkt()), Verdict::Pass, "{table}");
            }
            if !acts.dequeue {
                assert_eq!(m.on_dequeue(&st, 0, &pkt(), Time::from_us(1000)), Verdict::Pass, "{table}");
            }
        }
    }

    /// At enqueue the view counts the arriving packet in its queue, the port and the pool, and nowhere else.
    #[test]
    fn the_arrival_view_counts_the_arriving_packet() {
        let loads = [QueueLoad { bytes: 3000, weight: 1 }, QueueLoad { bytes: 1500, weight: 2 }];
        let link = Link { rate: Rate::gbps(10), mtu: Bytes(1500), buffer: Bytes(100_000) };
        let st = PortState::arrival(Time::ZERO, link, &loads[..], 4500, Some(9000), 1, 1500);
        assert_eq!((st.queue_bytes(0), st.queue_bytes(1)), (3000, 3000));
        assert_eq!((st.port_bytes, st.pool_bytes, st.weight_sum), (6000, 10_500, 3));
        let st = PortState::arrival(Time::ZERO, link, &loads[..], 4500, None, 1, 1500);
        assert_eq!(st.pool_bytes, 0, "no pool");
        let st = PortState::departure(Time::ZERO, link, &loads[..], 4500, 0);
        assert_eq!((st.queue_bytes(0), st.queue_bytes(1), st.port_bytes), (3000, 1500, 4500));
    }
}
