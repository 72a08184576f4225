#!/usr/bin/env bash
# Where the time of the datacenter benchmark goes (issue 8), two ways:
#   perf      sampled wall time of one leafspine-mqecn run (FLOWS, default 10 000), summed by source file and
#             by line. Uses the CPU-clock event, which works in a VM without hardware counters.
#   callgrind instructions, simulated cache misses (48 KiB L1, 512 KiB last level: this machine's L1d and L2)
#             and branch mispredicts of a smaller run (FLOWS, default 1 000; ~50× slower than native), by
#             function. Counts are exact and repeatable, so they compare two builds on a noisy machine.
# The report lands in bench/profile-out/ (not committed). Usage: bench/profile.sh perf|callgrind [FLOWS]
set -euo pipefail
mode=${1:-}
case $mode in
  perf) flows=${2:-10000} ;;
  callgrind) flows=${2:-1000} ;;
  *)
    echo "usage: bench/profile.sh perf|callgrind [FLOWS]" >&2
    exit 2
    ;;
esac
case $flows in '' | *[!0-9]*) echo "FLOWS must be a positive integer, got '$flows'" >&2; exit 2 ;; esac
tool=$mode
[ $mode = callgrind ] && tool=valgrind
command -v $tool > /dev/null || { echo "$tool is not installed (apt-get install linux-perf / valgrind)" >&2; exit 2; }
cd "$(dirname "$0")/.."
cargo build --release -q -p ecnlab-cli
sim=target/release/ecnlab-sim
out=bench/profile-out
mkdir -p $out
run=(run leafspine-mqecn --set "workloads.0.flows=$flows" --out "$out/run")
rm -rf "$out/run"

if [ $mode = perf ]; then
  perf record -F 499 -o $out/perf.data "$sim" "${run[@]}" 2>&1 | grep -v '^\[ perf record'
  perf report -i $out/perf.data --no-children --sort srcline --full-source-path 2> /dev/null \
    | grep -v '^#' | sed -e 's|/[^ ]*/crates/ecnlab/src/||' -e 's|/rustc/[0-9a-f]*/library/||' > $out/lines.txt
  awk '{split($2, a, ":"); f[a[1]] += $1} END {for (k in f) printf "%6.2f%%  %s\n", f[k], k}' $out/lines.txt \
    | sort -rn > $out/files.txt
  echo "== time by source file ($out/files.txt)"
  head -15 $out/files.txt
  echo "== hottest lines ($out/lines.txt)"
  grep -v '^\s*$' $out/lines.txt | head -20
else
  # ECNLAB_HUGEPAGES=0: valgrind does not follow the binary's re-execution for huge pages (it would count only
  # the start-up); page size changes neither instructions nor the simulated caches.
  ECNLAB_HUGEPAGES=0 valgrind --tool=callgrind --branch-sim=yes --cache-sim=yes --D1=49152,12,64 --LL=524288,8,64 \
    --callgrind-out-file=$out/callgrind.out "$sim" "${run[@]}" 2>&1 | grep -E 'refs|misses|Mispred' || true
  callgrind_annotate --show=Ir,Bcm,D1mr,DLmr $out/callgrind.out 2> /dev/null > $out/functions.txt
  echo "== by function, exclusive ($out/functions.txt)"
  sed -n '/^Ir/,$p' $out/functions.txt | sed -n 3,25p | cut -c1-200
fi
