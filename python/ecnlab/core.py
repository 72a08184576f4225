"""Running one scenario and reading run directories: `run`, `Result`, `load_run`, `to_parquet`, `thresholds`."""

from __future__ import annotations

import io
import json
import math
import numbers
import operator
import os
import warnings
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from . import _native
from .errors import ConfigError

#: fct.csv column types (docs/OUTPUTS.md); empty cells are nulls.
FCT_SCHEMA = {
    "id": pl.Int64, "src": pl.Int64, "dst": pl.Int64, "class": pl.Int64, "size_bytes": pl.Int64,
    "start_s": pl.Float64, "first_data_s": pl.Float64, "finish_s": pl.Float64, "fct_s": pl.Float64,
    "ideal_fct_s": pl.Float64, "slowdown": pl.Float64, "timeouts": pl.Int64, "retransmits": pl.Int64,
    "delivered_bytes": pl.Int64, "goodput_gbps": pl.Float64,
}


def toml_literal(v: Any) -> str:
    """A Python value as the TOML literal a `--set path=value` override takes."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_literal(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {toml_literal(x)}" for k, x in v.items()) + " }"
    raise ConfigError(f"cannot express {v!r} ({type(v).__name__}) as a TOML value", None)


#: The largest seed: the resolved scenario (config.toml) must replay the run, and TOML integers are signed 64-bit.
SEED_MAX = 2**63 - 1


def seed_value(seed: Any) -> int:
    """`seed` as an int, or ConfigError naming `seed`: int() would truncate 1.5 and accept True and "7"."""
    if isinstance(seed, float) and seed.is_integer():
        seed = int(seed)  # 3.0 (a float grid, a JSON value) is the seed 3
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ConfigError(f"seed must be an integer in [0, 2^63 - 1], got {seed!r} ({type(seed).__name__})", "seed")
    seed = operator.index(seed)
    if not 0 <= seed <= SEED_MAX:
        raise ConfigError(f"seed must be an integer in [0, 2^63 - 1], got {seed}", "seed")
    return seed


def set_args(set: Mapping[str, Any] | None = None, seed: int | None = None) -> list[str]:
    """`{path: value}` (and a seed) as the CLI's `--set path=value` strings; a str value is passed as written."""
    if set is not None and not isinstance(set, Mapping):
        raise ConfigError(f"set= takes a mapping {{field path: value}} such as {{'duration': '50ms'}}, "
                          f"got {type(set).__name__}", "set")
    out = []
    for k, v in (set or {}).items():
        if not isinstance(k, str):
            raise ConfigError(f"set= keys are field paths (str) such as 'topology.rate', got {k!r}", "set")
        try:
            out.append(f"{k}={v if isinstance(v, str) else toml_literal(v)}")
        except ConfigError as e:
            raise ConfigError(str(e), k) from None
    if seed is not None:
        out.append(f"seed={seed_value(seed)}")
    return out


def _check_document(v: Any, path: list[str]) -> None:
    """Raises ConfigError naming the field of a dict scenario's value that JSON (the way to the native loader)
    cannot carry: json.dumps would fail with no field, or write NaN, which the loader rejects as a parse error."""
    field = ".".join(path) or "scenario"
    if isinstance(v, Mapping):
        for k, x in v.items():
            if not isinstance(k, str):
                raise ConfigError(f"scenario keys are field names (str), got {k!r}", field)
            _check_document(x, path + [k])
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            _check_document(x, path + [str(i)])
    elif v is None:
        raise ConfigError("None is not a value: leave the field out for its default", field)
    elif isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"{v} is not a value a scenario takes", field)
    elif not isinstance(v, (str, bool, int, float)):
        raise ConfigError(f"cannot express {v!r} ({type(v).__name__}) as a scenario value", field)


def scenario_source(scenario: Any, portable: bool = False) -> tuple[str, str]:
    """(source, kind) for the native loader. `portable` reads files here so another machine needs none."""
    if isinstance(scenario, Mapping):
        _check_document(scenario, [])
        return json.dumps(scenario, allow_nan=False), "json"
    if isinstance(scenario, os.PathLike) or (isinstance(scenario, str) and os.path.isfile(scenario)):
        path = os.fspath(scenario)
        if not os.path.isfile(path):
            raise ConfigError(f"scenario file {path} does not exist", "scenario")
        return (Path(path).read_text(), "toml") if portable else (path, "path")
    if isinstance(scenario, str):
        return scenario, "auto"
    raise TypeError(f"a scenario is a shipped name, a TOML path or text, or a dict; got {type(scenario).__name__}")


def _csv(text: str, schema: Mapping[str, Any] | None = None) -> pl.DataFrame:
    if schema is not None:
        header = text.split("\n", 1)[0].split(",")
        over = {c: schema[c] for c in header if c in schema}
        return pl.read_csv(io.StringIO(text), schema_overrides=over, infer_schema_length=None)
    return pl.read_csv(io.StringIO(text), infer_schema_length=None)


class Result:
    """One finished run: `summary` (dict, as summary.json), `config` (resolved TOML), `fct` and `series(name)`."""

    def __init__(self, summary: dict, config: str, tables: dict[str, str]):
        self.summary = summary
        self.config = config
        self._tables = tables
        self._frames: dict[str, pl.DataFrame] = {}

    @classmethod
    def _from_native(cls, rep: Any) -> "Result":
        tables = {"fct": rep.fct_csv()}
        for name in rep.series_names():
            tables[f"series/{name}"] = rep.series_csv(name)
        trace = rep.trace_csv()
        if trace.count("\n") > 1:
            tables["trace"] = trace
        res = cls(json.loads(rep.summary_json()), rep.config_toml(), tables)
        res._native = rep
        return res

    def _frame(self, key: str) -> pl.DataFrame:
        if key not in self._frames:
            self._frames[key] = _csv(self._tables[key], FCT_SCHEMA if key == "fct" else None)
        return self._frames[key]

    @property
    def fct(self) -> pl.DataFrame:
        """fct.csv: one row per TCP connection."""
        return self._frame("fct")

    @property
    def series_names(self) -> list[str]:
        return sorted(k.split("/", 1)[1] for k in self._tables if k.startswith("series/"))

    def series(self, name: str) -> pl.DataFrame:
        """series/NAME.csv (`queues`, `delivered`, `cwnd`, `rtt`), if the scenario sampled it."""
        key = f"series/{name}"
        if key not in self._tables:
            raise KeyError(f"no series `{name}` in this run (have: {', '.join(self.series_names) or 'none'}); "
                           "set observe.sample_interval (and observe.rtt_samples for rtt)")
        return self._frame(key)

    @property
    def trace(self) -> pl.DataFrame | None:
        """trace.csv, or None when observe.trace matched nothing."""
        return self._frame("trace") if "trace" in self._tables else None

    def frames(self) -> dict[str, pl.DataFrame]:
        """Every table of the run by relative name (`fct`, `series/queues`, `trace`)."""
        return {k: self._frame(k) for k in self._tables}

    def save(self, dir: str | os.PathLike) -> Path:
        """Writes the run directory `ecnlab-sim run --out DIR` writes (only for runs made in this process)."""
        if not hasattr(self, "_native"):
            raise ConfigError("only a run made by ecnlab.run can be saved as a run directory", "dir")
        self._native.write_dir(Path(dir))
        return Path(dir)

    def to_parquet(self, dir: str | os.PathLike) -> list[Path]:
        """Every table as Parquet under `dir` (fct.parquet, series/NAME.parquet, trace.parquet), and summary.json
        unless `dir` has one."""
        dir = Path(dir)
        written = []
        for key, frame in self.frames().items():
            path = dir / f"{key}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            frame.write_parquet(path)
            written.append(path)
        dir.mkdir(parents=True, exist_ok=True)
        if not (dir / "summary.json").exists():  # never rewrite a run directory's own summary
            (dir / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
        return written

    def __repr__(self) -> str:
        sc = self.summary.get("scenario", {})
        gp = self.summary.get("goodput", {}).get("total_gbps")
        return f"<ecnlab.Result {sc.get('name')!r} seed={sc.get('seed')} goodput={gp} Gb/s, {len(self.fct)} flows>"


def run(scenario: Any, seed: int | None = None, set: Mapping[str, Any] | None = None) -> Result:
    """Runs a scenario (shipped name, TOML path, TOML text or dict) with overrides; the GIL is released."""
    source, kind = scenario_source(scenario)
    rep = _native.run(source, kind, set_args(set, seed))
    _warn_deprecated(rep.deprecated())
    return Result._from_native(rep)


def resolve(scenario: Any, seed: int | None = None, set: Mapping[str, Any] | None = None) -> str:
    """Validates and builds (without running) a scenario; returns it resolved, as TOML (config.toml)."""
    source, kind = scenario_source(scenario)
    text, notes = _native.resolve(source, kind, set_args(set, seed))
    _warn_deprecated(notes)
    return text


def _warn_deprecated(notes: list[str]) -> None:
    """A FutureWarning (shown by default: it is meant for the scenario's author) per deprecated key used."""
    for note in notes:
        warnings.warn(note, FutureWarning, stacklevel=3)


def load_run(dir: str | os.PathLike) -> Result:
    """Reads a run directory written by `ecnlab-sim run --out DIR` (or `Result.save`)."""
    dir = Path(dir)
    if not (dir / "summary.json").is_file():
        raise ConfigError(f"{dir} is not a run directory (no summary.json)", "dir")
    tables = {"fct": (dir / "fct.csv").read_text()}
    for p in sorted((dir / "series").glob("*.csv")):
        tables[f"series/{p.stem}"] = p.read_text()
    if (dir / "trace.csv").is_file():
        tables["trace"] = (dir / "trace.csv").read_text()
    config = (dir / "config.toml").read_text() if (dir / "config.toml").is_file() else ""
    return Result(json.loads((dir / "summary.json").read_text()), config, tables)


def to_parquet(dir: str | os.PathLike, out: str | os.PathLike | None = None) -> list[Path]:
    """Converts a run directory's CSV tables to Parquet, beside them unless `out` is given."""
    return load_run(dir).to_parquet(out if out is not None else dir)


def thresholds(rate: str, rtt: str | None = None, *, rtt_file: str | os.PathLike | None = None,
               percentile: float | None = None, flows: int = 1, weights: list[int] | None = None,
               buffer: str | None = None, mtu: str | None = None, k: str | None = None,
               lam: float = 1.0) -> pl.DataFrame:
    """The threshold calculator (`ecnlab-sim thresholds --json`): one row per rule of the papers."""
    text = _native.thresholds(rate, rtt, None if rtt_file is None else os.fspath(rtt_file), percentile, flows,
                              weights, buffer, mtu, k, lam)
    return pl.DataFrame(json.loads(text), infer_schema_length=None)


def scenarios() -> dict[str, str]:
    """Shipped scenarios: name → TOML text."""
    return dict(_native.scenarios())


def experiments() -> pl.DataFrame:
    """Shipped experiments: id, paper, title, setup, result, axes, metrics."""
    return pl.DataFrame(json.loads(_native.experiments()))
