"""Search strategies behind one ask/tell interface, a registry of them, and the loop that drives them.

    strategy = tritune.search.get("surrogate", space, seed=0, illegal=screened_out)
    result = tritune.search.run_search(strategy, evaluate, Budget(evaluations=50))

``evaluate`` is any callable ``config -> (Status, time_ms | None)`` (or with a third item, the
measurement's ``(ci_low_ms, ci_high_ms)``). :mod:`tritune.search.simulate` replays recorded landscapes
so strategies can be measured with no GPU.

For a tuning engine, :class:`SearchDriver` is the whole search side: ``Budget.parse("25%" | "200" |
"90s")``, batches as wide as the compile pool (``next_batch``), outcomes back as Measurements
(``record``), resume from stored results (``known=``), transfer from other keys (``TransferSearch`` or
``warm=``), and ``done`` / ``why_stopped`` / ``summary()``. This package imports nothing of tune, cli or
report.
"""

from __future__ import annotations

from tritune.search.base import Budget, Observation, SearchStrategy, Strategy
from tritune.search.driver import SearchDriver, SearchResult, run_search
from tritune.search.exhaustive import ExhaustiveSearch
from tritune.search.neighbourhood import NeighbourhoodSearch
from tritune.search.random_search import RandomSearch
from tritune.search.registry import DEFAULT, get, names, register, resolve, unregister
from tritune.search.rings import RingSearch
from tritune.search.surrogate import SurrogateSearch
from tritune.search.transfer import KeyResults, TransferSearch

__all__ = [
    "DEFAULT",
    "Budget",
    "ExhaustiveSearch",
    "KeyResults",
    "NeighbourhoodSearch",
    "Observation",
    "RandomSearch",
    "RingSearch",
    "SearchDriver",
    "SearchResult",
    "SearchStrategy",
    "Strategy",
    "SurrogateSearch",
    "TransferSearch",
    "get",
    "names",
    "register",
    "resolve",
    "run_search",
    "unregister",
]
