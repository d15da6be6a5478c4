"""``run_search``: the loop that drives any strategy against any evaluator within a budget.

The evaluator is a plain callable ``config -> (Status, time_ms | None)``: real GPU timing, a replay of a
recorded landscape, or a test fake. The loop owns the budget; the strategy owns what to try next.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tritune.config import Config
from tritune.errors import SearchError
from tritune.outcome import Status
from tritune.search.base import Budget, Observation, SearchStrategy, check_told

#: What an evaluator returns for one config.
Evaluate = Callable[[Config], "tuple[Status, float | None]"]


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
            try:
                status, time_ms = outcome
            except (TypeError, ValueError):
                raise SearchError(
                    f"evaluate({config.id}) returned {outcome!r}; it must return (Status, time_ms or None)"
                ) from None
            obs = check_told(config, status, time_ms)
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
