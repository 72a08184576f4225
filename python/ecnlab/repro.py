"""Reproducing an experiment (the Rust runner) and reading a result directory back as frames and checks."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import polars as pl

from . import _native
from .errors import ConfigError


@lru_cache(maxsize=1)
def _definitions() -> dict[str, dict]:
    return {d["id"]: d for d in json.loads(_native.experiments())}


def definition(id: str) -> dict:
    """The shipped definition's id, paper, title, setup, result, axes and metrics."""
    try:
        return _definitions()[id]
    except KeyError:
        raise ConfigError(f"unknown experiment `{id}`; known: {', '.join(_definitions())}", "ID") from None


#: table.csv's last column: the simulator build that ran each row (version+commit.src-hash), neither axis nor metric.
BUILD_COLUMN = "build"


@dataclass
class Reproduction:
    """A result directory: `table` (table.csv), `search` (search.csv, incast), the checks of check.json."""

    id: str
    dir: Path
    info: dict
    checks: list[dict]
    passed: bool
    scale: str
    table: pl.DataFrame | None
    search: pl.DataFrame | None = None
    figures: list[Path] = field(default_factory=list)
    #: "reproduced" (directions pass, every paper number within tolerance), "direction" (directions pass, some
    #: number missed), "not_reproduced" (a direction check fails); "" for a result written before verdicts.
    verdict: str = ""
    #: The paper's numbers against ecnlab's: each {name, claim, kind, rule, paper, ecnlab, at, tolerance,
    #: deviation, verdict ("within"/"outside")}.
    magnitudes: list[dict] = field(default_factory=list)
    #: The definition's notes (Markdown): where ecnlab and the paper still differ, what was tried, the evidence.
    notes: str = ""

    @property
    def axes(self) -> list[str]:
        """The grid's columns in table.csv (seed excluded), outermost first."""
        if self.table is None:
            return []
        known = set(self.info.get("axes", []))
        metrics = set(self.info.get("metrics", []))
        return [c for c in self.table.columns
                if c not in ("seed", BUILD_COLUMN) and (c in known or c not in metrics)]

    @property
    def metrics(self) -> list[str]:
        if self.table is None:
            return []
        return [c for c in self.table.columns if c not in ("seed", BUILD_COLUMN) and c not in self.axes]

    @classmethod
    def load(cls, dir: str | os.PathLike, id: str | None = None) -> "Reproduction":
        """Reads DIR/check.json (required), DIR/table.csv and DIR/search.csv (when present)."""
        dir = Path(dir)
        check = dir / "check.json"
        if not check.is_file():
            raise ConfigError(f"{dir} has no check.json: not a reproduced experiment", "dir")
        c = json.loads(check.read_text())
        id = id or c.get("id") or dir.name
        info = dict(_definitions().get(id, {"id": id, "axes": [], "metrics": []}))
        for k in ("paper", "title"):
            info.setdefault(k, c.get(k, ""))
        info.setdefault("result", c.get("paper_result", ""))

        def frame(name: str) -> pl.DataFrame | None:
            p = dir / name
            return pl.read_csv(p, infer_schema_length=None) if p.is_file() else None

        figures = [p for p in (dir / "figure.png", dir / "figure.pdf") if p.is_file()]
        return cls(id=id, dir=dir, info=info, checks=c.get("checks", []), passed=bool(c.get("pass")),
                   scale=c.get("scale", ""), table=frame("table.csv"), search=frame("search.csv"),
                   figures=figures, verdict=c.get("verdict", ""), magnitudes=c.get("magnitudes", []),
                   notes=c.get("notes") or "")

    def plot(self, formats: tuple[str, ...] = ("png", "pdf")) -> list[Path]:
        """Draws this experiment's figure beside its table (figure.png, figure.pdf)."""
        from .plots import experiment_figure, save

        fig = experiment_figure(self)
        self.figures = save(fig, self.dir / "figure", formats)
        return self.figures


def reproduce(id: str, quick: bool = False, *, paper: bool = False, out: str | os.PathLike | None = None,
              jobs: int | None = None, plot: bool = False, progress: bool = False) -> Reproduction:
    """Runs experiment `id` (as `ecnlab-sim reproduce`) into `out` (default results/ID) and loads the result.

    Failed checks are not an exception: see `.passed` and `.checks`. With `plot`, draws the figure too.
    """
    if quick and paper:
        raise ConfigError("choose one of quick and paper", "quick")
    definition(id)
    out = Path(out) if out is not None else Path("results") / id
    scale = "quick" if quick else "paper" if paper else "default"
    _native.reproduce(id, scale, jobs or os.cpu_count() or 1, out, progress)
    r = Reproduction.load(out, id)
    if plot:
        r.plot()
    return r
