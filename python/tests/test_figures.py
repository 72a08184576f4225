"""Figures: run-level plots, reproduce with plots, the `ecnlab` console script."""

import shutil
import subprocess
import sys

import matplotlib.image as mpimg
import pytest

import ecnlab
from ecnlab import plots
from ecnlab.repro import Reproduction


def assert_drawn(png):
    """The PNG exists and is not one flat colour."""
    img = mpimg.imread(png)
    assert img.shape[0] > 100 and img.shape[1] > 100
    assert img[..., :3].std() > 0.02, f"{png} looks blank"


@pytest.mark.parametrize("draw", [plots.queue_length, plots.throughput, plots.rtt_cdf])
def test_run_figures(sampled, tmp_path, draw):
    files = plots.save(draw(sampled), tmp_path / draw.__name__)
    assert [f.suffix for f in files] == [".png", ".pdf"]
    assert files[1].stat().st_size > 1000 and files[1].read_bytes().startswith(b"%PDF")
    assert_drawn(files[0])


def test_rtt_cdf_of_several_runs(sampled, tmp_path):
    other = ecnlab.run("dctcp-8flows", seed=3, set={"duration": "0.3s", "observe.rtt_samples": True,
                                                   "switch.marker.threshold": "20pkt"})
    fig = plots.rtt_cdf({"K = 65": sampled, "K = 20": other})
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["K = 65", "K = 20"]
    assert_drawn(plots.save(fig, tmp_path / "cdf", ("png",))[0])


def test_reproduce_quick_with_plot(tmp_path):
    r = ecnlab.reproduce("mqecn-fig2", quick=True, out=tmp_path / "fig2", jobs=2, plot=True)
    assert r.passed and r.checks
    assert r.axes == ["k", "load"] and "fct_mean" in r.metrics
    assert r.table.height == (tmp_path / "fig2" / "table.csv").read_text().count("\n") - 1
    assert sorted(f.name for f in r.figures) == ["figure.pdf", "figure.png"]
    assert_drawn(r.figures[0])
    # Reloading the directory gives the same table and checks.
    back = Reproduction.load(tmp_path / "fig2")
    assert back.table.equals(r.table) and back.checks == r.checks


def test_every_committed_result_has_a_figure(root, tmp_path):
    """The figure choice works for the table of every committed experiment (specific or generic)."""
    for d in sorted((root / "results").glob("*/check.json")):
        rep = Reproduction.load(d.parent)
        fig = plots.experiment_figure(rep)
        assert fig.axes and any(ax.has_data() for ax in fig.axes), rep.id
        plots.plt.close(fig)


def test_console_script_reproduce_plot(tmp_path):
    exe = shutil.which("ecnlab") or sys.executable
    args = [exe] if exe != sys.executable else [exe, "-m", "ecnlab.cli"]
    out = tmp_path / "fig14"
    p = subprocess.run(args + ["reproduce", "pmsb-fig14", "--quick", "--plot", "--out", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "checks pass" in p.stdout
    assert (out / "table.csv").is_file() and (out / "figure.pdf").is_file()
    assert_drawn(out / "figure.png")
    bad = subprocess.run(args + ["run", "dctcp-8flows", "--out", str(tmp_path / "x"), "--set", "topology.rate=-1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "topology.rate" in bad.stderr
