"""Grid sweeps over a base scenario, on a local process pool or a Ray cluster, into one polars frame."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
from typing import Any, Callable, Iterable, Mapping

import polars as pl
from tqdm.auto import tqdm

from . import _native
from .core import scenario_source, set_args
from .errors import ConfigError, EcnlabError, RunError

#: Summary keys left out of sweep rows: per-port / per-workload detail and the wall-clock fields (not
#: deterministic). The busiest port (`ecnlab::sim::busiest_port`) is summarised under `port.*` instead.
SKIPPED = {"ports", "pools", "phases", "workloads", "ecnlab", "wall_time_s", "events_per_s"}


def _flatten(v: Any, prefix: str, out: dict) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            _flatten(x, f"{prefix}.{k}" if prefix else k, out)
    elif not isinstance(v, list):
        out[prefix] = v


def pointer(summary: Any, path: str) -> Any:
    """The value at a JSON pointer (`/ports/s0->h0/utilization`, the leading `/` optional; `~1` is `/`)."""
    cur = summary
    for part in path.strip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list):
            cur = cur[int(part)] if part.isdigit() and int(part) < len(cur) else None
        elif isinstance(cur, dict):
            cur = cur.get(part)
        if cur is None:
            return None
    return cur


def busiest_port(summary: Mapping[str, Any]) -> str | None:
    """The name of the summary's port that sent the most packets (ties: the greatest name), or None when it lists
    no port: the library's rule (`ecnlab::sim::busiest_port`), the bottleneck `ecnlab-sim bench` reports."""
    ports = summary.get("ports") or {}
    return _native.busiest_port(json.dumps({"ports": ports})) if ports else None


def summary_row(summary: dict, metrics: Mapping[str, str] | None = None) -> dict:
    """One sweep row from a summary: its scalars flattened (`goodput.total_gbps`), the busiest port, `metrics`."""
    row: dict = {}
    _flatten({k: v for k, v in summary.items() if k not in SKIPPED}, "", row)
    name = busiest_port(summary)
    if name is not None:
        p = summary["ports"][name]
        occ = p.get("occupancy", {})
        row.update({
            "port.name": name, "port.utilization": p.get("utilization"),
            "port.queue_mean_pkts": occ.get("mean_pkts"), "port.queue_p99_pkts": occ.get("p99_pkts"),
            "port.queue_max_pkts": occ.get("max_pkts"), "port.marked_pkts": p["counters"].get("marked_pkts"),
            "port.dropped_pkts": p["counters"].get("dropped_pkts"),
        })
    for name, path in (metrics or {}).items():
        row[name] = pointer(summary, path)
    return row


def run_point(source: str, kind: str, sets: list[str], metrics: Mapping[str, str] | None) -> dict:
    """Runs one grid point (in a worker) and returns its row; module-level so pools and Ray can ship it."""
    rep = _native.run(source, kind, sets)
    return summary_row(json.loads(rep.summary_json()), metrics)


def grid_points(grid: Mapping[str, Iterable[Any]]) -> list[dict]:
    """The cartesian product of the grid's values, first key outermost."""
    keys = list(grid)
    values = []
    for k in keys:
        vs = grid[k]
        vs = [vs] if isinstance(vs, (str, bytes)) or not isinstance(vs, Iterable) else list(vs)
        if not vs:
            raise ConfigError(f"grid axis `{k}` has no values", k)
        values.append(vs)
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def _local(tasks: list[tuple], jobs: int, threads: bool, done: Callable[[int, dict], None]) -> None:
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait

    if jobs == 1:
        for i, t in enumerate(tasks):
            done(i, run_point(*t))
        return
    # spawn: forking a process that runs polars' thread pool can deadlock. Threads work because the
    # simulation releases the GIL.
    pool = ThreadPoolExecutor(max_workers=jobs) if threads else ProcessPoolExecutor(
        max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
    futures: dict = {}
    try:
        for i, t in enumerate(tasks):
            futures[pool.submit(run_point, *t)] = i
        pending = set(futures)
        while pending:
            # In slices, not one blocking wait: a signal may be delivered to any thread (a worker's), and Python
            # runs its handler (KeyboardInterrupt) only when the main thread next executes bytecode, never while
            # it is blocked on a lock.
            finished, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            for f in finished:
                done(futures[f], f.result())
    except BaseException as e:
        # Ctrl-C (or a failed point): `with pool` would wait for every running point to finish. Instead nothing
        # pending starts, and the running points stop: worker processes are terminated; threads' runs are
        # cancelled natively (signals reach only the main thread), on Ctrl-C only, since `cancel_all` stops every
        # run in this process, another sweep's too.
        if not threads:
            _stop_processes(pool)  # first: shutdown forgets the pool's processes
        pool.shutdown(wait=False, cancel_futures=True)
        if threads and isinstance(e, KeyboardInterrupt):
            _stop_threads(futures)
        raise
    pool.shutdown(wait=True)


def _stop_threads(futures: Iterable[Any]) -> None:
    """Cancels the native runs of a thread pool's running points and waits (briefly) for their threads."""
    from concurrent.futures import wait

    running = [f for f in futures if not f.done()]
    # A point whose thread took it just before the pool's shutdown may enter the simulator after the first
    # cancel_all (which stops only runs in progress): cancel again until all have ended, for up to 5 s.
    for _ in range(50):
        _native.cancel_all()
        running = list(wait(running, timeout=0.1).not_done)
        if not running:
            return


def _stop_processes(pool: Any) -> None:
    """Ends a process pool's workers now, mid-point (their results are no longer wanted). Otherwise the
    interpreter's exit would wait for them (concurrent.futures joins its pools at exit), and they would go on
    simulating as orphans."""
    # Python 3.14 has a public method; before it, the pool's own table of worker processes.
    if hasattr(pool, "terminate_workers"):
        pool.terminate_workers()
        return
    for p in list((getattr(pool, "_processes", None) or {}).values()):
        if p.is_alive():
            p.terminate()


def _ray(tasks: list[tuple], jobs: int | None, address: str | None, done: Callable[[int, dict], None]) -> None:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise EcnlabError("backend='ray' needs the ray package (pip install 'ecnlab[ray]')") from e
    if not ray.is_initialized():
        if address is not None:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=1)(run_point)
    refs = {remote.remote(*t): i for i, t in enumerate(tasks)}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for r in ready:
                try:
                    done(refs[r], ray.get(r))
                except ray.exceptions.RayTaskError as e:
                    cause = e.cause if isinstance(getattr(e, "cause", None), Exception) else None
                    raise (cause or RunError(str(e))) from None
    except BaseException:
        # Ctrl-C or a failed point: the outstanding tasks would otherwise run on in the cluster. force=True kills
        # the workers running them (a running native simulation never returns to Ray to see a gentle cancel).
        for r in pending:
            try:
                ray.cancel(r, force=True)
            except Exception:  # already finished, or the cluster went away: nothing left to stop
                pass
        raise


def sweep(base: Any, grid: Mapping[str, Iterable[Any]], *, set: Mapping[str, Any] | None = None,
          metrics: Mapping[str, str] | None = None, jobs: int | None = None, backend: str = "local",
          address: str | None = None, progress: bool = True) -> pl.DataFrame:
    """Runs `base` at every point of `grid` ({field path: values}, e.g. {"seed": [1, 2]}) with `set` applied
    to all; returns one row per point: the grid's columns, then the summary's (see `summary_row`).

    backend="local" uses a process pool of `jobs` workers (default: all cores; spawned, so a script calling it
    needs the `if __name__ == "__main__":` guard); backend="threads" a thread pool in this process (the
    simulation releases the GIL; for notebooks and stdin); backend="ray" runs the same
    tasks on Ray (`ray.init(address=...)` when given, else a local instance). Rows are identical per seed
    whatever the backend, in grid order.
    """
    if backend not in ("local", "threads", "ray"):
        raise ConfigError(f"backend `{backend}`: one of local, threads, ray", "backend")
    source, kind = scenario_source(base, portable=True)
    points = grid_points(grid)
    tasks = [(source, kind, set_args({**(set or {}), **p}), metrics) for p in points]
    jobs = jobs or os.cpu_count() or 1
    rows: list[dict | None] = [None] * len(points)
    with tqdm(total=len(points), desc=f"sweep ({backend})", unit="run", disable=not progress) as bar:
        def done(i: int, row: dict) -> None:
            rows[i] = row
            bar.update(1)

        if backend in ("local", "threads"):
            _local(tasks, min(jobs, len(tasks)), backend == "threads", done)
        else:
            _ray(tasks, jobs, address, done)
    records = [{**p, **{k: v for k, v in r.items() if k not in p}} for p, r in zip(points, rows)]
    return pl.from_dicts(records, infer_schema_length=None)
