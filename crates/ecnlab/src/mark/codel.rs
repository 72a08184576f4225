//! CoDel per queue at dequeue, marking ECT packets where it would drop (RFC 8289 §3.3 control law, §5 pseudocode).
//!
//! State per queue as RFC 8289 §5: `first_above_time`, `dropping`, `count`, `lastcount`, `drop_next`.
//! `ok_to_drop` (the RFC's `dodequeue`): reset when `sojourn < target` or the bytes left in the queue after the
//! departure are `≤ MTU` (the RFC's `bytes() <= maxpacket_`, with the port's MTU as maxpacket); otherwise OK
//! once `now ≥ first_above_time`, which is set to `now + interval` when the sojourn first goes above.
//! Re-entry (the RFC's Linux-derived rule): `count = count − lastcount` when that is `> 1` and the last
//! `drop_next` is less than 16·interval ago (a `drop_next` still in the future counts as recent, as Linux's
//! wrapping comparison does); else `count = 1`.
//!
//! Control law: `drop_next = t + interval / √count`, computed exactly in integer picoseconds as
//! `⌊interval / √count⌋` (no float, no Newton approximation, so no ±1 ps).
//!
//! One call judges one departing packet. RFC 8289 drops in a `while` loop inside one dequeue; here a Drop
//! verdict makes the port discard the packet and call `on_dequeue` again (same `now`) for the next one, and
//! that call is the loop's next iteration: its own `ok_to_drop` may end the dropping state, else it is dropped
//! too if `now ≥ drop_next`. `count` and `drop_next` advance at the drop (or mark) itself, as Linux does on an
//! ECN mark; the RFC advances `drop_next` only after checking that the next packet is still ok_to_drop, so the
//! two differ only in the `drop_next` left behind when the state ends (it feeds the 16·interval test). At
//! entry the RFC forwards the next packet unconditionally; here that packet is judged normally (it cannot be
//! dropped, `drop_next > now`, but a not-ok_to_drop packet ends the state one packet earlier).

use super::{Build, Check, DropReason, MarkReason, Marker, MarkerSpec, PortState, Queues, Verdict};
use crate::error::Error;
use crate::packet::Packet;
use crate::units::Time;

/// Which rule fired; both map to a `Codel` mark reason (the part says whether it was the entry or the law).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodelPart {
    /// Sojourn above target for an interval: enter the dropping state (first drop/mark).
    Enter,
    /// In the dropping state, `now ≥ drop_next`: the control law's next drop/mark.
    ControlLaw,
}

#[derive(Clone, Copy, Debug, Default)]
struct QueueState {
    /// The RFC's `first_above_time`: when dropping becomes OK (first above + interval); None = the RFC's 0.
    first_above_time: Option<Time>,
    dropping: bool,
    count: u32,
    lastcount: u32,
    drop_next: Time,
}

/// `marker = { kind = "codel", target = "5us", interval = "100us" }`: CoDel (RFC 8289) per queue, marking ECT
/// packets where it would drop; non-ECT ones are dropped (`non_ect = "drop"`, the default) or passed unmarked
/// (`non_ect = "pass"`, as the ECN♯ authors' ns-3 CoDel in marking mode).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    pub target: Time,
    pub interval: Time,
    #[serde(default, skip_serializing_if = "CodelNonEct::is_drop")]
    pub non_ect: CodelNonEct,
}

/// What CoDel does to a non-ECT packet where it would drop: drop it (RFC 8289) or let it pass unmarked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodelNonEct {
    #[default]
    Drop,
    Pass,
}

impl CodelNonEct {
    fn is_drop(&self) -> bool {
        *self == CodelNonEct::Drop
    }
}

impl MarkerSpec for CodelConfig {
    type Marker = Codel;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        c.positive("target", self.target)?;
        c.positive("interval", self.interval)
    }
    fn build(&self, b: Build) -> Result<Codel, Error> {
        let mut c = Codel::new(b.queues, self.target, self.interval);
        c.non_ect = self.non_ect;
        Ok(c)
    }
}

#[derive(Clone, Debug)]
pub struct Codel {
    pub target: Time,
    pub interval: Time,
    pub non_ect: CodelNonEct,
    queues: Vec<QueueState>,
}

impl Codel {
    pub fn new(n_queues: usize, target: Time, interval: Time) -> Codel {
        Codel { target, interval, non_ect: CodelNonEct::Drop, queues: vec![QueueState::default(); n_queues] }
    }

    /// Runs queue `q`'s state machine for one departing packet; the rule that would drop it, if any.
    pub fn decide(&mut self, st: &PortState<impl Queues>, q: usize, sojourn: Time) -> Option<CodelPart> {
        let ok = self.ok_to_drop(q, st.now, sojourn, st.queue_bytes(q) <= st.mtu.0);
        let interval = self.interval;
        let s = &mut self.queues[q];
        if s.dropping {
            if !ok {
                s.dropping = false;
                return None;
            }
            if st.now < s.drop_next {
                return None;
            }
            s.count = s.count.saturating_add(1);
            s.drop_next = control_law(s.drop_next, interval, s.count);
            Some(CodelPart::ControlLaw)
        } else if ok {
            enter(s, st.now, interval);
            Some(CodelPart::Enter)
        } else {
            None
        }
    }

    /// The RFC's `dodequeue` estimator: has the sojourn stayed above target for a whole interval?
    fn ok_to_drop(&mut self, q: usize, now: Time, sojourn: Time, at_most_one_mtu_left: bool) -> bool {
        let s = &mut self.queues[q];
        if sojourn < self.target || at_most_one_mtu_left {
            s.first_above_time = None;
            return false;
        }
        match s.first_above_time {
            None => {
                s.first_above_time = Some(now + self.interval);
                false
            }
            Some(t) => now >= t,
        }
    }
}

impl Marker for Codel {
    const ACTS: super::Acts = super::Acts::DEQUEUE;

    /// Marks an ECT packet where CoDel drops; drops a non-ECT one (an AQM drop), or passes it with
    /// `non_ect = "pass"`. The state machine advances either way.
    fn on_dequeue(&mut self, st: &PortState<impl Queues>, q: usize, p: &Packet, sojourn: Time) -> Verdict {
        match self.decide(st, q, sojourn) {
            None => Verdict::Pass,
            Some(_) if p.ecn.is_ect() => Verdict::Mark(MarkReason::Codel),
            Some(_) if self.non_ect == CodelNonEct::Pass => Verdict::Pass,
            Some(_) => Verdict::Drop(DropReason::Aqm),
        }
    }
}

/// Enters the dropping state, reusing the last cycle's drop rate when it ended recently.
fn enter(s: &mut QueueState, now: Time, interval: Time) {
    let delta = s.count.saturating_sub(s.lastcount);
    let recent = now.saturating_sub(s.drop_next).0 < interval.0.saturating_mul(16);
    s.dropping = true;
    s.count = if delta > 1 && recent { delta } else { 1 };
    s.drop_next = control_law(now, interval, s.count);
    s.lastcount = s.count;
}

/// `t + ⌊interval / √count⌋`, exactly: ⌊I/√c⌋ = ⌊√⌊I²/c⌋⌋.
fn control_law(t: Time, interval: Time, count: u32) -> Time {
    let i = interval.0 as u128;
    t + Time(isqrt(i * i / count.max(1) as u128) as u64)
}

/// ⌊√n⌋, from a float guess corrected to the exact integer (u128::isqrt needs Rust 1.84; MSRV is 1.80).
fn isqrt(n: u128) -> u128 {
    let mut x = ((n as f64).sqrt() as u128).min(u64::MAX as u128);
    while x * x > n {
        x -= 1;
    }
    while (x + 1).checked_mul(x + 1).is_some_and(|sq| sq <= n) {
        x += 1;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::test_util::state;
    use crate::packet::Ecn;

    const MARK: Verdict = Verdict::Mark(MarkReason::Codel);
    const DROP: Verdict = Verdict::Drop(DropReason::Aqm);
    const TARGET: Time = Time::from_us(10);
    const INTERVAL: Time = Time::from_us(100);
    const ABOVE: Time = Time::from_us(20);
    const BELOW: Time = Time::from_us(5);
    /// Ten packets left behind: well over one MTU.
    const BACKLOG: u64 = 15_000;

    fn pkt(ecn: Ecn) -> Packet {
        Packet { wire: 1500, ecn, ..Packet::default() }
    }

    fn codel() -> Codel {
        Codel::new(2, TARGET, INTERVAL)
    }

    /// One dequeue from queue 0 at `now_ps` with `left` bytes behind and the given sojourn.
    fn deq(c: &mut Codel, now_ps: u64, left: u64, sojourn: Time, ecn: Ecn) -> Verdict {
        c.on_dequeue(&state(&[left, 0], Time(now_ps)), 0, &pkt(ecn), sojourn)
    }

    fn ect(c: &mut Codel, now_ps: u64, sojourn: Time) -> Verdict {
        deq(c, now_ps, BACKLOG, sojourn, Ecn::Ect)
    }

    const US: u64 = 1_000_000;

    #[test]
    fn control_law_is_floor_of_interval_over_sqrt_count() {
        assert_eq!(control_law(Time::ZERO, INTERVAL, 1), Time(100_000_000));
        assert_eq!(control_law(Time::ZERO, INTERVAL, 2), Time(70_710_678)); // 70 710 678.1
        assert_eq!(control_law(Time::ZERO, INTERVAL, 3), Time(57_735_026)); // 57 735 026.9
        assert_eq!(control_law(Time::ZERO, INTERVAL, 4), Time(50_000_000));
        assert_eq!(control_law(Time(7), INTERVAL, 5), Time(7 + 44_721_359)); // 44 721 359.5
        assert_eq!(isqrt(u64::MAX as u128 * u64::MAX as u128), u64::MAX as u128);
    }

    #[test]
    fn standing_queue_marks_after_an_interval_then_at_interval_over_sqrt_count() {
        let mut c = codel();
        // t = 0: sojourn goes above target; first_above_time = 0 + interval.
        assert_eq!(ect(&mut c, 0, ABOVE), Verdict::Pass);
        assert_eq!(c.queues[0].first_above_time, Some(Time(100 * US)));
        assert_eq!(ect(&mut c, 50 * US, ABOVE), Verdict::Pass);
        assert_eq!(ect(&mut c, 100 * US - 1, ABOVE), Verdict::Pass);
        // now ≥ first_above_time: enter dropping, count 1, drop_next = now + interval.
        assert_eq!(c.decide(&state(&[BACKLOG], Time(100 * US)), 0, ABOVE), Some(CodelPart::Enter));
        let s = c.queues[0];
        assert!(s.dropping);
        assert_eq!((s.count, s.lastcount, s.drop_next), (1, 1, Time(200 * US)));
        assert_eq!(ect(&mut c, 150 * US, ABOVE), Verdict::Pass);
        assert_eq!(ect(&mut c, 200 * US - 1, ABOVE), Verdict::Pass);
        // count 2: drop_next = 200 us + ⌊100 us / √2⌋.
        assert_eq!(ect(&mut c, 200 * US, ABOVE), MARK);
        assert_eq!((c.queues[0].count, c.queues[0].drop_next), (2, Time(270_710_678)));
        assert_eq!(ect(&mut c, 270_710_677, ABOVE), Verdict::Pass);
        // count 3: += ⌊100 us / √3⌋.
        assert_eq!(ect(&mut c, 270_710_678, ABOVE), MARK);
        assert_eq!((c.queues[0].count, c.queues[0].drop_next), (3, Time(328_445_704)));
        // count 4: += 50 us.
        assert_eq!(ect(&mut c, 328_445_704, ABOVE), MARK);
        assert_eq!((c.queues[0].count, c.queues[0].drop_next), (4, Time(378_445_704)));
        assert!(!c.queues[1].dropping, "queue 1 untouched");
    }

    /// Drives queue 0 into the dropping state and through three control-law marks (count 4).
    fn standing_queue_to_count_4(c: &mut Codel) {
        for (t, v) in [(0, Verdict::Pass), (100 * US, MARK), (200 * US, MARK), (270_710_678, MARK), (328_445_704, MARK)]
        {
            assert_eq!(ect(c, t, ABOVE), v, "at {t} ps");
        }
        assert_eq!(c.queues[0].count, 4);
    }

    #[test]
    fn sojourn_below_target_leaves_the_state_and_a_fresh_interval_is_needed() {
        let mut c = codel();
        standing_queue_to_count_4(&mut c);
        assert_eq!(ect(&mut c, 350 * US, BELOW), Verdict::Pass);
        assert!(!c.queues[0].dropping);
        assert_eq!(c.queues[0].first_above_time, None);
        // Past the old drop_next (378.4 us) but not dropping: nothing until above target for an interval.
        assert_eq!(ect(&mut c, 380 * US, ABOVE), Verdict::Pass);
        assert_eq!(c.queues[0].first_above_time, Some(Time(480 * US)));
        assert_eq!(ect(&mut c, 480 * US - 1, ABOVE), Verdict::Pass);
        // Re-entry 101.6 us after drop_next (< 16 intervals): count = count − lastcount = 4 − 1 = 3.
        assert_eq!(ect(&mut c, 480 * US, ABOVE), MARK);
        let s = c.queues[0];
        assert_eq!((s.count, s.lastcount, s.drop_next), (3, 3, Time(480 * US + 57_735_026)));
    }

    #[test]
    fn re_entry_long_after_the_last_cycle_restarts_count_at_one() {
        let mut c = codel();
        standing_queue_to_count_4(&mut c);
        assert_eq!(ect(&mut c, 350 * US, BELOW), Verdict::Pass);
        // drop_next was 378 445 704 ps; re-enter at ≥ drop_next + 16 intervals.
        let t0 = 378_445_704 + 1_600 * US - 100 * US;
        assert_eq!(ect(&mut c, t0, ABOVE), Verdict::Pass);
        assert_eq!(ect(&mut c, t0 + 100 * US, ABOVE), MARK);
        assert_eq!((c.queues[0].count, c.queues[0].drop_next), (1, Time(t0 + 200 * US)));
    }

    #[test]
    fn non_ect_is_dropped_where_ect_is_marked_and_ce_is_marked() {
        let mut c = codel();
        assert_eq!(deq(&mut c, 0, BACKLOG, ABOVE, Ecn::NotEct), Verdict::Pass);
        assert_eq!(deq(&mut c, 100 * US, BACKLOG, ABOVE, Ecn::NotEct), DROP);
        assert_eq!(deq(&mut c, 150 * US, BACKLOG, ABOVE, Ecn::NotEct), Verdict::Pass);
        assert_eq!(deq(&mut c, 200 * US, BACKLOG, ABOVE, Ecn::NotEct), DROP);
        assert_eq!(deq(&mut c, 270_710_678, BACKLOG, ABOVE, Ecn::Ce), MARK);
        assert_eq!(c.queues[0].count, 3, "drops and marks advance the same law");
    }

    #[test]
    fn non_ect_pass_lets_non_ect_through_and_advances_the_same_law() {
        // As the test above with `non_ect = "pass"` (the ECN♯ authors' ns-3 CoDel in marking mode): where the
        // default drops a non-ECT packet this one passes it, and count / drop_next advance exactly as there.
        let cfg: CodelConfig = toml::from_str("target = \"10us\"\ninterval = \"100us\"\nnon_ect = \"pass\"").unwrap();
        assert_eq!(cfg.non_ect, CodelNonEct::Pass);
        let mut c = codel();
        c.non_ect = cfg.non_ect;
        assert_eq!(deq(&mut c, 0, BACKLOG, ABOVE, Ecn::NotEct), Verdict::Pass);
        assert_eq!(deq(&mut c, 100 * US, BACKLOG, ABOVE, Ecn::NotEct), Verdict::Pass);
        assert_eq!((c.queues[0].count, c.queues[0].drop_next), (1, Time(200 * US)));
        assert_eq!(deq(&mut c, 200 * US, BACKLOG, ABOVE, Ecn::NotEct), Verdict::Pass);
        assert_eq!(deq(&mut c, 270_710_678, BACKLOG, ABOVE, Ecn::Ce), MARK);
        assert_eq!(c.queues[0].count, 3);
        let default: CodelConfig = toml::from_str("target = \"10us\"\ninterval = \"100us\"").unwrap();
        assert_eq!(default.non_ect, CodelNonEct::Drop);
    }

    #[test]
    fn drop_loop_becomes_one_call_per_packet_at_the_same_instant() {
        // Enter at 100 us (drop_next 200 us); the next dequeue comes late, at 400 us, when drop_next is far
        // behind. RFC 8289 drops in a loop until now < drop_next; the port calls again after each Drop.
        let mut c = codel();
        assert_eq!(deq(&mut c, 0, BACKLOG, ABOVE, Ecn::NotEct), Verdict::Pass);
        assert_eq!(deq(&mut c, 100 * US, BACKLOG, ABOVE, Ecn::NotEct), DROP);
        let t = 400 * US;
        let expect_next = [270_710_678, 328_445_704, 378_445_704, 423_167_063];
        for (i, next) in expect_next.into_iter().enumerate() {
            assert_eq!(deq(&mut c, t, BACKLOG, ABOVE, Ecn::NotEct), DROP, "loop iteration {i}");
            assert_eq!(c.queues[0].drop_next, Time(next));
        }
        assert_eq!(deq(&mut c, t, BACKLOG, ABOVE, Ecn::NotEct), Verdict::Pass, "now < drop_next ends the loop");
        assert_eq!(c.queues[0].count, 5);
    }

    #[test]
    fn at_most_one_mtu_left_behind_is_never_ok_to_drop() {
        let mut c = codel();
        assert_eq!(ect(&mut c, 0, ABOVE), Verdict::Pass);
        // One MTU left behind resets the estimator, as a low sojourn would.
        assert_eq!(deq(&mut c, 50 * US, 1_500, ABOVE, Ecn::Ect), Verdict::Pass);
        assert_eq!(c.queues[0].first_above_time, None);
        assert_eq!(ect(&mut c, 100 * US, ABOVE), Verdict::Pass, "fresh interval from 100 us");
        assert_eq!(deq(&mut c, 200 * US, 1_500, ABOVE, Ecn::Ect), Verdict::Pass);
        assert_eq!(ect(&mut c, 250 * US, ABOVE), Verdict::Pass);
        // 1501 bytes behind is more than one MTU: allowed.
        assert_eq!(deq(&mut c, 350 * US, 1_501, ABOVE, Ecn::Ect), MARK);
        // In the dropping state, a departure leaving ≤ MTU behind ends it.
        assert_eq!(deq(&mut c, 450 * US, 0, ABOVE, Ecn::Ect), Verdict::Pass);
        assert!(!c.queues[0].dropping);
    }
}
