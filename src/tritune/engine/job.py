"""One tuning job: what the decorator, ``tritune tune`` and each rank of a farm configure, and run one way.

A :class:`TuningJob` holds the candidates of one key and the four parts that differ between callers:
``prepare`` (load one compiled config and check it), ``measure`` (time it), ``compiler`` (start the
compiles of a list of configs on the worker service) and ``farm`` (spread the work over the ranks of a
group). :meth:`TuningJob.run` races them, the race starting while the last compiles finish
(:func:`tritune.engine.pipeline.compile_and_race`); farmed, each rank runs :meth:`TuningJob.run_share`
on its share.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from tritune.bench.timer import ConfigMeasure, TimerMeasure
from tritune.config import Config
from tritune.engine.pipeline import Compiles, LazyMeasure, Prepared, compile_and_race
from tritune.engine.race import RaceOptions, RaceResult
from tritune.engine.sticky import StickyGuard

#: Starts compiling a list of configs (:class:`tritune.engine.precompile.Precompiler`).
Compiler = Callable[[Sequence[Config]], Compiles]


class Farm(Protocol):
    """Spreads a job over the ranks of a group (:class:`tritune.dist.Farm`): collective, every rank calls it."""

    def race(self, job: TuningJob) -> RaceResult: ...


@dataclass(frozen=True)
class TuningJob:
    """Tune ``candidates`` (one key): module docstring. ``stats`` receives the phases' times."""

    label: str
    candidates: tuple[Config, ...]
    prepare: Callable[[Config], Prepared]
    measure: ConfigMeasure
    race: RaceOptions
    compiler: Compiler | None = None
    farm: Farm | None = None
    method: str = "race"
    retime_finalists: bool = True
    stats: dict[str, Any] = field(default_factory=dict)
    #: A measure in a fresh process, for the candidates left after a sticky CUDA error (:mod:`.sticky`).
    recover: Callable[[], ConfigMeasure] | None = None
    #: Whether this process's CUDA context is lost, for launch errors that do not say so themselves.
    probe: Callable[[], str | None] | None = None

    def run(self) -> RaceResult | None:
        """The race over every candidate (None when there are none); farmed when the job has a ``farm``.

        A sticky CUDA error costs its candidate only: ``prepare`` and ``measure`` run behind a StickyGuard.
        """
        if not self.candidates:
            return None
        guard = StickyGuard(self.prepare, self.measure, self.recover, self.probe)
        guarded = replace(self, prepare=guard.prepare, measure=guard.measure, recover=None)
        if self.farm is not None:
            return self.farm.race(guarded)
        return guarded.run_share(list(self.candidates))

    def run_share(self, share: list[Config]) -> RaceResult:
        """Compile ``share`` and race it as the compiles finish (one rank's share, or every candidate)."""
        compiling = self.compiler(share) if self.compiler is not None and share else None
        return compile_and_race(share, prepare=self.prepare, measure=self.measure, options=self.race,
                                compiling=compiling, method=self.method, stats=self.stats)  # fmt: skip


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
