#!/usr/bin/env python3
"""Compare the MQ-ECN authors' ns-2 with ecnlab on the points run.py ran; print issue 44 §5's table.

    bench/vs-ns2/compare.py                     # ecnlab variant "default" (mqecn-ls as it is)
    bench/vs-ns2/compare.py --variant alpha0    # another variant run by run.py
    bench/vs-ns2/compare.py --variants          # one line per variant and point: the ratios only
    bench/vs-ns2/compare.py --ack-estimate      # also ecnlab's FCT + the ACK's one-way base delay (see below)

Statistics as the authors' result.py computes them: a flow of N packets is N × 1460 bytes; small flows are
< 100 × 1024 B, large > 10 × 1024 × 1024 B; the mean is the arithmetic mean, the 99th percentile is
sorted(fct)[99 · n / 100] (integer division); times in ms. Timeouts: ns-2, the sum of flow.tr's third column
(the connection's nrexmit_ growth over the flow, i.e. its retransmission timeouts); ecnlab, summary.json's
totals.timeouts (RTOs of every connection; each of the 6 000 flows runs to completion, as in ns-2).

Acceptance (issue 44 §5): ecnlab within 15 % of ns-2, |ecnlab / ns-2 − 1| ≤ 0.15, marked ok / NO. The ratio
column is ns-2 / ecnlab. Timeouts of 0 in both count as agreement. Rankings order the schemes per load by
small-flow mean (best first), in each simulator.

With several ecnlab seeds, each ecnlab number is the mean over the seeds present, and the spread (min–max over
the seeds) is printed below the table.

--ack-estimate: ns-2 ends a flow when the sender sees its last byte acknowledged (FullTcp's done_data); ecnlab
when the receiver holds the last byte in order. This adds to each ecnlab FCT the ACK's one-way base delay from
receiver to sender (propagation + serialisation of a 40 B ACK per hop, from config.toml's topology: 2 links in a
rack, 4 across the spine), without any queueing of the ACK: a lower bound of what ecnlab's FCT would be if timed
as ns-2 times it.
"""
import argparse
import csv
import json
import statistics
import sys
import tomllib
from pathlib import Path

# The points, the cache and the ns-2 run directories are run.py's (this directory is on sys.path when run).
from run import SCHEMES, cache_dir, ns2_point_dir

LABEL = {"standard": "standard", "mqecn": "MQ-ECN", "minimum": "minimum"}
SMALL, LARGE = 100 * 1024, 10 * 1024 * 1024
TOL = 0.15


def stats(flows):
    """flows: list of (bytes, fct_ms). result.py's bins and percentile."""
    small = sorted(f for b, f in flows if b < SMALL)
    large = [f for b, f in flows if b > LARGE]
    return {
        "n": len(flows),
        "n_small": len(small),
        "n_large": len(large),
        "overall_mean": sum(f for _, f in flows) / len(flows) if flows else None,
        "small_mean": sum(small) / len(small) if small else None,
        "small_p99": small[99 * len(small) // 100] if small else None,
        "large_mean": sum(large) / len(large) if large else None,
    }


def ns2_point(cache: Path, scheme: str, load: float):
    d = ns2_point_dir(cache, scheme, load)
    ft, lf = d / "flow.tr", d / "logFile.tr"
    if not ft.exists() or not lf.exists() or "Simulation Finished!" not in lf.read_text(errors="replace")[-4000:]:
        return None
    flows, timeouts = [], 0
    for line in ft.open():
        p = line.split()
        if len(p) < 3:
            continue
        flows.append((int(float(p[0])) * 1460, float(p[1]) * 1000))
        timeouts += int(p[2])
    s = stats(flows)
    s["timeouts"] = timeouts
    meta = d / "point.json"
    if meta.exists():
        s["wall_s"] = json.loads(meta.read_text()).get("wall_s")
    return s


def one_way_ack_s(cfg: dict):
    """(src, dst) -> the ACK's one-way base delay dst -> src in a leaf-spine: propagation + 40 B serialisation
    per hop. Host links: topology.rate/delay; fabric: fabric_rate/fabric_delay (default: the same)."""
    t = cfg["topology"]

    def secs(x):
        x = str(x)
        for suf, m in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
            if x.endswith(suf):
                return float(x[: -len(suf)]) * m
        raise ValueError(x)

    def bps(x):
        x = str(x)
        for suf, m in (("Gbps", 1e9), ("Mbps", 1e6), ("Kbps", 1e3), ("bps", 1.0)):
            if x.endswith(suf):
                return float(x[: -len(suf)]) * m
        raise ValueError(x)

    hd, hr = secs(t["delay"]), bps(t["rate"])
    fd, fr = secs(t.get("fabric_delay", t["delay"])), bps(t.get("fabric_rate", t["rate"]))
    hpl = int(t["hosts_per_leaf"])
    host_hop = hd + 40 * 8 / hr
    fab_hop = fd + 40 * 8 / fr

    def f(src, dst):
        if src // hpl == dst // hpl:
            return 2 * host_hop
        return 2 * host_hop + 2 * fab_hop
    return f


SEEDS = None   # --seeds: only these ecnlab seeds


def ecnlab_point(cache: Path, variant: str, scheme: str, load: float, ack_estimate: bool):
    vdir = cache / "runs" / "ecnlab" / variant
    per_seed = []
    for sd in sorted(vdir.glob("seed*")):
        if SEEDS is not None and int(sd.name[4:]) not in SEEDS:
            continue
        d = sd / f"{scheme}_load{int(round(load * 100))}"
        if not (d / "summary.json").exists():
            continue
        summ = json.loads((d / "summary.json").read_text())
        extra = None
        if ack_estimate:
            cfg = tomllib.loads((d / "config.toml").read_text())
            extra = one_way_ack_s(cfg)
        flows = []
        with open(d / "fct.csv") as f:
            for r in csv.DictReader(f):
                if not r["size_bytes"] or not r["fct_s"]:
                    continue
                fct = float(r["fct_s"])
                if extra:
                    fct += extra(int(r["src"]), int(r["dst"]))
                flows.append((int(r["size_bytes"]), fct * 1000))
        s = stats(flows)
        s["timeouts"] = summ["totals"]["timeouts"]
        s["seed"] = sd.name
        per_seed.append(s)
    if not per_seed:
        return None, []
    keys = ["n", "n_small", "n_large", "overall_mean", "small_mean", "small_p99", "large_mean", "timeouts"]
    mean = {k: statistics.fmean(s[k] for s in per_seed if s[k] is not None)
            if any(s[k] is not None for s in per_seed) else None for k in keys}
    return mean, per_seed


def ok(ns, ec):
    if ns is None or ec is None:
        return "–"
    if ns == 0 and ec == 0:
        return "ok"
    if ns == 0:
        return "NO"
    return "ok" if abs(ec / ns - 1) <= TOL else "NO"


def cell(ns, ec, fmt):
    f = lambda v: "–" if v is None else fmt.format(v)
    ratio = "–" if (ns is None or not ec) else f"{ns / ec:.2f}"
    return f"{f(ns)} / {f(ec)} | {ratio} {ok(ns, ec)}"


def ranking(rows, who, key="small_mean"):
    have = [(r[who][key], LABEL[r["scheme"]]) for r in rows if r[who] and r[who][key] is not None]
    return " < ".join(n for _, n in sorted(have))


def table(cache, variant, loads, ack_estimate):
    rows = []
    for load in loads:
        for scheme in SCHEMES:
            ec, seeds = ecnlab_point(cache, variant, scheme, load, ack_estimate)
            rows.append({"scheme": scheme, "load": load, "ns2": ns2_point(cache, scheme, load), "ec": ec,
                         "seeds": seeds})
    title = f"ns-2 (MQ-ECN-NS2) vs ecnlab [{variant}{', FCT + ACK one-way delay' if ack_estimate else ''}]"
    print(f"### {title}\n")
    print("| scheme, load | small mean ms ns-2 / ecnlab | ratio | small p99 ms | ratio | large mean ms | ratio "
          "| timeouts | ratio | flows small/large ns-2 ; ecnlab |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    n_ok = n_all = 0
    for r in rows:
        ns, ec = r["ns2"], r["ec"]
        get = lambda d, k: d[k] if d else None
        cells = [cell(get(ns, "small_mean"), get(ec, "small_mean"), "{:.3f}"),
                 cell(get(ns, "small_p99"), get(ec, "small_p99"), "{:.3f}"),
                 cell(get(ns, "large_mean"), get(ec, "large_mean"), "{:.1f}"),
                 cell(get(ns, "timeouts"), get(ec, "timeouts"), "{:.0f}")]
        for k in ("small_mean", "small_p99", "large_mean", "timeouts"):
            v = ok(get(ns, k), get(ec, k))
            if v != "–":
                n_all += 1
                n_ok += v == "ok"
        counts = (f"{ns['n_small']}/{ns['n_large']}" if ns else "–") + " ; " + \
                 (f"{ec['n_small']:.0f}/{ec['n_large']:.0f}" if ec else "–")
        print(f"| {LABEL[r['scheme']]} {r['load']} | " + " | ".join(cells) + f" | {counts} |")
    print()
    print(f"within {TOL:.0%}: {n_ok} of {n_all} cells (ratio = ns-2 / ecnlab; ok = |ecnlab/ns-2 − 1| ≤ {TOL:.0%})")
    for load in loads:
        rr = [r for r in rows if r["load"] == load]
        a, b = ranking(rr, "ns2"), ranking(rr, "ec")
        same = "same" if a and a == b else "DIFFERENT"
        print(f"ranking by small-flow mean at load {load}: ns-2 {a or '–'}; ecnlab {b or '–'} ({same})")
        a, b = ranking(rr, "ns2", "small_p99"), ranking(rr, "ec", "small_p99")
        print(f"ranking by small-flow p99  at load {load}: ns-2 {a or '–'}; ecnlab {b or '–'}")
    nseeds = max((len(r["seeds"]) for r in rows), default=0)
    if nseeds > 1:
        print(f"\necnlab: mean of {nseeds} seeds; spread (min–max) over seeds:")
        for r in rows:
            s = r["seeds"]
            if len(s) < 2:
                continue
            rng = lambda k, fmt: f"{fmt.format(min(x[k] for x in s))}–{fmt.format(max(x[k] for x in s))}"
            print(f"  {LABEL[r['scheme']]} {r['load']}: small mean {rng('small_mean', '{:.3f}')}, "
                  f"p99 {rng('small_p99', '{:.3f}')}, large {rng('large_mean', '{:.1f}')}, "
                  f"timeouts {rng('timeouts', '{:.0f}')}")
    walls = [r["ns2"]["wall_s"] for r in rows if r["ns2"] and r["ns2"].get("wall_s")]
    if walls:
        print(f"\nns-2 wall time per point: {min(walls) / 60:.1f}–{max(walls) / 60:.1f} min")
    return rows


def variants_summary(cache, loads, ack_estimate):
    """One row per ecnlab variant and point: ecnlab's value and, in brackets, ecnlab / ns-2."""
    base = cache / "runs" / "ecnlab"
    print("ecnlab value (ecnlab / ns-2); small flows in ms, large-flow mean in ms, timeouts" +
          (" — FCT + ACK one-way delay" if ack_estimate else ""))
    print()
    print("| variant | point | small mean | small p99 | large mean | timeouts | seeds |")
    print("|---|---|---|---|---|---|---|")
    sets_of = {}
    for vdir in sorted(p for p in base.iterdir() if p.is_dir()):
        v = vdir.name
        sets_of[v] = json.loads((vdir / "sets.json").read_text()).get("set", []) if (vdir / "sets.json").exists() else []
        for load in loads:
            for scheme in SCHEMES:
                ns = ns2_point(cache, scheme, load)
                ec, seeds = ecnlab_point(cache, v, scheme, load, ack_estimate)
                if not ec:
                    continue

                def f(k, fmt):
                    r = "" if not ns or not ns[k] or ec[k] is None else f" ({ec[k] / ns[k]:.2f})"
                    return (fmt.format(ec[k]) if ec[k] is not None else "–") + r
                print(f"| {v} | {LABEL[scheme]} {load} | {f('small_mean', '{:.3f}')} | {f('small_p99', '{:.3f}')} | "
                      f"{f('large_mean', '{:.1f}')} | {f('timeouts', '{:.0f}')} | {len(seeds)} |")
    print()
    for v, sets in sets_of.items():
        print(f"- {v}: {' '.join('--set ' + repr(x) for x in sets) or '(mqecn-ls as it is)'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", default="default")
    ap.add_argument("--variants", action="store_true", help="summary of every ecnlab variant run")
    ap.add_argument("--loads", type=float, nargs="+", default=[0.3, 0.7])
    ap.add_argument("--ack-estimate", action="store_true")
    ap.add_argument("--seeds", type=int, nargs="+", help="only these ecnlab seeds (default: every seed run)")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    a = ap.parse_args()
    global SEEDS
    SEEDS = set(a.seeds) if a.seeds else None
    cache = cache_dir()
    if a.variants:
        variants_summary(cache, a.loads, a.ack_estimate)
        return
    rows = table(cache, a.variant, a.loads, a.ack_estimate)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1, default=str) + "\n")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:   # `compare.py | head`
        sys.exit(0)
