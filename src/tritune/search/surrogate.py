"""Surrogate search: a numpy model of log(time) over the parameter grid chooses what to measure next.

The model is ridge regression on grid features (each parameter's position, its square, its one-hot
value, and pairwise products), fitted to the log of every measured time: a multiplicative model of the
kind GPU landscapes follow (tile size × warps × stages). A second ridge model of the failures seen so
far steers away from regions that fail to compile or launch. After a small random design, each ask
takes the unmeasured candidate the model ranks fastest among the neighbours of the best config
found (a model-guided neighbourhood search), or the global model optimum when that neighbourhood is
spent; a seeded share of asks stays random so that a wrong model cannot trap the search.
Needs only numpy, so it runs where optuna is absent.

>>> from tritune.space import Space, pow2
>>> s = SurrogateSearch(Space({"BLOCK": pow2(64, 1024), "num_warps": [2, 4, 8]}), seed=0)
>>> len(s.ask(4))
4
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tritune.config import Config
from tritune.search.base import Observation, Strategy
from tritune.search.grid import Grid
from tritune.space import Space


def ridge_fit(x: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """Weights (bias first) of ridge regression of ``y`` on ``x``; the bias is not penalized."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    penalty = alpha * np.eye(xb.shape[1])
    penalty[0, 0] = 0.0
    return np.linalg.solve(xb.T @ xb + penalty, xb.T @ y)


def loo_error(x: np.ndarray, y: np.ndarray, alpha: float) -> float:
    """Leave-one-out mean squared error of ridge regression, in closed form through the hat matrix."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    penalty = alpha * np.eye(xb.shape[1])
    penalty[0, 0] = 0.0
    inv = np.linalg.inv(xb.T @ xb + penalty)
    hat = np.einsum("ij,jk,ik->i", xb, inv, xb)
    resid = y - xb @ (inv @ (xb.T @ y))
    return float(np.mean((resid / np.maximum(1.0 - hat, 1e-6)) ** 2))


def ridge_predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return w[0] + x @ w[1:]


#: Ridge penalties the leave-one-out choice picks from.
ALPHAS = (0.03, 0.1, 0.3, 1.0, 3.0)


class SurrogateSearch(Strategy):
    """Model-guided neighbourhood search with a ridge surrogate of log(time).

    ``initial``: random configs before the model is trusted (default ``max(8, 2 * dims)``);
    ``explore``: share of later asks drawn at random; ``top``: how many best configs' neighbourhoods
    the model ranks; ``alpha``: ridge penalty, or ``None`` to choose it at each fit by leave-one-out
    error among :data:`ALPHAS`.
    """

    name = "surrogate"

    def __init__(
        self,
        space: Space,
        *,
        seed: int = 0,
        illegal: Iterable[Any] = (),
        initial: int | None = None,
        explore: float = 0.1,
        top: int = 1,
        alpha: float | None = None,
    ) -> None:
        super().__init__(space, seed=seed, illegal=illegal)
        self.grid = Grid(self.candidates)
        feats = self.grid.features()
        std = feats.std(axis=0)
        keep = std > 1e-12
        self._x = (feats[:, keep] - feats[:, keep].mean(axis=0)) / std[keep]
        self.initial = initial if initial is not None else max(8, 2 * self.grid.dims)
        self.explore = float(explore)
        self.top = max(1, int(top))
        self.alpha = None if alpha is None else float(alpha)
        self._measured: dict[int, float] = {}
        self._failed: set[int] = set()

    def _observe(self, index: int, obs: Observation) -> None:
        if obs.ok and obs.time_ms is not None:
            self._measured[index] = math.log(obs.time_ms)
        else:
            self._failed.add(index)

    def _scores(self) -> np.ndarray:
        """Predicted log time of every candidate, plus a penalty where failures are predicted."""
        idx = np.fromiter(self._measured, dtype=np.int64)
        y = np.fromiter(self._measured.values(), dtype=float)
        x = self._x[idx]
        alpha = self.alpha
        if alpha is None:
            alpha = min(ALPHAS, key=lambda a: loo_error(x, y - y.mean(), a))
        w = ridge_fit(x, y - y.mean(), alpha)
        score = ridge_predict(w, self._x) + y.mean()
        if self._failed:
            told = np.concatenate([idx, np.fromiter(self._failed, dtype=np.int64)])
            fail = np.concatenate([np.zeros(len(idx)), np.ones(len(self._failed))])
            wf = ridge_fit(self._x[told], fail, alpha)
            p_fail = np.clip(ridge_predict(wf, self._x), 0.0, 1.0)
            score = score + 2.0 * p_fail * max(float(y.std()), 0.1)
        return score

    def _propose(self, n: int) -> Sequence[Config]:
        out: list[int] = []
        if len(self._measured) < max(2, self.initial):
            out = self.random_unasked(n)
            return [self.candidates[i] for i in out]
        score = self._scores()
        best_first = sorted(self._measured, key=self._measured.__getitem__)[: self.top]
        local = {j for i in best_first for j in self.grid.neighbours(i) if not self.is_asked(j)}
        free = self.unasked()
        order = sorted(free, key=lambda j: (j not in local, score[j]))
        for j in order:
            if len(out) == n:
                break
            if self.rng.random() < self.explore:
                choice = self.random_unasked(len(out) + 1)
                extra = [c for c in choice if c not in out]
                if extra:
                    out.append(extra[0])
                    continue
            if j not in out:
                out.append(j)
        return [self.candidates[i] for i in out[:n]]
