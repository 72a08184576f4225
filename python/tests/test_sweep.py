"""Sweeps: grid frames, agreement with single runs, determinism across job counts and with Ray."""

import json
import subprocess

import polars as pl
import pytest
from conftest import SHORT

import ecnlab
from ecnlab.sweep import summary_row

GRID = {"seed": [1, 2], "switch.marker.threshold": ["20pkt", "65pkt"]}
SET = {"duration": "0.2s"}


@pytest.fixture(scope="module")
def local_frame() -> pl.DataFrame:
    return ecnlab.sweep("dctcp-8flows", GRID, set=SET, jobs=2, progress=False,
                        metrics={"q_max": "ports/s0->h0/occupancy/max_pkts"})


def test_sweep_frame_shape(local_frame):
    f = local_frame
    assert f.height == 4
    assert f.columns[:2] == ["seed", "switch.marker.threshold"]
    assert f.select("seed", "switch.marker.threshold").rows() == [
        (1, "20pkt"), (1, "65pkt"), (2, "20pkt"), (2, "65pkt")]
    for col in ("goodput.total_gbps", "totals.marked_pkts", "rtt.all.mean_us", "port.queue_mean_pkts", "q_max"):
        assert col in f.columns
    assert f["scenario.seed"].to_list() == f["seed"].to_list()
    assert "wall_time_s" not in f.columns
    # A lower threshold keeps a shorter queue at every seed.
    wide = f.pivot(on="switch.marker.threshold", index="seed", values="port.queue_mean_pkts")
    assert (wide["20pkt"] < wide["65pkt"]).all()


def test_sweep_rows_equal_single_runs(local_frame):
    r = ecnlab.run("dctcp-8flows", seed=2, set={**SET, "switch.marker.threshold": "65pkt"})
    expect = summary_row(r.summary, {"q_max": "ports/s0->h0/occupancy/max_pkts"})
    got = local_frame.filter((pl.col("seed") == 2) & (pl.col("switch.marker.threshold") == "65pkt"))
    row = got.row(0, named=True)
    assert {k: row[k] for k in expect} == expect


@pytest.mark.parametrize("jobs, backend", [(1, "local"), (2, "threads")])
def test_sweep_is_deterministic_across_job_counts_and_pools(local_frame, jobs, backend):
    other = ecnlab.sweep("dctcp-8flows", GRID, set=SET, jobs=jobs, backend=backend, progress=False,
                         metrics={"q_max": "ports/s0->h0/occupancy/max_pkts"})
    assert other.equals(local_frame)


def test_sweep_errors():
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.sweep("dctcp-8flows", {"topology.rate": ["10Gbps", "-1"]}, set=SHORT, jobs=2, progress=False)
    assert e.value.field == "topology.rate"
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.sweep("dctcp-8flows", {"seed": [1]}, backend="dask")
    assert e.value.field == "backend"
    with pytest.raises(ecnlab.ConfigError):
        ecnlab.sweep("dctcp-8flows", {"seed": []})


def test_ray_backend_equals_local(local_frame):
    ray = pytest.importorskip("ray")
    try:
        f = ecnlab.sweep("dctcp-8flows", GRID, set=SET, jobs=2, backend="ray", progress=False,
                         metrics={"q_max": "ports/s0->h0/occupancy/max_pkts"})
        assert f.equals(local_frame)
        # Errors raised in Ray workers keep their class and field.
        with pytest.raises(ecnlab.ConfigError) as e:
            ecnlab.sweep("dctcp-8flows", {"topology.rate": ["-1"]}, backend="ray", progress=False)
        assert e.value.field == "topology.rate"
    finally:
        ray.shutdown()


def test_busiest_port_is_the_bench_bottleneck(cli_binary):
    # One rule (ecnlab::sim::busiest_port) for sweep's `port.*` columns and `ecnlab-sim bench`'s bottleneck.
    out = subprocess.run([str(cli_binary), "bench", "--json", "--set", "duration=0.3s"], check=True,
                         capture_output=True, text=True).stdout
    r = ecnlab.run("dctcp-8flows", set=SHORT)
    assert ecnlab.busiest_port(r.summary) == json.loads(out)["bottleneck_port"] == summary_row(r.summary)["port.name"]
    # Ties go to the greatest name, whatever order the summary lists its ports in.
    tie = {"ports": {"b": {"counters": {"sent_pkts": 3}}, "a": {"counters": {"sent_pkts": 3}}}}
    assert ecnlab.busiest_port(tie) == "b"
    assert ecnlab.busiest_port({"ports": {}}) is None
