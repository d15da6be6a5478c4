"""Replay transfer between keys: a new key's search warm-started from tuned neighbours, against a cold one.

For a family of landscapes of one kernel at several keys (e.g. sizes), :func:`simulate_transfer` takes
each key in turn as the new one, the others as tuned (their full recorded landscapes, as an exhaustive
tuning stores them), and runs, per seed, a cold search (``cold``, the default strategy) and
:class:`~tritune.search.transfer.TransferSearch` at the same budget. It reports how many evaluations
each needed until the config it would pick was within ``within`` of the best, judged by the TRUE
(recorded, noise-free) time of that config, as :func:`~tritune.search.simulate.simulate` judges.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tritune.errors import SearchError
from tritune.landscape import Landscape
from tritune.outcome import Status
from tritune.search.base import Budget
from tritune.search.simulate import quantile, replay_space, simulate_one
from tritune.search.transfer import KeyResults, TransferSearch


def key_results(landscape: Landscape) -> KeyResults:
    """A recorded landscape as a tuned key's stored results."""
    times = {p.config: (p.time_ms if p.status is Status.MEASURED else None) for p in landscape.points}
    return KeyResults(dict(landscape.key), times)


@dataclass(frozen=True)
class TransferRow:
    """One new key: the median evaluations to reach the bound, cold and with transfer, and the ratios."""

    kernel: str
    key: dict[str, Any]
    neighbours: int
    budget_evaluations: int
    cold_evals: float | None
    transfer_evals: float | None
    cold_median: float | None
    transfer_median: float | None
    transfer_p90: float | None

    @property
    def fraction(self) -> float | None:
        """Transfer's evaluations to the bound over the cold search's (the target is <= 0.25)."""
        if self.cold_evals is None or self.transfer_evals is None:
            return None
        return self.transfer_evals / self.cold_evals

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "fraction": self.fraction}


def simulate_transfer(
    family: Sequence[Landscape],
    *,
    budget: float = 0.5,
    seeds: int = 10,
    noise: float = 0.0,
    cold: str = "surrogate",
) -> list[TransferRow]:
    """Each member of ``family`` as the new key, the others as its tuned neighbours (module docstring)."""
    if len(family) < 2:
        raise SearchError("a transfer simulation needs a family of at least two keys")
    rows = []
    for k, land in enumerate(family):
        others = [key_results(o) for j, o in enumerate(family) if j != k]
        space, illegal = replay_space(land)
        evals = Budget.fraction(budget, len(space.configs()) - len(set(illegal)))
        factory = functools.partial(TransferSearch, key=dict(land.key), neighbours=others)
        c_runs = [simulate_one(land, cold, evals, seed=s, noise=noise) for s in range(seeds)]
        t_runs = [simulate_one(land, factory, evals, seed=s, noise=noise) for s in range(seeds)]

        def med_evals(runs: list[Any]) -> float | None:
            return quantile([None if r.evals_to_2pct is None else float(r.evals_to_2pct) for r in runs], 0.5)

        rows.append(
            TransferRow(
                kernel=land.kernel,
                key=dict(land.key),
                neighbours=len(others),
                budget_evaluations=evals.evaluations or 0,
                cold_evals=med_evals(c_runs),
                transfer_evals=med_evals(t_runs),
                cold_median=quantile([r.best_ratio for r in c_runs], 0.5),
                transfer_median=quantile([r.best_ratio for r in t_runs], 0.5),
                transfer_p90=quantile([r.best_ratio for r in t_runs], 0.9),
            )
        )
    return rows
