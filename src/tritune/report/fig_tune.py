"""Per-key tuning figures: the ranked candidates with their intervals, and the parameter heatmap.

Heatmap axes are the two most influential parameters by :func:`tritune.report.data.influence`: a
parameter's spread is how much slower the best config gets when that parameter is set to its worst value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tritune.outcome import Status
from tritune.report.data import influence, key_label, tie_ids, timing_of, varied_params, winner
from tritune.report.mpl import STATUS_COLORS, TIE_COLOR, WINNER_COLOR, new_figure, wrap
from tritune.results import CandidateResult, WorkloadResult

#: How many failure groups the ranked figure's side panel lists before pointing to the HTML table.
MAX_FAILURE_GROUPS = 8


def failure_groups(w: WorkloadResult) -> list[tuple[Status, str, list[str]]]:
    """Candidates without a timing, grouped by (status, reason): the side panel and the HTML list them."""
    groups: dict[tuple[Status, str], list[str]] = {}
    for c in w.candidates:
        if timing_of(c) is None and not c.status.ok:
            groups.setdefault((c.status, c.reason or "(no reason recorded)"), []).append(c.config.id)
    return [(s, r, ids) for (s, r), ids in groups.items()]


def ranked_figure(w: WorkloadResult) -> Any:
    """Every timed candidate as a bar (median) with its CI whisker, best first; failures listed beside."""
    timed = sorted(
        ((c, t) for c in w.candidates if (t := timing_of(c)) is not None), key=lambda ct: ct[1].median_ms
    )
    fails = failure_groups(w)
    win = winner(w)
    ties = set(tie_ids(w))
    height = max(3.5, 0.16 * len(timed) + 1.6)
    width = 14.0
    # A fixed layout, sized from the longest label: constrained layout measures every tick label and
    # costs seconds on an 80-candidate figure.
    font = 7 if len(timed) > 30 else 9
    longest = max((len(c.config.id) + 2 for c, _ in timed), default=10)
    left = min(0.45, (longest * font * 0.62 / 72 + 0.25) / width)
    fig = new_figure(width, height, layout=None)
    fig.subplots_adjust(left=left, right=0.98, top=1 - 0.45 / height, bottom=0.75 / height, wspace=0.05)
    ax, side = fig.subplots(1, 2, width_ratios=[3, 2])

    labels, meds, lo, hi, colors = [], [], [], [], []
    for c, t in timed:
        mark = " ★" if win is not None and c.config == win.config else (" =" if c.config.id in ties else "")
        labels.append(c.config.id + mark)
        meds.append(t.median_ms)
        lo.append(max(0.0, t.median_ms - t.ci_low_ms))
        hi.append(max(0.0, t.ci_high_ms - t.median_ms))
        if win is not None and c.config == win.config:
            colors.append(WINNER_COLOR)
        elif c.config.id in ties:
            colors.append(TIE_COLOR)
        else:
            colors.append(STATUS_COLORS.get(c.status, "#4e79a7"))
    y = list(range(len(timed)))
    ax.barh(y, meds, xerr=[lo, hi], color=colors, ecolor="black", capsize=1.5, error_kw={"lw": 0.8})
    ax.set_yticks(y, labels, fontsize=font)
    ax.invert_yaxis()
    ax.margins(y=0.01)
    if meds and max(meds) / min(meds) > 20:
        ax.set_xscale("log")
    ax.set_xlabel("median time (ms), whisker = confidence interval")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"{w.name} {key_label(w.key)}: {len(timed)} timed candidates, best first", fontsize=11)
    from matplotlib.patches import Patch

    legend = [Patch(color=WINNER_COLOR, label="winner ★"), Patch(color=TIE_COLOR, label="tie with winner =")]
    legend += [Patch(color=STATUS_COLORS[s], label=s.value) for s in sorted({c.status for c, _ in timed})]
    ax.legend(handles=legend, loc="upper right", fontsize=8)  # best first: the top bars are short

    side.axis("off")
    side.set_title(f"not timed: {sum(len(ids) for _, _, ids in fails)} candidates", fontsize=11, loc="left")
    lines: list[tuple[str, str]] = []
    for status, reason, ids in fails[:MAX_FAILURE_GROUPS]:
        head = STATUS_COLORS[status] if status is not Status.ILLEGAL else "#555555"
        lines.append((f"{status.value} ({len(ids)}): " + wrap(", ".join(ids), 60), head))
        lines.append((wrap("reason: " + reason, 64), "black"))
    if len(fails) > MAX_FAILURE_GROUPS:
        lines.append(
            (f"... {len(fails) - MAX_FAILURE_GROUPS} more groups: see the table in report.html", "black")
        )
    if not fails:
        lines.append(("every candidate was timed", "black"))
    line_h = 8 * 1.4 / 72 / (height * 0.85)  # one 8-pt text line, as a fraction of the panel height
    text_y = 0.98
    for k, (text, color) in enumerate(lines):
        need = line_h * (text.count("\n") + 1)
        if text_y - need < 0.0:
            side.text(
                0.0,
                text_y,
                f"... {len(lines) - k} more lines: see the table in report.html",
                va="top",
                fontsize=8,
                transform=side.transAxes,
            )
            break
        side.text(
            0.0,
            text_y,
            text,
            va="top",
            ha="left",
            fontsize=8,
            color=color,
            transform=side.transAxes,
            fontweight="bold" if color != "black" else "normal",
        )
        text_y -= need + line_h * 0.4
    return fig


@dataclass(frozen=True)
class Cell:
    """One heatmap cell: the best median over the other parameters, or why there is none."""

    value: float | None
    state: str  # "measured", "illegal", a failure status value, or "not measured"
    winner: bool = False


def heatmap_cells(
    candidates: Sequence[CandidateResult],
    rows: tuple[str, list[Any]],
    cols: tuple[str, list[Any]],
    winner_id: str | None,
) -> list[list[Cell]]:
    """The heatmap's grid. A cell with no timing is "illegal" when every candidate in it was illegal,
    the failure status when one failed in another way, and "not measured" when none was in the result."""
    (rp, rvals), (cp, cvals) = rows, cols
    grid = []
    for rv in rvals:
        row = []
        for cv in cvals:
            here = [
                c for c in candidates if c.config.as_dict().get(rp) == rv and c.config.as_dict().get(cp) == cv
            ]
            times = [t.median_ms for c in here if (t := timing_of(c)) is not None]
            is_win = any(c.config.id == winner_id for c in here)
            if times:
                row.append(Cell(min(times), "measured", is_win))
            elif not here:
                row.append(Cell(None, "not measured"))
            elif all(c.status is Status.ILLEGAL for c in here):
                row.append(Cell(None, "illegal"))
            else:
                other = next(c.status for c in here if c.status is not Status.ILLEGAL)
                row.append(Cell(None, other.value))
        grid.append(row)
    return grid


def heatmap_axes(w: WorkloadResult) -> tuple[list[tuple[str, float]], str | None]:
    """The parameters ranked by influence, or why no heatmap can be drawn (fewer than two vary)."""
    ranked = influence(w.candidates)
    if len(ranked) < 2:
        varied = list(varied_params(c.config for c in w.candidates))
        return ranked, (
            f"{w.name} {key_label(w.key)}: a heatmap needs two parameters with at least two timed values; "
            f"varied: {', '.join(varied) or 'none'}, with timings: {', '.join(p for p, _ in ranked) or 'none'}"
        )
    return ranked, None


def heatmap_figure(w: WorkloadResult) -> Any:
    """Rows and columns: the two most influential parameters; cell: best median over the others."""
    ranked, why_not = heatmap_axes(w)
    if why_not:
        raise ValueError(why_not)
    (rp, rspread), (cp, cspread) = ranked[0], ranked[1]
    values = varied_params(c.config for c in w.candidates)
    rvals, cvals = values[rp], values[cp]
    win = winner(w)
    grid = heatmap_cells(w.candidates, (rp, rvals), (cp, cvals), win.config.id if win else None)
    others = [p for p in values if p not in (rp, cp)]

    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle

    arr = np.array([[c.value if c.value is not None else np.nan for c in row] for row in grid], dtype=float)
    fig = new_figure(max(6.5, 1.1 * len(cvals) + 3.5), max(4.5, 0.55 * len(rvals) + 2.2))
    ax = fig.subplots()
    finite = arr[np.isfinite(arr)]
    norm = (
        LogNorm(vmin=finite.min(), vmax=finite.max()) if finite.size and finite.max() > finite.min() else None
    )
    im = ax.imshow(np.ma.masked_invalid(arr), cmap="viridis_r", norm=norm, aspect="auto")
    from matplotlib.ticker import FuncFormatter

    bar = fig.colorbar(im, ax=ax, label="best median time (ms)")
    plain = FuncFormatter(lambda v, _: f"{v:.3g}")
    bar.ax.yaxis.set_major_formatter(plain)
    bar.ax.yaxis.set_minor_formatter(plain)
    bar.ax.tick_params(labelsize=7, which="both")
    ax.set_facecolor("white")
    best_v = np.nanmin(arr) if finite.size else math.nan
    for i, row in enumerate(grid):
        for j, cell in enumerate(row):
            if cell.value is not None:
                v = arr[i, j]
                dark = norm is not None and norm(v) > 0.55  # viridis_r: slow cells are dark
                ax.text(
                    j,
                    i,
                    f"{v:.3g}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                    fontweight="bold" if v == best_v else "normal",
                )
            elif cell.state == "not measured":
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#eeeeee", edgecolor="white"))
                ax.text(j, i, "—\nnot measured", ha="center", va="center", fontsize=6.5, color="#666666")
            else:
                hatch = "////" if cell.state == "illegal" else "xx"
                ax.add_patch(
                    Rectangle(
                        (j - 0.5, i - 0.5),
                        1,
                        1,
                        facecolor="#f8d7da",
                        edgecolor="#b02a37",
                        hatch=hatch,
                        lw=0.0,
                    )
                )
                ax.text(
                    j,
                    i,
                    cell.state,
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="#58151c",
                    bbox={"facecolor": "white", "alpha": 0.85, "pad": 1, "lw": 0},
                )
            if cell.winner:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", lw=2.5))
    ax.set_xticks(range(len(cvals)), [str(v) for v in cvals])
    ax.set_yticks(range(len(rvals)), [str(v) for v in rvals])
    ax.set_xlabel(f"{cp}  (spread ×{cspread:.2f})")
    ax.set_ylabel(f"{rp}  (spread ×{rspread:.2f})")
    over = f"best over {', '.join(others)}" if others else "one config per cell"
    ax.set_title(f"{w.name} {key_label(w.key)}: median ms,\n{over}; red box = winner", fontsize=10)
    return fig
