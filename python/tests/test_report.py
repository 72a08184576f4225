"""The HTML report: contents, and rendering in headless Chromium (every section with its image)."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import pytest

from ecnlab.report import write_report

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


@pytest.fixture(scope="module")
def report(root, tmp_path_factory):
    """The report over a copy of the committed results (tables and checks only: figures are drawn)."""
    d = tmp_path_factory.mktemp("results")
    for check in (root / "results").glob("*/check.json"):
        dst = d / check.parent.name
        dst.mkdir()
        for name in ("check.json", "table.csv", "search.csv"):
            if (check.parent / name).is_file():
                shutil.copy(check.parent / name, dst / name)
    return d, write_report(d)


def test_report_contents(report):
    d, page = report
    html = page.read_text()
    ids = sorted(p.name for p in d.iterdir() if p.is_dir())
    assert len(ids) >= 20
    sections = re.findall(r'<section class="experiment" id="([^"]+)" data-pass="([01])">(.*?)</section>', html, re.S)
    assert sorted(s[0] for s in sections) == ids
    for id, passed, body in sections:
        check = json.loads((d / id / "check.json").read_text())
        assert passed == str(int(check["pass"]))
        assert "Paper&#x27;s claim" in body or "Paper's claim" in body
        assert ("badge pass\">PASS" if check["pass"] else "badge fail\">FAIL") in body
        for c in check["checks"]:
            assert c["rows"][0]["measured"].replace("<", "&lt;").replace(">", "&gt;") in body, (id, c["name"])
        # The definition's notes (the evidence behind a gap) are shown, rendered from their Markdown.
        assert ('class="notes"' in body) == bool((check.get("notes") or "").strip()), id
        assert re.search(r'<img class="figure"[^>]*src="data:image/png;base64,[A-Za-z0-9+/=]{2000,}"', body), id
    ok = sum(json.loads((d / i / "check.json").read_text())["pass"] for i in ids)
    assert f"{ok} of {len(ids)} experiments pass" in html


def test_report_renders_in_headless_chromium(report, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed (.ci/run installs it)")
    d, page = report
    n = sum(1 for p in d.iterdir() if p.is_dir())
    base = [str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000"]
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-ready="1"' in body, body
    assert f'data-images-loaded="{n}"' in body and 'data-images-failed="0"' in body, body
    loaded = re.findall(r'<img class="figure"[^>]*data-exp="([^"]+)"[^>]*data-loaded="1"', dom)
    assert sorted(loaded) == sorted(p.name for p in d.iterdir() if p.is_dir())
    shot = tmp_path / "shot.png"
    subprocess.run(base + ["--window-size=1200,2400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    img = mpimg.imread(shot)
    assert img.shape[:2] == (2400, 1200)
    assert img[..., :3].std() > 0.05, "the screenshot is blank"


def test_reproduction_exposes_verdict_and_magnitudes():
    from pathlib import Path

    from ecnlab.repro import Reproduction

    root = Path(__file__).resolve().parents[2] / "results"
    r = Reproduction.load(root / "mqecn-fig6")
    assert r.verdict in ("reproduced", "direction", "not_reproduced")
    assert r.magnitudes and {"claim", "paper", "ecnlab", "tolerance", "verdict"} <= set(r.magnitudes[0])
    assert all(m["verdict"] in ("within", "outside") for m in r.magnitudes)
    none = Reproduction.load(root / "pmsb-fig1")
    assert none.magnitudes == [] and none.verdict


def test_notes_render_their_markdown_and_never_raw_html():
    from ecnlab.report import _markdown

    page = _markdown("**Bold** and `a<b>` <script>x</script>\n\n| load | FCT |\n|---|---|\n| 0.5 | 1.2 |\n\n"
                     "- one\n  more\n- `two`")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<b>Bold</b>" in page and "<code>a&lt;b&gt;</code>" in page
    assert "<th>load</th><th>FCT</th>" in page and "<td>0.5</td><td>1.2</td>" in page and "---" not in page
    assert "<li>one more</li><li><code>two</code></li>" in page
