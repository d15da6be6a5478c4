"""SurrogateSearch internals: diagonal local moves, the space-filling start, capped cliffs."""

from __future__ import annotations

import numpy as np

from tritune.outcome import Status
from tritune.search.surrogate import SurrogateSearch
from tritune.space import Space, pow2


def _space() -> Space:
    return Space({"BM": pow2(32, 256), "BN": pow2(32, 256), "num_warps": [2, 4, 8]})


def _at(s: SurrogateSearch, **values: int) -> int:
    return next(i for i, c in enumerate(s.candidates) if values.items() <= c.as_dict().items())


def test_local_moves_include_diagonals_only_with_reach_two() -> None:
    for reach, diagonal in ((1, False), (2, True)):
        s = SurrogateSearch(_space(), seed=0, reach=reach)
        centre = _at(s, BM=128, BN=64, num_warps=4)
        swap = _at(s, BM=64, BN=128, num_warps=4)
        axis = _at(s, BM=64, BN=64, num_warps=4)
        local = s._local([centre])
        assert bool(local[axis])
        assert bool(local[swap]) is diagonal


def test_space_filling_start_spreads_out() -> None:
    s = SurrogateSearch(_space(), seed=3)
    first, second = (s.index[c] for c in s.ask(2))
    d = np.abs(s._unit[first] - s._unit[second]).sum()
    all_d = np.abs(s._unit - s._unit[first]).sum(axis=1)
    assert d == all_d.max()  # the second point is as far from the first as any candidate is


def test_cliff_is_capped_before_the_fit() -> None:
    """A 100x slow config does not move the prediction of the fast ones more than the cap allows."""
    capped = SurrogateSearch(_space(), seed=0, clip=0.5)
    for c in capped.ask(10):
        capped.tell(c, Status.MEASURED, 100.0 if c.as_dict()["num_warps"] == 2 else 1.0)
    score = capped._scores()
    measured = list(capped._measured)
    assert float(score[measured].max()) < np.log(100.0)
