#!/usr/bin/env bash
# How wall time grows with the network (issue 8): the leafspine-mqecn scenario (8 DWRR queues with MQ-ECN,
# web search / data mining / cache / hadoop over 8 services, DCTCP, load 0.5) at 10 flows per host, on
# leaf-spines of 48, 144 and 432 hosts and a k = 16 fat-tree of 1 024 hosts. One run at a time, one core each.
# Prints one `ecnlab-sim bench --json` line per network. Usage: [SIM=binary] bench/scaling.sh [--skip-fat-tree]
# (SIM defaults to a fresh target/release/ecnlab-sim; SIM=target/pgo/ecnlab-sim measures bench/pgo.sh's build.)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${SIM:-}" ]; then
  cargo build --release -q -p ecnlab-cli
  SIM=target/release/ecnlab-sim
fi
[ -x "$SIM" ] || { echo "SIM=$SIM is not an executable" >&2; exit 2; }

bench() {
  local label=$1
  shift
  printf '%s\t' "$label"
  "$SIM" bench --scenario leafspine-mqecn --json "$@"
}

bench "leaf-spine 48 hosts" --set topology.leaves=4 --set topology.spines=4 --set workloads.0.flows=480
bench "leaf-spine 144 hosts" --set workloads.0.flows=1440
bench "leaf-spine 432 hosts" --set topology.leaves=36 --set workloads.0.flows=4320
if [ "${1:-}" != "--skip-fat-tree" ]; then
  bench "fat-tree k=16, 1024 hosts" \
    --set 'topology={ kind = "fat_tree", k = 16, rate = "10Gbps", delay = "10.034us" }' \
    --set workloads.0.flows=10240
fi
