"""Neighbourhood (pattern) search: climb the grid by ×2 / ÷2 on power-of-2 parameters and ±1 on stages.

It starts from the best of a few random configs, measures every unmeasured neighbour of the current
centre (one step along each parameter, jumping over illegal gaps), moves to the best of them, and
repeats. At a local optimum it restarts from a fresh random config, so a budget larger than one climb
is not wasted. This is the pattern search of Helion and the coordinate descent of Inductor, over a
legal set rather than a box.

>>> from tritune.space import Space, pow2
>>> s = NeighbourhoodSearch(Space({"BLOCK": pow2(64, 1024), "num_warps": [2, 4, 8]}), seed=0)
>>> len(s.ask(3))
3
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tritune.config import Config
from tritune.search.base import Observation, Strategy
from tritune.search.grid import Grid
from tritune.space import Space


class NeighbourhoodSearch(Strategy):
    """Best-improvement hill climbing on the parameter grid, with random restarts at local optima.

    ``initial`` is how many random configs seed the first climb (the best of them is the first centre).
    """

    name = "neighbourhood"

    def __init__(self, space: Space, *, seed: int = 0, illegal: Iterable[Any] = (), initial: int = 5) -> None:
        super().__init__(space, seed=seed, illegal=illegal)
        self.grid = Grid(self.candidates)
        self.initial = max(1, int(initial))
        self._times: dict[int, float | None] = {}
        self._queue: list[int] = []
        self._centre: int | None = None
        self._started = False

    def _observe(self, index: int, obs: Observation) -> None:
        self._times[index] = obs.time_ms if obs.ok else None

    def _time(self, i: int) -> float | None:
        return self._times.get(i)

    def _best_of(self, indices: Iterable[int]) -> int | None:
        timed = [(t, i) for i in indices if (t := self._time(i)) is not None]
        return min(timed)[1] if timed else None

    def _refill(self) -> None:
        """Put the next batch of moves in the queue: a climb step, or a restart."""
        if not self._started:
            self._started = True
            self._queue = self.random_unasked(self.initial)
            return
        if self._centre is None:
            start = self._best_of(self._times)
            if start is None:  # nothing measured yet: keep sampling at random
                self._queue = self.random_unasked(1)
                return
            self._centre = start
        # Move to the best measured point among the centre and its neighbours.
        around = [self._centre, *self.grid.neighbours(self._centre)]
        best = self._best_of(around)
        if best is not None and best != self._centre:
            self._centre = best
            around = [best, *self.grid.neighbours(best)]
        fresh = [j for j in around if not self.is_asked(j)]
        if fresh:
            self._queue = fresh
            return
        # A local optimum (or a dead end of failures): restart the climb from a fresh random config.
        self._queue = self.random_unasked(1)
        self._centre = self._queue[0] if self._queue else None

    def _propose(self, n: int) -> Sequence[Config]:
        out: list[int] = []
        for _ in range(4 * n + 8):  # bounded: a batch asked before its outcomes are told can stall a climb
            if len(out) >= n:
                break
            self._queue = [j for j in self._queue if not self.is_asked(j) and j not in out]
            if self._queue:
                out.append(self._queue.pop(0))
            else:
                self._refill()
        if len(out) < n:
            free = [j for j in self.unasked() if j not in out]
            pick = self.rng.choice(len(free), size=min(n - len(out), len(free)), replace=False)
            out.extend(free[int(k)] for k in pick)
        return [self.candidates[i] for i in out]
