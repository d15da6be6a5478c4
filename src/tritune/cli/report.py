"""``tritune report RESULT.json [--out DIR] [--open]``: an offline HTML page and PNG figures from a result."""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tritune.cli.common import output_path_problem
from tritune.errors import ReportInputError


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "report",
        help="write report.html and PNG figures from a verify/screen/tune/simulate result JSON",
        description=(
            "Write DIR/report.html (self-contained: figures embedded, readable offline) and each figure as "
            "a PNG, from any result JSON that tritune verify, screen, tune or simulate wrote (a simulate "
            "result gets a convergence figure). Needs matplotlib "
            "(pip install 'tritune[report]')."
        ),
    )
    p.add_argument(
        "result", metavar="RESULT.json", help="the JSON written by tritune verify/screen/tune/simulate --json"
    )
    p.add_argument(
        "--out", metavar="DIR", default=None, help="output folder (default: RESULT_report next to it)"
    )
    p.add_argument("--open", action="store_true", help="open the report in a web browser when it is written")


def not_drawn_lines(skipped: Sequence[Any]) -> list[str]:
    """One line per reason a figure was not drawn, naming every figure it kept out (with a count where one kind
    was left out for several keys), in the order the reasons first came: a result without timings keeps out
    four kinds of figure per key for one reason, said once."""
    kinds: dict[str, Counter[str]] = {}
    for s in skipped:
        kinds.setdefault(s.reason, Counter())[s.kind] += 1
    return [
        "not drawn: " + ", ".join(k if n == 1 else f"{k} ({n})" for k, n in counts.items()) + f": {reason}"
        for reason, counts in kinds.items()
    ]


def has_display() -> bool:
    """Whether a browser window can plausibly be shown (macOS and Windows always; elsewhere X or Wayland)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def open_in_browser(html: Path) -> str:
    """Open ``html`` with :mod:`webbrowser`; returns what happened, in a sentence for stderr."""
    if not has_display():
        return f"--open: no display here (DISPLAY/WAYLAND_DISPLAY unset); open {html} on a machine with a browser"
    if webbrowser.open(html.resolve().as_uri()):
        return f"opened {html} in a browser"
    return f"--open: no browser found; open {html} yourself"


def run(args: argparse.Namespace) -> int:
    from tritune.report.build import build_report
    from tritune.report.data import parse_result, read_json
    from tritune.report.simulate import build_simulate_report, is_simulate_result

    src = Path(args.result)
    out = Path(args.out) if args.out else src.with_name(src.stem + "_report")
    problem = output_path_problem("--out", str(out), directory=True)
    if problem is not None:
        print(f"tritune report: {problem}", file=sys.stderr)
        return 2
    try:
        data = read_json(src)
        if is_simulate_result(data):
            html, pngs = build_simulate_report(data, out, str(src))
            print(html)
            for png in pngs:
                print(png)
            if args.open:
                print(open_in_browser(html), file=sys.stderr)
            return 0
        report = build_report(parse_result(data, source=str(src)), out, source=str(src))
    except ReportInputError as e:
        print(f"tritune report: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        if e.name != "matplotlib":
            raise
        print(f"tritune report: {e}", file=sys.stderr)
        return 2
    print(report.html)
    for f in report.figures:
        print(f.path)
    for line in not_drawn_lines(report.skipped):
        print(line, file=sys.stderr)
    if args.open:
        print(open_in_browser(report.html), file=sys.stderr)
    return 0
