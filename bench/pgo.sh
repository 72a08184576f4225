#!/usr/bin/env bash
# A profile-guided build of ecnlab-sim (rustc's -Cprofile-generate / -Cprofile-use): an instrumented binary
# runs a training set that covers every scheme, scheduler and transport (leafspine-mqecn at 500 flows,
# dctcp-8flows, and every experiment's --quick grid), and the release build then lays out and inlines by
# what ran hot. Only code layout and inlining change, never arithmetic, so outputs are byte-identical to the
# plain release binary's (check with `bench/identity.sh target/release/ecnlab-sim target/pgo/ecnlab-sim`).
#
# It is built for this machine's CPU (-Ctarget-cpu=native: BMI, LZCNT/TZCNT, AVX2 on this EPYC), which paired at
# 10 000 flows took 3 % less wall time (session 18: 0.963, 0.971, 0.967, 0.977) with identical outputs: Rust
# never fuses a multiply and an add, so the arithmetic is the same. The binary may not run on an older CPU;
# ECNLAB_NATIVE=0 builds for the generic x86-64 target instead (`bench` reports the build as "pgo").
#
# Needs LLVM's llvm-profdata of the toolchain's own LLVM version: `rustup component add llvm-tools` (done here
# if rustup is present). Takes about 5 minutes on 2 cores: two fat-LTO builds and a 2-minute training run.
# Output: target/pgo/ecnlab-sim. Usage: bench/pgo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$sysroot/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
  command -v rustup > /dev/null || { echo "llvm-profdata not found at $profdata and no rustup to install it" >&2; exit 2; }
  rustup component add llvm-tools
fi

cpu=(-Ctarget-cpu=native)
build=pgo-native
if [ "${ECNLAB_NATIVE:-1}" = 0 ]; then
  cpu=()
  build=pgo
fi

work=target/pgo-work
rm -rf "$work"
mkdir -p "$work/profiles" target/pgo

echo "== 1/3 instrumented build"
RUSTFLAGS="${cpu[*]} -Cprofile-generate=$PWD/$work/profiles" \
  cargo build --release -q --target-dir target/pgo-gen -p ecnlab-cli
train=target/pgo-gen/release/ecnlab-sim

echo "== 2/3 training run"
# Start empty: only the training runs below may write profiles.
rm -rf "$work/profiles"
export LLVM_PROFILE_FILE="$PWD/$work/profiles/%m_%p.profraw"
"$train" run leafspine-mqecn --set workloads.0.flows=500 --out "$work/train/leafspine" > /dev/null
"$train" run dctcp-8flows --out "$work/train/dctcp" > /dev/null
if ! "$train" reproduce all --quick --jobs 2 --out "$work/train/grids" > "$work/grids.log" 2>&1; then
  echo "the training grids failed (a check, or a run; see $work/grids.log): no profile-guided build" >&2
  exit 1
fi
unset LLVM_PROFILE_FILE
"$profdata" merge -o "$work/merged.profdata" "$work/profiles"

echo "== 3/3 optimized build"
ECNLAB_BUILD=$build RUSTFLAGS="${cpu[*]} -Cprofile-use=$PWD/$work/merged.profdata -Cllvm-args=-pgo-warn-missing-function=false" \
  cargo build --release -q --target-dir target/pgo-use -p ecnlab-cli
cp target/pgo-use/release/ecnlab-sim target/pgo/ecnlab-sim
echo "built target/pgo/ecnlab-sim"
