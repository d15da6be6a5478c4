"""Transfer between keys: start a new key's search from the results of the kernel's tuned keys.

A kernel tuned at M=N=K=4096 and 8192 has most of its landscape in common with 6144: the same tiles
spill, the same stages run out of shared memory, the winners are neighbours. :class:`TransferSearch`
uses the tuned keys twice:

1. **Their winners first, with their close variants.** The nearest key's winner is measured first, then
   the other keys' winners, then the winners' variants along cheap axes (one grid step on one axis that
   keeps the tile: ``maxnreg`` on/off, ``num_stages`` +-1, ``GROUP_M``, warps, epilogue subtiling; the
   axes not named ``BLOCK*``/``BM``/``BN``/``BK``), at most two thirds of the rest of the warm start,
   then the configs the prior ranks fastest, up to ``warm`` configs. A variant the neighbours measured is
   ranked by their times (and left out when they found it more than 10% slower than the winner); one
   they never measured is ranked just behind its winner (:data:`VARIANT_PENALTY`). At a new size the best config is often the neighbours' winner with one
   launch option changed (6144^3 on the H200: their winner without its register cap), and the race,
   not the prior, must decide among them.
2. **A small first batch, then stop if it confirms them** (``first=``, what the tuning loop's default
   transfer uses): the first batch is the winners and the configs the neighbours measured fastest (by the
   prior), at most ``first`` of them: on a machine that tuned the neighbours, their binaries are in
   Triton's cache, so the batch costs loads and a race, not compiles. When the race of that batch puts a
   neighbour's winner first, or tied with the first (inside its interval: ties are ties),
   :meth:`TransferSearch.confirmed` says so and the driver stops (``stopped: confirmed``). When a winner is
   behind by more, up to 15%, the tuner races the best and the winners again from fresh samples (the check race,
   :meth:`~tritune.search.SearchDriver.check_field`, :data:`tritune.engine.finals.CHECK_WINNERS_WITHIN`: one
   look moves near-tied configs by 1-3%, and a GPU whose clocks settle under load by up to 13%), and that race
   alone decides again (:meth:`confirmed_by`; :meth:`confirming` names the winners); otherwise the search goes
   on with the variants and the model's picks.

   **After an unconfirmed opening, cached configs first?** (``cached_next=True``, off by default.) The next
   ask then takes, before anything else, the unasked configs some neighbour measured (binaries in the tuning
   machine's Triton cache), fastest by the prior first, at most as many as the opening held; then the warm
   start's rest (the variants) and the model's picks as without it. On an H200 (6144^3 after 3 tuned keys,
   1,672 configs) 2 of 6 openings did not confirm, and the second batch's compiles (0.67 s) took the
   transfer from 0.66-0.81 s to 1.47-1.57 s. Replayed without and with the rule (SYNTHETIC fitted families,
   440 runs per noise level): runs with a compile after the opening went from
   14/10/9% (0/1/2% noise) to none, configs measured the same (11.1/10.5/10.2), but quality was worse: p90
   1.086/1.088/1.088 -> 1.093/1.095/1.093, and 14/12/15 runs worse against 1/1/3 better, nearly all on the
   large host-descriptor matmul family, the one like the H200's: there the nearest winner's unmeasured cheap
   variants beat the opening's best even when that winner was up to 18%
   behind it, and the neighbours' other recorded configs were 5-50% slower (that family alone, 100 runs: median
   1.054/1.054/1.065 -> 1.071/1.072/1.079, p90 1.143/1.143/1.174 -> 1.169/1.155/1.174). So the rule is off by
   default, on the replay's evidence. Ranking the cached configs by the model (prior plus the opening's
   departures, :data:`CACHED_RANK`) instead of the prior was no better.
3. **Their landscape as the model's prior.** Each tuned key's times, relative to its own best, are
   averaged (weighted by ``1 / (1 + distance)`` in log2 key space) into a prior log time per candidate;
   the surrogate then models only this key's departure from that prior (see
   :meth:`SurrogateSearch.set_prior`), so a few measurements place the whole landscape.

    neighbours = [KeyResults({"M": 4096}, {cfg: ms, ...}), ...]
    search = TransferSearch(space, key={"M": 6144}, neighbours=neighbours, seed=0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tritune.config import Config, as_config
from tritune.errors import SearchError
from tritune.search.base import median, quantile
from tritune.search.grid import Grid, is_tile_axis
from tritune.search.surrogate import SurrogateSearch
from tritune.space import Space

#: The prior log time of a winner's variant the neighbours never measured: its winner's, plus this (3%).
VARIANT_PENALTY = 0.03
#: A variant the neighbours measured more than this (log, ~10%) slower than its winner is left out.
VARIANT_SLOWER = math.log(1.10)
#: A neighbour's winner this close to the first batch's best (relative) confirms the transfer: the race's
#: resolution, within which tuning reports configs as tied. A batch of long kernels can time intervals much
#: narrower than that: on an H200 a 6144^3 transfer whose 3 neighbours had picked 3 near-tied
#: winners (EPILOGUE_SUBTILE 1/2, maxnreg on/off) confirmed none of them and spent a second, compiled batch
#: (transfer 1.91 s against 1.06-1.14 s confirmed), for the same quality. Replayed (30 fitted families x 4
#: keys x 5 seeds, SYNTHETIC): at 1% noise no change; at 0.2% noise 56% of transfers
#: confirmed against 52%, 11.5 configs measured against 11.8, quality the same (median 1.000, p90 1.069).
CONFIRM_TOL = 0.01
#: How ``cached_next`` ranks the recorded configs after the opening: ``"prior"``, or ``"model"`` (the surrogate's
#: score: the prior scaled to this key plus the departures the opening measured); the same on the replay (module
#: docstring, 2.).
CACHED_RANK = "prior"


@dataclass(frozen=True)
class KeyResults:
    """One tuned key of the kernel: its key values, every config's measured time in ms (failures as
    ``None``) and, when known, the winner its tuning picked (``best``: the race's and tie rule's choice,
    which may differ from the smallest stored median)."""

    key: Mapping[str, Any]
    times: Mapping[Config, float | None] = field(default_factory=dict)
    best: Config | None = None

    def winner(self) -> Config | None:
        if self.best is not None:
            return as_config(self.best)
        ok = [(t, c.id, c) for c, t in self.times.items() if t is not None]
        return min(ok)[2] if ok else None


def cheap_variants(grid: Grid, i: int) -> list[int]:
    """The candidates one grid step from candidate ``i`` along one non-tile axis (jumping over gaps)."""
    out: list[int] = []
    for dim, name in enumerate(grid.names):
        if is_tile_axis(name):
            continue
        for direction in (-1, 1):
            j = grid.step(i, dim, direction)
            if j is not None and j != i and j not in out:
                out.append(j)
    return out


def key_distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """Distance of two keys: summed |log2| ratios of their shared positive numeric values, 1 per other difference."""
    d = 0.0
    for name in set(a) | set(b):
        x, y = a.get(name), b.get(name)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x > 0 and y > 0:
            d += abs(math.log2(x) - math.log2(y))
        elif x != y:
            d += 1.0
    return d


def recorded_mask(neighbours: Sequence[KeyResults], index: Mapping[Config, int], n: int) -> np.ndarray:
    """Which of the ``n`` candidates (positions ``index``) some neighbour measured: on the machine that tuned
    them, the configs whose binaries Triton's cache holds (a failure, told as ``None``, counts as not measured)."""
    out = np.zeros(n, dtype=bool)
    for nb in neighbours:
        for c, t in nb.times.items():
            i = index.get(as_config(c))
            if i is not None and t is not None:
                out[i] = True
    return out


def first_batch(candidates: Sequence[Config], prior: np.ndarray, measured: np.ndarray, winners: Sequence[Config],
                size: int) -> list[Config]:  # fmt: skip
    """The transfer's first batch (module docstring, 2.): ``winners``, then the configs some neighbour measured
    (``measured[i]``), fastest by the ``prior`` first, ``size`` in all (the winners always, even if more)."""
    out = list(dict.fromkeys(winners))
    for i in np.argsort(prior, kind="stable"):
        if len(out) >= size:
            break
        c = candidates[int(i)]
        if measured[int(i)] and c not in out:
            out.append(c)
    return out


def prior_and_warm(
    candidates: Sequence[Config], key: Mapping[str, Any], neighbours: Sequence[KeyResults], warm: int,
    opening: int | None = None, grid: Grid | None = None, index: Mapping[Config, int] | None = None,
) -> tuple[np.ndarray, list[Config]]:
    """The prior log time of every candidate and the configs to measure first (see the module docstring).

    ``opening``: the warm start opens with :func:`first_batch` of that size (recorded configs only), then the
    variants and the prior's picks as without it. ``grid``: ``Grid(candidates)``, and ``index``: each
    candidate's position, when the caller has them."""
    if not neighbours:
        raise SearchError("transfer needs at least one tuned key (neighbours=[KeyResults(...), ...])")
    if index is None:
        index = {c: i for i, c in enumerate(candidates)}
    total = np.zeros(len(candidates))
    weight = np.zeros(len(candidates))
    ranked = sorted(neighbours, key=lambda n: key_distance(key, n.key))
    for nb in ranked:
        times = {as_config(c): t for c, t in nb.times.items()}
        ok = np.array([t for t in times.values() if t is not None], dtype=float)
        if len(ok) == 0:
            continue
        rel = np.log(ok) - math.log(ok.min())
        failed = quantile(rel, 0.9)  # a config that failed there is a poor bet here
        w = 1.0 / (1.0 + key_distance(key, nb.key))
        for c, t in times.items():
            i = index.get(c)
            if i is not None:
                total[i] += w * (failed if t is None else math.log(t) - math.log(ok.min()))
                weight[i] += w
    if not weight.any():
        raise SearchError("no tuned key measured any candidate of this space; nothing to transfer")
    unknown = median(total[weight > 0] / weight[weight > 0])
    prior = np.where(weight > 0, total / np.maximum(weight, 1e-12), unknown)
    measured = recorded_mask(neighbours, index, len(candidates))
    first: list[Config] = []
    for nb in ranked:
        won = nb.winner()
        if won is not None and as_config(won) in index and as_config(won) not in first:
            first.append(as_config(won))
    winners = list(first)
    # The winners' cheap variants, best estimate first (a variant the neighbours never measured sits just
    # behind its winner), at most two thirds of the rest of the warm start: the prior's picks get the rest.
    grid = grid if grid is not None else Grid(candidates)
    known = weight > 0
    est: dict[int, tuple[float, int]] = {}
    for rank, won in enumerate(first):
        w = index[won]
        for j in cheap_variants(grid, w):
            e = float(prior[j]) if known[j] else float(prior[w]) + VARIANT_PENALTY
            if known[j] and e > float(prior[w]) + VARIANT_SLOWER:
                continue  # the neighbours measured it clearly slower than the winner
            if candidates[j] not in first and (j not in est or (e, rank) < est[j]):
                est[j] = (e, rank)
    room = max(0, (2 * (warm - len(first))) // 3)
    for j in sorted(est, key=lambda j: (est[j], j))[:room]:
        first.append(candidates[j])
    for i in np.argsort(prior, kind="stable"):
        if len(first) >= warm:
            break
        if candidates[int(i)] not in first:
            first.append(candidates[int(i)])
    first = first[: max(warm, len(ranked))]
    if opening is not None:
        head = first_batch(candidates, prior, measured, winners, opening)
        first = head + [c for c in first if c not in head]
    return prior, first


class TransferSearch(SurrogateSearch):
    """The surrogate search, warm-started from other keys of the kernel (see the module docstring).

    ``key``: this key's values; ``neighbours``: the tuned keys' results; ``warm``: how many configs to
    measure before the model leads (default ``max(4, 2 x neighbours)``); ``first``: the size of the first
    batch of recorded configs, after which :meth:`confirmed` may end the search (module docstring, 2.;
    None: no such batch, the warm start opens with the winners' variants); ``cached_next``: once the opening is
    asked, the configs the neighbours measured come next, before any they never did (:meth:`cached_picks`;
    off by default: module docstring, 2.). Other options are the surrogate's.
    """

    name = "transfer"

    def __init__(
        self,
        space: Space,
        *,
        seed: int = 0,
        illegal: Iterable[Any] = (),
        key: Mapping[str, Any] | None = None,
        neighbours: Sequence[KeyResults] = (),
        warm: int | None = None,
        first: int | None = None,
        cached_next: bool = False,
        **options: Any,
    ) -> None:
        n_warm = max(4, 2 * len(neighbours)) if warm is None else int(warm)
        options.setdefault("initial", n_warm)
        # The surrogate's swap step (on by default) was evaluated on cold searches only; the transfer's
        # evaluation (search_eval.py --transfer) was made without it, so it stays off here unless asked.
        options.setdefault("swap", 0)
        # Likewise the tile-per-warp coordinate: the transfer's model is the prior plus this key's
        # departures from it, evaluated without that coordinate.
        options.setdefault("tile_per_warp", False)
        super().__init__(space, seed=seed, illegal=illegal, **options)
        if first is not None and (isinstance(first, bool) or not isinstance(first, int) or first < 1):
            raise SearchError(f"transfer: first={first!r} must be a positive number of configs")
        prior, start = prior_and_warm(self.candidates, dict(key or {}), list(neighbours), n_warm, opening=first,
                                      grid=self.grid, index=self.index)  # fmt: skip
        self.set_prior(prior)
        self.warm_start = tuple(start)
        #: The neighbours' winners (the transferred leaders) and the first batch :meth:`confirmed` waits for.
        self.leaders = frozenset(w for nb in neighbours if (w := nb.winner()) is not None and w in self.index)
        self.opening = tuple(start[:first]) if first is not None else ()  # what the driver sends first
        if not isinstance(cached_next, bool):
            raise SearchError(f"transfer: cached_next={cached_next!r} must be True or False")
        #: After the opening: the recorded configs, fastest by the prior, before any compile (module docstring, 2.).
        self.cached_next = cached_next
        #: Which candidates some neighbour measured (their binaries cached where the neighbours were tuned).
        self.recorded = recorded_mask(list(neighbours), self.index, len(self.candidates))
        self._cached_taken = 0

    def confirmed(self) -> bool:
        """Whether the first batch confirmed the transfer (module docstring, 2.): every config of it told, and a
        neighbour's winner is the best measured here or tied with it: its time inside the best's interval, or
        within :data:`CONFIRM_TOL` of the best's (the race's resolution, what tuning reports as a tie)."""
        if not self.opening or any(not self.is_asked(self.index[c]) or self.index[c] in self._pending
                                   for c in self.opening):  # fmt: skip
            return False
        best = self.best()
        if best is None or best.time_ms is None:
            return False
        return self._leader_tied(best.time_ms, self.interval(best)[1],
                                 ((o.config, o.time_ms) for o in self.history if o.ok and o.time_ms is not None))

    def confirmed_by(self, looks: Mapping[Config, tuple[float, tuple[float, float] | None]]) -> bool:
        """Whether the check race (its configs' times, all taken together) puts a neighbour's winner first or tied
        with its first, by :meth:`confirmed`'s rule."""
        if not looks:
            return False
        best = min(looks, key=lambda c: (looks[c][0], self.index.get(c, -1)))
        t, ci = looks[best]
        return self._leader_tied(t, t if ci is None else ci[1], ((c, v[0]) for c, v in looks.items()))

    def _leader_tied(self, best_ms: float, best_high_ms: float, times: Iterable[tuple[Config, float]]) -> bool:
        """Whether a neighbour's winner among ``times`` ties with the best (``best_ms``, its interval's top
        ``best_high_ms``): its time inside that interval, or within :data:`CONFIRM_TOL` of the best's."""
        limit = max(best_high_ms, best_ms * (1 + max(CONFIRM_TOL, 0.0)))
        return any(c in self.leaders and t <= limit for c, t in times)

    def confirming(self) -> frozenset[Config]:
        """The neighbours' winners: a tie of one of them with the best confirms the transfer (:meth:`confirmed`)."""
        return self.leaders

    def cached_picks(self, n: int) -> list[Config]:
        """With ``cached_next``, once the opening is asked: up to ``n`` unasked configs some neighbour measured,
        fastest by the prior first, at most as many in all as the opening holds (module docstring, 2.); [] before
        the opening is asked, without ``cached_next``, or once those are asked. What it returns counts as taken."""
        if not self.cached_next or not self.opening or any(not self.is_asked(self.index[c]) for c in self.opening):
            return []
        room = min(n, len(self.opening) - self._cached_taken)
        if room <= 0:
            return []
        prior = self._prior if CACHED_RANK == "prior" or len(self._measured) < 3 else self._scores()
        assert prior is not None  # set in __init__
        out: list[Config] = []
        for i in np.argsort(prior, kind="stable"):
            if len(out) >= room:
                break
            if self.recorded[i] and not self.is_asked(int(i)):
                out.append(self.candidates[int(i)])
        self._cached_taken += len(out)
        return out

    def _propose(self, n: int) -> Sequence[Config]:
        finals = self._finals_batch(n)  # the finalists' probes and polish (:meth:`SurrogateSearch.finals`)
        if finals is not None:
            return finals
        out = self.cached_picks(n)
        out += [c for c in self.warm_start if not self.is_asked(self.index[c]) and c not in out][: n - len(out)]
        if len(out) < n:
            if len(self._measured) >= 3:
                out.extend(self._propose_guided(n - len(out), exclude=out))
            else:  # the warm start failed or is still out: fill without the model
                taken = set(out)
                free = [i for i in self.unasked() if self.candidates[i] not in taken]
                pick = self.rng.choice(free, size=min(n - len(out), len(free)), replace=False)
                out.extend(self.candidates[int(i)] for i in pick)
        return out[:n]
