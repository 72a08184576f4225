//! Schedulers: pick which queue of a port sends next. They know nothing of ECN.

/// A read-only view of a port's queues for the scheduler.
pub trait QueueView {
    fn n(&self) -> usize;
    /// Wire bytes of the head packet of queue `q`, or `None` when it is empty.
    fn head(&self, q: usize) -> Option<u32>;
}

#[derive(Clone, Debug)]
pub enum AnyScheduler {
    /// Strict priority: queue 0 first.
    StrictPriority,
}

impl AnyScheduler {
    /// The queue to serve next, or `None` when every queue is empty.
    pub fn pick(&mut self, qs: &impl QueueView) -> Option<usize> {
        match self {
            AnyScheduler::StrictPriority => (0..qs.n()).find(|&q| qs.head(q).is_some()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(Vec<Option<u32>>);
    impl QueueView for Fake {
        fn n(&self) -> usize {
            self.0.len()
        }
        fn head(&self, q: usize) -> Option<u32> {
            self.0[q]
        }
    }

    #[test]
    fn strict_priority_serves_the_lowest_nonempty_index() {
        let mut sp = AnyScheduler::StrictPriority;
        assert_eq!(sp.pick(&Fake(vec![None, Some(1500), Some(64)])), Some(1));
        assert_eq!(sp.pick(&Fake(vec![Some(64), Some(1500)])), Some(0));
        assert_eq!(sp.pick(&Fake(vec![None, None])), None);
    }
}
