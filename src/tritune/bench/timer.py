"""The timing interfaces: a :class:`Timer` times a callable; a :class:`ConfigMeasure` times a config.

Two shapes, because a replay has no callable to run:

* ``Timer.measure(fn, budget_s=..., ...) -> Measurement`` times a zero-argument callable (or a list of
  them, one per copy of the inputs, cycled in turn). :class:`~tritune.bench.event.EventTimer` is the GPU one.
* ``ConfigMeasure(config, budget_s) -> Measurement | Failure`` times one candidate config for about
  ``budget_s`` seconds. The race (:mod:`tritune.engine.race`) only knows this shape, so it runs unchanged on
  :meth:`ReplayTimer.measure_config <tritune.bench.replay.ReplayTimer.measure_config>` (CPU tests) and on
  :class:`TimerMeasure`, which turns a Timer plus "how to build the launch for a config" into one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union, runtime_checkable

from tritune.bench.stats import Measurement
from tritune.config import Config
from tritune.errors import TimingUnavailableError
from tritune.outcome import Status

#: What a Timer runs: one callable, or one per copy of the inputs (input rotation).
Runnable = Union[Callable[[], object], Sequence[Callable[[], object]]]  # noqa: UP007 (runtime alias, py3.10)


@dataclass(frozen=True)
class Failure:
    """A candidate that could not be timed: an explicit status and the reason in words, never ``inf``."""

    status: Status
    reason: str

    def __post_init__(self) -> None:
        if self.status.ok:
            raise ValueError(f"a Failure cannot have the success status {self.status.value!r}")

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status.value, "reason": self.reason}


@runtime_checkable
class Timer(Protocol):
    """Times a callable until the median's 95% interval is within ``rel_tol`` or ``budget_s`` is spent.

    ``budget_s`` bounds the sampling (warm-up comes on top, ``warmup_s``; ``None`` = the timer's own).
    ``to_json()`` gives the timer's settings, for the provenance of a result.
    """

    def measure(
        self,
        fn: Runnable,
        *,
        budget_s: float = 1.0,
        rel_tol: float = 0.01,
        min_samples: int = 10,
        max_samples: int = 100_000,
        warmup_s: float | None = None,
    ) -> Measurement: ...

    def to_json(self) -> dict[str, Any]: ...


class ConfigMeasure(Protocol):
    """Times one candidate for about ``budget_s`` seconds; a candidate that cannot run gives a Failure."""

    def __call__(self, config: Config, budget_s: float) -> Measurement | Failure: ...


@dataclass
class TimerMeasure:
    """A :class:`ConfigMeasure` from a Timer and ``make_fn(config)``, which builds the launch of a config.

    The launch is built once per config and kept. The first timing of a config warms up for
    ``warmup_s``; later ones (the race's re-timing rounds) for ``rewarm_s`` only, since the device is
    already busy and clocked up. An exception from building or running a launch becomes
    ``Failure(LAUNCH_FAILED, ...)``; ``TimingUnavailableError`` (no GPU at all) is not a candidate's fault
    and propagates.
    """

    timer: Timer
    make_fn: Callable[[Config], Runnable]
    rel_tol: float = 0.01
    min_samples: int = 5
    max_samples: int = 100_000
    warmup_s: float | None = None
    rewarm_s: float = 0.001
    _fns: dict[Config, Runnable] = field(default_factory=dict, repr=False)
    _failed: dict[Config, Failure] = field(default_factory=dict, repr=False)

    def __call__(self, config: Config, budget_s: float) -> Measurement | Failure:
        if config in self._failed:
            return self._failed[config]
        first = config not in self._fns
        try:
            if first:
                self._fns[config] = self.make_fn(config)
            return self.timer.measure(
                self._fns[config],
                budget_s=budget_s,
                rel_tol=self.rel_tol,
                min_samples=self.min_samples,
                max_samples=self.max_samples,
                warmup_s=self.warmup_s if first else self.rewarm_s,
            )
        except TimingUnavailableError:
            raise
        except Exception as e:
            failure = Failure(Status.LAUNCH_FAILED, f"{config.id}: {type(e).__name__}: {e}")
            self._failed[config] = failure
            return failure
