#!/usr/bin/env bash
# Wall-time A/B of two ecnlab-sim builds on this noisy 2-core VM: each round runs both builds at the same time,
# each pinned to its own core (taskset), and swaps the cores between rounds, so both see the same neighbours'
# noise. Prints each round's wall times and the mean ratio NEW / BASE. Resolution here is about 5 %.
# Builds from session 15 on put their heap on huge pages and older ones do not: to compare code alone across
# that line, run with ECNLAB_HUGEPAGES=0 in the environment (both builds inherit it).
#
# Usage: bench/paired.sh BASE_BIN NEW_BIN [FLOWS] [ROUNDS]
#   e.g.  bench/paired.sh /tmp/base-sim target/release/ecnlab-sim 10000 2     (about 2 minutes)
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bench/paired.sh BASE_BIN NEW_BIN [FLOWS] [ROUNDS]" >&2
  exit 2
fi
base=$(realpath "$1")
new=$(realpath "$2")
flows=${3:-10000}
rounds=${4:-2}
for b in "$base" "$new"; do
  [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }
done
for n in "$flows" "$rounds"; do
  case $n in '' | *[!0-9]* | 0) echo "FLOWS and ROUNDS must be positive integers, got '$n'" >&2; exit 2 ;; esac
done
command -v taskset > /dev/null || { echo "taskset not found (util-linux)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores, this machine has $(nproc)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs build $2 on core $3 with tag $1; writes its wall seconds to $work/$1.
run() {
  local start end
  start=$(date +%s.%N)
  taskset -c "$3" "$2" run leafspine-mqecn --set "workloads.0.flows=$flows" --out "$work/out-$1" > /dev/null 2> "$work/err-$1" ||
    { echo "$1 failed:" >&2; cat "$work/err-$1" >&2; exit 1; }
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f\n", b - a}' > "$work/$1"
}

ratios=()
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then cb=0 cn=1; else cb=1 cn=0; fi
  run base "$base" $cb &
  pb=$!
  run new "$new" $cn &
  pn=$!
  wait $pb
  wait $pn
  tb=$(cat "$work/base")
  tn=$(cat "$work/new")
  ratio=$(awk -v a="$tb" -v b="$tn" 'BEGIN {printf "%.4f", b / a}')
  ratios+=("$ratio")
  printf 'round %d (%d flows): base %.2f s on core %d, new %.2f s on core %d, new/base %.3f\n' \
    "$r" "$flows" "$tb" $cb "$tn" $cn "$ratio"
done
mean=$(printf '%s\n' "${ratios[@]}" | awk '{s += $1} END {printf "%.3f", s / NR}')
echo "mean new/base over $rounds rounds: $mean"
