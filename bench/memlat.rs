//! Load-to-use latency of this machine's memory hierarchy, by pointer chasing: each load's address comes from
//! the load before, so nothing overlaps and the time per load is the latency at that working-set size.
//!
//! Why: on this shared VM the benchmark's wall time drifts by up to 1.5x between days with the same binary.
//! The last-level cache is shared with other tenants, and how much of it this VM gets decides whether the
//! simulation's misses are served at L3 latency or at DRAM latency. Run this before a benchmark to know the
//! day (`bench/memlat.sh`).
//!
//! Buffers are 2 MiB aligned and advised for transparent huge pages, so the large sizes measure the caches
//! and DRAM, not TLB misses. The chase visits every cache line of the buffer once per cycle, in the order of
//! one random cyclic permutation (Sattolo's algorithm) from a fixed seed.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::io::Write;
use std::time::Instant;

const LINE: usize = 64;
const HUGE: usize = 2 << 20;
const MADV_HUGEPAGE: i32 = 14;

unsafe extern "C" {
    fn madvise(addr: *mut u8, len: usize, advice: i32) -> i32;
}

/// A 64-bit linear congruential generator (Knuth's MMIX constants): enough to shuffle, fixed seed.
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 32) as usize * n) >> 32
    }
}

/// Nanoseconds per dependent load over a buffer of `bytes`.
fn latency(bytes: usize, loads: usize) -> f64 {
    let lines = bytes / LINE;
    let layout = Layout::from_size_align(bytes, HUGE).expect("a valid layout");
    // SAFETY: `layout` has a non-zero size; the buffer is freed below with the same layout.
    let buf = unsafe { alloc_zeroed(layout) };
    assert!(!buf.is_null(), "out of memory for {bytes} bytes");
    // SAFETY: the range is the allocation just made. Advice only: the result is not needed.
    unsafe { madvise(buf, bytes, MADV_HUGEPAGE) };
    // Sattolo: one cycle through every line.
    let mut next: Vec<usize> = (0..lines).collect();
    let mut rng = Lcg(0x9E37_79B9_7F4A_7C15);
    for i in (1..lines).rev() {
        next.swap(i, rng.below(i));
    }
    let words = buf as *mut usize;
    for (i, &n) in next.iter().enumerate() {
        // SAFETY: line i's first word lies inside the buffer.
        unsafe { *words.add(i * LINE / 8) = n * LINE / 8 };
    }
    drop(next);
    let chase = |count: usize| {
        let mut at = 0usize;
        for _ in 0..count {
            // SAFETY: every stored index is a line's first word inside the buffer.
            at = unsafe { std::ptr::read_volatile(words.add(at)) };
        }
        at
    };
    chase(lines.min(loads)); // warm up: touch the pages, fill the caches
    let start = Instant::now();
    let end = chase(loads);
    let ns = start.elapsed().as_secs_f64() * 1e9 / loads as f64;
    std::hint::black_box(end);
    // SAFETY: allocated above with this layout.
    unsafe { dealloc(buf, layout) };
    ns
}

fn main() {
    let loads = match std::env::args().nth(1) {
        None => 20_000_000,
        Some(a) => match a.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("loads per size must be a positive integer, got '{a}'");
                std::process::exit(2);
            }
        },
    };
    // A closed pipe (`| head`) ends the run quietly.
    let mut out = std::io::stdout();
    if writeln!(out, "working set   ns per dependent load").is_err() {
        return;
    }
    for kib in [16, 128, 256, 512, 1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 65536, 262144] {
        if writeln!(out, "{:>8} KiB   {:6.1}", kib, latency(kib << 10, loads)).is_err() {
            return;
        }
    }
}
