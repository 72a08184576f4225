"""API round trips: run, frames, run directories, Parquet, scenario forms, thresholds, error mapping."""

import json
import subprocess
import tomllib

import polars as pl
import pytest
from conftest import SHORT

import ecnlab

VOLATILE = {"wall_time_s", "events_per_s"}


def stable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in VOLATILE}


def test_run_summary_equals_the_cli_summary(cli_binary, tmp_path):
    out = tmp_path / "cli-run"
    subprocess.run([str(cli_binary), "run", "dctcp-8flows", "--out", str(out), "--seed", "5",
                    "--set", "duration=0.3s"], check=True, capture_output=True)
    cli = json.loads((out / "summary.json").read_text())
    r = ecnlab.run("dctcp-8flows", seed=5, set=SHORT)
    assert stable(r.summary) == stable(cli)
    assert r.summary["scenario"] == {"hash": cli["scenario"]["hash"], "name": "dctcp-8flows", "seed": 5}
    # The FCT table is the CLI's fct.csv, row for row.
    assert r.fct.equals(ecnlab.load_run(out).fct)


def test_result_frames(sampled):
    s = sampled.summary
    assert s["goodput"]["total_gbps"] > 9.0
    fct = sampled.fct
    assert isinstance(fct, pl.DataFrame) and fct.height == 8 == s["totals"]["flows"]
    assert fct.schema["src"] == pl.Int64 and fct.schema["goodput_gbps"] == pl.Float64
    assert fct["src"].to_list() == list(range(1, 9))
    assert sampled.series_names == ["cwnd", "delivered", "queues", "rtt"]
    q = sampled.series("queues")
    assert q.columns == ["time_s", "s0->h0:q0_bytes"] and q.height == 301
    assert q["s0->h0:q0_bytes"].max() > 0
    rtt = sampled.series("rtt")
    assert rtt.height == s["rtt"]["all"]["count"]
    assert abs(rtt["rtt_us"].mean() - s["rtt"]["all"]["mean_us"]) < 1e-6 * s["rtt"]["all"]["mean_us"]
    with pytest.raises(KeyError, match="no series `nope`"):
        sampled.series("nope")


def test_save_load_and_parquet_round_trip(sampled, tmp_path):
    d = sampled.save(tmp_path / "run")
    assert sorted(p.name for p in d.iterdir()) == [".ecnlab", "config.toml", "fct.csv", "series", "summary.json"]
    back = ecnlab.load_run(d)
    assert back.summary == sampled.summary
    assert back.config == sampled.config
    for name in sampled.series_names:
        assert back.series(name).equals(sampled.series(name))
    written = ecnlab.to_parquet(d, tmp_path / "pq")
    assert {p.relative_to(tmp_path / "pq").as_posix() for p in written} == {
        "fct.parquet", "series/cwnd.parquet", "series/delivered.parquet", "series/queues.parquet",
        "series/rtt.parquet"}
    assert pl.read_parquet(tmp_path / "pq" / "fct.parquet").equals(sampled.fct)
    assert pl.read_parquet(tmp_path / "pq" / "series" / "queues.parquet").equals(sampled.series("queues"))
    assert (tmp_path / "pq" / "summary.json").is_file()
    # Converting in place adds Parquet beside the CSVs and leaves the run's own files as they were.
    before = (d / "summary.json").read_bytes()
    ecnlab.to_parquet(d)
    assert (d / "summary.json").read_bytes() == before
    assert pl.read_parquet(d / "series" / "rtt.parquet").equals(sampled.series("rtt"))


def test_scenario_forms_agree(tmp_path):
    text = ecnlab.scenarios()["dctcp-8flows"]
    path = tmp_path / "s.toml"
    path.write_text(text)
    doc = tomllib.loads(text)
    hashes = {
        form: ecnlab.run(src, seed=2, set=SHORT).summary["scenario"]["hash"]
        for form, src in [("name", "dctcp-8flows"), ("path", str(path)), ("pathlike", path), ("text", text),
                          ("dict", doc)]
    }
    assert len(set(hashes.values())) == 1, hashes
    # The resolved config replays the run.
    resolved = ecnlab.resolve("dctcp-8flows", seed=2, set=SHORT)
    assert ecnlab.run(resolved).summary["scenario"]["hash"] == hashes["name"]


def test_set_values_of_every_python_type():
    r = ecnlab.run("dctcp-8flows", set={
        "duration": "0.2s", "seed": 4, "transport.initial_window": 4, "observe.rtt_samples": True,
        "observe.cwnd": [0, 1], "switch.marker": {"kind": "threshold", "threshold": "20pkt", "at": "dequeue"}})
    cfg = tomllib.loads(r.config)
    assert cfg["seed"] == 4 and cfg["transport"]["initial_window"] == 4
    assert cfg["switch"]["marker"]["at"] == "dequeue" and cfg["switch"]["marker"]["threshold"] == "20pkt"
    assert r.summary["ports"]["s0->h0"]["occupancy"]["mean_pkts"] < 40


@pytest.mark.parametrize("overrides, field", [
    ({"topology.rate": "-1"}, "topology.rate"),
    ({"topology.rate": "-10Gbps"}, "topology.rate"),
    ({"topology.bogus": 1}, "topology.bogus"),
    ({"workloads.0.dst": 99}, "workloads.0.dst"),
    ({"switch.marker.threshold": "abc"}, "switch.marker.threshold"),
])
def test_config_errors_name_the_field(overrides, field):
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.run("dctcp-8flows", set=overrides)
    assert e.value.field == field
    assert f"`{field}`" in str(e.value)
    assert isinstance(e.value, ecnlab.EcnlabError) and isinstance(e.value, ValueError)


def test_other_errors():
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.run("no-such-scenario")
    assert e.value.field == "scenario"
    with pytest.raises(ecnlab.RunError, match="event budget"):
        ecnlab.run("dctcp-8flows", set={"limits.max_events": 1000})
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.reproduce("no-such-experiment")
    assert e.value.field == "ID"
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.load_run("/nonexistent")
    with pytest.raises(TypeError):
        ecnlab.run(42)


def test_set_must_be_a_mapping():
    # A list of "path=value" strings (the CLI's form) used to fail with a bare AttributeError.
    for bad in (["duration=50ms"], "duration=50ms", 5):
        with pytest.raises(ecnlab.ConfigError) as e:
            ecnlab.run("dctcp-8flows", set=bad)
        assert e.value.field == "set", bad
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.resolve("dctcp-8flows", set={1: "x"})
    assert e.value.field == "set"
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.resolve("dctcp-8flows", set={"observe.cwnd": object()})
    assert e.value.field == "observe.cwnd"


def _doc(**changes):
    """The shipped scenario as a dict, with `changes` ({"topology.rate": v}) applied."""
    doc = tomllib.loads(ecnlab.scenarios()["dctcp-8flows"])
    for path, v in changes.items():
        *parents, last = path.split("__")
        cur = doc
        for k in parents:
            cur = cur[int(k)] if isinstance(cur, list) else cur[k]
        cur[last] = v
    return doc


@pytest.mark.parametrize("changes, field", [
    ({"topology__rate": "0Gbps"}, "topology.rate"),
    ({"topology__rate": 10}, "topology.rate"),
    # Values JSON or TOML cannot carry lost their field before (`scenario`): None, NaN, 2^63, other objects.
    ({"topology__rate": None}, "topology.rate"),
    ({"observe__ports": None}, "observe.ports"),
    ({"duration": float("nan")}, "duration"),
    ({"topology__hosts": 2**63}, "topology.hosts"),
    ({"workloads__0__dst": {1, 2}}, "workloads.0.dst"),
    ({"workloads__0__dst": 99}, "workloads.0.dst"),
    ({"switch__marker": {"kind": "threshold", "threshold": -5}}, "switch.marker.threshold"),
])
def test_dict_scenarios_name_the_field(changes, field):
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.resolve(_doc(**changes))
    assert e.value.field == field, str(e.value)
    assert f"`{field}`" in str(e.value) or e.value.field == field


def test_seed_must_be_a_non_negative_integer():
    for bad in (1.5, True, "7", -1, 2**63, float("inf"), None.__class__):
        with pytest.raises(ecnlab.ConfigError) as e:
            ecnlab.resolve("dctcp-8flows", seed=bad)
        assert e.value.field == "seed", bad
    # Integral values of any integer-like type are the seed they equal, up to TOML's 2^63 - 1.
    for ok, want in ((3.0, 3), (0, 0), (2**63 - 1, 2**63 - 1)):
        assert tomllib.loads(ecnlab.resolve("dctcp-8flows", seed=ok))["seed"] == want


def test_thresholds_match_the_papers_rules():
    t = ecnlab.thresholds("10Gbps", "85.2us")
    row = t.filter(pl.col("rule").str.starts_with("ECN* lower bound")).row(0, named=True)
    assert row["bytes"] == 106500 and row["packets"] == 71.0  # T·C = 10 Gb/s × 85.2 us
    per_queue = ecnlab.thresholds("10Gbps", "85.2us", weights=[1, 1, 2])
    assert per_queue.height > t.height
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.thresholds("-3Gbps", "85us")
    assert e.value.field == "rate"
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.thresholds("10Gbps")
    assert e.value.field == "rtt"
    # The parser is the library's (the CLI's too); errors name this function's parameters.
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.thresholds("10Gbps", rtt_file="/nonexistent/rtt.csv")
    assert e.value.field == "rtt_file"
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.thresholds("10Gbps", "85us", percentile=90)
    assert e.value.field == "percentile" and "rtt_file" in str(e.value)
    with pytest.raises(ecnlab.ConfigError) as e:
        ecnlab.thresholds("10Gbps", "85us", weights=[])
    assert e.value.field == "weights"


def test_experiments_listing():
    ex = ecnlab.experiments()
    assert "mqecn-fig2" in ex["id"].to_list()
    row = ex.filter(pl.col("id") == "mqecn-fig2").row(0, named=True)
    assert row["axes"] == ["k", "load"] and "fct_mean" in row["metrics"]


def test_old_transport_keys_warn_and_resolve_as_hosts_keys():
    # transport.nic_limit moved to hosts.tsq_limit: still read, with a FutureWarning naming the new key.
    with pytest.warns(FutureWarning, match="write hosts.tsq_limit"):
        old = ecnlab.resolve("dctcp-8flows", set={"transport.nic_limit": "6000B"})
    new = ecnlab.resolve("dctcp-8flows", set={"hosts.tsq_limit": "6000B"})
    assert tomllib.loads(old) == tomllib.loads(new)
    assert tomllib.loads(new)["hosts"]["tsq_limit"] == "6000B"
