//! A switch-wide shared buffer (a service pool) with Broadcom-style dynamic thresholds: a queue may take a
//! packet only while its backlog stays within α × the pool's free space (Choudhury & Hahne's dynamic
//! threshold, as in Broadcom's shared-buffer chips).

use super::Occupancy;

#[derive(Clone, Debug)]
pub struct SharedBuffer {
    pub size: u64,
    pub used: u64,
    /// α per queue index (the last applies to higher indices).
    pub alphas: Vec<f64>,
    pub occupancy: Occupancy,
}

impl SharedBuffer {
    pub fn new(size: u64, alphas: Vec<f64>) -> SharedBuffer {
        SharedBuffer { size, used: 0, alphas, occupancy: Occupancy::new(true) }
    }

    /// Dynamic threshold: admit `wire` bytes into a queue holding `queue_bytes` iff the pool has room and
    /// `queue_bytes + wire ≤ α_q · (size − used)`.
    pub fn admits(&self, q: usize, queue_bytes: u64, wire: u64) -> bool {
        let free = self.size.saturating_sub(self.used);
        let alpha = self.alphas[q.min(self.alphas.len() - 1)];
        wire <= free && (queue_bytes + wire) as f64 <= alpha * free as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_threshold_shrinks_as_the_pool_fills() {
        let mut b = SharedBuffer::new(100_000, vec![1.0]);
        // Empty pool: one queue may take up to α · free = 100 KB.
        assert!(b.admits(0, 48_500, 1_500));
        // Half the pool used by others: a queue may hold at most α · 50 KB.
        b.used = 50_000;
        assert!(b.admits(0, 48_500, 1_500));
        assert!(!b.admits(0, 49_000, 1_500));
        // With α = 1, N equally backlogged queues settle at size · α / (1 + N·α) each: two queues → 1/3.
        let mut q = [0u64; 2];
        let mut b = SharedBuffer::new(90_000, vec![1.0]);
        'fill: loop {
            let mut progressed = false;
            for (qi, backlog) in q.iter_mut().enumerate() {
                if b.admits(qi, *backlog, 1_000) {
                    *backlog += 1_000;
                    b.used += 1_000;
                    progressed = true;
                }
            }
            if !progressed {
                break 'fill;
            }
        }
        assert!(q.iter().all(|&x| (x as i64 - 30_000).abs() <= 1_000), "{q:?}");
    }
}
