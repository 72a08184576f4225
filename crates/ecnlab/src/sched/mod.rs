//! Schedulers: pick which queue of a port sends next. They know nothing of ECN.
//!
//! Contract with the port (`port::Port`), the hooks of the `Scheduler` trait:
//! - `on_enqueue(q, wire, now, ev)` after a packet joined queue `q` (the queue held `wire` fewer bytes before);
//! - `pick(view, now, ev)` when the transmitter is free: the queue whose head packet goes next (`None` iff
//!   every queue is empty); it may end turns (deficit used up) and report them;
//! - `on_dequeue(q, wire, now_empty, now, ev)` after the picked head packet left queue `q`;
//! - `pass(q, wire, now, ev)` in place of the three for a packet that finds every queue empty and the
//!   transmitter free, and leaves at once (most arrivals at a switch). Its default is the three calls
//!   (`pass_by_parts`); a scheduler writes its own only where that is measurably faster, and the tests compare
//!   it with the default.
//!
//! Round events go to `ev`, a `RoundSink` (the port passes its marker, so they reach it as they happen), for
//! MQ-ECN's round-time estimate (DESIGN "MQ-ECN"): a queue `Joined` the tail of the active list (on becoming
//! non-empty, or re-queued after its turn), and a queue `TurnEnded` (it emptied or used up its
//! quantum/deficit) with `started` = the time it last joined.
//! WRR and DWRR emit them (`rr`); strict priority and WFQ have no rounds and emit none.
//!
//! Each discipline is one file holding its state, its `Scheduler` impl, its `scheduler = { kind = … }` table
//! and that table's `SchedulerSpec` (validation and build): `sp`, `wrr` and `dwrr` (on the shared
//! round-robin engine `rr`), `wfq`, and `sp_over` (strict priority over any of them, generic over the inner
//! scheduler). The `registry!` list at the end of this file generates `AnyScheduler` (the enum dispatch of the
//! hot path), `SchedulerConfig` (the `kind` tags) and the validate/build dispatch: a new scheduler is one file
//! plus one line there (docs/EXTENDING.md, "Adding a scheduler"). None allocates per packet.

use crate::error::Error;
use crate::units::{Bytes, Time};

pub mod dwrr;
pub mod rr;
pub mod sp;
pub mod sp_over;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod toy;
pub mod wfq;
pub mod wrr;

pub use dwrr::Dwrr;
pub use sp::StrictPriority;
pub use sp_over::SpOver;
pub use wfq::Wfq;
pub use wrr::Wrr;

/// A read-only view of a port's queues for the scheduler.
pub trait QueueView {
    fn n(&self) -> usize;
    /// Wire bytes of the head packet of queue `q`, or `None` when it is empty.
    fn head(&self, q: usize) -> Option<u32>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundEvent {
    Joined { queue: usize, at: Time },
    TurnEnded { queue: usize, started: Time, at: Time },
}

impl RoundEvent {
    /// The same event about queue `queue + by`.
    pub fn shifted(self, by: usize) -> RoundEvent {
        match self {
            RoundEvent::Joined { queue, at } => RoundEvent::Joined { queue: queue + by, at },
            RoundEvent::TurnEnded { queue, started, at } => RoundEvent::TurnEnded { queue: queue + by, started, at },
        }
    }
}

/// Where a scheduler reports round events as they happen: the port's marker, or a list in tests.
pub trait RoundSink {
    fn round(&mut self, ev: RoundEvent);
}

impl RoundSink for Vec<RoundEvent> {
    fn round(&mut self, ev: RoundEvent) {
        self.push(ev);
    }
}

/// A scheduling discipline. Only `pick` and the two questions about the queues it was built for are required;
/// the other hooks default to doing nothing, and `pass` to the three calls it stands for.
pub trait Scheduler {
    /// Every queue it schedules is served in round-robin turns, with round events (what MQ-ECN's dynamic
    /// threshold needs).
    const ROUND_ROBIN: bool = false;

    /// The number of queues it was built for (`None`: any number).
    fn queues(&self) -> Option<usize>;

    /// Per-queue weights as markers read them (PMSB's w_i, MQ-ECN's quantum), for a port of `n` queues
    /// (`n` = `queues()` where that is known): quantum bytes for (D)WRR, weight for WFQ, 1 for strict priority.
    fn weights(&self, n: usize) -> Vec<u64>;

    /// Whether queue `q` is served by round robin (MQ-ECN applies its dynamic threshold only there).
    fn is_round_robin(&self, q: usize) -> bool {
        let _ = q;
        Self::ROUND_ROBIN
    }

    /// A packet of `wire` bytes joined queue `q`.
    #[inline]
    fn on_enqueue(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        let _ = (q, wire, now, ev);
    }

    /// The queue to serve next, or `None` when every queue is empty.
    fn pick(&mut self, qs: &impl QueueView, now: Time, ev: &mut impl RoundSink) -> Option<usize>;

    /// The head packet of queue `q` (the one `pick` chose), `wire` bytes, left; `now_empty`: the queue is empty.
    #[inline]
    fn on_dequeue(&mut self, q: usize, wire: u32, now_empty: bool, now: Time, ev: &mut impl RoundSink) {
        let _ = (q, wire, now_empty, now, ev);
    }

    /// A packet of `wire` bytes reaches queue `q` while every queue is empty and the transmitter is free, and
    /// goes straight into service: the same state and round events as `on_enqueue`, `pick` (which can only
    /// pick `q`) and `on_dequeue` with `now_empty`.
    #[inline]
    fn pass(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
        pass_by_parts(self, q, wire, now, ev);
    }
}

/// `Scheduler::pass` as its three calls, over a view in which queue `q` holds the lone packet: the default
/// every scheduler gets, and what a scheduler's own `pass` is tested against.
#[inline]
pub fn pass_by_parts<S: Scheduler + ?Sized>(s: &mut S, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
    s.on_enqueue(q, wire, now, ev);
    let n = s.queues().unwrap_or(q + 1);
    let picked = s.pick(&Lone { n, q, wire }, now, ev);
    debug_assert_eq!(picked, Some(q), "a packet alone in its port must be picked");
    s.on_dequeue(q, wire, true, now, ev);
}

/// A port's `n` queues, all empty but `q`, which holds one packet of `wire` bytes.
struct Lone {
    n: usize,
    q: usize,
    wire: u32,
}

impl QueueView for Lone {
    #[inline]
    fn n(&self) -> usize {
        self.n
    }
    #[inline]
    fn head(&self, q: usize) -> Option<u32> {
        (q == self.q).then_some(self.wire)
    }
}

/// Scheduler weights: 32 queues × 2²⁰ × a quantum of at most 2³² B cannot wrap the weight sums MQ-ECN and
/// PMSB divide by (u64).
pub const MAX_WEIGHT: u64 = 1 << 20;
/// The largest (D)WRR quantum, 4 GiB.
pub const MAX_QUANTUM: Bytes = Bytes(1 << 32);

/// A scheduler's `scheduler = { kind = "…", … }` table: checked against the port's queues, then built.
pub trait SchedulerSpec {
    type Scheduler: Scheduler;
    /// Field paths and ranges as every other config error (`Check` prefixes the scheduler's path).
    fn validate(&self, c: &Check) -> Result<(), Error>;
    /// The scheduler for `queues` queues (validated: the table fits them).
    fn build(&self, queues: usize) -> Self::Scheduler;
}

/// What a scheduler table is validated against: its path (`switch.scheduler`, `ports.3.scheduler`,
/// `….group`), the MTU and the number of queues it schedules.
pub struct Check<'a> {
    pub path: &'a str,
    pub mtu: Bytes,
    pub queues: usize,
}

impl Check<'_> {
    /// An error at the table's `field` (the table itself when empty).
    pub fn fail(&self, field: &str, msg: impl Into<String>) -> Result<(), Error> {
        Err(Error::config_field(self.path, field, msg))
    }

    /// Per-queue weights, when given: one per queue, each in [1, `MAX_WEIGHT`].
    pub fn weights(&self, w: Option<&[u64]>) -> Result<(), Error> {
        let Some(w) = w else { return Ok(()) };
        if w.len() != self.queues {
            return self.fail("weights", format!("needs {} weights (one per queue), got {}", self.queues, w.len()));
        }
        if let Some(i) = w.iter().position(|&x| x == 0 || x > MAX_WEIGHT) {
            return self.fail(&format!("weights.{i}"), format!("weights must be in [1, {MAX_WEIGHT}], got {}", w[i]));
        }
        Ok(())
    }
}

/// A registry kind's `kind` tag: its variant name in snake_case, as serde spells it.
fn snake_case(name: &str) -> String {
    let mut s = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            s.push('_');
        }
        s.extend(c.to_lowercase());
    }
    s
}

/// Generates, from the registry list below, `AnyScheduler` (one variant per scheduler type, and one per
/// type that may run under strict priority, `SpOver<type>`), `SchedulerConfig` (one serde `kind` per config
/// table, then `sp_over`) and their exhaustive dispatch. An entry is `Variant(scheduler type) {
/// ConfigVariant(config type), … }`, optionally behind `#[cfg(…)]`, optionally followed by `under_sp
/// SpVariant` when the type may be the group of `sp_over`; a config variant's `kind` tag is its name in
/// snake_case.
macro_rules! registry {
    // Normalise each entry to carry one cfg predicate (`all()` when none is given), a list of at most one
    // `SpOver` variant, and whether it has one.
    (@norm [$($done:tt)*] #[cfg($c:meta)] $V:ident($T:ty) { $($k:tt)* } under_sp $S:ident $(, $($rest:tt)*)?) => {
        registry!(@norm [$($done)* {($c) $V ($T) { $($k)* } [$S] (true)}] $($($rest)*)?);
    };
    (@norm [$($done:tt)*] #[cfg($c:meta)] $V:ident($T:ty) { $($k:tt)* } $(, $($rest:tt)*)?) => {
        registry!(@norm [$($done)* {($c) $V ($T) { $($k)* } [] (false)}] $($($rest)*)?);
    };
    (@norm [$($done:tt)*] $V:ident($T:ty) { $($k:tt)* } under_sp $S:ident $(, $($rest:tt)*)?) => {
        registry!(@norm [$($done)* {(all()) $V ($T) { $($k)* } [$S] (true)}] $($($rest)*)?);
    };
    (@norm [$($done:tt)*] $V:ident($T:ty) { $($k:tt)* } $(, $($rest:tt)*)?) => {
        registry!(@norm [$($done)* {(all()) $V ($T) { $($k)* } [] (false)}] $($($rest)*)?);
    };
    (@norm [$({($c:meta) $V:ident ($T:ty) { $($Kind:ident($Config:ty)),+ $(,)? } [$($S:ident)?] ($g:literal)})*]) => {
        /// Every scheduler, dispatched by enum (no virtual calls in the hot path). Line-aligned, so in a
        /// port's record the tag and a round robin's state share one cache line.
        #[derive(Clone, Debug)]
        #[repr(align(64))]
        pub enum AnyScheduler {
            $( #[cfg($c)] $V($T), )*
            $( $( #[cfg($c)] $S(SpOver<$T>), )? )*
        }

        impl AnyScheduler {
            /// The number of queues the scheduler was built for (`None`: any).
            pub fn queues(&self) -> Option<usize> {
                match self {
                    $( #[cfg($c)] AnyScheduler::$V(s) => Scheduler::queues(s), )*
                    $( $( #[cfg($c)] AnyScheduler::$S(s) => Scheduler::queues(s), )? )*
                }
            }

            /// Per-queue weights as markers see them (see `Scheduler::weights`). Panics if the scheduler was
            /// built for another number of queues than the port's `n` (a builder bug; configs are validated
            /// before).
            pub fn weights(&self, n: usize) -> Vec<u64> {
                if let Some(m) = self.queues() {
                    assert_eq!(m, n, "scheduler built for {m} queues, the port has {n}");
                }
                match self {
                    $( #[cfg($c)] AnyScheduler::$V(s) => Scheduler::weights(s, n), )*
                    $( $( #[cfg($c)] AnyScheduler::$S(s) => Scheduler::weights(s, n), )? )*
                }
            }

            /// Whether queue `q` is served by round robin (MQ-ECN applies its dynamic threshold only there).
            pub fn is_round_robin(&self, q: usize) -> bool {
                match self {
                    $( #[cfg($c)] AnyScheduler::$V(s) => Scheduler::is_round_robin(s, q), )*
                    $( $( #[cfg($c)] AnyScheduler::$S(s) => Scheduler::is_round_robin(s, q), )? )*
                }
            }

            pub fn on_enqueue(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
                match self {
                    $( #[cfg($c)] AnyScheduler::$V(s) => Scheduler::on_enqueue(s, q, wire, now, ev), )*
                    $( $( #[cfg($c)] AnyScheduler::$S(s) => Scheduler::on_enqueue(s, q, wire, now, ev), )? )*
                }
            }

            /// The queue to serve next, or `None` when every queue is empty.
            pub fn pick(&mut self, qs: &impl QueueView, now: Time, ev: &mut impl RoundSink) -> Option<usize> {
                match self {
                    $( #[cfg($c)] AnyScheduler::$V(s) => Scheduler::pick(s, qs, now, ev), )*
                    $( $( #[cfg($c)] AnyScheduler::$S(s) => Scheduler::pick(s, qs, now, ev), )? )*
                }
            }

            /// A packet through an idle, empty port (see `Scheduler::pass`).
            pub fn pass(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
                match self {
                    $( #[cfg($c)] AnyScheduler::$V(s) => Scheduler::pass(s, q, wire, now, ev), )*
                    $( $( #[cfg($c)] AnyScheduler::$S(s) => Scheduler::pass(s, q, wire, now, ev), )? )*
                }
            }

            pub fn on_dequeue(&mut self, q: usize, wire: u32, now_empty: bool, now: Time, ev: &mut impl RoundSink) {
                match self {
                    $( #[cfg($c)] AnyScheduler::$V(s) => Scheduler::on_dequeue(s, q, wire, now_empty, now, ev), )*
                    $( $( #[cfg($c)] AnyScheduler::$S(s) => Scheduler::on_dequeue(s, q, wire, now_empty, now, ev), )? )*
                }
            }

            /// Queues 0..strict in strict priority before `inner`, which schedules the queues after them (its
            /// queue 0 is the port's queue `strict`). Over strict priority it is strict priority; over another
            /// SP-over group the strict prefixes add up; with `strict == 0` it is `inner` itself. Panics for a
            /// type whose registry entry has no `under_sp` (validation rejects such a group first).
            pub fn sp_over(strict: usize, inner: AnyScheduler) -> AnyScheduler {
                if strict == 0 {
                    return inner;
                }
                match inner {
                    AnyScheduler::StrictPriority(s) => AnyScheduler::StrictPriority(s),
                    $( $( #[cfg($c)] AnyScheduler::$V(s) => AnyScheduler::$S(SpOver::new(strict, s)), )? )*
                    $( $( #[cfg($c)] AnyScheduler::$S(s) => AnyScheduler::$S(s.behind(strict)), )? )*
                    #[allow(unreachable_patterns)]
                    other => panic!("{other:?} cannot run under strict priority"),
                }
            }
        }

        /// The enum is a scheduler too (what generic code such as `pass_by_parts` drives).
        impl Scheduler for AnyScheduler {
            fn queues(&self) -> Option<usize> {
                AnyScheduler::queues(self)
            }
            fn weights(&self, n: usize) -> Vec<u64> {
                AnyScheduler::weights(self, n)
            }
            fn is_round_robin(&self, q: usize) -> bool {
                AnyScheduler::is_round_robin(self, q)
            }
            fn on_enqueue(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
                AnyScheduler::on_enqueue(self, q, wire, now, ev)
            }
            fn pick(&mut self, qs: &impl QueueView, now: Time, ev: &mut impl RoundSink) -> Option<usize> {
                AnyScheduler::pick(self, qs, now, ev)
            }
            fn on_dequeue(&mut self, q: usize, wire: u32, now_empty: bool, now: Time, ev: &mut impl RoundSink) {
                AnyScheduler::on_dequeue(self, q, wire, now_empty, now, ev)
            }
            fn pass(&mut self, q: usize, wire: u32, now: Time, ev: &mut impl RoundSink) {
                AnyScheduler::pass(self, q, wire, now, ev)
            }
        }

        /// A port's `scheduler = { kind = "…", … }` table: one variant per scheduler's config, tagged by
        /// `kind`, then `sp_over`.
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
        pub enum SchedulerConfig {
            $( $( #[cfg($c)] $Kind($Config), )+ )*
            /// Queues 0..strict in strict priority above a group (the remaining queues) scheduled by `group`.
            SpOver(sp_over::SpOverConfig),
        }

        impl SchedulerConfig {
            /// Checks the table against the queues it schedules (`c.path` is the table's path).
            pub fn validate(&self, c: &Check) -> Result<(), Error> {
                match self {
                    $( $( #[cfg($c)] SchedulerConfig::$Kind(s) => SchedulerSpec::validate(s, c), )+ )*
                    SchedulerConfig::SpOver(s) => s.validate(c),
                }
            }

            /// The scheduler of a port's `queues` queues.
            pub fn build(&self, queues: usize) -> AnyScheduler {
                match self {
                    $( $( #[cfg($c)] SchedulerConfig::$Kind(s) => AnyScheduler::$V(SchedulerSpec::build(s, queues)), )+ )*
                    SchedulerConfig::SpOver(s) => s.build(queues),
                }
            }

            /// Whether some queue is served by round robin (what MQ-ECN needs).
            pub fn has_round_robin(&self) -> bool {
                match self {
                    $( $( #[cfg($c)] SchedulerConfig::$Kind(_) => <$T as Scheduler>::ROUND_ROBIN, )+ )*
                    SchedulerConfig::SpOver(s) => s.group.has_round_robin(),
                }
            }

            /// Whether the table's scheduler may be the group of `sp_over` (its entry has `under_sp`).
            pub fn can_be_grouped(&self) -> bool {
                match self {
                    $( $( #[cfg($c)] SchedulerConfig::$Kind(_) => $g, )+ )*
                    SchedulerConfig::SpOver(_) => false,
                }
            }

            /// The `kind`s that may be the group of `sp_over`, in registry order.
            pub fn groupable_kinds() -> Vec<String> {
                let mut kinds = Vec::new();
                $( #[cfg($c)] {
                    if $g {
                        $( kinds.push(snake_case(stringify!($Kind))); )+
                    }
                } )*
                kinds
            }
        }
    };
    ($($entries:tt)*) => {
        registry!(@norm [] $($entries)*);
    };
}

// The registry: one line per scheduler type, its config tables in the order their `kind`s are listed in
// errors; `under_sp` names its variant as the group of `sp_over`.
registry! {
    StrictPriority(sp::StrictPriority) { Sp(sp::SpConfig) },
    Wrr(wrr::Wrr) { Wrr(wrr::WrrConfig) } under_sp SpOverWrr,
    Dwrr(dwrr::Dwrr) { Dwrr(dwrr::DwrrConfig) } under_sp SpOverDwrr,
    Wfq(wfq::Wfq) { Wfq(wfq::WfqConfig) } under_sp SpOverWfq,
    #[cfg(test)]
    Toy(toy::PacketRoundRobin) { Toy(toy::ToyConfig) },
}

impl Default for SchedulerConfig {
    /// Strict priority, the default of every port.
    fn default() -> Self {
        SchedulerConfig::Sp(sp::SpConfig {})
    }
}

/// Constructors for code that builds ports by hand (tests, research code).
impl AnyScheduler {
    /// Strict priority over any number of queues (queue 0 first).
    pub fn strict_priority() -> AnyScheduler {
        AnyScheduler::StrictPriority(StrictPriority)
    }

    /// WRR over `quanta.len()` queues; `quanta[i]` = bytes queue i may send per turn (≥ MTU is validated
    /// by the caller; 0 is raised to 1).
    pub fn wrr(quanta: Vec<u64>) -> AnyScheduler {
        AnyScheduler::Wrr(Wrr::new(quanta))
    }

    /// DWRR over `quanta.len()` queues; `quanta[i]` = bytes credited to queue i's deficit per turn.
    pub fn dwrr(quanta: Vec<u64>) -> AnyScheduler {
        AnyScheduler::Dwrr(Dwrr::new(quanta))
    }

    /// WFQ (SCFQ) over `weights.len()` queues with these relative weights (0 is raised to 1).
    pub fn wfq(weights: Vec<u64>) -> AnyScheduler {
        AnyScheduler::Wfq(Wfq::new(weights))
    }
}
