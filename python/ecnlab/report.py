"""One static HTML page over every reproduced experiment in a directory: claim, measurement, verdict, figure."""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path

from .repro import Reproduction, _definitions

# After every image has loaded (or failed), the page marks each image and the body, so a headless browser's
# DOM dump tells whether the whole page rendered.
_READY_SCRIPT = """
<script>
Promise.all(Array.from(document.images).map(img => new Promise(done => {
  const mark = () => { img.dataset.loaded = img.naturalWidth > 0 ? "1" : "0"; done(img.naturalWidth > 0); };
  if (img.complete) { mark(); } else { img.onload = mark; img.onerror = mark; }
}))).then(oks => {
  document.body.dataset.imagesLoaded = String(oks.filter(Boolean).length);
  document.body.dataset.imagesFailed = String(oks.filter(x => !x).length);
  document.body.dataset.ready = "1";
});
</script>
"""

_STYLE = """
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
section.experiment { border-top: 1px solid #ccc; padding: 0.6em 0 1.2em; }
.badge { display: inline-block; padding: 0.1em 0.6em; border-radius: 0.8em; color: #fff; font-weight: 600; }
.pass { background: #2a7d2a; } .fail { background: #b22222; } .info { background: #777; }
table { border-collapse: collapse; margin: 0.4em 0; font-size: 13px; }
td, th { border: 1px solid #ddd; padding: 0.15em 0.5em; text-align: left; vertical-align: top; }
img.figure { max-width: 100%; border: 1px solid #eee; }
.claim { background: #f6f6f0; padding: 0.3em 0.6em; }
details.notes { margin: 0.5em 0; } details.notes > div { border-left: 3px solid #ccc; padding-left: 0.8em; }
</style>
"""


def _png(rep: Reproduction) -> bytes:
    """The experiment's figure.png, drawn in memory when the directory has none."""
    p = rep.dir / "figure.png"
    if p.is_file():
        return p.read_bytes()
    import matplotlib.pyplot as plt

    from .plots import experiment_figure

    fig = experiment_figure(rep)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _badge(ok: bool, info: bool = False) -> str:
    cls, text = ("info", "REPORTED") if info else ("pass", "PASS") if ok else ("fail", "FAIL")
    return f'<span class="badge {cls}">{text}</span>'


def _spans(text: str, mark: str) -> list[tuple[bool, str]]:
    """`text` split at `mark` into (between a pair of marks, part); an unpaired last mark stays in the text."""
    parts = text.split(mark)
    paired = len(parts) % 2 == 1
    return [(True, p) if i % 2 == 1 and (paired or i < len(parts) - 1) else (False, p if i % 2 == 0 else mark + p)
            for i, p in enumerate(parts)]


def _inline(text: str) -> str:
    """Escapes one line of Markdown and renders its `code` and **bold** spans (the notes use no other markup)."""
    return "".join(
        f"<code>{html.escape(part)}</code>" if code else
        "".join(f"<b>{b}</b>" if bold else b for bold, b in _spans(html.escape(part), "**"))
        for code, part in _spans(text, "`"))


def _markdown(text: str) -> str:
    """The subset of Markdown the experiment notes are written in: paragraphs, `- ` lists, pipe tables, `code`
    and **bold**. Everything else is shown as escaped text, never as HTML."""
    blocks, para, items, rows = [], [], [], []

    def flush():
        if para:
            blocks.append(f"<p>{_inline(' '.join(para))}</p>")
        if items:
            blocks.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
        if rows:
            cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
            body = [r for r in cells[1:] if not all(set(c) <= set("-: ") for c in r)]
            head = "".join(f"<th>{_inline(c)}</th>" for c in cells[0])
            blocks.append(f"<table><tr>{head}</tr>" + "".join(
                "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body) + "</table>")
        para.clear(), items.clear(), rows.clear()

    for line in text.splitlines():
        s = line.strip()
        if not s:
            flush()
        elif s.startswith("|"):
            if para or items:
                flush()
            rows.append(s)
        elif s.startswith("- "):
            if para or rows:
                flush()
            items.append(s[2:])
        elif items and line.startswith("  "):
            items[-1] += " " + s
        else:
            if rows or items:
                flush()
            para.append(s)
    flush()
    return "\n".join(blocks)


def _section(rep: Reproduction) -> str:
    e = html.escape
    info = rep.info
    rows = []
    for c in rep.checks:
        mark = (lambda r: "—") if c.get("info") else (lambda r: "✓" if r["pass"] else "✗")
        measured = "<br>".join(f"{e(r['at'])}: {e(r['measured'])} {mark(r)}" for r in c["rows"])
        rows.append(f"<tr><td>{_badge(c['pass'], c.get('info', False))}</td><td>{e(c['name'])}</td>"
                    f"<td>{e(c.get('claim', ''))}</td><td><code>{e(c.get('rule', ''))}</code></td>"
                    f"<td>{measured}</td></tr>")
    passed = sum(1 for c in rep.checks if c["pass"] and not c.get("info"))
    total = sum(1 for c in rep.checks if not c.get("info"))
    img = base64.b64encode(_png(rep)).decode()

    def num(m: dict, x) -> str:
        if x is None:
            return "—"
        return f"{x * 100:+.1f} %" if m.get("kind") == "relative" else f"{x:.4g}"

    mrows = "".join(
        f"<tr><td>{_badge(m['verdict'] == 'within')}</td><td>{e(m['name'])}: {e(m['claim'])}</td>"
        f"<td>{num(m, m['paper'])}</td><td>{num(m, m.get('ecnlab'))}</td><td>{e(m.get('at', ''))}</td>"
        f"<td>{m['tolerance'] * 100:.0f} %</td></tr>" for m in rep.magnitudes)
    mtable = (f"<table><tr><th></th><th>paper's number</th><th>paper</th><th>ecnlab</th><th>at</th><th>tolerance</th></tr>"
              f"{mrows}</table>") if rep.magnitudes else "<p>No magnitude claim (the paper states no number).</p>"
    notes = (f'<details class="notes" open><summary><b>Notes</b>: where ecnlab and the paper still differ, and the '
             f'evidence</summary><div>{_markdown(rep.notes)}</div></details>') if rep.notes.strip() else ""
    verdict = {"reproduced": "reproduced", "direction": "direction only",
               "not_reproduced": "not reproduced"}.get(rep.verdict, rep.verdict or "—")
    return f"""
<section class="experiment" id="{e(rep.id)}" data-pass="{int(rep.passed)}">
<h2>{e(rep.id)} {_badge(rep.passed)}</h2>
<p><b>{e(info.get('paper', ''))}</b> — {e(info.get('title', ''))}</p>
<p class="claim"><b>Paper's claim:</b> {e(info.get('result', ''))}</p>
<p><b>Verdict:</b> <span class="verdict {e(rep.verdict)}">{e(verdict)}</span>. <b>Our measurement</b>
({e(rep.scale)} scale): {passed}/{total} checks pass, {sum(m['verdict'] == 'within' for m in rep.magnitudes)}/{len(rep.magnitudes)}
of the paper's numbers within tolerance.</p>
{mtable}
{notes}
<table><tr><th></th><th>check</th><th>paper</th><th>rule</th><th>measured</th></tr>
{''.join(rows)}
</table>
<img class="figure" alt="figure of {e(rep.id)}" data-exp="{e(rep.id)}" src="data:image/png;base64,{img}">
</section>"""


def reproductions(dir: str | os.PathLike) -> list[Reproduction]:
    """Every reproduced experiment under `dir` (subdirectories with check.json), in the registry's order."""
    order = {id: i for i, id in enumerate(_definitions())}
    found = [Reproduction.load(p.parent) for p in Path(dir).glob("*/check.json")]
    return sorted(found, key=lambda r: (order.get(r.id, len(order)), r.id))


def write_report(dir: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """Writes the report (default DIR/report.html) with every figure embedded; returns its path."""
    reps = reproductions(dir)
    out = Path(out) if out is not None else Path(dir) / "report.html"
    ok = sum(r.passed for r in reps)
    counts = {v: sum(r.verdict == v for r in reps) for v in ("reproduced", "direction", "not_reproduced")}
    toc = "".join(f'<li><a href="#{html.escape(r.id)}">{html.escape(r.id)}</a> {_badge(r.passed)}</li>'
                  for r in reps)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ecnlab reproduction report</title>{_STYLE}</head>
<body data-ready="0" data-experiments="{len(reps)}">
<h1>ecnlab reproduction report</h1>
<p class="verdicts">{counts['reproduced']} reproduced, {counts['direction']} direction only,
{counts['not_reproduced']} not reproduced (of {len(reps)}). {ok} of {len(reps)} experiments pass every check. Each section: the paper's claim, what ecnlab measured,
the verdict of each check, and the figure drawn from the result table.</p>
<ul>{toc}</ul>
{''.join(_section(r) for r in reps)}
{_READY_SCRIPT}
</body></html>
"""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
