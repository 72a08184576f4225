"""Shared fixtures: the repository root, the ecnlab-sim binary, a short sampled run."""

import os
import shutil
from pathlib import Path

import pytest

import ecnlab

ROOT = Path(__file__).resolve().parents[2]

#: A short version of the shipped 8-flow DCTCP scenario (0.3 s simulated, 0.1 s warm-up).
SHORT = {"duration": "0.3s"}


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def cli_binary() -> Path:
    """ecnlab-sim: $ECNLAB_SIM, else the newest build under the target directory (.ci/test builds one)."""
    env = os.environ.get("ECNLAB_SIM")
    if env:
        return Path(env)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    found = [p for p in target.glob("*/ecnlab-sim") if p.is_file()]
    if not found:
        on_path = shutil.which("ecnlab-sim")
        if on_path is None:
            pytest.fail("no ecnlab-sim binary: run `cargo build --bin ecnlab-sim` or set ECNLAB_SIM")
        return Path(on_path)
    return max(found, key=lambda p: p.stat().st_mtime)


@pytest.fixture(scope="session")
def sampled() -> ecnlab.Result:
    """A run with every series sampled (queues, delivered, cwnd of flow 0, RTT samples)."""
    return ecnlab.run("dctcp-8flows", seed=3, set={
        **SHORT, "observe.sample_interval": "1ms", "observe.rtt_samples": True, "observe.cwnd": [0],
    })
