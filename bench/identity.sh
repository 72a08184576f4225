#!/usr/bin/env bash
# The gate for a performance change: two ecnlab-sim binaries must give the same results. Runs each shipped
# scenario (leafspine-mqecn cut to FLOWS flows) and every experiment's --quick grid with both binaries, then
# compares fct.csv byte for byte and summary.json / check.json with the fields that measure the machine
# (wall time, events/s, the build's commit, the scenario hash) and the number of events handled (the
# implementation's count: a change that saves events leaves every result the same) left out, as are the
# run cache's build identity (a grid point's `build` and `checksum`, check.json's `builds`), which name the
# simulator's source hash and so differ between any two source trees. Exit 0 iff everything matches.
#
# Usage: bench/identity.sh BASE_BIN NEW_BIN [FLOWS] [--no-grids]
#   e.g.  cp target/release/ecnlab-sim /tmp/base-sim   (before the change)
#         cargo build --release && bench/identity.sh /tmp/base-sim target/release/ecnlab-sim
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bench/identity.sh BASE_BIN NEW_BIN [FLOWS] [--no-grids]" >&2
  exit 2
fi
base=$1
new=$2
flows=${3:-1000}
grids=yes
[ "${4:-}" = "--no-grids" ] && grids=no
for b in "$base" "$new"; do
  [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }
done
# Absolute, since the script moves to the repository root.
declare -A bins=([base]=$(realpath "$base") [new]=$(realpath "$new"))
case $flows in '' | *[!0-9]*) echo "FLOWS must be a positive integer, got '$flows'" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Prints a JSON file with the machine-dependent fields removed, keys sorted.
strip() {
  python3 - "$1" <<'EOF'
import json, sys
# build, checksum, builds: which simulator build made a grid point (its source hash), not what it computed.
DROP = {"wall_time_s", "events", "events_per_s", "ecnlab", "scenario_hash", "commit", "build", "checksum", "builds"}
# scenario_hash (a grid point's cache key) and a summary's scenario.hash: hashes of the resolved scenario, which a
# new field of the schema moves though nothing ran otherwise.
def clean(v, parent=None):
    if isinstance(v, dict):
        return {k: clean(x, k) for k, x in v.items() if k not in DROP and (parent, k) != ("scenario", "hash")}
    if isinstance(v, list):
        return [clean(x, parent) for x in v]
    return v
try:
    print(json.dumps(clean(json.load(open(sys.argv[1]))), sort_keys=True, indent=1))
except BrokenPipeError:  # cmp -s stops reading at the first difference
    pass
EOF
}

status=0
same() { # label, file A, file B, json|bytes
  if [ "$4" = json ]; then
    cmp -s <(strip "$2") <(strip "$3")
  else
    cmp -s "$2" "$3"
  fi || { echo "DIFFERS: $1 ($(basename "$2"))"; status=1; }
}

scenarios=$("${bins[base]}" list | awk '/^scenarios:/ {s = 1; next} /^[^ ]/ {s = 0} s && NF {print $1}')
[ -n "$scenarios" ] || { echo "no shipped scenarios listed by ${bins[base]} list" >&2; exit 2; }
for scenario in $scenarios; do
  extra=()
  [ $scenario = leafspine-mqecn ] && extra=(--set "workloads.0.flows=$flows")
  for side in base new; do
    "${bins[$side]}" run $scenario "${extra[@]}" --out "$work/$side-$scenario" > /dev/null 2>&1
  done
  [ -f "$work/base-$scenario/fct.csv" ] && same "$scenario" "$work/base-$scenario/fct.csv" "$work/new-$scenario/fct.csv" bytes
  same "$scenario" "$work/base-$scenario/summary.json" "$work/new-$scenario/summary.json" json
  echo "checked $scenario"
done

if [ $grids = yes ]; then
  for side in base new; do
    # Failed checks exit 1; that is a result, not an error, as long as both binaries agree.
    "${bins[$side]}" reproduce all --quick --jobs 2 --out "$work/$side-grids" > /dev/null 2>&1 || true
  done
  n=0
  while IFS= read -r f; do
    rel=${f#"$work/base-grids/"}
    if [ ! -f "$work/new-grids/$rel" ]; then
      echo "MISSING in new: $rel"
      status=1
    else
      same "$rel" "$f" "$work/new-grids/$rel" json
    fi
    n=$((n + 1))
  done < <(find "$work/base-grids" -name '*.json' | sort)
  [ $n -gt 0 ] || { echo "no grid output to compare (reproduce failed?)"; status=1; }
  echo "checked $n grid files"
fi

if [ $status = 0 ]; then echo "IDENTICAL"; else echo "NOT IDENTICAL"; fi
exit $status
