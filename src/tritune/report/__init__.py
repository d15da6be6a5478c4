"""Reports on results: the end-of-command terminal table, and ``tritune report``'s HTML page and figures.

``render_table``/``print_table`` need only rich. ``build_report`` draws with matplotlib (the ``report``
extra), imported only when a report is built.
"""

from __future__ import annotations

from tritune.report.build import Figure, Report, Skipped, build_report
from tritune.report.data import influence, load_result
from tritune.report.tables import print_table, render_table

__all__ = [
    "Figure",
    "Report",
    "Skipped",
    "build_report",
    "influence",
    "load_result",
    "print_table",
    "render_table",
]
