"""The report of a ``tritune simulate`` result: a convergence figure and each seed's outcome.

A simulate JSON records, per seed, the best ratio reached (recorded time of the config reported best /
the landscape's best), the evaluations used and the evaluation at which the search first got within 2%.
The convergence figure is the fraction of seeds within 2% of the best after n evaluations (a step curve
from those first-hit evaluations), beside each seed's final best ratio.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from tritune.errors import ReportInputError


@dataclass(frozen=True)
class SeedRun:
    seed: int
    best_ratio: float | None
    evaluations: int
    evals_to_2pct: int | None
    best_config: str | None


@dataclass(frozen=True)
class SimulateResult:
    """The fields of a simulate JSON a report needs."""

    strategy: str
    landscape: str
    kernel: str
    budget: float
    budget_evaluations: int
    legal_configs: int
    noise: float
    runs: tuple[SeedRun, ...]
    median_best_ratio: float | None
    p90_best_ratio: float | None


def is_simulate_result(data: Any) -> bool:
    return isinstance(data, Mapping) and (
        data.get("command") == "simulate" or ("command" not in data and "strategy" in data and "runs" in data)
    )


def _opt_float(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def parse_simulate(data: Mapping[str, Any], source: str) -> SimulateResult:
    runs = data.get("runs")
    if not isinstance(runs, list) or not runs:
        raise ReportInputError(f"{source}: a simulate result needs a non-empty 'runs' list")
    try:
        seeds = tuple(
            SeedRun(int(r["seed"]), _opt_float(r.get("best_ratio")), int(r.get("evaluations", 0)),
                    None if r.get("evals_to_2pct") is None else int(r["evals_to_2pct"]), r.get("best_config"))
            for r in runs
        )
        return SimulateResult(
            str(data.get("strategy", "?")), str(data.get("landscape", "")), str(data.get("kernel", "")),
            float(data.get("budget", 0.0)), int(data.get("budget_evaluations", 0)),
            int(data.get("legal_configs", 0)), float(data.get("noise", 0.0)), seeds,
            _opt_float(data.get("median_best_ratio")), _opt_float(data.get("p90_best_ratio")),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ReportInputError(f"{source}: malformed simulate result ({type(e).__name__}: {e})") from None


def convergence(sim: SimulateResult) -> tuple[list[int], list[float]]:
    """(evaluations 0..N, fraction of seeds within 2% of the landscape's best after that many)."""
    horizon = max([sim.budget_evaluations, *(r.evaluations for r in sim.runs)])
    xs = list(range(horizon + 1))
    hits = [r.evals_to_2pct for r in sim.runs]
    ys = [sum(1 for h in hits if h is not None and h <= n) / len(hits) for n in xs]
    return xs, ys


def convergence_figure(sim: SimulateResult) -> Any:
    from tritune.report.mpl import new_figure

    fig = new_figure(11, 4)
    ax1, ax2 = fig.subplots(1, 2, width_ratios=[3, 2])
    xs, ys = convergence(sim)
    ax1.step(xs, [100 * y for y in ys], where="post", color="#4e79a7", linewidth=2)
    ax1.axvline(sim.budget_evaluations, color="#868e96", linestyle="--", linewidth=1)
    ax1.set_xlabel("evaluations")
    ax1.set_ylabel("% of seeds within 2% of the best")
    ax1.set_ylim(-2, 102)
    ax1.set_title(f"{sim.strategy}: convergence over {len(sim.runs)} seeds")
    ratios = [r.best_ratio for r in sim.runs]
    found = [(r.seed, x) for r, x in zip(sim.runs, ratios) if x is not None]
    if found:
        ax2.bar([str(s) for s, _ in found], [x for _, x in found], color="#59a14f")
        ax2.axhline(1.02, color="#e15759", linestyle="--", linewidth=1, label="within 2%")
        ax2.set_ylim(min(0.99, min(x for _, x in found) - 0.01), max(1.05, max(x for _, x in found) + 0.01))
        ax2.legend(loc="upper right")
    ax2.set_xlabel("seed")
    ax2.set_ylabel("best ratio (found / landscape best)")
    ax2.set_title("final best ratio per seed")
    ax2.tick_params(axis="x", labelsize=7)
    return fig


def _fmt(x: float | None, digits: int = 4) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def render_simulate_html(sim: SimulateResult, figure: Path, source: str) -> str:
    from tritune.report.html import _CSS, data_uri

    rows = "".join(
        f"<tr><td class=num>{r.seed}</td><td class=num>{_fmt(r.best_ratio)}</td><td class=num>{r.evaluations}</td>"
        f"<td class=num>{'—' if r.evals_to_2pct is None else r.evals_to_2pct}</td>"
        f"<td>{escape(r.best_config or '—')}</td></tr>"
        for r in sim.runs
    )
    title = f"tritune simulate: {escape(sim.strategy)} on {escape(sim.kernel or sim.landscape)}"
    return (
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{title}</title><style>{_CSS}</style></head>"
        f'<body><main id="tritune-report"><h1>{title}</h1>'
        f"<p class=note>A replay of recorded timings (<code>{escape(sim.landscape)}</code>): nothing was timed "
        "for this report. Best ratio = recorded time of the config the search reported best / the landscape's "
        "best.</p>"
        f"<p>budget {sim.budget:g} = {sim.budget_evaluations} of {sim.legal_configs} legal configs, noise "
        f"{sim.noise:g}; median best ratio {_fmt(sim.median_best_ratio)}, p90 {_fmt(sim.p90_best_ratio)}. "
        f"Source: <code>{escape(source)}</code></p>"
        f'<figure><img alt="convergence" src="{data_uri(figure)}"><figcaption>Left: the fraction of seeds whose '
        "search had found a config within 2% of the landscape's best after n evaluations (dashed: the budget). "
        "Right: each seed's final best ratio.</figcaption></figure>"
        "<h2>Seeds</h2><table><tr><th>seed</th><th>best ratio</th><th>evaluations</th><th>evals to 2%</th>"
        f"<th>best config</th></tr>{rows}</table>"
        '<p id="tritune-report-end"></p></main></body></html>\n'
    )


def build_simulate_report(data: Mapping[str, Any], out_dir: Path, source: str) -> tuple[Path, list[Path]]:
    """Write ``out_dir/report.html`` and ``convergence.png``; returns (html, [figure paths])."""
    from tritune.paths import write_output
    from tritune.report.mpl import require_matplotlib, save

    sim = parse_simulate(data, source)
    require_matplotlib()
    out_dir.mkdir(parents=True, exist_ok=True)
    png = save(convergence_figure(sim), out_dir / "convergence.png")
    html = out_dir / "report.html"
    write_output(html, render_simulate_html(sim, png, source))
    return html, [png]
