"""TPE search: Optuna's Tree-structured Parzen Estimator over the parameter grid (extra ``tritune[search]``).

Optuna samples each parameter's grid position (its log2 for power-of-2 values); tritune maps the sample
to the nearest legal, never-asked candidate, so the sampler can neither repeat a config nor propose an
illegal one. Each outcome is added to the study as a trial at the config actually measured: its log
time, or, for a failure, a trial marked infeasible through Optuna's constraints so that TPE learns to
avoid the failing region. Optuna's own logging is silenced while it runs.

    tritune.search.get("tpe", space, seed=0)   # SearchError naming the extra when optuna is missing
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from tritune.config import Config
from tritune.errors import SearchError
from tritune.search.base import Observation, Strategy
from tritune.search.grid import Grid
from tritune.space import Space


def _import_optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise SearchError(
            "the 'tpe' search strategy needs optuna: pip install 'tritune[search]' (or pick a strategy that "
            "needs only numpy, such as 'surrogate')"
        ) from None
    return optuna


@contextlib.contextmanager
def _quiet(optuna: Any) -> Iterator[None]:
    """Optuna logs every trial at INFO and failed trials at WARNING; a search step should print nothing."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def _constraints(trial: Any) -> Sequence[float]:
    return trial.system_attrs.get("constraints", (0.0,))


class TPESearch(Strategy):
    """Optuna TPE sampling, snapped to the nearest unasked legal candidate. ``startup``: random trials first."""

    name = "tpe"

    def __init__(
        self, space: Space, *, seed: int = 0, illegal: Iterable[Any] = (), startup: int | None = None
    ) -> None:
        super().__init__(space, seed=seed, illegal=illegal)
        optuna = self._optuna = _import_optuna()
        self.grid = Grid(self.candidates)
        self._dists = {
            name: optuna.distributions.IntDistribution(0, size - 1)
            for name, size in zip(self.grid.names, self.grid.sizes, strict=True)
        }
        n_startup = startup if startup is not None else max(8, 2 * self.grid.dims)
        options: dict[str, Any] = {"seed": self.seed, "n_startup_trials": n_startup, "multivariate": True}
        if int(optuna.__version__.split(".")[0]) < 5:
            # Before Optuna 5, TPE reads the constraints of trials only through constraints_func; from 5 on it
            # reads them from every trial and constraints_func is deprecated.
            options["constraints_func"] = _constraints
        with warnings.catch_warnings():
            # multivariate TPE (and constraints_func before Optuna 5) are marked experimental; we opt in
            # knowingly, so that warning is silenced here and only here.
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(**options)
        with _quiet(optuna):
            self._study = optuna.create_study(direction="minimize", sampler=sampler)
        self._worst: float | None = None

    def _nearest_unasked(self, point: np.ndarray, taken: set[int]) -> int | None:
        free = np.array([j for j in self.unasked() if j not in taken], dtype=np.int64)
        if len(free) == 0:
            return None
        dist = np.abs(self.grid.coords[free] - point).sum(axis=1)
        return int(free[int(np.argmin(dist))])

    def _propose(self, n: int) -> Sequence[Config]:
        optuna = self._optuna
        out: list[int] = []
        with _quiet(optuna):
            for _ in range(n):
                trial = self._study.ask(self._dists)
                point = np.array([trial.params[name] for name in self.grid.names], dtype=np.int64)
                # The sampled point stands for nothing measured: it is closed as failed (TPE ignores
                # failed trials) and the config actually measured is added as its own trial on tell.
                self._study.tell(trial, state=optuna.trial.TrialState.FAIL)
                j = self._nearest_unasked(point, set(out))
                if j is None:
                    break
                out.append(j)
        return [self.candidates[i] for i in out]

    def _reobserve(self, index: int, obs: Observation) -> None:
        """A repeat measurement: the study keeps the config's first trial (optuna trials are immutable)."""

    def _observe(self, index: int, obs: Observation) -> None:
        optuna = self._optuna
        params = {name: int(x) for name, x in zip(self.grid.names, self.grid.coords[index], strict=True)}
        if obs.ok and obs.time_ms is not None:
            value = math.log(obs.time_ms)
            self._worst = value if self._worst is None else max(self._worst, value)
            attrs = {"constraints": (0.0,)}
        else:
            value = 0.0 if self._worst is None else self._worst
            attrs = {"constraints": (1.0,)}  # infeasible: the value is never compared
        trial = optuna.trial.create_trial(
            params=params, distributions=self._dists, value=value, system_attrs=attrs
        )
        with _quiet(optuna):
            self._study.add_trial(trial)
