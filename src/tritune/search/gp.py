"""The surrogate's models of log(time): ridge regression and a Gaussian process over grid positions.

See :mod:`tritune.search.surrogate` for how the search uses them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


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

#: Grids the Gaussian process's hyperparameters are chosen from by marginal likelihood: Matérn length
#: scales in unit grid coordinates (the whole range of a parameter is 1), the noise (nugget) relative to
#: the signal, and the prior weight of the linear (Bayesian ridge) part relative to the Matérn part.
LENGTH_SCALES = (0.15, 0.25, 0.4, 0.6, 1.0, 1.6, 3.0)
NUGGETS = (1e-4, 1e-3, 1e-2, 0.03, 0.1, 0.3)
LINEAR_WEIGHTS = (30.0, 100.0, 300.0)

#: Models ``SurrogateSearch(model=...)`` accepts.
MODELS = ("gp", "ridge")

_SQRT5 = math.sqrt(5.0)


def matern52(r2: np.ndarray) -> np.ndarray:
    """The Matérn-5/2 correlation at squared scaled distance ``r2``."""
    s = _SQRT5 * np.sqrt(np.maximum(r2, 0.0))
    return (1.0 + s + s * s / 3.0) * np.exp(-s)


class GaussianProcess:
    """Posterior mean of a GP over a fixed candidate set: Matérn-5/2 ARD on ``unit`` plus a linear kernel on ``feats``.

    ``unit`` holds each candidate's grid coordinates scaled to [0, 1] per parameter; ``feats`` the
    standardized ridge features. Hyperparameters are indices into :data:`LENGTH_SCALES` (one per
    coordinate), :data:`NUGGETS` and :data:`LINEAR_WEIGHTS`, chosen by coordinate search on the
    concentrated log marginal likelihood (the signal variance profiled out) and refitted once the data
    has grown by ``refit`` (a factor) since the last fit. Kernel columns of measured candidates are cached
    while the hyperparameters stay, so an ask costs one solve of the measured set, of at most
    ``max_points``.
    """

    def __init__(
        self, unit: np.ndarray, feats: np.ndarray, *, refit: float = 1.15, max_points: int = 96
    ) -> None:
        self.unit = unit
        self.lin = feats / math.sqrt(max(1, feats.shape[1]))
        self.dims = unit.shape[1]
        self.refit = float(refit)
        self.max_points = max(12, int(max_points))
        self.hp = [LENGTH_SCALES.index(0.6)] * self.dims + [NUGGETS.index(1e-2), 0]
        self._fitted_at = 0
        self._cols: dict[int, np.ndarray] = {}
        self.last_std: np.ndarray | None = None

    @property
    def length_scales(self) -> tuple[float, ...]:
        """The fitted Matérn length scale of each coordinate (unit grid coordinates)."""
        return tuple(LENGTH_SCALES[k] for k in self.hp[: self.dims])

    @property
    def nugget(self) -> float:
        """The fitted noise variance relative to the signal's."""
        return NUGGETS[self.hp[self.dims]]

    def _params(self, hp: Sequence[int]) -> tuple[np.ndarray, float, float]:
        ls = np.array([LENGTH_SCALES[k] for k in hp[: self.dims]], dtype=float)
        return ls, NUGGETS[hp[self.dims]], LINEAR_WEIGHTS[hp[self.dims + 1]]

    def _neg_log_likelihood(
        self, diff2: np.ndarray, lin: np.ndarray, y: np.ndarray, trials: Sequence[Sequence[int]]
    ) -> np.ndarray:
        """Concentrated negative log marginal likelihood of each hyperparameter setting in ``trials``."""
        hps = np.asarray(trials, dtype=np.int64)
        ls = np.asarray(LENGTH_SCALES)[hps[:, : self.dims]]
        nugget = np.asarray(NUGGETS)[hps[:, self.dims]]
        weight = np.asarray(LINEAR_WEIGHTS)[hps[:, self.dims + 1]]
        n = len(y)
        k = (
            matern52(np.einsum("td,dk->tk", 1.0 / ls**2, diff2)).reshape(len(trials), n, n)
            + weight[:, None, None] * lin
        )
        k[:, np.arange(n), np.arange(n)] += nugget[:, None]
        try:
            chol = np.linalg.cholesky(k)
        except np.linalg.LinAlgError:  # one setting is not positive definite: score them one by one
            if len(trials) == 1:
                return np.array([math.inf])
            return np.concatenate([self._neg_log_likelihood(diff2, lin, y, [hp]) for hp in trials])
        a = np.linalg.solve(chol, np.broadcast_to(y[:, None], (len(trials), n, 1)))[..., 0]
        quad = np.maximum((a * a).sum(axis=1) / n, 1e-300)
        logdet = np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
        return np.asarray(0.5 * n * np.log(quad) + logdet)

    def _fit(self, idx: np.ndarray, y: np.ndarray) -> None:
        u = self.unit[idx]
        n = len(idx)
        diff2 = ((u.T[:, :, None] - u.T[:, None, :]) ** 2).reshape(self.dims, n * n)
        lin = np.einsum("ik,jk->ij", self.lin[idx], self.lin[idx])
        sizes = [len(LENGTH_SCALES)] * self.dims + [len(NUGGETS), len(LINEAR_WEIGHTS)]
        hp = list(self.hp)
        best = float(self._neg_log_likelihood(diff2, lin, y, [hp])[0])
        for _ in range(2):
            changed = False
            for d, size in enumerate(sizes):
                trials = [[*hp[:d], v, *hp[d + 1 :]] for v in range(size) if v != hp[d]]
                if not trials:
                    continue
                f = self._neg_log_likelihood(diff2, lin, y, trials)
                k = int(np.argmin(f))
                if f[k] < best - 1e-9:
                    best, hp, changed = float(f[k]), trials[k], True
            if not changed:
                break
        if hp != self.hp:
            self.hp = hp
            self._cols.clear()

    def _column(self, i: int) -> np.ndarray:
        col = self._cols.get(i)
        if col is None:
            ls, _, weight = self._params(self.hp)
            r2 = (((self.unit - self.unit[i]) / ls) ** 2).sum(axis=1)
            col = matern52(r2) + weight * np.einsum("ik,k->i", self.lin, self.lin[i])
            self._cols[i] = col
        return col

    def predict(
        self, idx: np.ndarray, y: np.ndarray, *, noise_var: float = 0.0, with_std: bool = False
    ) -> np.ndarray:
        """Posterior mean at every candidate given values ``y`` at candidates ``idx``.

        With ``with_std`` the posterior standard deviation of every candidate (same units as ``y``) is
        left in :attr:`last_std`: small at and near told points, large in unexplored regions.

        Past ``max_points`` values the model keeps the lowest half of ``max_points`` and an even spread (by
        rank) of the others, so that a long search keeps its cost per ask bounded and its matrices small.
        """
        told = len(idx)
        if len(idx) > self.max_points:
            order = np.lexsort((idx, y))
            half = self.max_points // 2
            rest = order[half:][
                np.linspace(0, len(order) - half - 1, self.max_points - half).round().astype(int)
            ]
            keep = np.concatenate([order[:half], rest])
            idx, y = idx[keep], y[keep]
            kept = set(idx.tolist())
            self._cols = {i: c for i, c in self._cols.items() if i in kept}
        mean = float(y.mean())
        scale = float(y.std()) or 1.0
        r = (y - mean) / scale
        if told >= self._fitted_at * self.refit or told < 12:
            self._fit(idx, r)
            self._fitted_at = told
        _, nugget, _ = self._params(self.hp)
        nugget = max(nugget, noise_var / (scale * scale))  # measured noise is a floor on the nugget
        cross = np.stack([self._column(int(i)) for i in idx], axis=1)
        k = cross[idx]
        k[np.diag_indices_from(k)] += nugget
        try:
            weights = np.linalg.solve(k, r)
        except np.linalg.LinAlgError:
            weights = np.linalg.lstsq(k, r, rcond=None)[0]
        self.last_std = None
        if with_std:
            # Posterior variance of the latent log time, in units of y: the prior variance (Matern 1 plus
            # the linear part) less what the told values explain, times the profiled signal variance.
            _, _, weight = self._params(self.hp)
            prior = 1.0 + weight * np.einsum("ik,ik->i", self.lin, self.lin)
            try:
                solved = np.linalg.solve(k, cross.T)
            except np.linalg.LinAlgError:
                solved = np.linalg.lstsq(k, cross.T, rcond=None)[0]
            var = np.maximum(prior - np.einsum("ij,ji->i", cross, solved), 0.0)
            signal = max(float(r @ weights) / len(r), 1e-12)
            self.last_std = scale * np.sqrt(signal * var)
        return mean + scale * np.einsum("ij,j->i", cross, weights)
