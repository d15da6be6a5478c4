"""Timing: the :class:`Measurement` value and its statistics, the Timer interfaces, the GPU event timer,
the measurement policies (cold, warm, graph), tie reports, the replay timer, and synthetic landscapes
for CPU tests.

``tritune.bench`` is also callable: ``tritune.bench(fn, ...)`` is :func:`tritune.bench.event.bench`,
so the package and the function share one public name without one hiding the other.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from tritune.bench.stats import (
    Measurement,
    clearly_slower,
    median_ci,
    median_ci_ranks,
    overlaps,
    relative_halfwidth,
    within,
)
from tritune.bench.timer import ConfigMeasure, Failure, Runnable, Timer, TimerMeasure
from tritune.lazy import lazy_names
from tritune.measure import DEFAULT_POLICY, MeasurePolicy, launches_per_sample, resolve_policy

if TYPE_CHECKING:
    from tritune.bench.event import EventTimer, bench, l2_cache_bytes
    from tritune.bench.replay import GpuDrift, ReplayTimer
    from tritune.bench.synthetic import synthetic_landscape
    from tritune.bench.ties import TIE_RULE, TieCandidate, TieReport, break_tie, race_tie_report, tie_report

#: Names loaded at their first use (the GPU timer, replay, ties and synthetic landscapes are not needed to import
#: tritune or to serve a cached call): name -> (module, attribute).
_LAZY = {
    **{n: ("tritune.bench.event", n) for n in ("EventTimer", "bench", "l2_cache_bytes")},
    **{n: ("tritune.bench.replay", n) for n in ("GpuDrift", "ReplayTimer")},
    "synthetic_landscape": ("tritune.bench.synthetic", "synthetic_landscape"),
    **{n: ("tritune.bench.ties", n)
       for n in ("TIE_RULE", "TieCandidate", "TieReport", "break_tie", "race_tie_report", "tie_report")},
}
__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "DEFAULT_POLICY",
    "TIE_RULE",
    "ConfigMeasure",
    "EventTimer",
    "Failure",
    "GpuDrift",
    "MeasurePolicy",
    "Measurement",
    "ReplayTimer",
    "Runnable",
    "TieCandidate",
    "TieReport",
    "Timer",
    "TimerMeasure",
    "bench",
    "break_tie",
    "clearly_slower",
    "l2_cache_bytes",
    "launches_per_sample",
    "median_ci",
    "median_ci_ranks",
    "overlaps",
    "race_tie_report",
    "relative_halfwidth",
    "resolve_policy",
    "synthetic_landscape",
    "tie_report",
    "within",
]


class _CallableModule(types.ModuleType):
    """This package, made callable as :func:`bench`."""

    def __call__(self, fn: Any, **kwargs: Any) -> Measurement:
        from tritune.bench.event import bench

        return bench(fn, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
