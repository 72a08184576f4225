//! A log-linear histogram of non-negative integers with weights: exact below 128, within 1/64 above.

const SUB: u64 = 64;
const LINEAR: u64 = 2 * SUB;

#[derive(Clone, Debug, Default)]
pub struct LogHist {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    max: u64,
    n: u64,
}

fn bucket(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as u64 - 6; // v >> e is in [64, 128)
    (LINEAR + (e - 1) * SUB + ((v >> e) - SUB)) as usize
}

fn bucket_mid(b: usize) -> f64 {
    let b = b as u64;
    if b < LINEAR {
        return b as f64;
    }
    let e = (b - LINEAR) / SUB + 1;
    let m = (b - LINEAR) % SUB + SUB;
    ((m << e) + ((m + 1) << e) - 1) as f64 / 2.0
}

impl LogHist {
    #[inline]
    pub fn add(&mut self, v: u64, weight: u64) {
        if weight == 0 {
            return;
        }
        let b = bucket(v);
        if self.counts.len() <= b {
            self.grow(b);
        }
        self.counts[b] += weight;
        self.total += weight;
        self.sum += v as u128 * weight as u128;
        self.max = self.max.max(v);
        self.n += 1;
    }
    #[cold]
    fn grow(&mut self, b: usize) {
        self.counts.resize(b + 1, 0);
    }
    pub fn clear(&mut self) {
        *self = LogHist::default();
    }
    /// Total weight.
    pub fn weight(&self) -> u64 {
        self.total
    }
    /// Number of `add` calls.
    pub fn samples(&self) -> u64 {
        self.n
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    pub fn mean(&self) -> Option<f64> {
        (self.total > 0).then(|| self.sum as f64 / self.total as f64)
    }
    /// The weighted `p`-quantile (bucket midpoint; exact below 128).
    pub fn quantile(&self, p: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let target = ((p * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut acc = 0;
        for (b, &w) in self.counts.iter().enumerate() {
            acc += w;
            if acc >= target {
                return Some(bucket_mid(b).min(self.max as f64));
            }
        }
        Some(self.max as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_tight() {
        let mut prev = 0;
        for v in [0u64, 1, 127, 128, 129, 200, 1500, 97_500, 300_000, 1 << 40] {
            let b = bucket(v);
            assert!(b >= prev);
            prev = b;
            assert!((bucket_mid(b) - v as f64).abs() <= v as f64 / 64.0 + 0.5, "v {v}");
        }
    }

    #[test]
    fn quantiles_of_uniform_values() {
        let mut h = LogHist::default();
        for v in 1..=100u64 {
            h.add(v, 1);
        }
        assert_eq!(h.quantile(0.5), Some(50.0));
        assert_eq!(h.quantile(0.99), Some(99.0));
        assert_eq!(h.mean(), Some(50.5));
    }
}
