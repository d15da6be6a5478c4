"""The terminal table printed at the end of ``verify``, ``screen``, ``tune`` (and ``simulate``).

One rich table per workload and key, with the columns that command produces, and the reasons in full:
long reasons wrap inside their cell, they are never cut off.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable
from typing import IO, Any

from tritune.outcome import Status
from tritune.report.data import (
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
    workload_bytes,
    workload_flops,
)
from tritune.results import CandidateResult, RunResult, WorkloadResult

_STYLE = {
    Status.MEASURED: "green",
    Status.CORRECT: "green",
    Status.COMPARED: "cyan",
    Status.FITS: "green",
    Status.INCORRECT: "bold red",
    Status.ILLEGAL: "yellow",
    Status.ERROR: "red",
    Status.COMPILE_FAILED: "red",
    Status.COMPILE_TIMEOUT: "red",
    Status.LAUNCH_FAILED: "red",
    Status.NOT_TIMED: "dim",
}


def _fmt(x: Any, spec: str = ".3g") -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, float)):
        return format(x, spec)
    return str(x)


def _status_cell(c: CandidateResult) -> Any:
    from rich.text import Text

    return Text(c.status.value, style=_STYLE.get(c.status, ""))


Column = tuple[str, Callable[[CandidateResult, WorkloadResult], Any], dict[str, Any]]


def _columns(command: str, w: WorkloadResult) -> list[Column]:
    right = {"justify": "right", "overflow": "fold"}
    if command == "verify":
        letters = group_letters(w)
        vcols: list[Column] = []
        if w.extra.get("oracle") is False:
            vcols.append(("agrees with", lambda c, w: _agreement_cell(c, w), {"justify": "center"}))
        else:
            vcols.append(("max abs error", lambda c, w: _fmt(c.extra.get("max_abs_error"), ".3g"), right))
        vcols.append(("unwritten", lambda c, w: _fmt(c.extra.get("unwritten"), "d"), right))
        vcols.append(("bit group", lambda c, w: letters.get(c.config.id, "—"), {"justify": "center"}))
        return vcols
    if command == "screen":
        return [
            ("smem B", lambda c, w: _fmt(c.extra.get("shared"), "d"), right),
            ("regs", lambda c, w: _fmt(c.extra.get("registers"), "d"), right),
            ("spill B", lambda c, w: _fmt(c.extra.get("spilled_bytes"), "d"), right),
            ("threads", lambda c, w: _fmt(c.extra.get("threads"), "d"), right),
            ("blk/SM", lambda c, w: _fmt(c.extra.get("blocks_per_sm"), "d"), right),
            ("limiter", lambda c, w: _fmt(c.extra.get("limiter")), {}),
        ]
    cols: list[Column] = [
        ("median ms", lambda c, w: _fmt(t.median_ms, ".4g") if (t := timing_of(c)) else "—", right),
        (
            "CI ms",
            lambda c, w: f"[{t.ci_low_ms:.4g}, {t.ci_high_ms:.4g}]" if (t := timing_of(c)) else "—",
            right,
        ),
    ]
    if workload_bytes(w) is not None or any(c.extra.get("gbps") is not None for c in w.candidates):
        cols.append(("GB/s", lambda c, w: _fmt(gbps_of(c, w), ".4g"), right))
    if workload_flops(w) is not None or any(c.extra.get("tflops") is not None for c in w.candidates):
        cols.append(("TFLOP/s", lambda c, w: _fmt(tflops_of(c, w), ".4g"), right))
    return cols


def _agreement_cell(c: CandidateResult, w: WorkloadResult) -> str:
    g = c.extra.get("agreement_group")
    if g is None:
        return "—"
    return f"group {g} of {len(w.extra.get('agreement_groups') or ())}"


def _order(command: str, w: WorkloadResult) -> list[CandidateResult]:
    """Timed candidates fastest first, then the rest in their recorded order."""
    if command != "tune" and not any(timing_of(c) for c in w.candidates):
        return list(w.candidates)
    timed = sorted((c for c in w.candidates if timing_of(c)), key=lambda c: timing_of(c).median_ms)  # type: ignore[union-attr]
    return timed + [c for c in w.candidates if not timing_of(c)]


def _summary(command: str, w: WorkloadResult) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in w.counts().items())
    lines = [f"{len(w.candidates)} candidates: {counts}"]
    if command == "verify":
        if w.extra.get("oracle") is False:
            lines.append(agreement_sentence(w))
        lines.append(bitwise_sentence(w))
    if any(timing_of(c) for c in w.candidates) or "winner" in w.extra:
        win = winner(w)
        t = timing_of(win) if win is not None else None
        if win is None or t is None:
            lines.append("winner: none (no candidate was timed)")
        else:
            rate = [
                f"{v:.4g} {u}" for v, u in ((gbps_of(win, w), "GB/s"), (tflops_of(win, w), "TFLOP/s")) if v
            ]
            lines.append(
                f"winner: {win.config.id}  {t.median_ms:.4g} ms [CI {t.ci_low_ms:.4g}, {t.ci_high_ms:.4g}]"
                + (f"  {', '.join(rate)}" if rate else "")
            )
        ties = tie_ids(w)
        if ties:
            lines.append(f"tied with the winner (overlapping CI): {', '.join(ties)}")
        if (m := measure_sentence(w)) is not None:
            lines.append(m)
    searched = search_sentence(w)
    if searched is not None:
        lines.append(searched)
    return "\n".join(lines)


def workload_table(command: str, w: WorkloadResult, rows: list[CandidateResult] | None = None) -> Any:
    """The rich Table of one workload at one key (numbers only; :func:`print_table` adds the reasons); ``rows``:
    the candidates to show (default: every one, timed fastest first)."""
    from rich import box
    from rich.table import Table

    table = Table(title=f"{command}: {w.name} {key_label(w.key)}", box=box.SIMPLE_HEAD, pad_edge=False)
    win = winner(w) if command == "tune" or any(timing_of(c) for c in w.candidates) else None
    ties = set(tie_ids(w))
    if win is not None:
        table.add_column("", no_wrap=True, width=1)
    table.add_column("config", overflow="fold", min_width=12)
    table.add_column("status", no_wrap=True)
    cols = _columns(command, w)
    for name, _, kw in cols:
        table.add_column(name, **kw)
    for c in _order(command, w) if rows is None else rows:
        row: list[Any] = []
        if win is not None:
            row.append("★" if c.config == win.config else ("=" if c.config.id in ties else ""))
        row += [c.config.id.replace(",", ", "), _status_cell(c)]  # spaces let rich wrap at the commas
        row += [fn(c, w) for _, fn, _ in cols]
        table.add_row(*row)
    return table


def reason_lines(w: WorkloadResult, only: list[CandidateResult] | None = None) -> list[str]:
    """Every candidate (of ``only``, when given) that has a reason, in full: "<config id>: <status>: <reason>"."""
    return [f"{c.config.id}: {c.status.value}: {c.reason}" for c in (w.candidates if only is None else only)
            if c.reason]  # fmt: skip


def render_table(result: RunResult, *, width: int = 120, color: bool = False, max_rows: int | None = None) -> str:
    """The end-of-command table(s) as text: one table per workload and key, reasons in full. ``max_rows``: at
    most that many candidates per table (the timed ones fastest first, then the rest in order), with a count
    of the others by status and their most common reasons (a 6,912-config search space rendered whole took
    rich 18 s under cProfile on the H200's host, after a 2 s tune)."""
    from rich.console import Console

    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        color_system="standard" if color else None,
    )
    print_table(result, console=console, max_rows=max_rows)
    return buf.getvalue()


def print_table(result: RunResult, *, file: IO[str] | None = None, console: Any = None,
                max_rows: int | None = None) -> None:  # fmt: skip
    """Print the end-of-command table(s) to ``console``, or to ``file`` (default stdout) through rich
    (``max_rows`` as in :func:`render_table`)."""
    if console is None:
        from rich.console import Console

        console = Console(file=file if file is not None else sys.stdout, highlight=False)
    if result.timing:
        console.print(f"timing: {result.timing}", markup=False)
    for w in result.workloads:
        shown = _order(result.command, w)
        hidden = shown[max_rows:] if max_rows else []
        shown = shown[:max_rows] if max_rows else shown
        console.print(workload_table(result.command, w, shown))
        console.print(_summary(result.command, w), markup=False)
        reasons = reason_lines(w, shown if hidden else None)  # every reason, in the result's order, when all show
        if reasons:
            console.print("reasons:", markup=False)
            for line in reasons:
                console.print("  " + line, markup=False, overflow="fold")
        if hidden:
            console.print(_hidden_sentence(hidden), markup=False, overflow="fold")
        console.print()


def _hidden_sentence(hidden: list[CandidateResult]) -> str:
    """What the rows left out were: counts by status and the most common reasons (numbers stripped)."""
    from collections import Counter

    by_status = Counter(c.status.value for c in hidden)
    kinds = Counter(re.sub(r"\d+(\.\d+)?", "N", c.reason)[:100] for c in hidden if c.reason)
    lines = [f"{len(hidden)} more candidates not shown ({', '.join(f'{n} {s}' for s, n in by_status.items())}); "
             "--rows 0 shows every row, --json writes them all"]  # fmt: skip
    lines += [f"  {n} x {k}" for k, n in kinds.most_common(5)]
    return "\n".join(lines)
