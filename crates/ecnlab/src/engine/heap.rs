//! A 4-ary min-heap of keyed event nodes: where the event queue keeps events beyond its wheel's horizon.

/// Children per heap node.
const ARITY: usize = 4;

/// `ARITY` keys in one cache line: a node's children, compared together on every level of a pop.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct KeyLine([u128; ARITY]);

/// Keys and the event queue's node ids in separate arrays. What bounds a pop is its chain of dependent loads,
/// one per level: four children per level halve the depth of a binary heap, and node i's key sits at slot
/// i + 3 of cache-line-aligned storage, so the four children of a node (4i+1 … 4i+4) always share one line.
#[derive(Default)]
pub(super) struct Heap {
    keys: Vec<KeyLine>,
    nodes: Vec<u32>,
}

impl Heap {
    /// Node i's position in `keys` (counted in keys, not lines).
    #[inline(always)]
    fn slot(i: usize) -> usize {
        i + ARITY - 1
    }

    #[inline(always)]
    fn key(&self, i: usize) -> u128 {
        let s = Self::slot(i);
        debug_assert!(s / ARITY < self.keys.len());
        // SAFETY: callers pass i ≤ len; `push` keeps a line for slot len + 3 and `keys` never shrinks.
        unsafe { *(self.keys.as_ptr() as *const u128).add(s) }
    }

    #[inline(always)]
    fn set(&mut self, i: usize, key: u128, node: u32) {
        let s = Self::slot(i);
        debug_assert!(s / ARITY < self.keys.len() && i < self.nodes.len());
        // SAFETY: as in `key`; `nodes` holds index i.
        unsafe {
            *(self.keys.as_mut_ptr() as *mut u128).add(s) = key;
            *self.nodes.get_unchecked_mut(i) = node;
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(super) fn min_key(&self) -> Option<u128> {
        (!self.nodes.is_empty()).then(|| self.key(0))
    }

    pub(super) fn push(&mut self, key: u128, node: u32) {
        let i = self.nodes.len();
        if Self::slot(i) / ARITY >= self.keys.len() {
            self.keys.push(KeyLine::default());
        }
        self.nodes.push(node);
        self.sift_up(i, key, node);
    }

    pub(super) fn pop(&mut self) -> Option<(u128, u32)> {
        let first = *self.nodes.first()?;
        let top = (self.key(0), first);
        let last_node = self.nodes.pop().expect("a root");
        let n = self.nodes.len();
        if n > 0 {
            let last_key = self.key(n);
            self.fill_root(last_key, last_node);
        }
        Some(top)
    }

    /// Moves the hole at `i` up until `key` fits there, and puts the node in it.
    #[inline(always)]
    fn sift_up(&mut self, mut i: usize, key: u128, node: u32) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let pk = self.key(parent);
            if key >= pk {
                break;
            }
            // SAFETY: parent < i < len.
            let pe = unsafe { *self.nodes.get_unchecked(parent) };
            self.set(i, pk, pe);
            i = parent;
        }
        self.set(i, key, node);
    }

    /// Puts `key` into the vacant root by bottom-up deletion (Wegener 1993): the hole sinks to a leaf along
    /// the smallest children, picked by a two-round tournament without data-dependent branches; `key` then
    /// rises from there, which is rarely more than a level.
    fn fill_root(&mut self, key: u128, node: u32) {
        let n = self.nodes.len();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let child = if first + ARITY <= n {
                let (k0, k1, k2, k3) = (self.key(first), self.key(first + 1), self.key(first + 2), self.key(first + 3));
                let (a, ka) = if k1 < k0 { (1, k1) } else { (0, k0) };
                let (b, kb) = if k3 < k2 { (3, k3) } else { (2, k2) };
                first + if kb < ka { b } else { a }
            } else {
                (first + 1..n).fold(first, |m, j| if self.key(j) < self.key(m) { j } else { m })
            };
            // SAFETY: child < n.
            let ce = unsafe { *self.nodes.get_unchecked(child) };
            self.set(i, self.key(child), ce);
            i = child;
        }
        self.sift_up(i, key, node);
    }
}
