#!/usr/bin/env python3
"""Run the MQ-ECN authors' ns-2 leaf-spine script and ecnlab's mqecn-ls setup on the same points.

    bench/vs-ns2/run.py ns2                 # the 6 ns-2 points, one at a time (about 10 min each)
    bench/vs-ns2/run.py ecnlab              # ecnlab's mqecn-ls at 6 000 flows, same points
    bench/vs-ns2/run.py ecnlab --variant alpha0 --set transport.cc.initial_alpha=0
    bench/vs-ns2/run.py all                 # ns-2 then ecnlab

Points: DWRR, 8 services, 6 000 flows; schemes standard / MQ-ECN / per-queue minimum; loads 0.3 and 0.7
(--loads, --schemes, --flows change them). Every point is resumable: a point whose output is complete is
skipped, an incomplete one is run again from scratch.

ns-2: the authors' spine_empirical_diffserv.tcl with the 24 arguments their run_simulation_diffserv.py builds
(same values; only sim_end = --flows and the load, scheme and scheduler of the point), run in the cache's copy
of their scripts/ directory (the tcl sources tcp-common-opt-raw.tcl and the CDF files by relative path).
Output: $CACHE/runs/ns2/diffserv_dwrr_dctcp_scheme_<s>_load_<L>_service_8/{flow.tr,logFile.tr}, as their
script names them. A point is complete when logFile.tr says "Simulation Finished!". At most one ns-2 process
runs at a time on this machine: a lock file ($CACHE/ns2.lock, flock) serialises concurrent invocations.

ecnlab: experiments/mqecn/ls.toml's base scenario, with the axis values of the point set as that experiment's
axes set them, workloads.0.flows = --flows, plus any --set of the variant. Output:
$CACHE/runs/ecnlab/<variant>/seed<N>/<scheme>_load<L>/ (an ecnlab run directory; complete when summary.json
exists). The variant's --set list is recorded in $CACHE/runs/ecnlab/<variant>/sets.json, and a variant name
cannot be reused with other --set values (use a new name).

$VS_NS2_CACHE picks the cache (default as build.sh: /var/cache/ecnlab-vs-ns2 as root, else
$XDG_CACHE_HOME/ecnlab-vs-ns2). $ECNLAB_SIM picks the ecnlab-sim binary (default: target/release/ecnlab-sim
of this checkout, built with `cargo build --release -p ecnlab-cli` if missing).
"""
import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# ECN_scheme as the authors' script numbers them: per-queue standard (0), per-port (1), MQ-ECN (2), per-queue min (3)
NS2_SCHEME = {"standard": 0, "mqecn": 2, "minimum": 3}
SCHEMES = ["standard", "mqecn", "minimum"]
LOADS = [0.3, 0.7]


def cache_dir() -> Path:
    c = os.environ.get("VS_NS2_CACHE")
    if c:
        return Path(c)
    if os.geteuid() == 0:
        return Path("/var/cache/ecnlab-vs-ns2")
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ecnlab-vs-ns2"


def log(msg: str) -> None:
    print(f"[vs-ns2 run {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ ns-2 ---

def ns2_args(scheme: str, load: float, flows: int, flow_tr: str) -> list[str]:
    """The 24 arguments of spine_empirical_diffserv.tcl, in the order and with the values (str() of the same
    Python numbers) that run_simulation_diffserv.py passes."""
    v = [
        8,            # service_num
        flows,        # sim_end: number of flows
        10,           # link_rate (Gb/s)
        0.0000002,    # mean_link_delay: 0.2 us per link
        0.000020,     # host_delay: + 20 us on host links
        200,          # queueSize (packets of 1500 B: 300 KB shared per port)
        load,
        1,            # connections_per_pair
        1,            # enableMultiPath
        1,            # perflowMP (ECMP per flow)
        16,           # init_window
        "DCTCP-Sack", # sourceAlg
        1,            # ackRatio
        "true",       # slowstartrestart
        0.0625,       # DCTCP_g
        0.005,        # min_rto
        NS2_SCHEME[scheme],
        65.0,         # DCTCP_K
        "DWRR",       # switchAlg
        12, 12, 12, 1,  # topology_spt, tors, spines, x
        flow_tr,
    ]
    return [str(x) for x in v]


def ns2_point_dir(cache: Path, scheme: str, load: float) -> Path:
    name = f"diffserv_dwrr_dctcp_scheme_{NS2_SCHEME[scheme]}_load_{int(round(load * 100))}_service_8"
    return cache / "runs" / "ns2" / name


def ns2_complete(d: Path, flows: int) -> bool:
    lf, ft = d / "logFile.tr", d / "flow.tr"
    if not (lf.exists() and ft.exists()):
        return False
    if "Simulation Finished!" not in lf.read_text(errors="replace")[-4000:]:
        return False
    n = sum(1 for line in ft.open() if len(line.split()) >= 3)
    return n >= flows


def run_ns2(cache: Path, schemes, loads, flows: int) -> None:
    ns = cache / "build" / "ns-allinone-2.35" / "ns-2.35" / "ns"
    scripts = cache / "scripts"
    if not ns.exists() or not (scripts / "spine_empirical_diffserv.tcl").exists():
        log(f"no ns-2 build in {cache}: running build.sh")
        subprocess.run([str(HERE / "build.sh")], check=True)
    lock_path = cache / "ns2.lock"
    for load in loads:
        for scheme in schemes:
            d = ns2_point_dir(cache, scheme, load)
            meta = d / "point.json"
            if ns2_complete(d, flows) and meta.exists() and json.loads(meta.read_text()).get("flows") == flows:
                log(f"ns-2 {scheme} load {load}: complete, skipped ({d})")
                continue
            with open(lock_path, "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    log(f"ns-2 {scheme} load {load}: another ns-2 run holds {lock_path}; waiting")
                    fcntl.flock(lock, fcntl.LOCK_EX)
                log(f"ns-2 {scheme} load {load}: starting")
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                args = ns2_args(scheme, load, flows, str(d / "flow.tr"))
                (d / "point.json").write_text(json.dumps(
                    {"scheme": scheme, "load": load, "flows": flows, "ns": str(ns),
                     "argv": ["spine_empirical_diffserv.tcl", *args]}, indent=1) + "\n")
                t0 = time.time()
                with open(d / "logFile.tr", "w") as out, open(d / "stderr.log", "w") as err:
                    # GNU time for the peak RSS, if present
                    pre = ["/usr/bin/time", "-v", "-o", str(d / "time.txt")] if Path("/usr/bin/time").exists() else []
                    rc = subprocess.run([*pre, str(ns), "spine_empirical_diffserv.tcl", *args],
                                        cwd=scripts, stdout=out, stderr=err).returncode
                wall = time.time() - t0
                m = json.loads(meta.read_text())
                m.update({"wall_s": round(wall, 1), "rc": rc})
                meta.write_text(json.dumps(m, indent=1) + "\n")
                ok = ns2_complete(d, flows)
                log(f"ns-2 {scheme} load {load}: rc {rc}, {wall / 60:.1f} min, {'complete' if ok else 'INCOMPLETE'}")


# ---------------------------------------------------------------------------------------------- ecnlab ---

def ecnlab_bin() -> Path:
    b = os.environ.get("ECNLAB_SIM")
    if b:
        return Path(b)
    p = ROOT / "target" / "release" / "ecnlab-sim"
    if not p.exists():
        log("building ecnlab-sim (cargo build --release -p ecnlab-cli)")
        subprocess.run(["cargo", "build", "--release", "-p", "ecnlab-cli"], cwd=ROOT, check=True)
    return p


def ls_definition():
    """experiments/mqecn/ls.toml: its base scenario and the --set lists of the axis values we use."""
    d = tomllib.loads((ROOT / "experiments" / "mqecn" / "ls.toml").read_text())
    axes = {a["name"]: a for a in d["axis"]}

    def sets_for(axis: str, value):
        a = axes[axis]
        for v in a["values"]:
            if isinstance(v, dict):
                if v["value"] == value:
                    return [s.replace("{{", "{").replace("}}", "}") for s in v["set"]]
            elif v == value:
                return [s.replace(f"{{{axis}}}", str(value)) for s in a["set"]]
        raise SystemExit(f"ls.toml has no value {value!r} on axis {axis}")

    return d["base"], sets_for


def run_ecnlab(cache: Path, schemes, loads, flows: int, variant: str, extra: list[str], seeds) -> None:
    base, sets_for = ls_definition()
    vdir = cache / "runs" / "ecnlab" / variant
    vdir.mkdir(parents=True, exist_ok=True)
    rec = vdir / "sets.json"
    want = {"flows": flows, "set": extra}
    if rec.exists():
        have = json.loads(rec.read_text())
        if have != want:
            raise SystemExit(f"variant {variant!r} was run with {have}, not {want}: pick another --variant name")
    else:
        rec.write_text(json.dumps(want, indent=1) + "\n")
    scen = vdir / "ls-base.toml"
    scen.write_text(base)
    sim = ecnlab_bin()
    for seed in seeds:
        for load in loads:
            for scheme in schemes:
                d = vdir / f"seed{seed}" / f"{scheme}_load{int(round(load * 100))}"
                if (d / "summary.json").exists():
                    log(f"ecnlab[{variant}] seed {seed} {scheme} load {load}: complete, skipped")
                    continue
                sets = [*sets_for("sched", "dwrr"), *sets_for("scheme", scheme), *sets_for("load", load),
                        f"workloads.0.flows={flows}", *extra]
                cmd = [str(sim), "run", str(scen), "--out", str(d), "--seed", str(seed)]
                for s in sets:
                    cmd += ["--set", s]
                t0 = time.time()
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    log(f"ecnlab[{variant}] {scheme} load {load}: FAILED rc {r.returncode}\n{r.stderr[-2000:]}")
                    continue
                (d / "point.json").write_text(json.dumps(
                    {"scheme": scheme, "load": load, "flows": flows, "seed": seed, "variant": variant,
                     "cmd": cmd, "wall_s": round(time.time() - t0, 1)}, indent=1) + "\n")
                log(f"ecnlab[{variant}] seed {seed} {scheme} load {load}: {time.time() - t0:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["ns2", "ecnlab", "all"])
    ap.add_argument("--flows", type=int, default=6000)
    ap.add_argument("--loads", type=float, nargs="+", default=LOADS)
    ap.add_argument("--schemes", nargs="+", choices=SCHEMES, default=SCHEMES)
    ap.add_argument("--variant", default="default", help="ecnlab: name of this set of --set overrides")
    ap.add_argument("--set", dest="sets", action="append", default=[], help="ecnlab: extra path=value")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1], help="ecnlab seeds (ns-2 has one)")
    a = ap.parse_args()
    if a.variant == "default" and a.sets:
        raise SystemExit("--set needs a --variant name other than 'default'")
    cache = cache_dir()
    (cache / "runs").mkdir(parents=True, exist_ok=True)
    if a.what in ("ns2", "all"):
        run_ns2(cache, a.schemes, a.loads, a.flows)
    if a.what in ("ecnlab", "all"):
        run_ecnlab(cache, a.schemes, a.loads, a.flows, a.variant, a.sets, a.seeds)


if __name__ == "__main__":
    main()
