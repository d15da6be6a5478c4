"""The race's measure from a timer: built at the first timing, the GPU warmed once per burst of tuning.

:func:`timer_measure` wraps a timer (a GPU event timer, or a replay timer in tests) into the
:class:`~tritune.bench.timer.ConfigMeasure` the race calls, built lazily (:class:`~tritune.engine.pipeline.LazyMeasure`)
so that no timer is set up, nor the GPU warmed, for a key whose candidates all fail before timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tritune.bench.timer import ConfigMeasure, TimerMeasure
from tritune.config import Config
from tritune.engine.pipeline import LazyMeasure


def timer_measure(timer: Any, make_fn: Callable[[Config], Callable[[], object]], rel_tol: float,
                  default_timer: Callable[[], Any] | None = None) -> LazyMeasure:  # fmt: skip
    """The race's measure from ``timer`` (None: ``default_timer()``), built at the first timing, so none is
    built (nor the GPU warmed) for a job whose candidates all fail before timing.

    A replay timer (tests: it has ``measure_config``) replays its timings and launches nothing; a GPU timer
    warms the device once, so each candidate needs only a short warm-up, and times ``make_fn(config)()``. Built
    ahead (:meth:`LazyMeasure.start`), the first timing warms again if the GPU idled over :data:`WARM_FOR_S`
    since (a search's first batch compiling from an empty cache).
    """

    def make() -> ConfigMeasure:
        t = timer if timer is not None or default_timer is None else default_timer()
        replay = getattr(t, "measure_config", None)
        if replay is not None:
            return replay  # type: ignore[no-any-return]
        warm_if_idle(t)
        timed = TimerMeasure(t, make_fn, rel_tol=rel_tol, warmup_s=0.002)
        first = [True]

        def measure(config: Config, budget_s: float) -> Any:
            if first[0]:  # built ahead (LazyMeasure.start) over a second before the first timing: warm again
                first[0] = False
                warm_if_idle(t)
            try:
                return timed(config, budget_s)
            finally:
                note_gpu_busy()

        return measure

    return LazyMeasure(make)


#: After tritune last timed on the GPU, its clocks count as ramped up for this long: a tuning that starts
#: within it skips the 50 ms warm-up (a library op's many small tunings in a row paid it once per key).
WARM_FOR_S = 1.0
_last_busy = [float("-inf")]


def note_gpu_busy() -> None:
    """Record that tritune just kept the GPU busy (a timing ended now)."""
    _last_busy[0] = time.monotonic()


def warm_if_idle(timer: Any, seconds: float = 0.05) -> bool:
    """``timer.warm_device(seconds)`` unless tritune timed on the GPU within :data:`WARM_FOR_S`; True if it warmed."""
    idle = time.monotonic() - _last_busy[0] > WARM_FOR_S
    if idle:
        timer.warm_device(seconds)
    note_gpu_busy()
    return idle
