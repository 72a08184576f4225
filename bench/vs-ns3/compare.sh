#!/usr/bin/env bash
# Side-by-side speed / sanity comparison: ns-3.44 vs ecnlab on dctcp-8flows.
#
# Usage: bench/vs-ns3/compare.sh [ns-3 program args, e.g. --simTime=1.1]
# Env:   ECNLAB_ARGS  extra args appended to `ecnlab-sim bench --json`
#        NS3_JSON     path of an existing ns-3 JSON result to reuse (skips the ns-3 run)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# ------------------------------------------------------------------ ns-3 ---
if [[ -n "${NS3_JSON:-}" ]]; then
    echo "[compare] reusing ns-3 result $NS3_JSON" >&2
    grep '^{' "$NS3_JSON" | tail -n 1 > "$TMP/ns3.json"
else
    "$HERE/build.sh"
    echo "[compare] running ns-3 (dctcp_8flows $*); this takes about a minute" >&2
    "$HERE/build/dctcp_8flows" "$@" > "$TMP/ns3.out"
    grep '^{' "$TMP/ns3.out" | tail -n 1 > "$TMP/ns3.json"
fi
cp "$TMP/ns3.json" "$HERE/build/last-ns3.json" 2>/dev/null || true

# ---------------------------------------------------------------- ecnlab ---
: > "$TMP/ecnlab.json"
ECNLAB_NOTE=""
if ! command -v cargo >/dev/null 2>&1; then
    ECNLAB_NOTE="cargo not found on PATH; ecnlab column skipped"
elif [[ ! -f "$ROOT/Cargo.toml" ]]; then
    ECNLAB_NOTE="no Cargo.toml at $ROOT; ecnlab column skipped"
else
    echo "[compare] running (the first cargo build of ecnlab can take a few minutes; its output goes to a temp log):" >&2
    echo "[compare]   cargo run --release -p ecnlab-cli --bin ecnlab-sim -- bench --json ${ECNLAB_ARGS:-}" >&2
    # shellcheck disable=SC2086
    if (cd "$ROOT" && cargo run --release -p ecnlab-cli --bin ecnlab-sim -- bench --json ${ECNLAB_ARGS:-}) \
        > "$TMP/ecnlab.out" 2> "$TMP/ecnlab.err"; then
        grep '^{' "$TMP/ecnlab.out" | tail -n 1 > "$TMP/ecnlab.json" || true
        [[ -s "$TMP/ecnlab.json" ]] || ECNLAB_NOTE="ecnlab-sim bench --json printed no JSON line; ecnlab column skipped"
    else
        ECNLAB_NOTE="'ecnlab-sim bench --json' failed (not implemented yet?); ecnlab column skipped. Last lines of its stderr:"$'\n'"$(tail -n 5 "$TMP/ecnlab.err")"
    fi
fi
if [[ -n "$ECNLAB_NOTE" ]]; then
    echo "[compare] NOTE: $ECNLAB_NOTE" >&2
fi

# ----------------------------------------------------------------- table ---
python3 - "$TMP/ns3.json" "$TMP/ecnlab.json" <<'PY'
import json, sys

def load(path):
    try:
        with open(path) as f:
            txt = f.read().strip()
        return json.loads(txt) if txt else None
    except (OSError, ValueError) as e:
        print(f"[compare] could not parse {path}: {e}", file=sys.stderr)
        return None

ns3, ecn = load(sys.argv[1]), load(sys.argv[2])
if ns3 is None:
    sys.exit("[compare] no ns-3 result")

def wall_per_sim(d):
    if d and d.get("sim_time_s"):
        return d["wall_time_s"] / d["sim_time_s"]
    return None

rows = [
    # label, getter, format
    ("sim time (s)", lambda d: d.get("sim_time_s"), "{:.3f}"),
    ("wall time (s)", lambda d: d.get("wall_time_s"), "{:.3f}"),
    ("wall s / simulated s", wall_per_sim, "{:.3f}"),
    ("events / wall s", lambda d: d.get("events_per_s"), "{:,.0f}"),
    ("bottleneck pkts (run)", lambda d: d.get("bottleneck_pkts"), "{:,.0f}"),
    ("bottleneck pkts / wall s", lambda d: d.get("bottleneck_pkts_per_s"), "{:,.0f}"),
    ("peak RSS (MiB)", lambda d: d.get("peak_rss_mib"), "{:.1f}"),
    ("goodput (Gb/s)", lambda d: d.get("goodput_gbps"), "{:.3f}"),
    ("queue mean (pkts)", lambda d: d.get("queue_mean_pkts"), "{:.2f}"),
    ("queue p99 (pkts)", lambda d: d.get("queue_p99_pkts"), "{:.1f}"),
    ("marked fraction", lambda d: d.get("marked_fraction"), "{:.4f}"),
    ("drops", lambda d: d.get("drops"), "{:,.0f}"),
]

def fmt(v, f):
    if v is None:
        return "-"
    try:
        return f.format(v)
    except (ValueError, TypeError):
        return str(v)

w0 = max(len(r[0]) for r in rows)
hdr = f"{'metric':<{w0}}  {'ns-3.44':>14}  {'ecnlab':>14}  {'ns-3/ecnlab':>11}"
print(f"scenario: dctcp-8flows   (ecnlab: {ecn.get('scenario', '?') if ecn else 'not run'})")
print(hdr)
print("-" * len(hdr))
for label, get, f in rows:
    a = get(ns3)
    b = get(ecn) if ecn else None
    ratio = "-"
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        ratio = f"{a / b:.2f}"
    print(f"{label:<{w0}}  {fmt(a, f):>14}  {fmt(b, f):>14}  {ratio:>11}")
print()
wa, wb = wall_per_sim(ns3), wall_per_sim(ecn) if ecn else None
if wa and wb:
    print(f"ecnlab is {wa / wb:.1f}x faster than ns-3 per simulated second "
          f"(ratio row 'wall s / simulated s').")
print("ns-3 queue stats: time-weighted over the window (queue disc only); "
      f"at-enqueue view: mean {ns3.get('queue_mean_pkts_at_enqueue', float('nan')):.2f}, "
      f"p99 {ns3.get('queue_p99_pkts_at_enqueue', float('nan')):.0f}. "
      "ns-3 marked fraction = marks / enqueued in window; drops = bottleneck, whole run.")
PY
