"""Noise-aware search: repeat measurements pooled by ``retell``, ties by interval, the race of the finalists,
and the GP's posterior spread. Landscapes here are FAKE (analytic), not GPU data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tritune.config import Config
from tritune.errors import SearchError
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.search.base import Budget
from tritune.search.gp import GaussianProcess
from tritune.search.random_search import RandomSearch
from tritune.search.simulate import ReplayEvaluator, _race_finalists, simulate_one
from tritune.search.surrogate import SurrogateSearch
from tritune.space import Space


def _told(times: dict[int, float], half: float = 0.04) -> RandomSearch:
    """A random search over BLOCK 1..6 told ``times`` (by BLOCK) with +-``half`` relative intervals."""
    s = RandomSearch(Space({"BLOCK": [1, 2, 3, 4, 5, 6]}), seed=0)
    for c in s.ask(6):
        t = times.get(c.as_dict()["BLOCK"])
        if t is None:
            s.tell(c, Status.COMPILE_FAILED)
        else:
            s.tell(c, Status.MEASURED, t, ci=(t / math.exp(half), t * math.exp(half)))
    return s


def _cfg(block: int) -> Config:
    return Config({"BLOCK": block})


def test_retell_pools_draws_and_can_change_the_best() -> None:
    s = _told({1: 1.00, 2: 1.02, 3: 1.5, 4: 2.0, 5: 2.5})
    assert s.best() is not None and s.best().config == _cfg(1)  # type: ignore[union-attr]
    s.retell(_cfg(1), 1.10, ci=(1.05, 1.15))
    pooled = s.best()
    assert pooled is not None and pooled.config == _cfg(2)  # 1.02 < sqrt(1.00 * 1.10) = 1.049
    one = next(o for o in s.history if o.config == _cfg(1))
    assert one.time_ms == pytest.approx(math.sqrt(1.10))
    assert s.evaluations == 6 and s.draws(_cfg(1)) == 2 and s.draws(_cfg(2)) == 1
    lo, hi = s.interval(one)
    assert math.log(hi / lo) / 2 == pytest.approx(0.04 / math.sqrt(2))  # the told width narrows by sqrt(2)


def test_retell_refuses_a_config_that_was_not_measured() -> None:
    s = _told({1: 1.0, 2: 1.1})
    with pytest.raises(SearchError, match=r"retell\(.*BLOCK.*3.*only a config already told 'measured'"):
        s.retell(_cfg(3), 1.0)
    with pytest.raises(SearchError, match="must satisfy 0 < low <= time_ms"):
        s.retell(_cfg(1), 1.0, ci=(1.1, 1.2))


def test_contenders_are_the_best_and_the_configs_its_interval_overlaps() -> None:
    s = _told({1: 1.00, 2: 1.05, 3: 1.09, 4: 1.2, 5: 2.0})  # +-4%: 1.05/e^.04 < 1.04 < 1.09/e^.04
    assert s.contenders(10) == [_cfg(1), _cfg(2)]
    assert s.contenders(1) == [_cfg(1)]
    quiet = RandomSearch(Space({"BLOCK": [1, 2, 3]}), seed=0)
    for c in quiet.ask(3):
        quiet.tell(c, Status.MEASURED, 1.0 + 0.001 * c.as_dict()["BLOCK"])
    assert quiet.contenders(3) == [_cfg(1)]  # no interval told: nothing is uncertain


def _two_peaks() -> Landscape:
    """FAKE: 64 configs; BLOCK=4, W=2 is 1.0, its neighbours 1.01-1.03 (ties at 2% noise), the rest slower."""
    points = []
    for b, w in itertools.product(range(8), range(8)):
        t = 1.0 + 0.01 * (abs(b - 4) + abs(w - 2)) + 0.2 * max(0, abs(b - 4) + abs(w - 2) - 3)
        points.append(LandscapePoint(Config({"B": b, "W": w}), Status.MEASURED, t))
    return Landscape.from_points("fake_two_peaks", "FAKE", {}, points)


@pytest.mark.parametrize("seed", range(3))
def test_race_of_finalists_stays_in_budget_and_pools_ties(seed: int) -> None:
    land = _two_peaks()
    run = simulate_one(land, "surrogate", Budget(evaluations=24), seed=seed, noise=0.02, confirm=0.25)
    assert run.evaluations == 24 and run.best_ratio is not None and run.best_ratio <= 1.05
    quiet = simulate_one(land, "surrogate", Budget(evaluations=24), seed=seed)
    assert quiet.evaluations == 24


def test_race_re_measures_only_contenders_and_gives_the_rest_to_the_search() -> None:
    land = _two_peaks()
    s = SurrogateSearch(Space.from_configs(land.configs), seed=0)
    ev = ReplayEvaluator(land, noise=0.02, seed=0)
    for c in s.ask(10):
        status, t, ci = ev(c)
        s.tell(c, status, t, ci=ci)
    history = list(s.history)
    n_contenders = len(s.contenders(6))
    best, remeasured = _race_finalists(s, ev, 6, history)
    searched = len(history) - 10
    assert searched + remeasured <= 6 and searched >= 6 - n_contenders - remeasured
    assert best is not None and best == s.best()
    if remeasured:
        assert s.draws(best.config) >= 1 and any(s.draws(c) >= 2 for c in s.candidates)


def test_gp_spread_is_small_where_told_and_large_far_away() -> None:
    unit = np.array(list(itertools.product(np.linspace(0, 1, 9), repeat=2)))
    gp = GaussianProcess(unit, (unit - unit.mean(axis=0)) / unit.std(axis=0))
    near = unit[:, 0] <= 0.25  # tell only the left quarter
    idx = np.flatnonzero(near)
    y = np.sin(3 * unit[idx, 0]) + unit[idx, 1] ** 2
    gp.predict(idx, y, with_std=True)
    sd = gp.last_std
    assert sd is not None and sd.shape == (len(unit),) and (sd >= 0).all()
    assert float(sd[idx].max()) < float(sd[unit[:, 0] == 1.0].min())
    gp.predict(idx, y)
    assert gp.last_std is None


@pytest.mark.parametrize("smooth", [True, False])
def test_smoothed_centres_do_not_follow_a_lucky_draw(smooth: bool) -> None:
    """FAKE bowl over BLOCK 0..15 with its floor at 10..12, and one lucky draw at BLOCK=3 (slow region).

    With noisy measurements and ``smooth``, the centre of the next pattern step is the model's best
    (in the floor), not the lucky draw; without it the step leaves from the lucky config."""
    space = Space({"BLOCK": list(range(16)), "W": [1, 2]})
    s = SurrogateSearch(space, seed=0, pattern_every=1, explore=0.0, smooth=smooth, global_every=0)
    told = [(b, w) for b in (0, 2, 3, 6, 8, 10, 12, 14) for w in (1, 2)]
    for b, w in told:
        c = Config({"BLOCK": b, "W": w})
        s.mark_asked(c)
        t = 1.0 + 0.02 * max(0, abs(b - 11) - 1) ** 1.5 + 0.01 * (w - 1)
        if (b, w) == (3, 1):
            t = 0.995  # a lucky draw: BLOCK=2 measures 1.42
        s.tell(c, Status.MEASURED, t, ci=(t / 1.04, t * 1.04))
    (step,) = s.ask(1)
    moved_from_lucky = abs(step.as_dict()["BLOCK"] - 3) <= 1 and step.as_dict()["W"] == 1
    assert moved_from_lucky is not smooth, step.id
