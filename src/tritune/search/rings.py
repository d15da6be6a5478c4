"""Outward from a written list: its configs first, then each neighbour only where one nearer the list is near the best.

A widened list (:func:`tritune.space.widen`) is the configs someone wrote and rings of neighbours around them, each
neighbour one step from one or more configs of the ring before it (its origins:
:attr:`tritune.space.Widened.origins`). This strategy asks the written configs first, then a neighbour only once one
of its origins has been measured and is not out of the race (:func:`out_of_race`: more than :data:`ADMIT_MARGIN`
slower than the best so far, its interval wholly above the best's). It is a local search from the written configs
near the best: a list's cost grows with the configs near its best, not with every neighbour of every config, and a
config nobody wrote is compiled, checked and timed only where the list says it may pay. It is done once nothing is
out and no config left is admitted. While nothing has been measured (every written config failed), every config is
admitted, in order.

Tuning picks it for a widened list unless a search or a budget is named (:mod:`tritune.engine.plan`); a library's own
loop over ``_bench`` (FlagGems' ``LibTuner``) admits its neighbours by the same rule
(:func:`tritune.decorator.timing.admitted_in_library_loop`).

>>> from tritune.config import Config
>>> from tritune.outcome import Status
>>> from tritune.space import Space
>>> a, b = Config({"BLOCK": 64}), Config({"BLOCK": 128})
>>> a2, b2 = Config({"BLOCK": 32}), Config({"BLOCK": 256})
>>> s = RingSearch(Space.from_configs([a, b, a2, b2]), origins={a2: (a,), b2: (b,)})
>>> [c.kwargs["BLOCK"] for c in s.ask(4)]  # the written configs; their neighbours wait for them
[64, 128]
>>> s.tell(a, Status.MEASURED, 1.0); s.tell(b, Status.MEASURED, 2.0)
>>> [c.kwargs["BLOCK"] for c in s.ask(4)], s.done()  # 128 is 2x slower than the best: 256 is never asked
([32], False)
>>> s.tell(a2, Status.MEASURED, 1.5); s.done(), [c.kwargs["BLOCK"] for c in s.untimed()]
(True, [256])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tritune.config import Config, as_config
from tritune.search.base import Observation, Strategy
from tritune.space import Space

#: A neighbour is asked only where a config one step nearer the list is within this of the best so far (or not
#: slower with confidence). Replayed on the 13 recorded landscapes (``benchmarks/widen_eval.py``: 20 lists of 4 and
#: of 8 configs drawn from each, widened one and two steps, 1% noise): with lists drawn from the fastest quarter (as
#: a list tuned by hand), 20% timed a median 0.55-0.85x of the widened lists' configs and, in 278 of the 290 lists
#: whose widened best beat the written best by over 5%, picked within 2% of that best (5%: 0.23-0.59x, 194; 30%:
#: 0.75-1.00x, 284); with lists of any configs, 0.29-0.56x and 543 of 687 (5%: 452; 30%: 567).
ADMIT_MARGIN = 0.20


def out_of_race(time_ms: float, interval: tuple[float, float], best_ms: float, best_interval: tuple[float, float],
                margin: float = ADMIT_MARGIN) -> bool:  # fmt: skip
    """Whether a config measured ``time_ms`` (its interval ``(low, high)``) is out of the race against the best so
    far: more than ``margin`` slower, and slower with confidence (its low end above the best's high end)."""
    return time_ms > best_ms * (1 + margin) and interval[0] > best_interval[1]


class RingSearch(Strategy):
    """The written configs, then the neighbours admitted by their origins (module docstring).

    ``origins`` maps each config nobody wrote to the configs one step nearer the list it neighbours; a candidate not
    in it is a written one. ``margin``: :data:`ADMIT_MARGIN`.
    """

    name = "rings"

    def __init__(self, space: Space, *, seed: int = 0, illegal: Iterable[Any] = (),
                 origins: Mapping[Any, Iterable[Any]] | None = None, margin: float = ADMIT_MARGIN) -> None:  # fmt: skip
        super().__init__(space, seed=seed, illegal=illegal)
        self.margin = float(margin)
        self._origins: dict[int, tuple[int, ...]] = {}
        for c, near in (origins or {}).items():
            i = self.index.get(as_config(c))
            if i is not None:  # (origins screened out stay in the tuple as nothing: never measured)
                self._origins[i] = tuple(j for o in near if (j := self.index.get(as_config(o))) is not None)
        self._obs: dict[int, Observation] = {}

    def _observe(self, index: int, obs: Observation) -> None:
        self._obs[index] = obs

    def _near_best(self, j: int) -> bool:
        obs, best = self._obs.get(j), self.best()
        if obs is None or not obs.ok or obs.time_ms is None or best is None or best.time_ms is None:
            return False
        return not out_of_race(obs.time_ms, self.interval(obs), best.time_ms, self.interval(best), self.margin)

    def _open(self) -> bool:
        """Every written config asked and told, none measured: every config is admitted (module docstring)."""
        return self.best() is None and not self._pending and all(i in self._origins for i in self.unasked())

    def admitted(self, i: int, *, open_: bool | None = None) -> bool:
        """Whether candidate ``i`` may be asked now: a written config, or a neighbour with an origin near the best
        (``open_``: :meth:`_open`, computed once for a batch)."""
        near = self._origins.get(i)
        if near is None:
            return True
        if self._open() if open_ is None else open_:
            return True
        return any(self._near_best(j) for j in near)

    def _propose(self, n: int) -> Sequence[Config]:
        out: list[Config] = []
        open_ = self._open()
        for i in self.unasked():
            if len(out) == n:
                break
            if self.admitted(i, open_=open_):
                out.append(self.candidates[i])
        return out

    def _finished(self) -> bool:
        if self._pending:
            return False
        open_ = self._open()
        return not any(self.admitted(i, open_=open_) for i in self.unasked())

    def untimed(self) -> dict[Config, str]:
        """The neighbours never asked, each with why (:func:`why_untimed`)."""
        return {self.candidates[i]: why_untimed([self.candidates[j] for j in self._origins.get(i, ())], self.margin)
                for i in self.unasked()}  # fmt: skip


def why_untimed(origins: Sequence[Config], margin: float = ADMIT_MARGIN) -> str:
    """Why a neighbour was never timed: none of its origins was timed near the best."""
    ids = ", ".join(o.id for o in origins) or "none legal"
    return f"not timed: no config one step from it ({ids}) was within {margin:.0%} of the best so far"
