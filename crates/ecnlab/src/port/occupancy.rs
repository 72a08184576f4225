//! Exact time-weighted occupancy over every change: mean and maximum exactly, quantiles from a `LogHist`.

use crate::observe::LogHist;
use crate::units::Time;

/// `repr(C)`: what every change reads and writes fills the first 64 bytes, one cache line in an aligned
/// queue record; the histogram is boxed (a pointer there), the rest follows.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Occupancy {
    cur: u64,
    last: Time,
    integral: u128,
    integral_sq: f64,
    max: u64,
    min: u64,
    hist: Option<Box<LogHist>>,
    start: Time,
    /// The largest value before the window opened; the run's maximum is the larger of it and `max`.
    max_before: u64,
}

#[inline(never)]
fn add_to_hist(h: &mut LogHist, value: u64, dt: u64) {
    h.add(value, dt);
}

#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct OccupancyStats {
    /// Time-weighted mean over the window, bytes.
    pub mean: f64,
    pub max: u64,
    /// Minimum over the window, bytes.
    pub min: u64,
    /// Maximum over the whole run, warm-up included (slow-start peaks), bytes.
    pub max_all: u64,
    /// Time-weighted standard deviation over the window, bytes.
    pub std: f64,
    /// Time-weighted median and 99th percentile, bytes (when histograms are on for the port).
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

impl Occupancy {
    pub fn new(histogram: bool) -> Occupancy {
        Occupancy {
            cur: 0,
            last: Time::ZERO,
            start: Time::ZERO,
            integral: 0,
            integral_sq: 0.0,
            max: 0,
            min: 0,
            max_before: 0,
            hist: histogram.then(Box::default),
        }
    }

    /// Inlined into every queue change (a call costs more than its body); the histogram is out of line.
    #[inline(always)]
    fn accrue(&mut self, now: Time) {
        let dt = now.saturating_sub(self.last).0;
        if dt > 0 {
            self.integral += self.cur as u128 * dt as u128;
            // Through i64: the same value (both are below 2^63) with one conversion instruction, where u64 → f64
            // takes a branchy sequence on x86-64.
            let (cur, dt_f) = (self.cur as i64 as f64, dt as i64 as f64);
            self.integral_sq += cur * cur * dt_f;
            if let Some(h) = &mut self.hist {
                add_to_hist(h, self.cur, dt);
            }
            self.last = now;
        }
    }

    #[inline]
    pub fn set(&mut self, now: Time, value: u64) {
        self.accrue(now);
        self.cur = value;
        self.max = self.max.max(value);
        self.min = self.min.min(value);
    }

    /// The value rises to `value` (not below the current one) and falls back to the current one at `now`, as
    /// `set(now, value)` then `set(now, current)` would record it (a packet passing an empty queue). Nothing
    /// accrues over a zero interval, so only the maximum can change (the minimum is at most the current
    /// value); at 0, what accrued up to `now` is 0 too, and only the histogram needs it recorded now.
    #[inline(always)]
    pub fn pulse(&mut self, now: Time, value: u64) {
        debug_assert!(value >= self.cur, "a pulse rises");
        if self.cur != 0 || self.hist.is_some() {
            self.accrue(now);
        }
        self.max = self.max.max(value);
    }

    /// Starts the measurement window at `now` (e.g. after warm-up).
    pub fn reset(&mut self, now: Time) {
        self.accrue(now);
        self.start = now;
        self.max_before = self.max_before.max(self.max);
        self.integral = 0;
        self.integral_sq = 0.0;
        self.max = self.cur;
        self.min = self.cur;
        if let Some(h) = &mut self.hist {
            h.clear();
        }
    }

    pub fn current(&self) -> u64 {
        self.cur
    }

    /// Closes the window at `now` and reports it.
    pub fn stats(&mut self, now: Time) -> OccupancyStats {
        self.accrue(now);
        let span = now.saturating_sub(self.start).0;
        let mean = if span == 0 { self.cur as f64 } else { self.integral as f64 / span as f64 };
        let var = if span == 0 { 0.0 } else { (self.integral_sq / span as f64 - mean * mean).max(0.0) };
        let q = |p| self.hist.as_ref().map(|h| h.quantile(p).unwrap_or(self.cur as f64));
        OccupancyStats {
            mean,
            max: self.max,
            min: self.min,
            max_all: self.max_before.max(self.max),
            std: var.sqrt(),
            p50: q(0.5),
            p99: q(0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_weighted_mean_and_quantiles() {
        // 0 B for 1 us, 3000 B for 3 us, then 1000 B for 6 us: mean = (9000 + 6000) / 10 = 1500.
        let mut o = Occupancy::new(true);
        o.set(Time::from_us(1), 3000);
        o.set(Time::from_us(4), 1000);
        let s = o.stats(Time::from_us(10));
        assert!((s.mean - 1500.0).abs() < 1e-9);
        assert_eq!((s.max, s.min), (3000, 0));
        // E[x²] = (3000² · 3 + 1000² · 6) / 10 = 3.3e6; var = 3.3e6 − 1500² = 1.05e6.
        assert!((s.std - 1.05e6f64.sqrt()).abs() < 1e-6);
        assert!((s.p50.unwrap() - 1000.0).abs() <= 1000.0 / 64.0);
        assert!((s.p99.unwrap() - 3000.0).abs() <= 3000.0 / 64.0);
    }

    /// A pulse records what a rise and a fall at one instant do, by the two `set`s as a second implementation.
    #[test]
    fn a_pulse_is_a_rise_and_fall_at_one_instant() {
        for histogram in [false, true] {
            let (mut by_sets, mut by_pulses) = (Occupancy::new(histogram), Occupancy::new(histogram));
            // Pulses from 0 and from above it, ties at one instant, a window opened at a non-zero value,
            // pulses that raise the maximum and pulses below it.
            let steps = [
                (1, Some(3000)),
                (2, None),
                (2, Some(500)),
                (4, None),
                (5, Some(0)),
                (7, None),
                (7, None),
                (9, Some(800)),
            ];
            for (i, &(us, value)) in steps.iter().enumerate() {
                let now = Time::from_us(us);
                match value {
                    Some(v) => {
                        by_sets.set(now, v);
                        by_pulses.set(now, v);
                    }
                    None => {
                        let before = by_sets.current();
                        let pulse = before + 1000 + 100 * i as u64;
                        by_sets.set(now, pulse);
                        by_sets.set(now, before);
                        by_pulses.pulse(now, pulse);
                    }
                }
                if i == 2 {
                    // The window opens at 500 B.
                    by_sets.reset(now);
                    by_pulses.reset(now);
                }
            }
            let end = Time::from_us(12);
            assert_eq!(format!("{:?}", by_sets.stats(end)), format!("{:?}", by_pulses.stats(end)));
        }
    }

    #[test]
    fn reset_starts_a_new_window() {
        let mut o = Occupancy::new(false);
        o.set(Time::from_us(0), 5000);
        o.set(Time::from_us(5), 100);
        o.reset(Time::from_us(10));
        let s = o.stats(Time::from_us(20));
        assert_eq!((s.max, s.min, s.max_all), (100, 100, 5000));
        assert!((s.mean - 100.0).abs() < 1e-9);
    }
}
