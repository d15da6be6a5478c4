"""Across keys: achieved throughput against the measured hardware ceiling, and the key sweep.

The ceiling is only ever the one the result records under ``ceilings`` (measured on the device by tritune);
when it is absent the figure says so instead of drawing a datasheet number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tritune.report.data import (
    Ceilings,
    gbps_of,
    key_label,
    tflops_of,
    timing_of,
    winner,
    workload_bytes,
    workload_flops,
)
from tritune.report.mpl import STATUS_COLORS, WINNER_COLOR, new_figure
from tritune.results import CandidateResult, WorkloadResult


def metrics_of(keys: Sequence[WorkloadResult]) -> list[tuple[str, str]]:
    """The throughput metrics these workloads give: ("gbps", "GB/s") and/or ("tflops", "TFLOP/s")."""
    out = []
    if any(workload_bytes(w) is not None or any(c.extra.get("gbps") for c in w.candidates) for w in keys):
        out.append(("gbps", "GB/s"))
    if any(workload_flops(w) is not None or any(c.extra.get("tflops") for c in w.candidates) for w in keys):
        out.append(("tflops", "TFLOP/s"))
    return out


def _achieved(metric: str, c: CandidateResult, w: WorkloadResult) -> float | None:
    return gbps_of(c, w) if metric == "gbps" else tflops_of(c, w)


def _ceiling(metric: str, ceilings: Ceilings | None) -> float | None:
    if ceilings is None:
        return None
    return ceilings.copy_gbps if metric == "gbps" else ceilings.matmul_tflops


def _ceiling_name(metric: str) -> str:
    return "copy bandwidth" if metric == "gbps" else "large cuBLAS matmul"


def _pct(value: float, ceil: float) -> str:
    pct = 100 * value / ceil
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.2g}%"


def _scale_y(ax: Any, values: Sequence[float], ceil: float | None) -> str:
    """Linear from 0, or log when the data sits far below the ceiling (it would be a flat line at 0)."""
    vals = [v for v in values if v and v > 0]
    top = max([*vals, ceil or 0.0]) or 1.0
    if ceil and vals and max(vals) < 0.1 * ceil:
        ax.set_yscale("log")
        ax.set_ylim(min(vals) / 2, ceil * 2.5)
        return " (log scale)"
    ax.set_ylim(0, top * 1.18)
    return ""


def _draw_ceiling(ax: Any, metric: str, unit: str, ceilings: Ceilings | None) -> None:
    ceil = _ceiling(metric, ceilings)
    if ceil is not None and ceilings is not None:
        ax.axhline(ceil, color="#c92a2a", ls="--", lw=1.5)
        ax.annotate(
            f"ceiling {ceil:.4g} {unit} ({_ceiling_name(metric)} measured on {ceilings.device})",
            (0.01, ceil),
            xycoords=("axes fraction", "data"),
            va="bottom",
            fontsize=8,
            color="#c92a2a",
        )
    else:
        ax.text(
            0.5,
            0.97,
            f"ceiling not measured: the result records no {_ceiling_name(metric)} ceiling",
            transform=ax.transAxes,
            ha="center",
            va="top",
            fontsize=9,
            color="#c92a2a",
            bbox={"facecolor": "white", "edgecolor": "#c92a2a"},
        )


def ceiling_figure(name: str, keys: Sequence[WorkloadResult], ceilings: Ceilings | None) -> Any:
    """Per key: every timed candidate's throughput (dots) and the winner's (bar), against the ceiling."""
    metrics = metrics_of(keys)
    fig = new_figure(max(7.0, 1.6 * len(keys) + 4), 4.2 * len(metrics))
    axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
    for ax, (metric, unit) in zip(axes, metrics, strict=True):
        seen: list[float] = []
        for i, w in enumerate(keys):
            vals = [v for c in w.candidates if timing_of(c) is not None and (v := _achieved(metric, c, w))]
            ax.scatter(
                [i] * len(vals),
                vals,
                s=10,
                color=STATUS_COLORS[next(iter(STATUS_COLORS))],
                alpha=0.5,
                label="timed candidates" if i == 0 else None,
                zorder=3,
            )
            win = winner(w)
            wv = _achieved(metric, win, w) if win is not None else None
            if wv is not None:
                ax.bar(i, wv, width=0.6, color=WINNER_COLOR, alpha=0.8, label="winner" if i == 0 else None)
                ceil = _ceiling(metric, ceilings)
                pct = f" ({_pct(wv, ceil)} of ceiling)" if ceil else ""
                ax.text(i, wv, f"{wv:.4g}{pct}", ha="center", va="bottom", fontsize=8)
            seen += [*vals, wv or 0.0]
        ceil = _ceiling(metric, ceilings)
        scale = _scale_y(ax, seen, ceil)
        _draw_ceiling(ax, metric, unit, ceilings)
        ax.set_xticks(range(len(keys)), [key_label(w.key) for w in keys], fontsize=8)
        ax.set_ylabel(f"achieved {unit}{scale}")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
        against = "against the measured ceiling" if ceil is not None else "(no ceiling measured)"
        ax.set_title(f"{name}: achieved {unit} {against}", fontsize=10)
    return fig


def _x_of(keys: Sequence[WorkloadResult]) -> tuple[list[float], str, bool]:
    """x positions: the key's single numeric field when it has one (log scale if it spans 10x), else 0..n-1."""
    fields = [list(w.key.items()) for w in keys]
    if all(
        len(f) == 1 and isinstance(f[0][1], (int, float)) and not isinstance(f[0][1], bool) for f in fields
    ):
        if len({f[0][0] for f in fields}) == 1:
            xs = [float(f[0][1]) for f in fields]
            return xs, fields[0][0][0], min(xs) > 0 and max(xs) / min(xs) >= 10
    return [float(i) for i in range(len(keys))], "key", False


def sweep_figure(name: str, keys: Sequence[WorkloadResult], ceilings: Ceilings | None) -> Any:
    """The winner's time (with its CI) and achieved throughput against the key, winner named at each point."""
    pts = [(w, win, t) for w in keys if (win := winner(w)) is not None and (t := timing_of(win)) is not None]
    metrics = metrics_of([w for w, _, _ in pts])
    xs, xlabel, logx = _x_of([w for w, _, _ in pts])
    fig = new_figure(11, 3.8 * (1 + len(metrics)) + 0.4)
    axes = fig.subplots(1 + len(metrics), 1, squeeze=False, sharex=True)[:, 0]
    ax = axes[0]
    meds = [t.median_ms for _, _, t in pts]
    err = [[t.median_ms - t.ci_low_ms for _, _, t in pts], [t.ci_high_ms - t.median_ms for _, _, t in pts]]
    ax.errorbar(xs, meds, yerr=err, marker="o", color=WINNER_COLOR, capsize=3)
    if logx:
        ax.set_yscale("log")
    ax.margins(y=0.3)
    ax.set_ylabel("winner median time (ms)")
    ax.set_title(f"{name}: the winner at each key (whisker = confidence interval)", fontsize=10)
    for x, m, (_, win, _) in zip(xs, meds, pts, strict=True):
        ax.annotate(
            win.config.id.replace(",", ",\n"),
            (x, m),
            textcoords="offset points",
            xytext=(6, 6),
            fontsize=7,
            color="#1b4332",
        )
    for ax2, (metric, unit) in zip(axes[1:], metrics, strict=True):
        vals = [_achieved(metric, win, w) for w, win, _ in pts]
        ax2.plot(
            [x for x, v in zip(xs, vals, strict=True) if v],
            [v for v in vals if v],
            marker="s",
            color="#4e79a7",
        )
        for x, v in zip(xs, vals, strict=True):
            if v:
                ax2.annotate(
                    f"{v:.4g}", (x, v), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8
                )
        scale = _scale_y(ax2, [v for v in vals if v], _ceiling(metric, ceilings))
        _draw_ceiling(ax2, metric, unit, ceilings)
        ax2.set_ylabel(f"winner {unit}{scale}")
        ax2.grid(alpha=0.3)
    for a in axes:
        if logx:
            a.set_xscale("log", base=2)
        a.grid(alpha=0.3)
    axes[-1].set_xlabel(xlabel)
    if xlabel == "key":
        axes[-1].set_xticks(xs, [key_label(w.key) for w, _, _ in pts], fontsize=8)
    else:
        axes[-1].set_xticks(xs, [str(int(x)) if x.is_integer() else f"{x:g}" for x in xs], fontsize=8)
        axes[-1].minorticks_off()
    xmin, xmax = min(xs), max(xs)
    if logx:
        axes[-1].set_xlim(xmin / 1.6, xmax * 3.5)  # room for the winner labels on the right
    else:
        pad = max(0.5, (xmax - xmin) * 0.15)
        axes[-1].set_xlim(xmin - pad, xmax + 2 * pad)
    return fig
