"""``build_report``: decide which figures apply to a result, draw them, and write the page.

A figure that does not apply (no timings, a single key, fewer than two varied parameters, no verify
fields) is not drawn; the page lists it with the reason instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tritune.paths import write_output
from tritune.report.data import (
    Ceilings,
    ceilings_of,
    key_label,
    load_result,
    timing_of,
    winner,
)
from tritune.report.mpl import require_matplotlib, save
from tritune.results import RunResult, WorkloadResult


@dataclass(frozen=True)
class Figure:
    """One drawn figure: ``kind`` is ranked, heatmap, ceiling, sweep or verify."""

    kind: str
    title: str
    caption: str
    path: Path


@dataclass(frozen=True)
class Skipped:
    """A figure that was not drawn, and why."""

    kind: str
    reason: str


@dataclass(frozen=True)
class Report:
    """What :func:`build_report` wrote."""

    html: Path
    figures: tuple[Figure, ...]
    skipped: tuple[Skipped, ...]


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", "_".join(parts)).strip("_")[:80] or "figure"


def _by_name(result: RunResult) -> dict[str, list[WorkloadResult]]:
    out: dict[str, list[WorkloadResult]] = {}
    for w in result.workloads:
        out.setdefault(w.name, []).append(w)
    return out


def _timed(w: WorkloadResult) -> bool:
    return any(timing_of(c) is not None for c in w.candidates)


def build_report(result: RunResult | str | Path, out_dir: str | Path, *, source: str | None = None) -> Report:
    """Write ``out_dir/report.html`` and one PNG per figure; returns what was drawn and what was skipped.

    ``result`` is a :class:`RunResult` or the path of a result JSON; ``source`` names it on the page.
    """
    if source is None:
        source = "" if isinstance(result, RunResult) else str(result)
    res = result if isinstance(result, RunResult) else load_result(result)
    require_matplotlib()
    from tritune.report import fig_sweep, fig_tune, fig_verify
    from tritune.report.html import render_html

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ceilings: Ceilings | None = ceilings_of(res)
    figures: list[Figure] = []
    skipped: list[Skipped] = []
    groups = _by_name(res)
    untimed_why = f"no candidate has a timing (the result says: {res.timing or 'nothing'})"

    for name, keys in groups.items():
        if not any(_timed(w) for w in keys):
            skipped += [
                Skipped(k, f"{name}: {untimed_why}") for k in ("ranked", "heatmap", "ceiling", "sweep")
            ]
        for w in keys:
            where = f"{name} {key_label(w.key)}"
            if not _timed(w):
                if any(_timed(x) for x in keys):
                    skipped.append(Skipped("ranked", f"{where}: no candidate at this key has a timing"))
                continue
            png = save(fig_tune.ranked_figure(w), out / f"ranked_{_slug(name, key_label(w.key))}.png")
            figures.append(
                Figure(
                    "ranked",
                    f"Ranked candidates, {where}",
                    "Median time with its confidence interval, fastest first, coloured by outcome; "
                    "candidates without a timing are listed beside with their reasons.",
                    png,
                )
            )
            ranked, why_not = fig_tune.heatmap_axes(w)
            if why_not:
                skipped.append(Skipped("heatmap", why_not))
                continue
            png = save(fig_tune.heatmap_figure(w), out / f"heatmap_{_slug(name, key_label(w.key))}.png")
            spreads = ", ".join(f"{p} ×{s:.2f}" for p, s in ranked)
            figures.append(
                Figure(
                    "heatmap",
                    f"Heatmap over the two most influential parameters, {where}",
                    "Influence = max over a parameter's values of the best time with that value, "
                    f"divided by the min ({spreads}). Hatched: every config there is illegal or "
                    "failed; grey '—': not measured.",
                    png,
                )
            )

        timed = [w for w in keys if _timed(w)]
        has_rate = timed and fig_sweep.metrics_of(timed)
        if not timed:
            pass  # already listed above
        elif not has_rate:
            skipped.append(Skipped("ceiling", f"{name}: the workload gives neither bytes nor flops"))
        else:
            png = save(fig_sweep.ceiling_figure(name, timed, ceilings), out / f"ceiling_{_slug(name)}.png")
            note = (
                f"ceiling measured on {ceilings.device}"
                if ceilings is not None
                else "ceiling not measured: the result records none"
            )
            figures.append(
                Figure(
                    "ceiling",
                    f"Achieved throughput against the hardware ceiling, {name}",
                    f"Bars: the winner per key; dots: every timed candidate; {note}.",
                    png,
                )
            )

        won = [w for w in timed if winner(w) is not None]
        if not timed:
            pass
        elif len(won) >= 2:
            png = save(fig_sweep.sweep_figure(name, won, ceilings), out / f"sweep_{_slug(name)}.png")
            figures.append(
                Figure(
                    "sweep",
                    f"Key sweep, {name}",
                    "The winner's median time (with CI) and achieved throughput at each key, "
                    "the winning config named at each point.",
                    png,
                )
            )
        else:
            skipped.append(
                Skipped(
                    "sweep",
                    f"{name}: a key sweep needs two or more keys with a timed winner, "
                    f"this result has {len(won)}",
                )
            )

        if res.command == "verify" or any("max_abs_error" in c.extra for w in keys for c in w.candidates):
            png = save(fig_verify.verify_figure(name, keys), out / f"verify_{_slug(name)}.png")
            figures.append(
                Figure(
                    "verify",
                    f"Correctness matrix and bit-identical groups, {name}",
                    "Status per candidate and key with the max abs error against the oracle and "
                    "the output group: candidates sharing a letter wrote bit-identical outputs.",
                    png,
                )
            )
        else:
            skipped.append(Skipped("verify", f"{name}: this is a {res.command} result, not a verify result"))

    if not groups:
        skipped.append(Skipped("all", "the result has no workloads"))
    page = render_html(
        res,
        [(f.title, f.caption, f.path) for f in figures],
        [(s.kind, s.reason) for s in skipped],
        ceilings,
        source,
    )
    html = out / "report.html"
    write_output(html, page)
    return Report(html, tuple(figures), tuple(skipped))
