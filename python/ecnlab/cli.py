"""The `ecnlab` console script: run, reproduce (with --plot), plot and report from the shell."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import ConfigError, EcnlabError


def _sets(pairs: list[str]) -> dict[str, str]:
    out = {}
    for p in pairs:
        k, eq, v = p.partition("=")
        if not eq:
            raise ConfigError(f"`{p}` is not of the form path=value", "--set")
        out[k.strip()] = v
    return out


def _run(a: argparse.Namespace) -> int:
    from . import _native
    from .core import run

    _native.check_run_dir(a.out)  # a bad --out costs no simulation
    r = run(a.scenario, seed=a.seed, set=_sets(a.set))
    r.save(a.out)
    if a.parquet:
        r.to_parquet(a.out)
    print(f"{r!r} → {a.out}")
    return 0


def _reproduce(a: argparse.Namespace) -> int:
    from .repro import _definitions, reproduce

    ids = list(_definitions()) if a.id == "all" else [a.id]
    failed = []
    for id in ids:
        out = Path(a.out) / id if a.out and a.id == "all" else Path(a.out) if a.out else Path("results") / id
        r = reproduce(id, a.quick, paper=a.paper, out=out, jobs=a.jobs, plot=a.plot, progress=True)
        n_ok = sum(c["pass"] for c in r.checks)
        figs = ", ".join(str(f) for f in r.figures)
        print(f"{id}: {n_ok}/{len(r.checks)} checks pass → {out / 'check.md'}" + (f"; figures: {figs}" if figs else ""))
        if not r.passed:
            failed.append(id)
    if failed:
        print(f"checks failed in: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _plot(a: argparse.Namespace) -> int:
    from .repro import Reproduction

    for d in a.dirs:
        for f in Reproduction.load(d).plot():
            print(f)
    return 0


def _report(a: argparse.Namespace) -> int:
    from .report import write_report

    print(write_report(a.dir, a.out))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ecnlab", description="ecnlab from Python: run, reproduce, plot, report")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a scenario into a run directory")
    r.add_argument("scenario", help="shipped scenario name or TOML file")
    r.add_argument("--out", required=True)
    r.add_argument("--seed", type=int)
    r.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    r.add_argument("--parquet", action="store_true", help="also write every table as Parquet")
    r.set_defaults(fn=_run)
    rp = sub.add_parser("reproduce", help="reproduce an experiment (table.csv, check.md, figures)")
    rp.add_argument("id", help="experiment id or `all`")
    scale = rp.add_mutually_exclusive_group()
    scale.add_argument("--quick", action="store_true")
    scale.add_argument("--paper", action="store_true")
    rp.add_argument("--out", help="output directory (default results/ID)")
    rp.add_argument("--jobs", type=int)
    rp.add_argument("--plot", action="store_true", help="write figure.png and figure.pdf beside the table")
    rp.set_defaults(fn=_reproduce)
    pl = sub.add_parser("plot", help="draw the figure of reproduced result directories")
    pl.add_argument("dirs", nargs="+")
    pl.set_defaults(fn=_plot)
    rep = sub.add_parser("report", help="one HTML page over every reproduced experiment in DIR")
    rep.add_argument("dir")
    rep.add_argument("--out", help="the HTML file (default DIR/report.html)")
    rep.set_defaults(fn=_report)
    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except EcnlabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # As ecnlab-sim: one line and 130, not a traceback (the run directory is written only after a full run).
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
