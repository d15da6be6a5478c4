"""Surrogate search: a numpy model of log(time) over the parameter grid chooses what to measure next.

The model is ridge regression on grid features (each parameter's position, its square, its one-hot
value, and pairwise products), fitted to the log of every measured time: a multiplicative model of the
kind GPU landscapes follow (tile size × warps × stages). Times above the median are capped before the
fit: on the recorded H200 matmul, 5-10x register-spill cliffs otherwise bent the quadratic model away
from the fast big-tile corner. A second ridge model of the failures seen so far steers away from
regions that fail to compile or launch. After a maximin space-filling design, each ask takes the
unmeasured candidate the model ranks fastest among the moves (one or two axes at once, diagonals
included) around the best three configs found, every third ask the global model optimum instead, and
a seeded share of asks stays random so that a wrong model cannot trap the search.
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
    """Model-guided search with a ridge surrogate of log(time), refined around the best few configs.

    ``initial``: configs of the space-filling start before the model is trusted (default
    ``max(8, 2 * dims, 4% of the candidates)``); ``explore``: share of later asks drawn at random;
    ``top``: how many of the best configs the local step refines around; ``global_every``: every
    that many model-guided asks, take the model's optimum over the whole space instead of the local
    one; ``reach``: how many axes one local move may change at once (2 adds the diagonal moves such as
    BLOCK_M/2 with BLOCK_N*2, or BLOCK_K*2 with one stage less); ``spread``: start with a maximin
    space-filling design rather than uniform random; ``clip``: a quantile (<= 1) of the measured log
    times, or a factor (> 1) over the best time, above which times are capped before fitting, so that
    cliffs (register spills, 10x slow configs) do not bend the model where the fast configs are;
    ``alpha``: ridge penalty, or ``None`` to choose it at each fit by leave-one-out error among
    :data:`ALPHAS`.
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
        top: int = 3,
        global_every: int = 3,
        clip: float | None = 0.5,
        spread: bool = True,
        reach: int = 2,
        alpha: float | None = None,
    ) -> None:
        super().__init__(space, seed=seed, illegal=illegal)
        self.grid = Grid(self.candidates)
        feats = self.grid.features()
        std = feats.std(axis=0)
        keep = std > 1e-12
        self._x = (feats[:, keep] - feats[:, keep].mean(axis=0)) / std[keep]
        n = len(self.candidates)
        self.initial = initial if initial is not None else max(8, 2 * self.grid.dims, math.ceil(0.04 * n))
        self.explore = float(explore)
        self.top = max(1, int(top))
        self.global_every = max(0, int(global_every))
        self.clip = clip
        self.spread = bool(spread)
        self.reach = max(1, int(reach))
        self.alpha = None if alpha is None else float(alpha)
        scale = np.array([max(1, s - 1) for s in self.grid.sizes], dtype=float)
        self._unit = self.grid.coords / scale if self.grid.dims else np.zeros((n, 0))
        self._measured: dict[int, float] = {}
        self._failed: set[int] = set()
        self._guided = 0

    def _observe(self, index: int, obs: Observation) -> None:
        if obs.ok and obs.time_ms is not None:
            self._measured[index] = math.log(obs.time_ms)
        else:
            self._failed.add(index)

    def _scores(self) -> np.ndarray:
        """Predicted log time of every candidate, plus a penalty where failures are predicted."""
        idx = np.fromiter(self._measured, dtype=np.int64)
        y = np.fromiter(self._measured.values(), dtype=float)
        if self.clip is not None:
            cap = np.quantile(y, self.clip) if self.clip <= 1 else y.min() + math.log(self.clip)
            y = np.minimum(y, cap)
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

    def _space_filling(self, n: int) -> list[int]:
        """``n`` unasked configs, each the farthest (in unit grid coordinates) from all asked so far."""
        out: list[int] = []
        asked = list(np.flatnonzero(self._asked))
        for _ in range(n):
            free = np.flatnonzero(~self._asked)
            free = free[~np.isin(free, out)]
            if len(free) == 0:
                break
            chosen = asked + out
            if not chosen or not self.spread:
                out.append(int(self.rng.choice(free)))
                continue
            d = (
                np.abs(self._unit[free, None, :] - self._unit[None, np.array(chosen, dtype=np.int64), :])
                .sum(axis=2)
                .min(axis=1)
            )
            far = free[d >= d.max() - 1e-9]
            out.append(int(self.rng.choice(far)))
        return out

    def _local(self, best_first: list[int]) -> np.ndarray:
        """Unasked candidates within one grid step on every axis at once (diagonals too) of ``best_first``."""
        near = np.zeros(len(self.candidates), dtype=bool)
        for i in best_first:
            step = np.abs(self.grid.coords - self.grid.coords[i])
            near |= (step.max(axis=1) <= 1) & (step.sum(axis=1) <= self.reach)
            near[self.grid.neighbours(i)] = True  # the axis moves that jump over illegal gaps
        return near & ~self._asked

    def _propose(self, n: int) -> Sequence[Config]:
        if len(self._measured) + len(self._failed) < max(2, self.initial) or len(self._measured) < 2:
            return [self.candidates[i] for i in self._space_filling(n)]
        score = self._scores()
        best_first = sorted(self._measured, key=self._measured.__getitem__)[: self.top]
        local = self._local(best_first)
        out: list[int] = []
        while len(out) < n:
            free = ~self._asked
            free[out] = False
            if not free.any():
                break
            if self.rng.random() < self.explore:
                out.append(int(self.rng.choice(np.flatnonzero(free))))
                continue
            self._guided += 1
            go_global = self.global_every > 0 and self._guided % self.global_every == 0
            pool = free if go_global or not (local & free).any() else local & free
            cand = np.flatnonzero(pool)
            out.append(int(cand[np.argmin(score[cand])]))
        return [self.candidates[i] for i in out]
