"""The self-contained ``report.html``: figures embedded as base64 PNG data URIs, inline CSS, no JavaScript.

Nothing in the page refers to the network or to other files, so it reads the same offline, mailed, or
attached to an issue.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from tritune.report.data import (
    Ceilings,
    agreement_sentence,
    bitwise_sentence,
    gbps_of,
    group_letters,
    key_label,
    measure_sentence,
    search_sentence,
    tflops_of,
    tie_ids,
    timing_of,
    winner,
)
from tritune.report.mpl import STATUS_COLORS
from tritune.results import CandidateResult, RunResult, WorkloadResult

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1400px;
       padding: 0 1em; color: #212529; background: #fff; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #dee2e6; padding-bottom: .2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .85em; }
th, td { border: 1px solid #dee2e6; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f1f3f5; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.reason { max-width: 60em; white-space: pre-wrap; word-break: break-word; }
.status { padding: 0 .35em; border-radius: 3px; white-space: nowrap; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #dee2e6; }
figcaption { color: #495057; font-size: .9em; margin-top: .3em; }
.note { background: #fff3bf; padding: .5em .8em; border-left: 4px solid #fab005; }
code { background: #f1f3f5; padding: 0 .2em; }
"""


def data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def _kv_table(items: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(_plain(v))}</td></tr>" for k, v in items)
    return f"<table>{rows}</table>"


def _plain(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_plain(x)}" for k, x in v.items())
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _status(c: CandidateResult) -> str:
    color = STATUS_COLORS.get(c.status, "#dee2e6")
    return f'<span class="status" style="background:{color}">{escape(c.status.value)}</span>'


def candidates_table(command: str, w: WorkloadResult) -> str:
    """Every candidate of one key with the command's fields and the reason in full."""
    timed = any(timing_of(c) for c in w.candidates)
    win = winner(w) if timed else None
    ties = set(tie_ids(w))
    letters = group_letters(w)
    heads = ["config", "status"]
    if timed:
        heads += ["", "median ms", "CI ms", "GB/s", "TFLOP/s"]
    if command == "verify" or any("max_abs_error" in c.extra for c in w.candidates):
        heads += ["max abs error", "unwritten", "group"]
    screen_fields = ["shared", "registers", "spilled_bytes", "threads", "blocks_per_sm", "limiter"]
    if command == "screen" or any("registers" in c.extra for c in w.candidates):
        heads += screen_fields
    heads.append("reason")
    order = sorted(w.candidates, key=lambda c: t.median_ms if (t := timing_of(c)) else float("inf"))
    rows = []
    for c in order if timed else w.candidates:
        cells = [f"<td><code>{escape(c.config.id)}</code></td>", f"<td>{_status(c)}</td>"]
        if timed:
            t = timing_of(c)
            mark = (
                "winner"
                if win is not None and c.config == win.config
                else ("tie" if c.config.id in ties else "")
            )
            cells.append(f"<td>{mark}</td>")
            cells.append(f'<td class="num">{f"{t.median_ms:.4g}" if t else "—"}</td>')
            cells.append(f'<td class="num">{f"[{t.ci_low_ms:.4g}, {t.ci_high_ms:.4g}]" if t else "—"}</td>')
            cells.append(f'<td class="num">{escape(_plain(gbps_of(c, w)))}</td>')
            cells.append(f'<td class="num">{escape(_plain(tflops_of(c, w)))}</td>')
        if "max abs error" in heads:
            err = c.extra.get("max_abs_error")
            cells.append(f'<td class="num">{f"{err:.3g}" if isinstance(err, (int, float)) else "—"}</td>')
            cells.append(f'<td class="num">{escape(_plain(c.extra.get("unwritten")))}</td>')
            cells.append(f"<td>{escape(letters.get(c.config.id, '—'))}</td>")
        if "limiter" in heads:
            cells += [f'<td class="num">{escape(_plain(c.extra.get(f)))}</td>' for f in screen_fields]
        cells.append(f'<td class="reason">{escape(c.reason or "")}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _summary(command: str, w: WorkloadResult) -> str:
    parts = [", ".join(f"{n} {escape(s)}" for s, n in w.counts().items())]
    if w.extra.get("oracle") is False:
        parts.append(f"<strong>{escape(agreement_sentence(w))}</strong>")
    if command == "verify" or "groups" in w.extra or "bitwise_identical" in w.extra:
        parts.append(escape(bitwise_sentence(w)))
    win = winner(w) if any(timing_of(c) for c in w.candidates) else None
    if win is not None and (t := timing_of(win)) is not None:
        parts.append(
            f"winner <code>{escape(win.config.id)}</code>: {t.median_ms:.4g} ms "
            f"[CI {t.ci_low_ms:.4g}, {t.ci_high_ms:.4g}]"
        )
        ties = tie_ids(w)
        if ties:
            parts.append("tied (overlapping CI): " + ", ".join(f"<code>{escape(i)}</code>" for i in ties))
        if (m := measure_sentence(w)) is not None:
            parts.append(escape(m))
    searched = search_sentence(w)
    if searched is not None:
        parts.append(escape(searched))
    return "<p>" + "<br>".join(parts) + "</p>"


def render_html(
    result: RunResult,
    figures: Sequence[tuple[str, str, Path]],
    skipped: Sequence[tuple[str, str]],
    ceilings: Ceilings | None,
    source: str,
) -> str:
    """The page. ``figures``: (title, caption, png path); ``skipped``: (figure, why it was not drawn)."""
    names = sorted({w.name for w in result.workloads})
    title = f"tritune {result.command} report: {', '.join(names) or 'no workloads'}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>",
        '<body><main id="tritune-report">',
        f"<h1>{escape(title)}</h1>",
        f"<p>From <code>{escape(source)}</code>.</p>" if source else "",
        f'<p class="note"><b>Timing:</b> {escape(result.timing or "not stated")}</p>',
    ]
    if result.provenance:
        out += ["<h2>Provenance</h2>", _kv_table(list(result.provenance.items()))]
    out.append("<h2>Hardware ceilings</h2>")
    if ceilings is None:
        out.append(
            "<p>Ceiling not measured: this result records no <code>ceilings</code> (copy bandwidth, large "
            "matmul measured on the device), so achieved throughput is shown without one. tritune never "
            "substitutes a datasheet number.</p>"
        )
    else:
        out.append(
            _kv_table(
                [
                    ("device", ceilings.device),
                    ("copy bandwidth (GB/s)", ceilings.copy_gbps),
                    ("large matmul (TFLOP/s)", ceilings.matmul_tflops),
                ]
            )
        )
    out.append("<h2>Figures</h2>")
    if not figures:
        out.append("<p>No figure applies to this result (see below).</p>")
    for i, (ftitle, caption, png) in enumerate(figures):
        out.append(
            f'<figure id="fig-{i}"><img src="{data_uri(png)}" alt="{escape(ftitle)}">'
            f"<figcaption><b>{escape(ftitle)}.</b> {escape(caption)} "
            f"(also <code>{escape(png.name)}</code>)</figcaption></figure>"
        )
    if skipped:
        out.append("<h3>Figures not drawn</h3><ul>")
        out += [f"<li><b>{escape(name)}</b>: {escape(why)}</li>" for name, why in skipped]
        out.append("</ul>")
    out.append("<h2>Candidates</h2>")
    for w in result.workloads:
        out.append(f"<h3>{escape(w.name)} {escape(key_label(w.key))}</h3>")
        out.append(_summary(result.command, w))
        out.append(candidates_table(result.command, w))
    out.append('</main><footer id="tritune-report-end"><p>End of report.</p></footer></body></html>')
    return "\n".join(out) + "\n"
