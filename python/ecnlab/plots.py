"""Paper-style figures (matplotlib, Agg) from runs and from experiment result tables."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

if TYPE_CHECKING:  # pragma: no cover
    from .core import Result
    from .repro import Reproduction

#: FCT columns of the load-sweep experiments, in the order the papers show them.
FCT_METRICS = ["overall_mean", "fct_mean", "small_mean", "small_p95", "small_p99", "medium_mean", "large_mean"]
#: Preferred baselines of a scheme axis (the first present wins; else the axis' first value).
BASELINES = ["standard", "tcn", "tail", "ecn", "enqueue"]


def save(fig: plt.Figure, stem: str | os.PathLike, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Writes `stem.png`, `stem.pdf` (…) and closes the figure."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        p = stem.with_suffix(f".{fmt}")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        out.append(p)
    plt.close(fig)
    return out


def _grid(n: int, w: float = 4.2, h: float = 3.2, cols: int = 3) -> tuple[plt.Figure, list[plt.Axes]]:
    cols = min(n, cols)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False)
    flat = [a for r in axes for a in r]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def _label(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={x}" for k, x in v.items())
    return str(v)


def _groups(df: pl.DataFrame, by: list[str]) -> list[tuple[dict, pl.DataFrame]]:
    """(key, rows) per distinct value of `by`, in order of first appearance."""
    if not by:
        return [({}, df)]
    keys = df.select(by).unique(maintain_order=True).rows(named=True)
    return [(k, df.filter(pl.all_horizontal([pl.col(c) == v for c, v in k.items()]))) for k in keys]


def _mean_over_seeds(df: pl.DataFrame, axes: list[str], metrics: list[str]) -> pl.DataFrame:
    if not axes:
        return df.select([pl.col(m).mean() for m in metrics])
    return df.group_by(axes, maintain_order=True).agg([pl.col(m).mean() for m in metrics])


def _numeric(df: pl.DataFrame, cols: list[str]) -> list[str]:
    return [c for c in cols if df.schema[c].is_numeric() and df[c].drop_nulls().len() > 0]


def _xy(ax: plt.Axes, x: pl.Series, y: pl.Series, label: str) -> None:
    ax.plot(x.to_list(), y.to_list(), marker="o", ms=3.5, lw=1.4, label=label or None)


# ---- figures of one run ---------------------------------------------------------------------------------

def queue_length(result: "Result", ax: plt.Axes | None = None, unit_bytes: float = 1500.0) -> plt.Figure:
    """Queue length over time per sampled queue (series `queues`), in MTU-sized packets."""
    q = result.series("queues")
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 3.4))
    for c in q.columns[1:]:
        ax.plot(q["time_s"], q[c] / unit_bytes, lw=1, label=c.removesuffix("_bytes"))
    ax.set(xlabel="time (s)", ylabel="queue length (packets)", title="Queue length")
    ax.legend(fontsize=7, loc="upper right")
    return fig


def throughput(result: "Result", ax: plt.Axes | None = None) -> plt.Figure:
    """Per-class (= per-queue) throughput over time, from series `delivered` (bytes per sample → Gb/s)."""
    d = result.series("delivered")
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 3.4))
    dt = d["time_s"].diff()
    for c in d.columns[1:]:
        gbps = d[c].cast(pl.Float64).diff() * 8 / dt / 1e9
        ax.plot(d["time_s"][1:], gbps[1:], lw=1, label=c.removesuffix("_delivered_bytes").replace("class", "queue "))
    ax.set(xlabel="time (s)", ylabel="throughput (Gb/s)", title="Per-queue throughput", ylim=(0, None))
    ax.legend(fontsize=7, loc="upper right")
    return fig


def rtt_cdf(results: "Result | Mapping[str, Result]", ax: plt.Axes | None = None) -> plt.Figure:
    """CDF of TCP RTT samples (series `rtt`, observe.rtt_samples = true), one line per labelled run."""
    runs = results if isinstance(results, Mapping) else {"": results}
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5, 3.4))
    for label, r in runs.items():
        s = r.series("rtt")["rtt_us"].sort()
        n = s.len()
        ax.step(s.to_list(), [(i + 1) / n for i in range(n)], where="post", label=label or None)
    ax.set(xlabel="RTT (us)", ylabel="CDF", ylim=(0, 1.01), title="RTT CDF")
    if any(runs):
        ax.legend(fontsize=7)
    return fig


# ---- figures of result tables ---------------------------------------------------------------------------

def fct_normalized(df: pl.DataFrame, line: str, baseline: Any, x: str = "load",
                   metrics: Sequence[str] | None = None, facet: str | None = None) -> plt.Figure:
    """FCT statistics per size bin normalised to `baseline` (a value of `line`) at each `x` (load): the MQ-ECN,
    PMSB and ECN♯ large-scale figures. One panel per metric (and per value of `facet`)."""
    metrics = [m for m in (metrics or FCT_METRICS) if m in df.columns]
    axes_cols = [c for c in (facet, line, x) if c]
    mean = _mean_over_seeds(df, axes_cols, metrics)
    base = mean.filter(pl.col(line) == baseline).drop(line).rename({m: f"{m}__base" for m in metrics})
    joined = mean.join(base, on=[c for c in (facet, x) if c], how="left")
    facets = _groups(joined, [facet] if facet else [])
    fig, panels = _grid(len(metrics) * len(facets), 3.6, 2.9, cols=max(len(metrics), 2))
    for i, (fk, fdf) in enumerate(facets):
        for j, m in enumerate(metrics):
            ax = panels[i * len(metrics) + j]
            for lk, ldf in _groups(fdf.sort(x), [line]):
                _xy(ax, ldf[x], ldf[m] / ldf[f"{m}__base"], _label(lk[line]))
            ax.axhline(1.0, color="grey", lw=0.7, ls=":")
            title = m.replace("_", " ") + (f" [{_label(fk)}]" if fk else "")
            ax.set(xlabel=x, ylabel=f"FCT / {baseline}", title=title)
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def incast_goodput(df: pl.DataFrame, y: str = "goodput_mbps", x: str = "n") -> plt.Figure:
    """Incast goodput against the number of senders, one line per other grid combination (ECN* Fig. 5–9)."""
    others = [c for c in df.columns if c not in (x, y, "seed") and not df.schema[c].is_float()
              and c not in ("drops", "timeouts", "rounds_done")]
    facet = others[-1] if len(others) > 1 else None
    lines = [c for c in others if c != facet]
    facets = _groups(df, [facet] if facet else [])
    fig, panels = _grid(len(facets))
    for ax, (fk, fdf) in zip(panels, facets):
        for lk, ldf in _groups(_mean_over_seeds(fdf, lines + [x], [y]).sort(x), lines):
            _xy(ax, ldf[x], ldf[y], _label(lk))
        ax.set(xlabel="senders", ylabel=y.replace("_", " "), title=_label(fk) or "incast")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def phase_throughput(df: pl.DataFrame) -> plt.Figure:
    """Per-queue throughput over the phases of a run (columns `p1_q1`, `p2_q3` … or `q1`, `q2`), as steps."""
    row = df.select([c for c in df.columns if c != "seed"]).mean().row(0, named=True)
    series: dict[str, list[tuple[int, float]]] = {}
    for c, v in row.items():
        phase, _, q = c.partition("_") if c.startswith("p") and "_" in c else ("p1", "", c)
        series.setdefault(q, []).append((int(phase[1:]), v))
    phases = sorted({p for pts in series.values() for p, _ in pts})
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for q, pts in sorted(series.items()):
        d = dict(pts)
        ys = [d.get(p, 0.0) for p in phases]
        ax.step(range(len(phases) + 1), ys + ys[-1:], where="post", lw=1.6, label=q)
    ax.set_xticks([i + 0.5 for i in range(len(phases))], [f"phase {p}" for p in phases])
    ax.set(ylabel="throughput (Gb/s)", title="Per-queue throughput over time", ylim=(0, None))
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _nan_for_null(values) -> list[float]:
    """Missing measurements (a statistic of an empty bin) as NaN, which matplotlib leaves blank."""
    return [float("nan") if v is None else v for v in values]


def generic(df: pl.DataFrame, axes: list[str], metrics: list[str] | None = None) -> plt.Figure:
    """Each numeric metric (mean over seeds) against the grid axis with the most values, one line (or bar
    colour, over a categorical axis) per combination of the other axes; a bar per metric with no axis."""
    metrics = _numeric(df, metrics if metrics is not None else [c for c in df.columns if c not in axes])
    metrics = [m for m in metrics if m != "seed"][:9]
    if not axes:
        fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(metrics)), 3.4))
        vals = _nan_for_null(_mean_over_seeds(df, [], metrics).row(0))
        ax.bar(range(len(metrics)), vals, color="tab:blue")
        ax.set_xticks(range(len(metrics)), metrics, rotation=30, ha="right")
        ax.set(title="measured (mean over seeds)")
        fig.tight_layout()
        return fig
    mean = _mean_over_seeds(df, axes, metrics)
    # x: the axis with the most values (numeric first on ties): lines over a numeric x, grouped bars over
    # a categorical one; one line / bar colour per combination of the other axes.
    x = max(axes, key=lambda a: (mean[a].n_unique(), mean.schema[a].is_numeric(), -axes.index(a)))
    rest = [a for a in axes if a != x]
    cats = None if mean.schema[x].is_numeric() else mean[x].unique(maintain_order=True).to_list()
    fig, panels = _grid(len(metrics))
    for ax, m in zip(panels, metrics):
        groups = _groups(mean if cats else mean.sort(x), rest)
        for i, (lk, ldf) in enumerate(groups):
            if cats:
                w = 0.8 / len(groups)
                pos = [cats.index(v) - 0.4 + w * (i + 0.5) for v in ldf[x]]
                ax.bar(pos, _nan_for_null(ldf[m].to_list()), width=w, label=_label(lk) or None)
            else:
                _xy(ax, ldf[x], ldf[m], _label(lk))
        if cats:
            ax.set_xticks(range(len(cats)), [str(c) for c in cats], rotation=20)
        ax.set(xlabel=x, title=m.replace("_", " "))
    fig.tight_layout()
    if rest:
        handles, labels = panels[0].get_legend_handles_labels()
        if len(handles) <= 6:
            for ax in panels:
                ax.legend(fontsize=6)
        else:  # many lines: one legend for the figure, outside the panels
            fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7)
    return fig


def checks_figure(checks: list[dict], title: str = "") -> plt.Figure:
    """Pass/fail of every check row (for experiments whose result is only check.json)."""
    rows = [(f"{c['name']} [{r['at']}]", r["pass"], c.get("info", False)) for c in checks for r in c["rows"]]
    fig, ax = plt.subplots(figsize=(7, 0.45 * max(len(rows), 2) + 0.8))
    for i, (label, ok, info) in enumerate(rows):
        ax.barh(i, 1, color="tab:grey" if info else "tab:green" if ok else "tab:red")
        ax.text(0.02, i, label, va="center", fontsize=8, color="white")
    ax.set(yticks=[], xticks=[], title=title or "checks", ylim=(-0.6, len(rows) - 0.4))
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def experiment_figure(rep: "Reproduction") -> plt.Figure:
    """The figure for a reproduced experiment, chosen from its table's columns (fallback: `generic`)."""
    df = rep.table
    title = f"{rep.id}: {rep.info.get('title', '')}"
    if df is None or df.is_empty():
        fig = checks_figure(rep.checks, rep.id)
    else:
        axes = rep.axes
        fct = [m for m in FCT_METRICS if m in df.columns]
        lines = [a for a in axes if a not in ("load",)]
        if "load" in axes and fct and lines:
            line = "scheme" if "scheme" in lines else lines[-1]
            values = df[line].unique(maintain_order=True).to_list()
            baseline = next((b for b in BASELINES if b in values), values[0])
            others = [a for a in lines if a != line]
            fig = fct_normalized(df, line, baseline, metrics=fct[:4], facet=others[0] if others else None)
        elif "n" in df.columns and any(c in df.columns for c in ("goodput_mbps", "incast_gbps")):
            fig = incast_goodput(df, "goodput_mbps" if "goodput_mbps" in df.columns else "incast_gbps")
        elif not axes and all(c.startswith(("p", "q")) for c in rep.metrics) and rep.metrics:
            fig = phase_throughput(df)
        else:
            fig = generic(df, axes, rep.metrics)
    if rep.magnitudes:
        paper_panel(fig, rep.magnitudes)
    fig.suptitle(title if len(title) < 110 else title[:107] + "…", fontsize=9, y=1.02)
    return fig


def paper_panel(fig: plt.Figure, magnitudes: list[dict]) -> plt.Axes:
    """A panel under the figure: per magnitude claim, the paper's value (dashed line, label "paper") beside
    ecnlab's (marker), as the ratio ecnlab / paper for absolute claims and the change itself for relative ones,
    with the tolerance band, so the gap shows without reading tables."""
    n = len(magnitudes)
    ax = fig.add_axes((0.1, -0.08 - 0.07 * n, 0.8, 0.06 * n + 0.04))
    for i, m in enumerate(magnitudes):
        rel = m.get("kind") == "relative"
        p = m["paper"] * 100 if rel else 1.0
        x = m.get("ecnlab")
        x = (x * 100 if rel else x / m["paper"]) if x is not None else None
        tol = m["tolerance"] * (abs(m["paper"]) * 100 if rel else 1.0)
        ax.plot([p - tol, p + tol], [i, i], color="0.85", lw=6, solid_capstyle="butt")
        ax.plot([p, p], [i - 0.35, i + 0.35], ls="--", color="k", lw=1, label="paper" if i == 0 else None)
        if x is not None:
            ok = m["verdict"] == "within"
            ax.plot([x], [i], "o", color="tab:green" if ok else "tab:red", label="ecnlab" if i == 0 else None)
    ax.set_yticks(range(n), [(("Δ % " if m.get("kind") == "relative" else "÷ paper ") + m["name"])[:60]
                             for m in magnitudes], fontsize=6)
    ax.invert_yaxis()
    ax.tick_params(axis="x", labelsize=6)
    ax.set_title("the paper's numbers (dashed, band = tolerance) and ecnlab's (dot)", fontsize=7)
    ax.legend(fontsize=6, loc="best")
    return ax
