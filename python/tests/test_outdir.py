"""Output directories from Python: `Result.save`, `ecnlab run --out` and `reproduce(out=)` never delete or
overwrite what ecnlab did not write (the same rules as `ecnlab-sim`, docs/OUTPUTS.md)."""

import os
import subprocess
import sys

import pytest

import ecnlab
from ecnlab.errors import ConfigError


def snapshot(root):
    """Every path under `root` with each file's contents."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


@pytest.fixture
def user_tree(tmp_path, monkeypatch):
    """A user's files around a working directory a/b, which becomes the working directory."""
    for f in ["sentinel", "a/sentinel", "a/b/sentinel", "a/runs/results.tmp/sentinel", "a/mine/data.csv"]:
        p = tmp_path / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"user data: {f}")
    (tmp_path / "a/notes").write_text("user data")
    monkeypatch.chdir(tmp_path / "a/b")
    return tmp_path


@pytest.mark.parametrize("out", [".", "..", "", "../..", "../notes", "../mine", "/"])
def test_save_refuses_every_target_it_did_not_write(sampled, user_tree, out):
    before = snapshot(user_tree)
    with pytest.raises(ConfigError) as e:
        sampled.save(out)
    assert e.value.field == "--out"
    assert snapshot(user_tree) == before


def test_save_replaces_its_own_run_directory_and_spares_look_alike_siblings(sampled, user_tree):
    d = sampled.save("../runs/results.v2")
    assert (d / "summary.json").is_file() and (d / ".ecnlab").is_file()
    sampled.save("../runs/results.v2")  # an ecnlab run directory: replaced
    assert (user_tree / "a/runs/results.tmp/sentinel").read_text() == "user data: a/runs/results.tmp/sentinel"
    assert sorted(os.listdir(user_tree / "a/runs")) == ["results.tmp", "results.v2"]


def test_the_ecnlab_command_checks_out_before_simulating(user_tree):
    before = snapshot(user_tree)
    # A scenario that would take minutes: the refusal must come first.
    r = subprocess.run([sys.executable, "-m", "ecnlab.cli", "run", "dctcp-8flows", "--out", "..",
                        "--set", "duration=60s"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "--out" in r.stderr
    assert snapshot(user_tree) == before


def test_reproduce_refuses_a_directory_it_did_not_write(user_tree):
    before = snapshot(user_tree)
    with pytest.raises(ConfigError, match="not an ecnlab directory"):
        ecnlab.reproduce("pmsb-fig14", quick=True, out=user_tree / "a/mine")
    assert snapshot(user_tree) == before
