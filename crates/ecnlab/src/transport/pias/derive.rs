//! Demotion thresholds derived from the flow-size distribution and the load (PIAS, Bai et al., NSDI 2015, §4.2).
//!
//! PIAS §4.2 chooses the thresholds α_1 < … < α_{K−1} that minimise the mean FCT of a queueing model of one
//! switch port with Poisson flow arrivals, given the flow-size distribution and the load. We use the exact
//! M/G/1 result for multilevel feedback with first-come-first-served service inside each level (Kleinrock,
//! *Queueing Systems* Vol. II, §4.7, multilevel processor sharing with FCFS at every level) as the model of PIAS's
//! strict-priority queues with FIFO order inside each queue:
//!
//! * The link serves one byte per time unit, flows of size X (bytes, drawn as [`FlowSizeCdf::sample`] draws them)
//!   arrive as a Poisson process of rate λ = ρ / E[X], ρ the load. Only the CDF's shape and ρ matter: the
//!   thresholds do not depend on the link rate.
//! * Level j serves bytes α_{j−1} … α_j of every flow (α_0 = 0, α_K = ∞); a flow of size x finishes in level j
//!   when α_{j−1} < x ≤ α_j. (A flow of exactly α_j bytes never sends a byte at offset ≥ α_j, so the sender never
//!   demotes it past level j: the boundary belongs to the lower level.) Levels are served in strict priority with
//!   preemption; within a level, in the order flows entered it.
//! * ρ(a) = λ·E[min(X, a)] is the load of the first a bytes of every flow, and W(a) = λ·E[min(X, a)²] / (2(1 − ρ(a)))
//!   the mean work of those bytes that an arriving flow finds in the port (the M/G/1 mean unfinished work, by PASTA).
//!
//! The mean response time of a flow of x bytes finishing in level j is then
//!
//! ```text
//!   T(x) = [ W(α_j) + x ] / (1 − ρ(α_{j−1}))
//! ```
//!
//! Derivation: everything the port serves between the flow's arrival and its completion is (i) the first α_j bytes
//! of the flows already present, W(α_j) on average: each of them is in a higher level, or ahead in FIFO order in
//! the same level, and stays ahead level by level up to level j; (ii) the flow's own x bytes; (iii) the first
//! α_{j−1} bytes of every flow arriving before it completes: those preempt it in the levels above j and enter level
//! j behind it. The port never idles meanwhile, so the response time is a busy period started by W(α_j) + x and fed
//! by arrivals of min(X, α_{j−1}) work at load ρ(α_{j−1}), whose mean is the formula. The unit test
//! `response_time_matches_a_discrete_event_simulation` checks it against an independent event simulation.
//!
//! The objective is the mean FCT E[T(X)] = Σ_j ∫_(α_{j−1}, α_j] T(x) dF(x)
//! = Σ_j [ W(α_j)·P(level j) + E[X; level j] ] / (1 − ρ(α_{j−1})). Each level's term depends on its two ends only,
//! so the optimum over a grid of G candidates is a shortest path with K edges, found by dynamic programming in
//! O(K·G²). The candidates are the sizes at the CDF's points plus 400 sizes spaced evenly in log scale between
//! the smallest and the largest size, each rounded down to the sizes the CDF can produce (multiples of 1460 B for
//! the packet tables). Truncated moments are exact for the piecewise-linear tables ([`FlowSizeCdf::below`]).
//!
//! `levels` is the number of priorities available: a level more is not free in this model (splitting a level
//! speeds up the flows below the split but delays those above it behind every newcomer's first bytes), so the
//! optimum is taken over at most K levels and may use fewer than K when another one would not lower the mean FCT
//! (one level, i.e. no demotion at all, is an error: nothing for PIAS to do).
//!
//! This is our model and solver, not PIAS's: PIAS §4.2 states its own formulation and solves it numerically; the
//! thresholds of its ns-2 scripts come from that. The model ignores what PIAS's ECN and TCP add (queues shared by
//! many ports, rate control, packet granularity), so the derived thresholds are a principled starting point, as in
//! PIAS, not a guarantee.

use super::{Pias, MAX_THRESHOLDS};
use crate::dist::FlowSizeCdf;
use crate::units::Bytes;
use crate::{Error, Result};

/// The number of levels (priorities) when `levels` is not given: 4, as the default thresholds.
pub const DEFAULT_LEVELS: usize = 4;

/// Log-spaced candidates between the smallest and the largest size, before rounding and deduplication.
const LOG_POINTS: usize = 400;

/// The model at one level boundary a: F(a) = P(X ≤ a), E[X; X ≤ a], ρ(a) and W(a).
#[derive(Clone, Copy, Debug, Default)]
struct Boundary {
    prob: f64,
    first: f64,
    rho: f64,
    work: f64,
}

/// The mean-FCT contribution of the flows finishing in the level (lo, hi]: [W(hi)·P + E[X; level]] / (1 − ρ(lo)).
fn level_cost(lo: &Boundary, hi: &Boundary) -> f64 {
    (hi.work * (hi.prob - lo.prob) + (hi.first - lo.first)) / (1.0 - lo.rho)
}

/// The M/G/1 multilevel-feedback model of one port at load ρ with flow sizes from a CDF, in byte times.
#[derive(Clone, Debug)]
pub struct Model<'a> {
    cdf: &'a FlowSizeCdf,
    lambda: f64,
    mean: f64,
    /// α_K = ∞: every byte.
    top: Boundary,
}

/// What [`derive()`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    pub pias: Pias,
    pub load: f64,
    /// The model's mean FCT with these thresholds, in units of `E[X]/C` (the mean flow's transmission time).
    pub mean_fct: f64,
    /// The same with one FIFO queue (no PIAS): `1 + ρ·E[X²] / (2(1 − ρ)·E[X]²)`.
    pub fifo_fct: f64,
    /// Per level: the fraction of flows that finish in it.
    pub flows: Vec<f64>,
    /// Per level: the fraction of all bytes it carries, `(E[min(X, α_j)] − E[min(X, α_{j−1})]) / E[X]`.
    pub bytes: Vec<f64>,
}

impl<'a> Model<'a> {
    /// Errors name `load` (must be in (0, 1)).
    pub fn new(cdf: &'a FlowSizeCdf, load: f64) -> Result<Model<'a>> {
        check_load(load).map_err(|m| Error::config("load", m))?;
        let all = cdf.below(f64::INFINITY);
        let lambda = load / all.first;
        let top = Boundary { prob: 1.0, first: all.first, rho: load, work: lambda * all.second / (2.0 * (1.0 - load)) };
        Ok(Model { cdf, lambda, mean: all.first, top })
    }

    fn boundary(&self, a: u64) -> Boundary {
        if a == 0 {
            return Boundary::default();
        }
        let a = a as f64;
        let b = self.cdf.below(a);
        let above = (1.0 - b.prob).max(0.0);
        let rho = self.lambda * (b.first + a * above);
        let second = b.second + a * a * above;
        Boundary { prob: b.prob, first: b.first, rho, work: self.lambda * second / (2.0 * (1.0 - rho)) }
    }

    /// α_0 = 0, the thresholds, α_K = ∞.
    fn boundaries(&self, thresholds: &[u64]) -> Vec<Boundary> {
        let mut b = vec![Boundary::default()];
        b.extend(thresholds.iter().map(|&t| self.boundary(t)));
        b.push(self.top);
        b
    }

    /// T(x): the mean response time, in byte times, of a flow of `x` bytes under `thresholds` (strictly increasing).
    pub fn response_time(&self, x: f64, thresholds: &[u64]) -> f64 {
        let j = thresholds.iter().take_while(|&&t| (t as f64) < x).count();
        let b = self.boundaries(thresholds);
        (b[j + 1].work + x) / (1.0 - b[j].rho)
    }

    /// `E[T(X)] / E[X]` under `thresholds` (strictly increasing; none = one FIFO queue).
    pub fn mean_fct(&self, thresholds: &[u64]) -> f64 {
        self.boundaries(thresholds).windows(2).map(|w| level_cost(&w[0], &w[1])).sum::<f64>() / self.mean
    }

    /// The thresholds from `grid` (strictly increasing, > 0), at most `levels − 1` of them, that minimise the mean
    /// FCT, and that mean FCT / `E[X]`. Dynamic programming over the boundaries 0, grid…, ∞: `best[l][k]` is the least
    /// cost of l levels covering (0, node k], `best[l][k] = min_{i<k} best[l−1][i] + cost(i, k)`. A level more is
    /// not free under FIFO inside levels (it delays the flows above its split), so the answer is the best over
    /// 1 … `levels` levels; ties keep fewer levels, then smaller thresholds. No threshold = one FIFO queue.
    pub fn optimise(&self, grid: &[u64], levels: usize) -> Result<(Vec<u64>, f64)> {
        levels_ok(levels)?;
        let mut nodes = vec![Boundary::default()];
        nodes.extend(grid.iter().map(|&a| self.boundary(a)));
        nodes.push(self.top);
        let n = nodes.len();
        let mut best = vec![vec![f64::INFINITY; n]; levels + 1];
        let mut from = vec![vec![0usize; n]; levels + 1];
        for k in 1..n {
            best[1][k] = level_cost(&nodes[0], &nodes[k]);
        }
        for l in 2..=levels {
            for k in l..n {
                for i in l - 1..k {
                    let c = best[l - 1][i] + level_cost(&nodes[i], &nodes[k]);
                    if c < best[l][k] {
                        best[l][k] = c;
                        from[l][k] = i;
                    }
                }
            }
        }
        let mut used = 1;
        for l in 2..=levels {
            if best[l][n - 1] < best[used][n - 1] {
                used = l;
            }
        }
        let mut thresholds = vec![0u64; used - 1];
        let mut k = n - 1;
        for l in (2..=used).rev() {
            k = from[l][k];
            thresholds[l - 2] = grid[k - 1];
        }
        Ok((thresholds, best[used][n - 1] / self.mean))
    }

    /// Per level under `thresholds`: (fraction of flows finishing in it, fraction of bytes it carries).
    fn shares(&self, thresholds: &[u64]) -> (Vec<f64>, Vec<f64>) {
        let b = self.boundaries(thresholds);
        let rho = self.lambda * self.mean;
        b.windows(2).map(|w| (w[1].prob - w[0].prob, (w[1].rho - w[0].rho) / rho)).unzip()
    }
}

/// Why `levels` is out of range, if it is: 2 to 8 priorities.
pub(super) fn check_levels(levels: i64) -> Result<(), String> {
    if !(2..=MAX_THRESHOLDS as i64 + 1).contains(&levels) {
        return Err(format!(
            "must be in [2, {}] (priorities; 1 to {MAX_THRESHOLDS} thresholds), got {levels}",
            MAX_THRESHOLDS + 1
        ));
    }
    Ok(())
}

/// Why `load` is out of range, if it is: the model needs 0 < ρ < 1.
pub(super) fn check_load(load: f64) -> Result<(), String> {
    if !(load > 0.0 && load < 1.0) {
        return Err(format!("must be in (0, 1): the queueing model has no steady state at load ≥ 1, got {load}"));
    }
    Ok(())
}

fn levels_ok(levels: usize) -> Result<()> {
    check_levels(i64::try_from(levels).unwrap_or(i64::MAX)).map_err(|m| Error::config("levels", m))
}

/// The candidate thresholds: the sizes at the CDF's points and 400 log-spaced sizes from the smallest to the
/// largest size, each rounded down to a size the CDF produces, sorted and distinct, below the largest size (a
/// threshold there would only leave the last level empty).
pub fn candidates(cdf: &FlowSizeCdf) -> Vec<u64> {
    let (lo, hi) = cdf.range();
    let span = (hi as f64 / lo as f64).ln();
    let log = (0..LOG_POINTS).map(|i| cdf.lattice_floor(lo as f64 * (span * i as f64 / (LOG_POINTS - 1) as f64).exp()));
    let mut grid: Vec<u64> = cdf.breakpoints().into_iter().chain(log).filter(|&a| (lo..hi).contains(&a)).collect();
    grid.sort_unstable();
    grid.dedup();
    grid
}

/// PIAS thresholds for at most `levels` priorities that minimise the model's mean FCT at `load` (see the module
/// docs). Errors name `load` (must be in (0, 1)), `levels` (2 to 8) or `cdf` (when one FIFO queue is already
/// optimal, e.g. every flow has the same size).
pub fn derive(cdf: &FlowSizeCdf, load: f64, levels: usize) -> Result<Derived> {
    levels_ok(levels)?;
    let model = Model::new(cdf, load)?;
    let (thresholds, mean_fct) = model.optimise(&candidates(cdf), levels)?;
    if thresholds.is_empty() {
        return Err(Error::config(
            "cdf",
            "no threshold lowers the model's mean FCT below one FIFO queue's (e.g. every flow has the same size): \
             nothing for PIAS to demote",
        ));
    }
    let pias = Pias::new(&thresholds.iter().map(|&t| Bytes(t)).collect::<Vec<_>>())
        .expect("grid thresholds are positive and the optimum strictly increasing");
    let (flows, bytes) = model.shares(&thresholds);
    Ok(Derived { pias, load, mean_fct, fifo_fct: model.mean_fct(&[]), flows, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Rng;
    use std::collections::VecDeque;

    /// 1, 10 or 100 packets (1460 B each) with probabilities 0.6, 0.3, 0.1.
    const THREE_SIZES: &str = "size_packets,cumulative_probability\n1,0\n1,0.6\n10,0.6\n10,0.9\n100,0.9\n100,1\n";

    /// An M/G/1 queue with multilevel feedback, written independently of the model: Poisson arrivals at `load`
    /// (one byte per time unit), sizes 1460·{1, 10, 100} w.p. 0.6/0.3/0.1, preemptive priority between levels,
    /// FIFO by entry into the level inside each. Returns each flow's (size, response time), the first 5 %
    /// (the empty start) dropped.
    fn simulate(thresholds: &[u64], load: f64, jobs: usize, seed: u64) -> Vec<(u64, f64)> {
        struct Job {
            arrival: f64,
            size: u64,
            done: f64,
        }
        let mean_size = 0.6 * 1460.0 + 0.3 * 14_600.0 + 0.1 * 146_000.0;
        let gap = mean_size / load;
        let mut rng = Rng::stream(seed, 0);
        let mut queues: Vec<VecDeque<usize>> = vec![VecDeque::new(); thresholds.len() + 1];
        let mut all: Vec<Job> = Vec::with_capacity(jobs);
        let mut out = Vec::with_capacity(jobs);
        let (mut now, mut next) = (0.0, rng.exponential(gap));
        // Service a flow may receive by the end of `level`.
        let cap = |level: usize, size: u64| thresholds.get(level).map_or(size, |&t| t.min(size)) as f64;
        loop {
            let arrivals_left = all.len() < jobs;
            match queues.iter().position(|q| !q.is_empty()) {
                None if !arrivals_left => break,
                Some(l)
                    if !arrivals_left || now + (cap(l, all[queues[l][0]].size) - all[queues[l][0]].done) <= next =>
                {
                    let id = queues[l].pop_front().expect("non-empty");
                    let job = &mut all[id];
                    now += cap(l, job.size) - job.done;
                    job.done = cap(l, job.size);
                    if job.done >= job.size as f64 {
                        out.push((job.size, now - job.arrival));
                    } else {
                        queues[l + 1].push_back(id);
                    }
                }
                serving => {
                    if let Some(l) = serving {
                        all[queues[l][0]].done += next - now;
                    }
                    now = next;
                    let u = rng.uniform();
                    let size = if u < 0.6 {
                        1460
                    } else if u < 0.9 {
                        14_600
                    } else {
                        146_000
                    };
                    queues[0].push_back(all.len());
                    all.push(Job { arrival: now, size, done: 0.0 });
                    next = now + rng.exponential(gap);
                }
            }
        }
        out.split_off(jobs / 20)
    }

    #[test]
    fn response_time_matches_a_discrete_event_simulation() {
        // 2·10⁶ flows per case; over seeds 1–7 with 3·10⁶ flows the worst error was 0.9 % per size, so 3 % (per
        // size) and 2 % (overall) leave room for sampling noise but not for a wrong formula: putting ρ(α_j)
        // instead of ρ(α_{j−1}) in the denominator, or W(α_{j−1}) for W(α_j), moves some size by 10 % or more in every case.
        let cdf = FlowSizeCdf::from_csv("t", THREE_SIZES).unwrap();
        // One FIFO queue; two levels splitting nothing; thresholds at sizes (the boundary belongs to the lower
        // level); thresholds inside sizes (flows carry truncated work through several levels).
        let cases: [&[u64]; 4] = [&[], &[20_000], &[1460, 14_600], &[5000, 50_000]];
        for load in [0.5, 0.8] {
            let model = Model::new(&cdf, load).unwrap();
            for th in cases {
                let sim = simulate(th, load, 2_000_000, 11);
                let mut overall = (0.0, 0.0);
                for size in [1460u64, 14_600, 146_000] {
                    let r: Vec<f64> = sim.iter().filter(|s| s.0 == size).map(|s| s.1).collect();
                    let mean = r.iter().sum::<f64>() / r.len() as f64;
                    let want = model.response_time(size as f64, th);
                    assert!(
                        (mean / want - 1.0).abs() < 0.03,
                        "load {load}, {th:?}, size {size}: sim {mean}, T(x) {want}"
                    );
                    overall.0 += mean * r.len() as f64;
                    overall.1 += r.len() as f64;
                }
                let mean = overall.0 / overall.1 / cdf.mean();
                let want = model.mean_fct(th);
                assert!((mean / want - 1.0).abs() < 0.02, "load {load}, {th:?}: sim {mean}, E[T]/E[X] {want}");
            }
        }
    }

    /// Calls `f` with every strictly increasing choice of up to `k` grid points (none included).
    fn choices(grid: &[u64], k: usize, start: usize, picked: &mut Vec<u64>, f: &mut dyn FnMut(&[u64])) {
        f(picked);
        if picked.len() == k {
            return;
        }
        for i in start..grid.len() {
            picked.push(grid[i]);
            choices(grid, k, i + 1, picked, f);
            picked.pop();
        }
    }

    #[test]
    fn dynamic_programming_finds_the_brute_force_optimum() {
        for (name, load) in [("websearch", 0.7), ("datamining", 0.5), ("hadoop", 0.3)] {
            let cdf = FlowSizeCdf::builtin(name).unwrap();
            let model = Model::new(&cdf, load).unwrap();
            let full = candidates(&cdf);
            let sparse: Vec<u64> = full.iter().step_by(4).copied().collect();
            for (grid, levels) in [(&full, 3), (&sparse, 4)] {
                let (mut best, mut arg) = (f64::INFINITY, vec![]);
                choices(grid, levels - 1, 0, &mut vec![], &mut |t| {
                    let c = model.mean_fct(t);
                    if c < best {
                        (best, arg) = (c, t.to_vec());
                    }
                });
                let (got, cost) = model.optimise(grid, levels).unwrap();
                assert!(
                    (cost / best - 1.0).abs() < 1e-12,
                    "{name} K={levels}: DP {cost} {got:?}, brute {best} {arg:?}"
                );
                assert_eq!(got, arg, "{name} K={levels}");
                assert!((model.mean_fct(&got) / cost - 1.0).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn two_levels_separate_a_bimodal_workload_at_its_small_mode() {
        // Half 10 KB, half 10 MB. Any threshold in [10 KB, 10 MB) puts the small flows alone in the top level;
        // above 10 KB it only adds the large flows' first bytes to the top level's work W(α) and to ρ(α), which
        // delays both levels, so the optimum is 10 KB exactly, at any load.
        let cdf = FlowSizeCdf::from_csv(
            "t",
            "size_bytes,cumulative_probability\n10000,0\n10000,0.5\n10000000,0.5\n10000000,1\n",
        )
        .unwrap();
        for load in [0.1, 0.5, 0.9] {
            let d = derive(&cdf, load, 2).unwrap();
            assert_eq!(d.pias.thresholds(), &[10_000], "load {load}");
            assert_eq!(d.flows, vec![0.5, 0.5]);
        }
    }

    #[test]
    fn two_levels_demote_later_at_higher_load() {
        // Sizes s = 1, 20, 100 packets w.p. 0.8, 0.15, 0.05. With two levels the threshold is s1 or s2: one between
        // them keeps the same flows on top and only adds work there. Written out for a ∈ {s1, s2}:
        //   E[T] = W(a)·F(a) + E[X; X ≤ a] + [W(∞)·(1 − F(a)) + E[X; X > a]] / (1 − ρ(a)).
        // At light load E[T] ≈ E[X] + λ·g(a) with g(s1) < g(s2): demote early. As ρ → 1 the W(∞)·P(X > a) / (1 − ρ(a))
        // term dominates and 1 − ρ(a) → E[(X − a)⁺] / E[X], so the best a maximises the mean residual size
        // E[X − a | X > a]: 39 packets above s1, 80 above s2, so demote late. The switch happens near ρ = 0.45.
        let cdf = FlowSizeCdf::from_csv(
            "t",
            "size_packets,cumulative_probability\n1,0\n1,0.8\n20,0.8\n20,0.95\n100,0.95\n100,1\n",
        )
        .unwrap();
        let (s, p) = ([1460.0, 29_200.0, 146_000.0], [0.8, 0.15, 0.05]);
        let (m1, m2): (f64, f64) = (0..3).fold((0.0, 0.0), |(a, b), i| (a + p[i] * s[i], b + p[i] * s[i] * s[i]));
        let by_hand = |load: f64, k: usize| {
            let lambda = load / m1;
            let (f, below1, below2) =
                (0..=k).fold((0.0, 0.0, 0.0), |(f, a, b), i| (f + p[i], a + p[i] * s[i], b + p[i] * s[i] * s[i]));
            let rho = lambda * (below1 + s[k] * (1.0 - f));
            let w = lambda * (below2 + s[k] * s[k] * (1.0 - f)) / (2.0 * (1.0 - rho));
            let w_all = lambda * m2 / (2.0 * (1.0 - load));
            (w * f + below1 + (w_all * (1.0 - f) + m1 - below1) / (1.0 - rho)) / m1
        };
        for (load, want) in [(0.1, 1460), (0.2, 1460), (0.4, 1460), (0.5, 29_200), (0.8, 29_200), (0.95, 29_200)] {
            let d = derive(&cdf, load, 2).unwrap();
            assert_eq!(d.pias.thresholds(), &[want], "load {load}");
            let best = by_hand(load, 0).min(by_hand(load, 1));
            assert!((d.mean_fct / best - 1.0).abs() < 1e-9, "load {load}: {} vs {best}", d.mean_fct);
        }
    }

    #[test]
    fn more_levels_never_raise_the_mean_fct_and_all_beat_fifo() {
        // The optimum over at most K + 1 levels includes every choice of at most K.
        for name in ["websearch", "datamining", "cache", "hadoop", "websearch_bytes"] {
            let cdf = FlowSizeCdf::builtin(name).unwrap();
            for load in [0.3, 0.8] {
                let fifo = Model::new(&cdf, load).unwrap().mean_fct(&[]);
                let mut prev = fifo;
                for levels in 2..=8 {
                    let d = derive(&cdf, load, levels).unwrap();
                    assert_eq!(d.fifo_fct, fifo);
                    assert!(d.pias.levels() <= levels);
                    assert!(d.mean_fct <= prev * (1.0 + 1e-12), "{name} {load} K={levels}: {} > {prev}", d.mean_fct);
                    assert!((d.flows.iter().sum::<f64>() - 1.0).abs() < 1e-9);
                    assert!((d.bytes.iter().sum::<f64>() - 1.0).abs() < 1e-9);
                    prev = d.mean_fct;
                }
                assert!(prev < fifo, "{name} {load}");
            }
        }
    }

    #[test]
    fn fifo_mean_is_the_pollaczek_khinchine_formula() {
        // Sizes 1460, 14600, 146000 w.p. 0.6/0.3/0.1: E[X] = 19856, E[X²] = 0.6·1460² + 0.3·14600² + 0.1·146000².
        let cdf = FlowSizeCdf::from_csv("t", THREE_SIZES).unwrap();
        let (m1, m2) = (19_856.0, 0.6 * 1460f64.powi(2) + 0.3 * 14_600f64.powi(2) + 0.1 * 146_000f64.powi(2));
        let load = 0.7;
        let want = 1.0 + load * m2 / (2.0 * (1.0 - load) * m1 * m1);
        let got = Model::new(&cdf, load).unwrap().mean_fct(&[]);
        assert!((got / want - 1.0).abs() < 1e-12, "{got} vs {want}");
    }

    #[test]
    fn bad_load_or_levels_name_the_field() {
        let cdf = FlowSizeCdf::builtin("websearch").unwrap();
        let field = |r: Result<Derived>| match r.unwrap_err() {
            Error::Config { path, msg } => format!("{path}: {msg}"),
            e => panic!("{e}"),
        };
        for load in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            assert!(field(derive(&cdf, load, 4)).starts_with("load: must be in (0, 1)"), "{load}");
        }
        for levels in [0, 1, 9, 100] {
            assert!(field(derive(&cdf, 0.5, levels)).starts_with("levels: must be in [2, 8]"), "{levels}");
        }
        // One size: nothing to demote.
        let one = FlowSizeCdf::from_csv("t", "size_packets,cumulative_probability\n5,0\n5,1\n").unwrap();
        assert!(candidates(&one).is_empty());
        assert!(field(derive(&one, 0.5, 4)).starts_with("cdf: no threshold lowers"));
    }
}
