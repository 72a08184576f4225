#!/usr/bin/env bash
# This machine's memory latency by working-set size (bench/memlat.rs: a pointer chase over huge-page-backed
# buffers): the L1, L2 and last-level plateaus and DRAM. On this shared VM the last-level cache is shared
# with other tenants and its usable part changes between days (seen in session 25: loads over an 8 MiB set
# took 24 ns at one moment and 63 ns minutes later; sets of 12 MiB and more, 136-175 ns, DRAM). Run it before
# a benchmark to know what kind of day it is. About 30 s. Usage: bench/memlat.sh [LOADS_PER_SIZE]
set -euo pipefail
cd "$(dirname "$0")/.."
loads=${1:-20000000}
case $loads in '' | *[!0-9]* | 0) echo "LOADS_PER_SIZE must be a positive integer, got '$loads'" >&2; exit 2 ;; esac
mkdir -p target
rustc -O --edition 2024 bench/memlat.rs -o target/memlat
if command -v taskset > /dev/null; then
  taskset -c "${CORE:-0}" target/memlat "$loads"
else
  target/memlat "$loads"
fi
