"""``run_search``: the loop that drives any strategy against any evaluator within a budget.

The evaluator is a plain callable ``config -> (Status, time_ms | None)``: real GPU timing, a replay of a
recorded landscape, or a test fake. The loop owns the budget; the strategy owns what to try next.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tritune.config import Config, as_config
from tritune.errors import SearchError
from tritune.outcome import Status
from tritune.search.base import Budget, Observation, SearchStrategy, Strategy, check_told

#: What an evaluator returns for one config.
Evaluate = Callable[
    [Config], "tuple[Status, float | None] | tuple[Status, float | None, tuple[float, float] | None]"
]


@dataclass(frozen=True)
class SearchResult:
    """What a search found: the best measured observation, every observation in order, and why it stopped.

    ``stopped`` is ``"budget"`` (a limit was reached) or ``"exhausted"`` (the strategy had nothing left).
    """

    best: Observation | None
    history: tuple[Observation, ...]
    stopped: str
    elapsed_s: float

    @property
    def evaluations(self) -> int:
        return len(self.history)


def run_search(
    strategy: SearchStrategy,
    evaluate: Evaluate,
    budget: Budget,
    *,
    batch: int = 1,
    clock: Callable[[], float] = time.monotonic,
    on_result: Callable[[Observation], Any] | None = None,
) -> SearchResult:
    """Ask, evaluate and tell until the budget is spent or the strategy is done.

    ``batch`` configs are asked at a time (a time budget may then be overrun by at most one batch).
    ``on_result`` sees each observation as it arrives (for progress bars). A strategy that proposes a
    config twice is a bug and raises :class:`~tritune.errors.SearchError`.
    """
    if not isinstance(strategy, SearchStrategy):
        raise SearchError(
            f"{type(strategy).__name__} is not a search strategy: it needs ask(n), tell(config, status, "
            "time_ms), best() and done()"
        )
    if not isinstance(budget, Budget):
        raise SearchError(f"budget must be a tritune.search.Budget, got {type(budget).__name__}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise SearchError(f"batch={batch!r} must be a positive integer")
    if budget.share is not None:
        candidates = getattr(strategy, "candidates", None)
        if candidates is None:
            raise SearchError(f"budget '{budget}' is a fraction of a space this strategy does not expose")
        budget = budget.resolve(len(candidates))
    start = clock()
    history: list[Observation] = []
    seen: set[Config] = set()
    stopped = "exhausted"
    while True:
        if budget.exhausted(len(history), clock() - start):
            stopped = "budget"
            break
        if strategy.done():
            break
        left = budget.remaining(len(history))
        configs = strategy.ask(batch if left is None else min(batch, left))
        if not configs:
            break
        for config in configs:
            if config in seen:
                raise SearchError(f"strategy {type(strategy).__name__} proposed {config.id} twice")
            seen.add(config)
            outcome = evaluate(config)
            if not isinstance(outcome, tuple) or len(outcome) not in (2, 3):
                raise SearchError(
                    f"evaluate({config.id}) returned {outcome!r}; it must return (Status, time_ms or None) "
                    "or (Status, time_ms, (ci_low_ms, ci_high_ms))"
                )
            obs = check_told(config, outcome[0], outcome[1])
            if len(outcome) == 3 and outcome[2] is not None and isinstance(strategy, Strategy):
                strategy.tell(config, obs.status, obs.time_ms, ci=outcome[2])
            else:
                strategy.tell(config, obs.status, obs.time_ms)
            history.append(obs)
            if on_result is not None:
                on_result(obs)
    best = strategy.best()
    if best is not None and not best.ok:
        raise SearchError(
            f"strategy {type(strategy).__name__} reported a failed config {best.config.id} as best"
        )
    return SearchResult(best, tuple(history), stopped, clock() - start)


#: Why a :class:`SearchDriver` stopped.
STOP_REASONS = ("budget", "time", "exhausted", "confirmed")

#: The share of an evaluation budget kept back for the finalists (the simulator's race under noise, and the
#: driver's reserve for a strategy's :meth:`~tritune.search.Strategy.finals`).
CONFIRM = 0.15


#: The fewest batch rounds of a search with a budget given (``--budget``): a budget that allows fewer rounds
#: at the pool's width asks batches of ``ceil(budget / ROUNDS)`` instead (:func:`batch_width`), so a small budget
#: keeps its adaptivity. Chosen on recorded landscapes (``benchmarks/search_eval.py --rounds``, 25% of
#: 80-216-config spaces at width 16: 2-3 rounds of 16 are worse than random on 8 of 38 held-out rows, 16 rounds
#: on none).
ROUNDS = 16


def finals_reserve(evaluations: int | None, share: float = CONFIRM) -> int:
    """How many of ``evaluations`` are kept back for the finalists: ``share`` of them, at least one and at most
    half; none for a budget of fewer than 4 evaluations, a time budget (``None``) or ``share`` 0."""
    if evaluations is None or evaluations < 4 or share <= 0:
        return 0
    return min(evaluations // 2, max(1, round(share * evaluations)))


def batch_width(width: int, evaluations: int | None, held: int = 0, rounds: int | None = None) -> int:
    """Configs per batch of a driver with a pool of ``width``: the pool's width, or, when a budget of
    ``evaluations`` (less the ``held`` finals reserve) allows fewer than ``rounds`` batches of it,
    ``ceil((evaluations - held) / rounds)``; ``width`` for a time budget or ``rounds=None``."""
    if rounds is None or evaluations is None:
        return width
    return max(1, min(width, math.ceil((evaluations - held) / rounds)))


def _outcome(config: Config, outcome: Any) -> tuple[Observation, tuple[float, float] | None]:
    """Read one outcome: a Measurement (duck-typed: ``median_ms``, ``ci_low_ms``, ``ci_high_ms``),
    a ``(Status, time_ms)`` pair, a failure ``Status``, or a bare time in ms.

    A measurement whose interval reaches zero or below, or has no finite top, is read as its median alone: the
    interval did not resolve the kernel (on an H100 a cold graph timing of a 1.6 us kernel gave samples down to
    -39 us before the timer fell back on such samples), and a stored record taken that way must not fail every
    later tuning that resumes from it."""
    median = getattr(outcome, "median_ms", None)
    if median is not None:
        lo, hi = getattr(outcome, "ci_low_ms", None), getattr(outcome, "ci_high_ms", None)
        obs = check_told(config, Status.MEASURED, median)
        if lo is None or hi is None or not (float(lo) > 0 and math.isfinite(float(hi))):
            return obs, None
        return obs, (min(float(lo), float(median)), max(float(hi), float(median)))
    if isinstance(outcome, Status):
        return check_told(config, outcome, None), None
    if isinstance(outcome, tuple) and len(outcome) == 2:
        return check_told(config, outcome[0], outcome[1]), None
    if isinstance(outcome, (int, float)) and not isinstance(outcome, bool):
        return check_told(config, Status.MEASURED, outcome), None
    raise SearchError(
        f"{config.id}: outcome {outcome!r} is not a Measurement, a (Status, time_ms) pair, a Status or a time"
    )


class SearchDriver:
    """The search side of a tuning job: batches to compile and race, outcomes back, and when to stop.

        driver = SearchDriver(get("surrogate", space), Budget.parse("25%"), width=16, known=stored)
        while not driver.done:
            for config, outcome in engine.compile_and_race(driver.next_batch()):
                driver.record(config, outcome)
        driver.best, driver.why_stopped

    ``width`` is the compile pool's width: each batch has up to that many configs (fewer at the end of
    the budget). ``known`` is ``(config, outcome)`` pairs measured earlier (the store): they teach the
    strategy first and cost no budget, so a later, larger budget continues where the last stopped.
    ``warm`` lists configs to try first, in order, before the strategy's own choices (transfer from
    neighbouring keys: their winners). ``first`` caps the first batch (a transfer's small opening batch of
    recorded configs), and ``confirm=True`` stops the search (``"confirmed"``) once no batch is out and
    :meth:`Strategy.confirmed` says the measurements confirm its start. An outcome is a
    :class:`~tritune.bench.stats.Measurement` (its interval reaches the strategy), a ``(Status, time_ms)``
    pair, a failure :class:`~tritune.outcome.Status` or a time in ms. This layer imports no tuning code.

    **Adaptive width.** ``rounds=N`` (tuning passes :data:`ROUNDS` for a budget given explicitly): when the
    evaluation budget less the finals reserve allows fewer than ``N`` batches of ``width``, the batches are
    ``ceil((budget - reserve) / N)`` wide (:attr:`batch_width`), never wider than the pool, so a small budget is
    spent in about ``N`` rounds, each fitted to the outcomes of the last, instead of 2-3 blind-ish ones.
    ``first`` still caps only the first batch; a time budget and ``rounds=None`` keep the pool's width.

    **The strategy's finals.** When the strategy wants them (:meth:`Strategy.wants_finals`, e.g.
    ``surrogate`` with ``probe=1``) and the budget counts evaluations, a share ``finals`` of it
    (:func:`finals_reserve`, 15% as in ``tritune simulate``) is held back. Once the rest is spent and every
    batch is back, :meth:`Strategy.finals` is called once with that reserve, and the reserve is released:
    the next batches are the strategy's finalist probes (untried neighbours of the ties), then, for what the
    probes leave, its ordinary asks. They are batches like any other (compiled, screened, checked, raced,
    told, counted in ``evaluated``), never a config asked before. A time budget has no reserve: it has no
    count to take a share of. The tuner's final race then re-times the best configs, probes included.
    """

    def __init__(
        self,
        strategy: Strategy,
        budget: Budget | str | float,
        *,
        width: int = 1,
        known: Iterable[tuple[Config, Any]] = (),
        warm: Iterable[Config] = (),
        clock: Callable[[], float] = time.monotonic,
        first: int | None = None,
        confirm: bool = False,
        finals: float = CONFIRM,
        rounds: int | None = None,
    ) -> None:
        if not isinstance(strategy, Strategy):
            raise SearchError(
                f"SearchDriver drives a tritune.search.Strategy (it needs preload for stored results), "
                f"got {type(strategy).__name__}"
            )
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise SearchError(
                f"SearchDriver(width={width!r}): the compile pool width must be a positive integer"
            )
        if first is not None and (isinstance(first, bool) or not isinstance(first, int) or first < 1):
            raise SearchError(f"SearchDriver(first={first!r}): the first batch's size must be a positive integer")
        if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1):
            raise SearchError(
                f"SearchDriver(rounds={rounds!r}): the fewest batch rounds must be a positive integer or None"
            )
        self.strategy = strategy
        self.width = width
        self.rounds = rounds
        self.first = first
        self.confirm = bool(confirm)
        self.batches = 0
        self.budget = Budget.parse(budget).resolve(len(strategy.candidates))
        if not (isinstance(finals, (int, float)) and not isinstance(finals, bool) and 0 <= finals < 1):
            raise SearchError(f"SearchDriver(finals={finals!r}): the finals' share of the budget must be in [0, 1)")
        #: Evaluations held back for the strategy's :meth:`~Strategy.finals` (class docstring); 0 once released.
        self.held = finals_reserve(self.budget.evaluations, finals) if strategy.wants_finals() else 0
        #: Configs per batch (class docstring, adaptive width): ``width``, or fewer for a small budget.
        self.batch_width = batch_width(width, self.budget.evaluations, self.held, rounds)
        #: The finals as they went: ``{"reserve", "probes", "at"}`` (``at``: evaluations before them), or None.
        self.finals: dict[str, int] | None = None
        self.resumed = 0
        for config, outcome in known:
            obs, ci = _outcome(as_config(config), outcome)
            if strategy.preload(obs.config, obs.status, obs.time_ms, ci=ci):
                self.resumed += 1
        self._warm = [c for c in dict.fromkeys(as_config(c) for c in warm) if c in strategy.index]
        self._clock = clock
        self._start = clock()
        self.spent = 0
        self._out: set[Config] = set()
        self.history: list[Observation] = []
        self._stopped: str | None = None
        #: The check race's field once :meth:`check_field` gave one (the configs raced again), else None.
        self.checked: tuple[Config, ...] | None = None

    @property
    def elapsed_s(self) -> float:
        return self._clock() - self._start

    def _release_finals(self) -> None:
        """Once the budget less the reserve is spent and nothing is out: the strategy's finals (class docstring)."""
        if not self.held or self._out or self.budget.evaluations is None:
            return
        if self.spent < self.budget.evaluations - self.held and not self.strategy.done():
            return
        reserve, self.held = self.held, 0
        probes = 0 if self.strategy.done() else max(0, min(reserve, int(self.strategy.finals(reserve))))
        self.finals = {"reserve": reserve, "probes": probes, "at": self.spent}

    def _check_stop(self) -> str | None:
        if self._stopped is not None:
            return self._stopped
        self._release_finals()
        if self.budget.evaluations is not None and self.spent >= self.budget.evaluations - self.held:
            self._stopped = "budget"
        elif self.budget.seconds is not None and self.elapsed_s >= self.budget.seconds:
            self._stopped = "time"
        elif self.strategy.done() and not self._out:
            self._stopped = "exhausted"
        elif self.confirm and self.spent > 0 and not self._out and self.strategy.confirmed():
            self._stopped = "confirmed"
        return self._stopped

    @property
    def done(self) -> bool:
        """True once the budget or the time is spent, or the space is exhausted (and no batch is out)."""
        return self._check_stop() is not None

    @property
    def may_propose_ahead(self) -> bool:
        """Whether a batch may be proposed while one is out: not while a ``confirm`` driver's first batch is,
        since its outcome decides whether there is a next one."""
        return not (self.confirm and self.batches <= 1 and self._out)

    @property
    def why_stopped(self) -> str | None:
        """``"budget"``, ``"time"``, ``"exhausted"`` or ``"confirmed"``; ``None`` while the search goes on."""
        return self._check_stop()

    def next_batch(self) -> list[Config]:
        """Up to ``width`` configs never proposed before (counting those still out); [] once done, and [] while
        a ``confirm`` driver's first batch is out (:attr:`may_propose_ahead`)."""
        if self.done or not self.may_propose_ahead:
            return []
        room = self.batch_width if self.batches or self.first is None else min(self.width, self.first)
        if self.budget.evaluations is not None:
            room = min(room, self.budget.evaluations - self.held - self.spent - len(self._out))
        if room <= 0:
            return []
        batch: list[Config] = []
        while self._warm and len(batch) < room:
            c = self._warm.pop(0)
            if not self.strategy.is_asked(self.strategy.index[c]):
                self.strategy.mark_asked(c)
                batch.append(c)
        if len(batch) < room and not self.strategy.done():
            batch.extend(self.strategy.ask(room - len(batch)))
        self._out.update(batch)
        self.batches += bool(batch)
        return batch

    def record(self, config: Config, outcome: Any) -> Observation:
        """The outcome of a config of a batch; each config once."""
        config = as_config(config)
        if config not in self._out:
            raise SearchError(
                f"SearchDriver.record({config.id}): not out in a batch (never proposed, or recorded already)"
            )
        obs, ci = _outcome(config, outcome)
        self._out.discard(config)
        self.strategy.tell(config, obs.status, obs.time_ms, ci=ci)
        self.spent += 1
        self.history.append(obs)
        return obs

    def check_field(self, limit: int, within: float, confirming_within: float | None = None) -> list[Config]:
        """The check race's field, once: after a ``confirm`` driver's first batch is back and did not confirm.

        A first look that puts a config the strategy would confirm (:meth:`Strategy.confirming`, the transfer's
        leaders) a little behind the best may be one look's noise: a short race's samples are taken within a
        fraction of a second, and look-to-look drift (clocks, heat) is often larger than the gaps of a plateau of
        near-tied configs. The tuner races the field again from fresh samples and tells the times back
        (:meth:`recheck`), and the strategy decides on that race alone (:meth:`Strategy.confirmed_by`). The field:
        the best measured, then the confirming configs within ``confirming_within`` of it (default ``within``),
        then the others within ``within``,
        fastest first, at most ``limit`` (at least 2), of the configs this driver's batches measured (stored
        results are not in the race). [] (and nothing asked) when there is nothing to check: not a
        ``confirm`` driver, not right after its first batch, already checked or stopped, or no confirming config
        within ``confirming_within``."""
        if (not self.confirm or self.batches != 1 or self._out or self.checked is not None or self.done
                or limit < 2):  # fmt: skip
            return []
        seen = sorted((o.time_ms, i, o.config) for i, o in enumerate(self.history) if o.ok and o.time_ms is not None)
        if not seen:
            return []
        best_ms = seen[0][0]
        wide = within if confirming_within is None else max(within, confirming_within)
        leaders = self.strategy.confirming()
        ahead = [s for s in seen[1:] if s[2] in leaders and s[0] <= best_ms * (1 + wide)]
        if not ahead:
            return []
        rest = [s for s in seen[1:] if s[2] not in leaders and s[0] <= best_ms * (1 + within)]
        self.checked = tuple(c for _, _, c in sorted([seen[0], *(ahead + rest)[: limit - 1]]))
        return list(self.checked)

    def recheck(self, outcomes: Mapping[Config, Any]) -> bool:
        """The check race's outcomes (:meth:`check_field`), config -> outcome: whether they confirm the strategy's start
        (:meth:`Strategy.confirmed_by`), and then the search stops ``"confirmed"``. Only that race's own times decide,
        all taken together: a config's time in the first race may come from another moment of a GPU whose clocks were
        settling (an H100's first ~250 ms of load read 7-13% fast: :mod:`tritune.engine.race`), and pooling it would
        carry that over. Not evaluations; failures there are left out."""
        if self.checked is None:
            raise SearchError("SearchDriver.recheck: no check race was asked (check_field)")
        looks: dict[Config, tuple[float, tuple[float, float] | None]] = {}
        for config, outcome in outcomes.items():
            config = as_config(config)
            if config not in self.checked:
                raise SearchError(f"SearchDriver.recheck({config.id}): not in the check race's field")
            obs, ci = _outcome(config, outcome)
            if obs.ok and obs.time_ms is not None:
                looks[config] = (obs.time_ms, ci)
        if looks and self._stopped is None and self.strategy.confirmed_by(looks):
            self._stopped = "confirmed"
        return self._stopped == "confirmed"

    @property
    def best(self) -> Observation | None:
        """The strategy's pick among everything it knows, stored results included."""
        return self.strategy.best()

    def summary(self) -> dict[str, Any]:
        """What was searched, measured and why it stopped, for choices(), JSON results and reports."""
        best = self.best
        return {
            "strategy": self.strategy.name,
            "candidates": len(self.strategy.candidates),
            "budget": str(self.budget),
            "width": self.width,
            "batch": self.batch_width,
            "resumed": self.resumed,
            "evaluated": self.spent,
            "measured": sum(o.ok for o in self.history),
            "failed": sum(not o.ok for o in self.history),
            "stopped": self.why_stopped,
            "checked": None if self.checked is None else [c.id for c in self.checked],
            "finals": None if self.finals is None else dict(self.finals),
            "best": None if best is None else best.config.id,
            "best_ms": None if best is None else best.time_ms,
        }
