"""Ctrl-C stops a run or a sweep: a child Python process, mid-simulation, gets SIGINT and must end with
KeyboardInterrupt within a few seconds (before the fix the GIL-free simulation never looked at signals)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

#: Each mode runs 100 simulated seconds per point: minutes of wall time, so the signal always lands mid-run.
CHILD = textwrap.dedent("""
    import sys
    import ecnlab

    LONG = {"duration": "100s"}

    def main(mode):
        print("started", flush=True)
        try:
            if mode == "run":
                ecnlab.run("dctcp-8flows", set=LONG)
            else:
                ecnlab.sweep("dctcp-8flows", {"seed": [1, 2, 3, 4]}, set=LONG, jobs=2, backend=mode,
                             progress=False)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(130)
        print("finished", flush=True)

    if __name__ == "__main__":  # the process pool spawns workers that import this file
        main(sys.argv[1])
""")


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux /proc; empty elsewhere)."""
    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("mode", ["run", "threads", "local"])
def test_sigint_raises_keyboard_interrupt_soon(mode, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=tmp_path)
    try:
        assert child.stdout.readline().strip() == "started"
        # Long enough for the pool's workers to start (spawned interpreters importing ecnlab) and be simulating.
        time.sleep(2.0)
        workers = _children(child.pid) if mode == "local" else []
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=15)
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, f"exit {child.returncode}\nstdout: {out}\nstderr: {err}"
    assert "KeyboardInterrupt" in out and "finished" not in out
    assert took < 5.0, f"{mode}: exited {took:.1f} s after SIGINT"
    # The pool's workers are ended too, not left simulating as orphans.
    if mode == "local" and Path("/proc").is_dir():
        assert workers, "the pool's workers were running"
        deadline = time.monotonic() + 3
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers), "worker processes outlived the sweep"
