"""The ask/tell interface every search strategy implements, and the values it trades in.

A strategy proposes configs with :meth:`Strategy.ask` and learns their outcome with :meth:`Strategy.tell`.
It works over the legal configs of a :class:`~tritune.space.Space` (constraints applied) minus the
configs screening already found illegal, and the base class guarantees what every strategy owes its
caller: it never proposes a config twice, never proposes one outside that legal set, and is
deterministic for a fixed seed. A failure (``compile_failed``, ``incorrect``, ...) is told as a
:class:`~tritune.outcome.Status` with no time; it is remembered and never reported as best.

Subclasses implement only :meth:`Strategy._propose` (and optionally :meth:`Strategy._observe`)::

    class FirstLegal(Strategy):
        name = "first"

        def _propose(self, n):
            return [self.candidates[i] for i in self.unasked()[:n]]
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from tritune.config import Config, as_config
from tritune.errors import NoLegalConfigError, SearchError
from tritune.outcome import Status
from tritune.search.budget import Budget
from tritune.space import Space

__all__ = ["Budget", "Observation", "SearchStrategy", "Strategy", "check_told"]


@dataclass(frozen=True)
class Observation:
    """One evaluated config: its status and, only when it was measured, its time in milliseconds."""

    config: Config
    status: Status
    time_ms: float | None

    @property
    def ok(self) -> bool:
        """True when the config was measured and has a time."""
        return self.status is Status.MEASURED and self.time_ms is not None


@runtime_checkable
class SearchStrategy(Protocol):
    """What :func:`~tritune.search.run_search` needs; a user's own object may implement just this."""

    def ask(self, n: int = 1) -> list[Config]: ...

    def tell(self, config: Config, status: Status, time_ms: float | None = None) -> None: ...

    def best(self) -> Observation | None: ...

    def done(self) -> bool: ...


def check_told(config: Config, status: Any, time_ms: Any) -> Observation:
    """Validate one reported outcome: a measured config has a positive finite time, a failure has none."""
    try:
        status = Status(status)
    except ValueError:
        raise SearchError(
            f"{config.id}: status {status!r} is not a tritune Status ({', '.join(s.value for s in Status)})"
        ) from None
    if status is Status.MEASURED:
        if time_ms is None or isinstance(time_ms, bool):
            raise SearchError(
                f"{config.id}: told 'measured' without a time; pass time_ms or a failure status"
            )
        t = float(time_ms)
        if not (t > 0 and math.isfinite(t)):
            raise SearchError(
                f"{config.id}: time_ms={time_ms!r} is not a positive finite time; tell a failure as a Status "
                "(compile_failed, launch_failed, incorrect, ...) with time_ms=None, never as inf"
            )
        return Observation(config, status, t)
    if time_ms is not None:
        raise SearchError(
            f"{config.id}: told status {status.value!r} with time_ms={time_ms!r}; only 'measured' carries a "
            "time. Tell a failure with time_ms=None"
        )
    return Observation(config, status, None)


def _checked_ci(obs: Observation, ci: tuple[float, float]) -> tuple[float, float]:
    """A told interval, validated against its observation: ``0 < low <= time_ms <= high``."""
    try:
        lo, hi = (float(v) for v in ci)
    except (TypeError, ValueError):
        raise SearchError(f"{obs.config.id}: ci={ci!r} must be a pair (low_ms, high_ms)") from None
    if not obs.ok or obs.time_ms is None:
        raise SearchError(f"{obs.config.id}: a failure ({obs.status.value}) has no confidence interval")
    if not (0 < lo <= obs.time_ms <= hi and math.isfinite(hi)):
        raise SearchError(
            f"{obs.config.id}: ci=({lo!r}, {hi!r}) must satisfy 0 < low <= time_ms={obs.time_ms!r} <= high"
        )
    return lo, hi


def quantile(values: np.ndarray, q: float) -> float:
    """``np.quantile(values, q)`` of a 1-d array (its default, linear method), the same float, without its first
    call's import of ``numpy.ma`` (through ``np.unique``; ``np.median``'s goes through its NaN check): 0.017 s of a
    transfer's start on this project's CPU, which takes a quantile per tuned key and a median before its first
    batch. Arrays with NaN go to ``np.quantile``."""
    a = np.sort(np.asarray(values, dtype=float))
    n = len(a)
    if n == 0 or np.isnan(a[-1]) or not 0.0 <= q <= 1.0:
        return float(np.quantile(values, q))
    v = (n - 1) * q
    lo = min(max(math.floor(v), 0), n - 1)
    hi = min(lo + 1, n - 1)
    t = v - lo
    x, y = float(a[lo]), float(a[hi])
    d = y - x
    return y - d * (1 - t) if t >= 0.5 else x + d * t  # numpy's _lerp, both branches


def median(values: Any) -> float:
    """``np.median(values)`` of a 1-d array, the same float (the middle value, or the mean of the two middle
    ones), without its first call's import of ``numpy.ma`` (:func:`quantile`). Arrays with NaN go to ``np.median``."""
    a = np.sort(np.asarray(values, dtype=float))
    n = len(a)
    if n == 0 or np.isnan(a[-1]):
        return float(np.median(values))
    if n % 2:
        return float(a[n // 2])
    return (float(a[n // 2 - 1]) + float(a[n // 2])) / 2

class Strategy(ABC):
    """Base class of tritune's strategies: bookkeeping, deduplication and legality live here.

    ``space`` gives the legal configs (``space.configs()``); ``illegal`` removes configs that screening
    rejected. ``candidates`` is that legal set in the space's stable order; strategies choose among
    ``unasked()`` indices and use ``self.rng`` (seeded) for every random choice.
    """

    name: ClassVar[str] = "strategy"

    def __init__(self, space: Space, *, seed: int = 0, illegal: Iterable[Any] = ()) -> None:
        if not isinstance(space, Space):
            raise SearchError(f"a strategy searches a tritune.Space, got {type(space).__name__}")
        bad = {as_config(c) for c in illegal}
        self.space = space
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        legal = space.configs()
        self.candidates: tuple[Config, ...] = tuple(c for c in legal if c not in bad) if bad else tuple(legal)
        if not self.candidates:
            raise NoLegalConfigError(
                f"{space!r} has no legal config left to search ({len(bad)} screened out); widen the space"
            )
        self.index: dict[Config, int] = {c: i for i, c in enumerate(self.candidates)}
        self.history: list[Observation] = []
        self._asked = np.zeros(len(self.candidates), dtype=bool)
        self._pending: set[int] = set()
        self._best: Observation | None = None
        self._ci: dict[int, tuple[float, float]] = {}
        self._repeats: dict[int, list[float]] = {}  # log times of every draw of re-measured configs

    # -- the interface ---------------------------------------------------------------------------
    def ask(self, n: int = 1) -> list[Config]:
        """Up to ``n`` legal configs never asked before; fewer (or none) once the space runs out."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise SearchError(f"{self.name}.ask(n={n!r}): n must be a positive integer")
        n = min(n, int((~self._asked).sum()))
        if n == 0 or self.done():
            return []
        proposed = list(self._propose(n))
        out: list[Config] = []
        for c in proposed[:n]:
            i = self.index.get(c)
            if i is None:
                raise SearchError(f"strategy {self.name!r} proposed {c.id}, which is not a legal candidate")
            if self._asked[i]:
                raise SearchError(f"strategy {self.name!r} proposed {c.id} twice")
            self._asked[i] = True
            self._pending.add(i)
            out.append(c)
        return out

    def tell(
        self,
        config: Config,
        status: Status,
        time_ms: float | None = None,
        *,
        ci: tuple[float, float] | None = None,
    ) -> None:
        """Report the outcome of an asked config: ``Status.MEASURED`` with its time, or a failure status.

        ``ci`` is the measurement's confidence interval of the time, ``(low_ms, high_ms)`` (a
        :class:`~tritune.bench.stats.Measurement`'s ``ci_low_ms, ci_high_ms``). Strategies treat configs
        whose intervals overlap as ties (:meth:`ties`, :attr:`noise`) rather than chase the noise.
        """
        config = as_config(config)
        i = self.index.get(config)
        if i is None or i not in self._pending:
            why = "was already told" if i is not None and self._asked[i] else "was never asked"
            raise SearchError(
                f"{self.name}.tell({config.id}): this config {why}; tell each asked config once"
            )
        obs = check_told(config, status, time_ms)
        if ci is not None:
            self._record_ci(i, obs, ci)
        self._pending.discard(i)
        self._record(i, obs)

    def preload(
        self,
        config: Config,
        status: Status,
        time_ms: float | None = None,
        *,
        ci: tuple[float, float] | None = None,
    ) -> bool:
        """Teach an outcome measured before this search (a stored result) without it being asked.

        The config is marked asked, so it is never proposed, and it counts as told. Returns False (and
        does nothing) for a config outside the candidates or already known: a stored result for a
        config the space no longer has is not an error.
        """
        config = as_config(config)
        i = self.index.get(config)
        if i is None or self._asked[i]:
            return False
        obs = check_told(config, status, time_ms)
        if ci is not None:
            self._record_ci(i, obs, ci)
        self._asked[i] = True
        self._record(i, obs)
        return True

    def _record_ci(self, i: int, obs: Observation, ci: tuple[float, float]) -> None:
        self._ci[i] = _checked_ci(obs, ci)

    def retell(self, config: Config, time_ms: float, *, ci: tuple[float, float] | None = None) -> None:
        """Report a repeat measurement of a config already told measured (a race re-timing its finalists).

        The config's time becomes the geometric mean of every draw, and its interval (if intervals were
        told) narrows by the square root of the number of draws; :meth:`best`, :meth:`ties` and the
        strategy's model (its :meth:`_reobserve` hook, by default ``_observe`` again with the pooled
        observation) use the pooled value. A repeat is not a new evaluation: :attr:`evaluations` does not change.
        """
        config = as_config(config)
        i = self.index.get(config)
        first = next((o for o in self.history if o.config == config), None)
        if i is None or first is None or not first.ok or first.time_ms is None:
            raise SearchError(
                f"{self.name}.retell({config.id}): only a config already told 'measured' can be re-measured"
            )
        again = check_told(config, Status.MEASURED, time_ms)
        assert again.time_ms is not None
        if ci is not None:
            checked = _checked_ci(again, ci)
            self._ci.setdefault(i, checked)  # a config keeps its first draw's width; pooling narrows it
        draws = self._repeats.setdefault(i, [math.log(first.time_ms)])
        draws.append(math.log(again.time_ms))
        pooled = Observation(config, Status.MEASURED, math.exp(sum(draws) / len(draws)))
        self.history = [pooled if o.config == config else o for o in self.history]
        self._best = min(
            (o for o in self.history if o.ok and o.time_ms is not None),
            key=lambda o: o.time_ms,  # type: ignore[arg-type, return-value]
            default=None,
        )
        self._reobserve(i, pooled)

    def draws(self, config: Config) -> int:
        """How many measurements a config's time pools (0 if never measured)."""
        i = self.index.get(as_config(config))
        if i is None:
            return 0
        if i in self._repeats:
            return len(self._repeats[i])
        return int(any(o.config == self.candidates[i] and o.ok for o in self.history))

    def contenders(self, limit: int) -> list[Config]:
        """Up to ``limit`` measured configs worth re-measuring before the final pick: the best and its ties.

        A config is a contender when its interval reaches below the best's upper bound (intervals
        overlap), fastest first, fewest draws first among equal times. With no interval told nothing
        is uncertain and only the best is returned: re-measuring would change nothing.
        """
        best = self._best
        if best is None or best.time_ms is None or limit < 1:
            return []
        bhi = self.interval(best)[1]
        out = []
        for obs in sorted((o for o in self.history if o.ok), key=lambda o: o.time_ms or 0.0):
            if obs is best or self.interval(obs)[0] <= bhi:
                out.append(obs.config)
        return out[:limit]

    def interval(self, obs: Observation) -> tuple[float, float]:
        """The confidence interval of a measured observation's (pooled) time: the told interval's
        relative half-width, narrowed by the square root of the draws it pools; a point without one."""
        t = obs.time_ms
        if t is None:
            raise SearchError(f"{obs.config.id}: a failure ({obs.status.value}) has no interval")
        i = self.index[obs.config]
        ci = self._ci.get(i)
        if ci is None:
            return t, t
        half = math.log(ci[1] / ci[0]) / 2.0 / math.sqrt(len(self._repeats.get(i, (0,))))
        return t * math.exp(-half), t * math.exp(half)

    @property
    def noise(self) -> float:
        """The relative half-width of a typical measurement's interval: the median over told intervals (0 if none)."""
        if not self._ci:
            return 0.0
        widths = [math.log(hi / lo) / 2.0 for lo, hi in self._ci.values()]
        return median(widths)

    def ties(self) -> list[Observation]:
        """Measured observations tied with the best: their time lies inside the best's interval.

        (Stricter than overlapping intervals, which would tie configs up to two half-widths apart.)
        Without intervals, a config ties only with an identical time. The best comes first.
        """
        best = self._best
        if best is None or best.time_ms is None:
            return []
        _, bhi = self.interval(best)
        out = [best]
        for obs in self.history:
            if obs is best or not obs.ok or obs.time_ms is None:
                continue
            if obs.time_ms <= bhi:
                out.append(obs)
        return out

    def _record(self, i: int, obs: Observation) -> None:
        self.history.append(obs)
        if obs.ok and (self._best is None or obs.time_ms < self._best.time_ms):  # type: ignore[operator]
            self._best = obs
        self._observe(i, obs)

    def best(self) -> Observation | None:
        """The fastest measured observation so far; ``None`` while nothing has been measured."""
        return self._best

    def done(self) -> bool:
        """True when the strategy has nothing left to propose."""
        return bool(self._asked.all()) or self._finished()

    # -- helpers for subclasses ------------------------------------------------------------------
    def unasked(self) -> list[int]:
        """Indices into ``candidates`` of configs not asked yet, in stable order."""
        return [int(i) for i in np.flatnonzero(~self._asked)]

    def is_asked(self, i: int) -> bool:
        return bool(self._asked[i])

    def mark_asked(self, config: Config) -> None:
        """Mark a legal, unasked config as asked by the caller (warm starts); it must be told later."""
        config = as_config(config)
        i = self.index.get(config)
        if i is None or self._asked[i]:
            raise SearchError(f"{self.name}: {config.id} is not an unasked legal candidate")
        self._asked[i] = True
        self._pending.add(i)

    @property
    def evaluations(self) -> int:
        """How many outcomes have been told."""
        return len(self.history)

    def random_unasked(self, n: int) -> list[int]:
        """``n`` distinct unasked indices drawn with the seeded generator."""
        free = np.flatnonzero(~self._asked)
        pick = self.rng.choice(free, size=min(n, len(free)), replace=False)
        return [int(i) for i in pick]

    @abstractmethod
    def _propose(self, n: int) -> Sequence[Config]:
        """Return ``n`` distinct, unasked candidates (``1 <= n <=`` the number left)."""

    def _observe(self, index: int, obs: Observation) -> None:  # noqa: B027 - optional hook
        """Called after each told outcome; ``index`` is the config's index in ``candidates``."""

    def _reobserve(self, index: int, obs: Observation) -> None:
        """Called after :meth:`retell` with the pooled observation; by default the ``_observe`` hook again,
        which suits a hook that records each config's latest time. Override where a second call would
        count the config twice."""
        self._observe(index, obs)

    def confirmed(self) -> bool:
        """Whether what was measured confirms the search's starting point, so that it may stop before its
        budget (the transfer's first batch, :meth:`tritune.search.TransferSearch.confirmed`); False here."""
        return False

    def confirmed_by(self, looks: Mapping[Config, tuple[float, tuple[float, float] | None]]) -> bool:
        """Whether one race of a few configs (``looks``: config -> (time_ms, interval or None), all timed together)
        confirms the search's starting point: the tuner's check race (:meth:`SearchDriver.check_field`). False here."""
        return False

    def confirming(self) -> frozenset[Config]:
        """The configs whose tie with the best would make :meth:`confirmed` true (the transfer's leaders): the
        tuning driver races them again with the best when a first look did not confirm them
        (:meth:`~tritune.search.SearchDriver.check_field`). None here."""
        return frozenset()

    def _finished(self) -> bool:
        """Override to stop before the space is exhausted (the base stops only when it is)."""
        return False

    def wants_finals(self) -> bool:
        """Whether :meth:`finals` may ask for configs: the tuning driver holds back a reserve of the budget
        for them only then (:class:`~tritune.search.SearchDriver`). The base wants none."""
        return False

    def finals(self, reserve: int) -> int:
        """Called once before the finalists' race with its ``reserve`` of evaluations (``tritune simulate``'s
        race, and the tuning driver once the rest of the budget is spent); returns how many of them the
        strategy wants to ask (its next asks) before the ties are re-measured. The base wants none."""
        return 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed}, {len(self.candidates)} candidates, {self.evaluations} told)"
