"""Surrogate search: a numpy model of log(time) over the parameter grid chooses what to measure next.

The default model is the posterior mean of a Gaussian process over grid positions (each parameter's
position in its sorted value list, so a power-of-2 parameter sits on a log2 scale). Its kernel adds two
parts: a Matérn-5/2 kernel with one length scale per parameter, which learns local effects (a tile shape
that is faster than its neighbours whatever the stages, separate basins), and on a 2-D tile one more for the
output tile per warp (``tile_per_warp``: register spills follow it), and a linear kernel over the
ridge features (each parameter's position, its square, its one-hot value, pairwise products), which is a
Bayesian ridge regression of the multiplicative trends GPU landscapes follow (tile size × warps ×
stages). The length scales, the noise and the weight of the linear part maximize the marginal likelihood
over small grids, refitted as the data grows. ``model="ridge"`` keeps the plain ridge regression alone:
it extrapolates a global trend well but cannot bend to local structure. On the 216-config synthetic
matmul at a 25% budget it ended more than 2% off the best in 11 of 20 runs (p90 1.058), the GP in 9
(p90 1.039) (``benchmarks/search_eval.py --synthetic``).

Times above the median are capped before the fit: on the recorded H200 matmul, 5-10x register-spill
cliffs otherwise bent the model away from the fast big-tile corner. A ridge model of the failures seen
so far steers away from regions that fail to compile or launch. The search starts with a balanced
space-filling design: each pick repeats the values (and pairs of values) already chosen as little as
possible, the farthest such config first, so the start samples the middle values of every parameter
(BLOCK=128 of 64..256) and not only the grid's corners, where GPU cliffs live. After it, each ask takes
the unmeasured candidate the model ranks fastest among the moves (one or two axes at once, diagonals
included) around the best three configs found, every third ask the global model optimum instead, and a
seeded share of asks stays random so that a wrong model cannot trap the search. The best config's swaps (its
BLOCK_M and BLOCK_N values exchanged: the transposed tile, :meth:`Grid.swaps`) are asked first, once each.
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
from tritune.errors import SearchError
from tritune.search.base import Observation, Strategy, quantile
from tritune.search.gp import (
    ALPHAS,
    LENGTH_SCALES,
    LINEAR_WEIGHTS,
    MODELS,
    NUGGETS,
    GaussianProcess,
    loo_error,
    matern52,
    ridge_fit,
    ridge_predict,
)
from tritune.search.grid import Grid
from tritune.space import Space

__all__ = [
    "ALPHAS",
    "LENGTH_SCALES",
    "LINEAR_WEIGHTS",
    "MODELS",
    "NUGGETS",
    "GaussianProcess",
    "SurrogateSearch",
    "balanced_design",
    "loo_error",
    "matern52",
    "ridge_fit",
    "ridge_predict",
]


def balanced_design(
    grid: Grid, unit: np.ndarray, chosen: Sequence[int], free: np.ndarray, rng: np.random.Generator
) -> int:
    """The next start config: the fewest repeats of values (and value pairs) already chosen, then the farthest.

    ``free`` are the eligible candidate indices and ``chosen`` those already picked. Each parameter value a
    candidate shares with a chosen config counts 1 and each shared pair of values 2; among the least
    repeating candidates the one farthest (L1, unit coordinates) from every chosen config wins, ties drawn
    with ``rng``. Unlike a pure maximin design this covers the middle values of each parameter.
    """
    if not chosen:
        return int(rng.choice(free))
    sel = np.asarray(chosen, dtype=np.int64)
    # Counted per value (and per pair of values) with bincount, not per (candidate, chosen) pair: the
    # same numbers, in O((candidates + chosen) x pairs of axes) instead of O(candidates x chosen x axes).
    cf, cs = grid.coords[free], grid.coords[sel]
    repeats = np.zeros(len(free))
    for a, size_a in enumerate(grid.sizes):
        repeats += np.bincount(cs[:, a], minlength=size_a)[cf[:, a]]
        for b in range(a + 1, grid.dims):
            size_b = grid.sizes[b]
            pairs = np.bincount(cs[:, a] * size_b + cs[:, b], minlength=size_a * size_b)
            repeats += 2.0 * pairs[cf[:, a] * size_b + cf[:, b]]
    uf, us = unit[free], unit[sel]
    distance = np.zeros((len(free), len(sel)))
    for a in range(unit.shape[1]):  # axis by axis: no (candidates x chosen x axes) temporary
        distance += np.abs(uf[:, a, None] - us[None, :, a])
    distance = distance.min(axis=1)
    score = repeats - 1e-3 * distance  # distance < dims <= 1000 x the smallest repeat step
    return int(rng.choice(free[score <= score.min() + 1e-9]))


class SurrogateSearch(Strategy):
    """Model-guided search with a surrogate of log(time), refined around the best few configs.

    ``model``: ``"gp"`` (default: Gaussian process, Matérn plus Bayesian ridge kernel) or ``"ridge"``
    (ridge regression alone, faster and cruder); ``initial``: configs of the space-filling start before
    the model is trusted (default ``max(8, 2 * dims, 4% of the candidates)``); ``explore``: share of
    later asks drawn at random; ``top``: how many of the best configs the local step refines around;
    ``global_every``: every that many model-guided asks, take the model's optimum over the whole space
    instead of the local one; ``reach``: how many axes one local move may change at once (2 adds the
    diagonal moves such as BLOCK_M/2 with BLOCK_N*2, or BLOCK_K*2 with one stage less); ``spread``: start
    with a balanced space-filling design rather than uniform random; ``clip``: a quantile (<= 1) of the
    measured log times, or a factor (> 1) over the best time, above which times are capped before
    fitting, so that cliffs (register spills, 10x slow configs) do not bend the model where the fast
    configs are; ``alpha``: ridge penalty (of the ridge model and of the failure model), or ``None`` to
    choose it at each fit by leave-one-out error among :data:`ALPHAS` (the failure model then uses 1);
    ``diversity``: how strongly each pick of one batch pushes the next picks away from its neighbourhood
    (a share of the scores' spread; 0 gives the plain model ranking); ``pick``: ``"min"`` reports the
    lowest measured time, ``"model"`` the tie (times inside the best's interval) the model ranks
    fastest; ``noise_aware``: use told intervals (a nugget floor of the measured noise, and local moves
    around every tie); ``pattern_every``: every that many guided asks, a one-axis move from the best
    whatever the model says (0: never); ``smooth``: with noisy measurements (told intervals), rank
    the measured configs by the model's mean there rather than by their raw times when choosing the
    centres of the local and pattern steps, so a lucky draw does not steer the search; ``kappa``: on
    global steps, minimize the model's mean minus ``kappa`` posterior standard deviations (a lower
    confidence bound; 0 is the mean alone); ``cover``: a share of the guided asks (0 to 1) that goes to
    a per-axis stratified pick instead, the config whose values were asked least so far on every axis
    (an exploration floor that reaches edges and isolated optima; 0, off, by default: it did not beat the default on
    ``benchmarks/search_eval.py``'s suites); ``probe``: a share (0 to 1) of the finalists' reserve (:meth:`finals`,
    called by the simulator's race before the ties are re-measured, and by the tuning driver once the rest of the
    budget is spent) spent on untried configs one local move from a tie, the model's fastest first, so an isolated
    optimum next to the ties is measured rather than the ties re-timed (0, off, by default); ``sweep``: a share (0
    to 1) of the guided asks that go to the model's fastest untried one-axis move from the best config (from the
    next best once the best has none left): a trust region around the incumbent, for an optimum one move from it
    that the model ranks below moves around the other top configs (0, off, by default: over 40 seeds ``sweep=0.34``
    met the targets on as many recorded rows and more held-out ones, but was worse than random on more rows);
    ``swap``: the untried swaps (:meth:`Grid.swaps`: the values of two tile axes exchanged, BLOCK_M=256, BLOCK_N=128
    -> BLOCK_M=128, BLOCK_N=256) of the best ``swap`` configs are asked before the other guided picks, the model's
    fastest first, so a transposed basin is one move away: on the recorded matmul 4096 runs ended at the transposed
    tile (1.072) beside the best, a two-axis move of two grid steps the local step ranks low next to the
    BLOCK_M=BLOCK_N=256 spill cliff (1, the best config's swaps, by default: over 40 seeds at a 25% budget it met
    the targets on as many rows as ``swap=0``, 27 of 30 recorded and 25 of 38 held out, none lost and none newly
    worse than random, and narrowed the p90 of recorded matmul 4096 from 1.072-1.073 to 1.052-1.057 (still a miss)
    and of matmul 8192x1024x4096 from 1.019-1.038 to 1.007-1.017; it changes nothing on spaces without two tile axes
    sharing values, such as gelu and layernorm); ``polish``: a share (0 to 1) of the finalists' reserve
    (:meth:`finals`; the tuning driver holds one back once this is > 0) spent on the untried one-axis moves and
    swaps of the incumbent, the fastest measured config (of the next fastest once it has none left), the model's
    fastest first: a last local check around the config the final race leads with (0, off, by default: with
    ``swap=0`` over 40 seeds it met the targets on 28 of 38 held-out rows against 25, three fitted matmul rows whose
    worst runs ended beside an isolated optimum going from p90 1.42-1.54 to 1.000, and on 27 of 30 recorded rows as
    without it, but it lost one held-out row, an 80-config gelu space where 3 of 20 evaluations no longer explore,
    p90 1.031 -> 1.121, and with ``swap=1`` it was worse than random on one more held-out row); ``swap_reach``:
    where swaps are asked (``swap`` > 0) and the grid has swap axes, the local step's ``reach`` becomes this (1 by
    default; 0 leaves ``reach`` as given: with ``reach=2``, on the recorded matmul 4096 every run that ended more
    than 2% off the best (27 of 120: 40 seeds x 3 noise levels) never measured the best, a one-axis move (one stage
    less) of a config it had often measured, likely ranked below the diagonal moves of ``reach=2``; ``reach=1``
    everywhere took that row's p90 at 0/1/2% from 1.052/1.052/1.057 to 1.000/1.000/1.052 but was worse than random
    on a held-out layernorm row (no swap axes); ``swap_reach=1`` keeps those rows as the default and, over 40 seeds,
    met 29 of 30 recorded rows and 27 of 38 held out (``swap_reach=0``: 27 and 25), none lost and no new row worse
    than random, but matmul 4096 at 2% still misses (p90 1.052) and matmul 8192x1024x4096's p90 at 1-2% rises from
    1.007-1.017 to 1.038-1.042, still met; the default because more rows met and none was lost); ``tile_per_warp``:
    give the Gaussian process one more input, the output tile per warp (:meth:`Grid.tile_per_warp`: log2 of BLOCK_M
    x BLOCK_N / num_warps, the accumulator's registers per thread), where the grid has a 2-D tile and varying warps:
    a matmul's register-spill cliff (BLOCK_M=128, BLOCK_N=256 fast with 8 warps, 5-8x slower with 4, like
    BLOCK_M=BLOCK_N=256 with 8) runs along that diagonal, which an axis-aligned length scale cannot follow (True by
    default: with it the recorded matmul 4096's p90 at 2% over seeds 0-19 went from 1.052 to 1.005 and a held-out
    fitted matmul's at 0-1% from 1.396 to 1.040; over 400 fresh seeds its runs more than 2% off went 38/42/53 ->
    38/35/46 at 0/1/2%, and on two H100 recordings of the same kernel 41/19/30 -> 30/15/30 and 46/15/16 -> 36/11/24;
    grids without a 2-D tile, gelu and layer norm, are unchanged; docs/search.md, "Kernel knowledge enters as grid
    geometry").

    Defaults were chosen by benchmarks/search_eval.py at 0-2% replay noise, with the interval-aware
    race of the finalists: pattern steps every 3rd guided ask met the targets on more development
    landscapes (recorded and fitted) but on fewer held-out ones (fitted with unseen seeds), so they stay
    off; smoothed centres and ``kappa`` changed neither count; smoothing stays on, as it does not chase noise.
    """

    name = "surrogate"

    def __init__(
        self,
        space: Space,
        *,
        seed: int = 0,
        illegal: Iterable[Any] = (),
        model: str = "gp",
        initial: int | None = None,
        explore: float = 0.1,
        top: int = 3,
        global_every: int = 3,
        clip: float | None = 0.5,
        spread: bool = True,
        reach: int = 2,
        alpha: float | None = None,
        diversity: float = 0.5,
        pick: str = "min",
        noise_aware: bool = True,
        pattern_every: int = 0,
        kappa: float = 0.0,
        smooth: bool = True,
        cover: float = 0.0,
        probe: float = 0.0,
        sweep: float = 0.0,
        swap: int = 1,
        polish: float = 0.0,
        swap_reach: int = 1,
        endgame: float = 0.0,
        tile_per_warp: bool = True,
    ) -> None:
        super().__init__(space, seed=seed, illegal=illegal)
        if model not in MODELS:
            raise SearchError(f"surrogate model {model!r} is not one of {', '.join(MODELS)}")
        self.model = model
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
        if isinstance(swap_reach, bool) or int(swap_reach) < 0:
            raise SearchError(f"surrogate swap_reach={swap_reach!r} must be 0 (off) or a reach >= 1")
        self.swap_reach = int(swap_reach)
        self.alpha = None if alpha is None else float(alpha)
        self.diversity = float(diversity)
        if pick not in ("min", "model"):
            raise SearchError(f"surrogate pick={pick!r} must be 'min' or 'model'")
        self.pick = pick
        self.noise_aware = bool(noise_aware)
        self.pattern_every = max(0, int(pattern_every))
        self.kappa = float(kappa)
        self.smooth = bool(smooth)
        if not 0.0 <= float(cover) <= 1.0:
            raise SearchError(f"surrogate cover={cover!r} must be a share of the asks in [0, 1]")
        self.cover = float(cover)
        if not 0.0 <= float(probe) <= 1.0:
            raise SearchError(
                f"surrogate probe={probe!r} must be a share of the finalists' reserve in [0, 1]"
            )
        self.probe = float(probe)
        if not 0.0 <= float(sweep) <= 1.0:
            raise SearchError(f"surrogate sweep={sweep!r} must be a share of the guided asks in [0, 1]")
        self.sweep = float(sweep)
        if isinstance(swap, bool) or not isinstance(swap, int) or swap < 0:
            raise SearchError(f"surrogate swap={swap!r} must be how many of the best configs (an integer >= 0)")
        self.swap = swap
        if self.swap_reach and self.swap > 0 and self.grid.swap_axes:
            # Swaps reach the transposed tile that diagonal moves would; the local step keeps to one-axis moves.
            self.reach = self.swap_reach
        if not 0.0 <= float(polish) <= 1.0:
            raise SearchError(
                f"surrogate polish={polish!r} must be a share of the finalists' reserve in [0, 1]"
            )
        self.polish = float(polish)
        self._polishing = 0
        if not 0.0 <= float(endgame) <= 1.0:
            raise SearchError(
                f"surrogate endgame={endgame!r} must be a share of the finalists' reserve in [0, 1]"
            )
        self.endgame = float(endgame)
        self._ending = 0
        self._swept = 0
        self._probing = 0
        self._covered = 0
        self._sd = np.zeros(len(self.candidates))
        scale = np.array([max(1, s - 1) for s in self.grid.sizes], dtype=float)
        self._unit = self.grid.coords / scale if self.grid.dims else np.zeros((n, 0))
        if not isinstance(tile_per_warp, bool):
            raise SearchError(f"surrogate tile_per_warp={tile_per_warp!r} must be True or False")
        per_warp = self.grid.tile_per_warp() if tile_per_warp else None
        #: The Gaussian process's inputs: the unit grid, plus the output tile per warp where a 2-D tile has one.
        self.tile_per_warp = per_warp is not None
        gp_unit = self._unit if per_warp is None else np.hstack([self._unit, per_warp[:, None]])
        self._gp = GaussianProcess(gp_unit, self._x) if model == "gp" else None
        self._measured: dict[int, float] = {}
        self._failed: set[int] = set()
        self._guided = 0
        self._prior: np.ndarray | None = None

    def set_prior(self, log_times: np.ndarray) -> None:
        """A prior log time for every candidate (other keys' landscape: :mod:`tritune.search.transfer`)."""
        prior = np.asarray(log_times, dtype=float)
        if prior.shape != (len(self.candidates),) or not np.isfinite(prior).all():
            raise SearchError(
                f"{self.name}: a prior needs one finite log time per candidate ({len(self.candidates)}), "
                f"got shape {prior.shape}"
            )
        self._prior = prior

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
            cap = quantile(y, self.clip) if self.clip <= 1 else y.min() + math.log(self.clip)
            y = np.minimum(y, cap)
        x = self._x[idx]
        alpha = self.alpha
        base = np.zeros(len(self.candidates))
        if self._prior is not None and len(y) >= 2:
            # Transfer: the model learns this key's departure from the prior (other keys' landscape),
            # after a least-squares scale and shift of the prior to this key's times.
            p = self._prior[idx]
            slope = float(np.clip(np.polyfit(p, y, 1)[0], 0.2, 2.0)) if np.ptp(p) > 1e-9 else 1.0
            base = slope * self._prior
            y = y - base[idx]
        if self._gp is not None:
            sigma = self.noise / 1.96 if self.noise_aware else 0.0  # the interval's half-width, as a std
            want = self.kappa > 0
            score = base + self._gp.predict(idx, y, noise_var=sigma * sigma, with_std=want)
            sd = self._gp.last_std
            self._sd = sd if sd is not None else np.zeros(len(self.candidates))
        else:
            if alpha is None:
                alpha = min(ALPHAS, key=lambda a: loo_error(x, y - y.mean(), a))
            w = ridge_fit(x, y - y.mean(), alpha)
            score = base + ridge_predict(w, self._x) + y.mean()
        if self._failed:
            told = np.concatenate([idx, np.fromiter(self._failed, dtype=np.int64)])
            fail = np.concatenate([np.zeros(len(idx)), np.ones(len(self._failed))])
            wf = ridge_fit(self._x[told], fail, 1.0 if alpha is None else alpha)
            p_fail = np.clip(ridge_predict(wf, self._x), 0.0, 1.0)
            score = score + 2.0 * p_fail * max(float(y.std()), 0.1)
        return score

    def _space_filling(self, n: int) -> list[int]:
        """``n`` unasked configs of the balanced space-filling design (:func:`balanced_design`)."""
        out: list[int] = []
        asked = [int(i) for i in np.flatnonzero(self._asked)]
        for _ in range(n):
            free = np.flatnonzero(~self._asked)
            free = free[~np.isin(free, out)]
            if len(free) == 0:
                break
            if self.spread:
                out.append(balanced_design(self.grid, self._unit, asked + out, free, self.rng))
            else:
                out.append(int(self.rng.choice(free)))
        return out

    def _stratified(self, free: np.ndarray) -> int:
        """A free candidate whose axis values were asked least often so far (per-axis stratification).

        Each candidate scores the sum over axes of how often its value on that axis was asked, each
        axis's counts scaled by its number of values, so a rare edge value (BLOCK_N=16 of 16..256) is
        asked as often as any other; ties are drawn with the seeded generator. O(candidates x axes).
        """
        cand = np.flatnonzero(free)
        if self.grid.dims == 0:
            return int(self.rng.choice(cand))
        asked = self.grid.coords[self._asked]
        score = np.zeros(len(cand))
        for a, size in enumerate(self.grid.sizes):
            counts = np.bincount(asked[:, a], minlength=size).astype(float) if len(asked) else np.zeros(size)
            score += counts[self.grid.coords[cand, a]] * size
        return int(self.rng.choice(cand[score <= score.min() + 1e-9]))

    def _local(self, best_first: list[int]) -> np.ndarray:
        """Unasked candidates within one grid step on every axis at once (diagonals too) of ``best_first``."""
        near = np.zeros(len(self.candidates), dtype=bool)
        for i in best_first:
            step = np.abs(self.grid.coords - self.grid.coords[i])
            near |= (step.max(axis=1) <= 1) & (step.sum(axis=1) <= self.reach)
            near[self.grid.neighbours(i)] = True  # the axis moves that jump over illegal gaps
        return near & ~self._asked

    def _sweep_pick(self, best_first: list[int], free: np.ndarray, acq: np.ndarray) -> int | None:
        """A sweep step (``sweep``): the free one-axis move (:meth:`Grid.neighbours`) from the first config of
        ``best_first`` that has one left, the lowest ``acq`` (the model's score plus the batch's penalty)
        among them; None when no config of ``best_first`` has an untried one-axis neighbour."""
        for i in best_first:
            step = np.zeros(len(self.candidates), dtype=bool)
            step[self.grid.neighbours(i)] = True
            cand = np.flatnonzero(step & free)
            if len(cand):
                return int(cand[np.argmin(acq[cand])])
        return None

    def finals(self, reserve: int) -> int:
        """Before the finalists' race: with ``probe`` > 0, ask up to a share ``probe`` of ``reserve`` of
        untried neighbours of the ties (one local move, diagonals included, as the local step) rather
        than spend the whole reserve re-measuring configs that differ by less than the noise. Each probe
        is the model's fastest such neighbour of the ties as they stand after the previous probes. With
        ``polish`` > 0, a share ``polish`` of what the probes leave goes to the incumbent's untried one-axis
        moves and swaps (:meth:`_polish_batch`). Returns how many it plans (fewer are asked when none is
        left); what it does not plan goes to the ordinary asks."""
        self._probing = self._polishing = self._ending = 0
        if reserve < 1 or len(self._measured) < 3:
            return 0
        self._probing = min(reserve, math.floor(self.probe * reserve))
        self._polishing = min(reserve - self._probing, math.floor(self.polish * reserve))
        self._ending = min(reserve - self._probing - self._polishing, math.floor(self.endgame * reserve))
        return self._probing + self._polishing + self._ending

    def _probe_picks(self, n: int) -> list[int]:
        """Up to ``n`` untried neighbours of the ties, the model's fastest first (see :meth:`finals`)."""
        ties = [self.index[o.config] for o in self.ties()[: 2 * self.top]]
        cand = np.flatnonzero(self._local(ties))
        if len(cand) == 0:
            self._probing = 0
            return []
        score = self._scores()
        picks = [int(i) for i in cand[np.argsort(score[cand], kind="stable")][: min(n, self._probing)]]
        self._probing -= len(picks)
        return picks

    def wants_finals(self) -> bool:
        """With ``probe`` or ``polish`` > 0: the tuning driver then holds back the finalists' reserve for
        :meth:`finals`."""
        return self.probe > 0 or self.polish > 0 or self.endgame > 0

    def _ranked(self, score: np.ndarray) -> list[int]:
        """The measured configs, fastest first: by measured time, or with noisy times (``smooth``) by the
        model's mean there, which pools each config's neighbours so that a lucky draw does not lead."""
        if self.smooth and self.noise > 0:
            return sorted(self._measured, key=lambda i: float(score[i]))
        return sorted(self._measured, key=self._measured.__getitem__)

    def _moves(self, i: int) -> list[int]:
        """The one-axis moves (:meth:`Grid.neighbours`) and the swaps (:meth:`Grid.swaps`) of ``i``."""
        return list(dict.fromkeys(self.grid.neighbours(i) + self.grid.swaps(i)))

    def _polish_batch(self, n: int) -> list[Config] | None:
        """While a polish is planned (:meth:`finals`): up to ``n`` untried one-axis moves and swaps of the
        incumbent, the fastest measured config (of the next fastest once it has none left), the model's
        fastest first; None when none is planned or left."""
        if self._polishing <= 0:
            return None
        score = self._scores()
        out: list[int] = []
        # Centred on the fastest measured configs, not the model's ranking (``smooth``): the tuner's final
        # race leads with the fastest measured, so its neighbours are the ones a last check should settle.
        for i in sorted(self._measured, key=self._measured.__getitem__):
            if len(out) >= min(n, self._polishing):
                break
            cand = [j for j in self._moves(i) if not self._asked[j] and j not in out]
            cand.sort(key=lambda j: float(score[j]))
            out += cand[: min(n, self._polishing) - len(out)]
        if not out:
            self._polishing = 0
            return None
        self._polishing -= len(out)
        return self._with_guided(out, n)

    def _endgame_centres(self) -> list[int]:
        """The end-game's centres: the configs tied with the best (their measured time inside the best's
        interval), fastest measured first, then the next fastest measured configs up to ``top`` centres in all
        (without noise nothing ties, so the end-game still looks around more than the incumbent)."""
        tied = sorted((self.index[o.config] for o in self.ties()), key=self._measured.__getitem__)
        rest = sorted(self._measured, key=self._measured.__getitem__)
        return list(dict.fromkeys(tied + rest[: max(0, self.top - len(tied))]))

    def _endgame_picks(self, n: int) -> list[int]:
        """Up to ``n`` untried one-axis moves (:meth:`Grid.neighbours`) of the end-game's centres
        (:meth:`_endgame_centres`), taken in rounds: each round gives every centre in turn, fastest measured first,
        its untried move the model ranks fastest, so a needle one move from a tie the model ranks low is still
        asked when another tie's neighbours rank higher."""
        score = self._scores()
        left = {i: sorted((j for j in self.grid.neighbours(i) if not self._asked[j]), key=lambda j: float(score[j]))
                for i in self._endgame_centres()}
        out: list[int] = []
        while len(out) < n and any(left.values()):
            for moves in left.values():
                while moves and moves[0] in out:
                    moves.pop(0)
                if moves and len(out) < n:
                    out.append(moves.pop(0))
        return out

    def _endgame_batch(self, n: int) -> list[Config] | None:
        """While an end-game is planned (:meth:`finals`, ``endgame``): up to ``n`` of :meth:`_endgame_picks`, guided
        picks after them; None when none is planned or the centres have no untried one-axis move left."""
        if self._ending <= 0:
            return None
        out = self._endgame_picks(min(n, self._ending))
        if not out:
            self._ending = 0
            return None
        self._ending -= len(out)
        return self._with_guided(out, n)

    def _swap_pick(self, centres: list[int], free: np.ndarray, acq: np.ndarray) -> int | None:
        """A swap step (``swap``): the free swap (:meth:`Grid.swaps`) of any config of ``centres`` with the
        lowest ``acq``; None when they have none untried."""
        cand = [j for i in centres for j in self.grid.swaps(i) if free[j]]
        return min(cand, key=lambda j: float(acq[j])) if cand else None

    def _probe_batch(self, n: int) -> list[Config] | None:
        """While probes are planned (:meth:`finals`): ``n`` asks, the probes first and guided picks after them;
        None when no probe is planned or the ties have no untried neighbour left."""
        if self._probing <= 0:
            return None
        picks = self._probe_picks(n)
        if not picks:
            return None
        return self._with_guided(picks, n)

    def _with_guided(self, picked: list[int], n: int) -> list[Config]:
        """The finals' picks (indices into ``candidates``), then guided picks up to ``n`` asks in all."""
        picks = [self.candidates[i] for i in picked]
        return picks + (self._propose_guided(n - len(picks), picks) if n > len(picks) else [])

    def _finals_batch(self, n: int) -> list[Config] | None:
        """While the finals reserve is being spent (:meth:`finals`): the probes' batch, else the polish's; None
        when neither is planned or left."""
        probes = self._probe_batch(n)
        if probes is not None:
            return probes
        polish = self._polish_batch(n)
        return polish if polish is not None else self._endgame_batch(n)

    def _propose(self, n: int) -> Sequence[Config]:
        finals = self._finals_batch(n)
        if finals is not None:
            return finals
        if len(self._measured) + len(self._failed) < max(2, self.initial) or len(self._measured) < 3:
            return [self.candidates[i] for i in self._space_filling(n)]
        return self._propose_guided(n)

    def _propose_guided(self, n: int, exclude: Sequence[Config] = ()) -> list[Config]:
        """``n`` model-guided picks (local, global, a seeded share random), none of ``exclude``."""
        skip = [self.index[c] for c in exclude]
        score = self._scores()
        # Around the best few, and around every config tied with the best when measurements are noisy:
        # a tie is as likely the true best as the lowest median is.
        tied = [self.index[o.config] for o in self.ties()[: 2 * self.top]] if self.noise_aware else []
        ranked = self._ranked(score)
        best_first = list(dict.fromkeys(ranked[: self.top] + tied))
        local = self._local(best_first)
        # A batch spreads out: each pick raises the score of candidates near it (local penalization),
        # so ask(16) is not 16 configs of one neighbourhood when the pool has other good regions.
        bump = self.diversity * max(float(np.std(score)), 1e-3)
        penalty = np.zeros(len(self.candidates))
        out: list[int] = []
        while len(out) < n:
            free = ~self._asked
            free[out] = False
            free[skip] = False
            if not free.any():
                break
            if self.cover > 0 and self._covered < self.cover * (self._guided + self._covered + 1):
                # The coverage share: a fixed fraction of the guided asks goes to the least covered
                # values of every axis (random's strength: edges and isolated optima get sampled).
                self._covered += 1
                out.append(self._stratified(free))
            elif self.swap > 0 and (pick := self._swap_pick(ranked[: self.swap], free, score + penalty)) is not None:
                # The swap step: the transposed tile of one of the best configs (BLOCK_M <-> BLOCK_N), a
                # move the model's local step ranks low next to the cliffs between the two basins.
                out.append(pick)
            elif self.rng.random() < self.explore:
                out.append(int(self.rng.choice(np.flatnonzero(free))))
            elif (
                self.sweep > 0
                and self._swept < self.sweep * (self._guided + self._swept + 1)
                and (pick := self._sweep_pick(best_first, free, score + penalty)) is not None
            ):
                # The sweep share: the model's fastest untried one-axis move from the best config, even when
                # it ranks moves around the next best higher (a trust region around the incumbent).
                self._swept += 1
                out.append(pick)
            else:
                self._guided += 1
                go_global = self.global_every > 0 and self._guided % self.global_every == 0
                pool = free if go_global or not (local & free).any() else local & free
                if self.pattern_every > 0 and self._guided % self.pattern_every == 0:
                    # A pattern step: a one-axis move from the best config whatever the model thinks of
                    # it, so an optimum at an edge the model extrapolates badly is still reached.
                    step = np.zeros(len(self.candidates), dtype=bool)
                    step[self.grid.neighbours(best_first[0])] = True
                    if (step & free).any():
                        pool = step & free
                cand = np.flatnonzero(pool)
                # On global steps, optionally a lower confidence bound: unexplored regions get credit.
                acq = score[cand] + penalty[cand] - (self.kappa if go_global else 0.0) * self._sd[cand]
                out.append(int(cand[np.argmin(acq)]))
            if n > 1:
                r2 = (((self._unit - self._unit[out[-1]]) / 0.25) ** 2).sum(axis=1)
                penalty += bump * matern52(r2)
        return [self.candidates[i] for i in out]

    def best(self) -> Observation | None:
        """The fastest measured config; among configs tied with it (overlapping intervals), the model's pick.

        With noisy measurements the lowest median is often a lucky draw. The model's posterior mean at a
        measured config pools its neighbours' measurements (the measured noise is a floor on the nugget),
        so among the ties the one the model ranks fastest is the better bet. Without intervals nothing
        ties and this is the plain fastest.
        """
        ties = self.ties()
        if self.pick != "model" or len(ties) < 2 or self._gp is None or len(self._measured) < 3:
            return super().best()
        score = self._scores()
        return min(ties, key=lambda o: (float(score[self.index[o.config]]), o.time_ms or 0.0))
