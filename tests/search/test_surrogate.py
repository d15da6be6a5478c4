"""SurrogateSearch internals: diagonal local moves, the balanced start, capped cliffs, the GP model."""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritune.errors import SearchError
from tritune.outcome import Status
from tritune.search.base import median, quantile
from tritune.search.surrogate import GaussianProcess, SurrogateSearch
from tritune.space import Space, pow2
from tritune.testing.strategy_contract import CHECKS


def _space() -> Space:
    return Space({"BM": pow2(32, 256), "BN": pow2(32, 256), "num_warps": [2, 4, 8]})


def _at(s: SurrogateSearch, **values: int) -> int:
    return next(i for i, c in enumerate(s.candidates) if values.items() <= c.as_dict().items())


def test_local_moves_include_diagonals_only_with_reach_two() -> None:
    for reach, diagonal in ((1, False), (2, True)):
        s = SurrogateSearch(_space(), seed=0, reach=reach, swap_reach=0)  # reach itself (swap_reach would set it)
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


@pytest.mark.parametrize("seed", range(5))
def test_balanced_start_covers_every_value(seed: int) -> None:
    """The start samples middle values too, not only the corners a pure maximin design picks."""
    s = SurrogateSearch(_space(), seed=seed)
    start = s.ask(s.initial)
    for name in ("BM", "BN", "num_warps"):
        assert {c.as_dict()[name] for c in start} == {c.as_dict()[name] for c in s.candidates}


def test_cliff_is_capped_before_the_fit() -> None:
    """A 100x slow config does not move the prediction of the fast ones more than the cap allows."""
    for model in ("gp", "ridge"):
        capped = SurrogateSearch(_space(), seed=0, clip=0.5, model=model)
        for c in capped.ask(10):
            capped.tell(c, Status.MEASURED, 100.0 if c.as_dict()["num_warps"] == 2 else 1.0)
        score = capped._scores()
        measured = list(capped._measured)
        assert float(score[measured].max()) < np.log(100.0)


def _bowl(c: Any) -> float:
    """FAKE separable landscape in log2 sizes, fastest at BM=128, BN=64, 4 warps."""
    d = c.as_dict()
    lm, ln, lw = math.log2(d["BM"]), math.log2(d["BN"]), math.log2(d["num_warps"])
    return math.exp(0.2 * (lm - 7) ** 2 + 0.15 * (ln - 6) ** 2 + 0.1 * (lw - 2) ** 2)


@pytest.mark.parametrize("model", ["gp", "ridge"])
@pytest.mark.parametrize("seed", range(5))
def test_model_predicts_the_optimum_it_has_not_measured(model: str, seed: int) -> None:
    s = SurrogateSearch(_space(), seed=seed, model=model)
    best = _at(s, BM=128, BN=64, num_warps=4)
    others = [i for i in range(len(s.candidates)) if i != best]
    for i in np.random.default_rng(seed).choice(others, size=20, replace=False):
        s._asked[i] = True
        s._measured[int(i)] = math.log(_bowl(s.candidates[i]))
    score = s._scores()
    free = np.flatnonzero(~s._asked)
    assert int(free[np.argmin(score[free])]) == best


def _grid2() -> np.ndarray:
    """Unit coordinates of a 9 x 9 grid (81 candidates)."""
    g = np.linspace(0.0, 1.0, 9)
    return np.array(list(itertools.product(g, g)))


def _fitted(values: Any, seed: int, noise: float = 0.0) -> tuple[GaussianProcess, np.ndarray, np.ndarray]:
    """A GP on the 9 x 9 grid told ``values`` (plus relative ``noise``) at 30 random points, and its mean."""
    unit = _grid2()
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(unit), size=30, replace=False)
    y = values(unit[idx])
    y = y + noise * y.std() * rng.standard_normal(len(y))
    gp = GaussianProcess(unit, (unit - unit.mean(axis=0)) / unit.std(axis=0))
    return gp, y, gp.predict(idx, y)[idx]


@pytest.mark.parametrize("seed", range(4))
def test_gp_interpolates_noiseless_data_and_smooths_noisy_data(seed: int) -> None:
    """Noiseless values get a small nugget and are reproduced; noisy ones a larger nugget that filters noise.

    With noise the mean at the told points is closer to the noiseless values than the told values are.
    """

    def values(u: np.ndarray) -> np.ndarray:
        return np.asarray(np.sin(3.0 * u[:, 0]) + u[:, 1] ** 2)

    gp, y, mean = _fitted(values, seed)
    assert gp.nugget <= 1e-3
    assert np.abs(mean - y).max() <= 0.02 * y.std()
    gp, noisy, mean = _fitted(values, seed, noise=0.3)
    assert gp.nugget >= 0.01
    assert np.linalg.norm(mean - y) < 0.95 * np.linalg.norm(noisy - y)


@pytest.mark.parametrize("seed", range(4))
def test_gp_length_scale_is_short_on_a_rugged_axis_and_long_on_a_smooth_one(seed: int) -> None:
    """Marginal likelihood picks one length scale per axis: short where the values wiggle, long where they do not."""
    gp, _, _ = _fitted(lambda u: np.sin(12.0 * u[:, 0]) + 0.2 * u[:, 1], seed)
    rugged, smooth = gp.length_scales
    assert rugged <= 0.25 and smooth >= 1.0
    gp, _, _ = _fitted(lambda u: 0.3 * u[:, 0] + 0.2 * u[:, 1], seed)  # the linear kernel explains it all
    assert min(gp.length_scales) >= 1.0


def test_gp_keeps_its_matrices_small_on_a_long_search() -> None:
    """Past max_points measurements the model uses a bounded subset and still predicts every candidate."""
    rng = np.random.default_rng(0)
    unit = np.array(list(itertools.product(np.linspace(0, 1, 8), repeat=3)))  # 512 candidates
    gp = GaussianProcess(unit, unit - unit.mean(axis=0), max_points=40)
    idx = rng.choice(len(unit), size=200, replace=False)
    y = (unit[idx] ** 2).sum(axis=1)
    pred = gp.predict(idx, y)
    assert pred.shape == (len(unit),) and np.isfinite(pred).all()
    assert len(gp._cols) <= 40
    assert int(np.argmin(pred)) == int(np.argmin((unit**2).sum(axis=1)))


def test_unknown_model_is_refused() -> None:
    with pytest.raises(SearchError, match="surrogate model 'forest' is not one of gp, ridge"):
        SurrogateSearch(_space(), model="forest")


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_ridge_model_passes_the_contract(check: Any) -> None:
    check(functools.partial(SurrogateSearch, model="ridge"))


def test_pattern_steps_move_one_axis_from_the_best() -> None:
    """pattern_every=1: every guided pick is a one-axis grid move from the best measured config."""
    space = Space({"BLOCK": pow2(16, 1024), "num_warps": [1, 2, 4, 8], "num_stages": [1, 2, 3]})
    s = SurrogateSearch(space, seed=0, pattern_every=1, explore=0.0)
    for c in s.ask(10):
        s.tell(c, Status.MEASURED, float(c.as_dict()["BLOCK"]) / c.num_warps)
    for _ in range(3):
        best = s.best()
        assert best is not None
        (c,) = s.ask(1)
        step = np.abs(s.grid.coords[s.index[c]] - s.grid.coords[s.index[best.config]])
        assert (step > 0).sum() == 1, f"{c.id} is not a one-axis move from {best.config.id}"
        s.tell(c, Status.MEASURED, float(c.as_dict()["BLOCK"]) / c.num_warps)


def test_cover_share_samples_the_least_covered_axis_values() -> None:
    """cover=1: every guided pick has the values asked least so far, so an edge value is not starved.

    The landscape rewards BLOCK=1024 and num_warps=8 only; a model-guided search would stay there, but a
    full coverage share keeps every value of every axis within one ask of the others."""
    space = Space({"BLOCK": pow2(16, 1024), "num_warps": [1, 2, 4, 8], "num_stages": [1, 2, 3]})
    s = SurrogateSearch(space, seed=0, cover=1.0, explore=0.0)
    while s.evaluations < 42:
        for c in s.ask(3):
            s.tell(c, Status.MEASURED, 1024.0 / float(c.as_dict()["BLOCK"]) / c.num_warps)
    asked = s.grid.coords[[s.index[o.config] for o in s.history]]
    for axis, size in enumerate(s.grid.sizes):
        counts = np.bincount(asked[:, axis], minlength=size)
        assert counts.max() - counts.min() <= 2, f"axis {s.grid.names[axis]} unevenly covered: {counts}"


def test_cover_share_is_checked_and_off_by_default() -> None:
    with pytest.raises(SearchError, match="cover"):
        SurrogateSearch(_space(), cover=1.5)
    assert SurrogateSearch(_space()).cover == 0.0


def _balanced_design_reference(grid: Any, unit: Any, chosen: list[int], free: Any, rng: Any) -> int:
    """The direct O(candidates x chosen x axes) form of balanced_design: the oracle for the fast one."""
    if not chosen:
        return int(rng.choice(free))
    sel = np.asarray(chosen, dtype=np.int64)
    same = grid.coords[free][:, None, :] == grid.coords[sel][None, :, :]
    repeats = same.sum(axis=(1, 2)).astype(float)
    for a in range(grid.dims):
        for b in range(a + 1, grid.dims):
            repeats += 2.0 * (same[:, :, a] & same[:, :, b]).sum(axis=1)
    distance = np.abs(unit[free][:, None, :] - unit[sel][None, :, :]).sum(axis=2).min(axis=1)
    score = repeats - 1e-3 * distance
    return int(rng.choice(free[score <= score.min() + 1e-9]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_balanced_design_counts_repeats_as_the_direct_form_does(seed: int) -> None:
    """The bincount form picks exactly the configs the per-(candidate, chosen) comparison picks."""
    from tritune.search.surrogate import balanced_design

    space = Space({"BM": pow2(16, 256), "BN": pow2(16, 128), "num_warps": [2, 4, 8], "num_stages": [2, 3, 4]})
    s = SurrogateSearch(space, seed=seed)
    fast, slow = np.random.default_rng(seed), np.random.default_rng(seed)
    chosen_fast: list[int] = []
    chosen_slow: list[int] = []
    for _ in range(40):
        free_f = np.setdiff1d(np.arange(len(s.candidates)), chosen_fast)
        free_s = np.setdiff1d(np.arange(len(s.candidates)), chosen_slow)
        chosen_fast.append(balanced_design(s.grid, s._unit, chosen_fast, free_f, fast))
        chosen_slow.append(_balanced_design_reference(s.grid, s._unit, chosen_slow, free_s, slow))
    assert chosen_fast == chosen_slow


def _tied_search(probe: float) -> tuple[SurrogateSearch, dict[int, float]]:
    """A noisy search told every config but a needle's neighbourhood: two ties at the top, their
    neighbours (the needle among them) never asked. Times are a deterministic bowl around BM=128, BN=128,
    num_warps=4 (the needle, 0.5 ms), told with a 2% interval."""
    s = SurrogateSearch(_space(), seed=0, probe=probe, explore=0.0)
    needle = _at(s, BM=128, BN=128, num_warps=4)
    times = {}
    for i, c in enumerate(s.candidates):
        d = c.as_dict()
        dist = (
            abs(math.log2(d["BM"] / 128)) + abs(math.log2(d["BN"] / 128)) + abs(math.log2(d["num_warps"] / 4))
        )
        times[i] = 0.5 if i == needle else 1.0 + 0.3 * dist
    keep = [_at(s, BM=64, BN=128, num_warps=4), _at(s, BM=128, BN=64, num_warps=4)]  # the ties, 1.3 ms
    far = [
        i
        for i in range(len(s.candidates))
        if i not in keep and np.abs(s.grid.coords[i] - s.grid.coords[needle]).max() >= 2
    ]
    for i in keep + far:
        c = s.candidates[i]
        s.preload(c, Status.MEASURED, times[i], ci=(times[i] / 1.02, times[i] * 1.02))
    return s, times


def test_probe_asks_untried_neighbours_of_the_ties_before_the_race() -> None:
    """probe=1: finals(reserve) plans the whole reserve, and the next asks are untried configs one local
    move from a tie (the needle among them), not the model's picks elsewhere."""
    s, times = _tied_search(1.0)
    ties = [s.index[o.config] for o in s.ties()]
    assert len(ties) == 2
    assert s.finals(4) == 4
    asked = []
    for _ in range(4):
        ties = [s.index[o.config] for o in s.ties()[: 2 * s.top]]  # as the probe sees them now
        (c,) = s.ask(1)
        i = s.index[c]
        step = np.abs(s.grid.coords[ties] - s.grid.coords[i])
        assert ((step.max(axis=1) <= 1) & (step.sum(axis=1) <= s.reach)).any(), (
            f"{c.id} is no tie's neighbour"
        )
        s.tell(c, Status.MEASURED, times[i], ci=(times[i] / 1.02, times[i] * 1.02))
        asked.append(i)
    assert _at(s, BM=128, BN=128, num_warps=4) in asked
    assert s._probing == 0


def test_probe_share_is_checked_off_by_default_and_wants_nothing_when_off() -> None:
    with pytest.raises(SearchError, match="probe"):
        SurrogateSearch(_space(), probe=1.5)
    assert SurrogateSearch(_space()).probe == 0.0
    off, _ = _tied_search(0.0)
    assert off.finals(6) == 0
    half, _ = _tied_search(0.5)
    assert half.finals(6) == 3


def test_probe_spends_the_race_reserve_on_new_configs_and_finds_the_needle() -> None:
    """simulate's finalists' race: with probe=1 the reserve goes to untried neighbours of the ties (the
    needle is found and picked, nothing is re-measured); with probe=0 the same reserve re-measures the
    ties and the needle stays unasked. The evaluator is a FAKE: the bowl's times, noise-free, with a 2%
    interval."""
    from tritune.search.simulate import _race_finalists

    for probe in (1.0, 0.0):
        s, times = _tied_search(probe)
        needle = _at(s, BM=128, BN=128, num_warps=4)

        def fake(config: Any, times: dict[int, float] = times, s: SurrogateSearch = s) -> Any:
            t = times[s.index[config]]
            return Status.MEASURED, t, (t / 1.02, t * 1.02)

        history: list[Any] = []
        best, remeasured = _race_finalists(s, fake, 2, history)  # type: ignore[arg-type]
        assert best is not None
        if probe:
            assert remeasured == 0 and len(history) == 2
            assert best.config == s.candidates[needle]
        else:
            assert remeasured == 2 and history == [] and not s.is_asked(needle)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), min_size=1, max_size=40),
       st.one_of(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]), st.floats(0.0, 1.0)))
def test_quantile_and_median_are_numpys_floats(values, q):
    """The search's quantile and median are ``np.quantile``'s (linear method) and ``np.median``'s, to the last bit."""
    a = np.array(values)
    assert quantile(a, q) == float(np.quantile(a, q)) and median(a) == float(np.median(a))
    assert np.isnan(quantile(np.array([1.0, np.nan]), 0.5)) and np.isnan(median([1.0, np.nan, 2.0]))


def _ridge_ms(c: Any) -> float:
    """Fastest along the diagonal BLOCK = 64 x num_warps, more so with more warps: one-axis moves leave it."""
    block, warps = math.log2(c.as_dict()["BLOCK"]), math.log2(c.num_warps)
    return 1.0 + abs(block - warps - 6) + 0.1 * (3 - warps) + 0.01 * c.num_stages


@pytest.mark.parametrize("seed", range(3))
def test_sweep_share_moves_one_axis_from_the_best(seed: int) -> None:
    """sweep=1: every guided pick is an untried one-axis move from the best config while it has one left.

    On a diagonal ridge the model's fastest local moves are diagonals (two axes at once), which the default
    takes; the sweep keeps to the incumbent's one-axis moves whatever the model ranks higher elsewhere."""
    space = Space({"BLOCK": pow2(16, 1024), "num_warps": [1, 2, 4, 8], "num_stages": [1, 2, 3]})
    axes = {}
    for sweep in (0.0, 1.0):
        s = SurrogateSearch(space, seed=seed, sweep=sweep, explore=0.0)
        for c in s.ask(10):
            s.tell(c, Status.MEASURED, _ridge_ms(c))
        moved = []
        for _ in range(4):
            best = s.best()
            assert best is not None
            (c,) = s.ask(1)
            step = np.abs(s.grid.coords[s.index[c]] - s.grid.coords[s.index[best.config]])
            moved.append(int((step > 0).sum()))
            s.tell(c, Status.MEASURED, _ridge_ms(c))
        axes[sweep] = moved
    assert axes[1.0] == [1, 1, 1, 1], f"sweep=1 moved {axes[1.0]} axes from the best"
    assert max(axes[0.0]) > 1, "the landscape no longer tells the sweep from the default's local step"


def test_sweep_share_is_checked_and_off_by_default() -> None:
    with pytest.raises(SearchError, match="sweep"):
        SurrogateSearch(_space(), sweep=-0.1)
    assert SurrogateSearch(_space()).sweep == 0.0


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_sweep_variant_passes_the_contract(check: Any) -> None:
    check(functools.partial(SurrogateSearch, sweep=0.5))


def test_grid_swaps_exchange_tile_axes_only() -> None:
    """A swap exchanges the values of two meta-parameters sharing values (BM <-> BN), never of launch options
    (num_warps and num_stages share 2 and 4 here), and lists only exchanges that land on a candidate."""
    space = Space({"BM": pow2(32, 256), "BN": pow2(32, 128), "num_warps": [2, 4, 8], "num_stages": [2, 3, 4]})
    s = SurrogateSearch(space, seed=0)
    assert [(s.grid.names[a], s.grid.names[b]) for a, b in s.grid.swap_axes] == [("BM", "BN")]
    (swap,) = s.grid.swaps(_at(s, BM=128, BN=32, num_warps=2, num_stages=4))
    assert s.candidates[swap].as_dict() == {**s.candidates[swap].as_dict(), "BM": 32, "BN": 128,
                                             "num_warps": 2, "num_stages": 4}
    assert s.grid.swaps(_at(s, BM=256, BN=64, num_warps=2, num_stages=4)) == []  # BN=256 is not a candidate
    assert s.grid.swaps(_at(s, BM=64, BN=64, num_warps=4, num_stages=4)) == []  # the same value: no move


def _two_basins_ms(c: Any) -> float:
    """Two basins, BM > BN (found first: the model's slope points there) and its transpose BM < BN, 2% faster;
    BM = BN = 256-like corners are 10x cliffs."""
    bm, bn = math.log2(c.as_dict()["BM"]), math.log2(c.as_dict()["BN"])
    if abs(bm - bn) < 1:
        return 10.0
    return (0.98 if bn > bm else 1.0) + 0.05 * abs(abs(bm - bn) - 2) + 0.01 * abs(math.log2(c.num_warps) - 2)


def test_swap_asks_the_transposed_tile_of_the_best_first() -> None:
    """swap=1 (the default; the transfer keeps 0): with the BM > BN basin measured and none of
    its transpose, the next guided ask is the best's swap; swap=0's local step asks around the measured basin."""
    assert SurrogateSearch(_space()).swap == 1
    picked = {}
    for swap in (0, 1):
        s = SurrogateSearch(_space(), seed=0, explore=0.0, swap=swap)
        for values in ({"BM": 256, "BN": 64}, {"BM": 128, "BN": 32}, {"BM": 256, "BN": 32}, {"BM": 128, "BN": 128},
                       {"BM": 64, "BN": 64}, {"BM": 256, "BN": 256}):
            for warps in (2, 4, 8):
                c = s.candidates[_at(s, **values, num_warps=warps)]
                s.mark_asked(c)
                s.tell(c, Status.MEASURED, _two_basins_ms(c))
        (c,) = s.ask(1)
        picked[swap] = c.as_dict()
    assert picked[1].items() >= {"BM": 64, "BN": 256, "num_warps": 4}.items(), picked[1]
    assert picked[0]["BN"] < picked[0]["BM"], f"the default left the measured basin: {picked[0]}"


def test_polish_spends_the_reserve_on_the_incumbents_moves() -> None:
    """polish=1: the finals' reserve goes to untried one-axis moves and swaps of the incumbent, the model's
    fastest first, and only while planned; polish=0, the default, plans nothing and wants no finals."""
    assert not SurrogateSearch(_space()).wants_finals()
    assert SurrogateSearch(_space()).finals(3) == 0
    s = SurrogateSearch(_space(), seed=1, polish=1.0)
    assert s.wants_finals()
    for c in s.ask(12):
        s.tell(c, Status.MEASURED, _two_basins_ms(c))
    assert s.finals(3) == 3
    best = s.best()
    assert best is not None
    score = s._scores()
    untried = sorted((j for j in s._moves(s.index[best.config]) if not s.is_asked(j)), key=lambda j: float(score[j]))
    assert len(untried) >= 2
    first = s.ask(2)
    assert [s.index[c] for c in first] == untried[:2]
    for c in first:
        s.tell(c, Status.MEASURED, _two_basins_ms(c))
    second = s.ask(3)  # one polish pick left, then the ordinary guided asks
    assert s._polishing == 0 and len(second) == 3
    with pytest.raises(SearchError, match="polish"):
        SurrogateSearch(_space(), polish=1.5)
    with pytest.raises(SearchError, match="swap"):
        SurrogateSearch(_space(), swap=-1)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_swap_and_polish_variant_passes_the_contract(check: Any) -> None:
    check(functools.partial(SurrogateSearch, swap=1, polish=1.0))


def test_swap_reach_keeps_one_axis_moves_where_swaps_exist() -> None:
    """swap_reach=1 (the default): with swaps asked and swap axes in the grid, the local step
    drops its diagonals (BM/2 with BN*2); without swap axes (gelu-like), with swap=0 or swap_reach=0, the reach
    stays 2."""
    assert SurrogateSearch(_space(), swap_reach=0).reach == 2
    s = SurrogateSearch(_space(), seed=0)
    assert s.reach == 1
    centre = _at(s, BM=128, BN=64, num_warps=4)
    local = s._local([centre])
    assert not local[_at(s, BM=64, BN=128, num_warps=4)]  # the diagonal
    assert local[_at(s, BM=128, BN=128, num_warps=4)]  # a one-axis move
    assert SurrogateSearch(_space(), swap=0, swap_reach=1).reach == 2
    no_swaps = Space({"BLOCK": pow2(64, 1024), "num_warps": [2, 4, 8]})
    assert SurrogateSearch(no_swaps, swap_reach=1).reach == 2
    with pytest.raises(SearchError, match="swap_reach"):
        SurrogateSearch(_space(), swap_reach=-1)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_swap_reach_variant_passes_the_contract(check: Any) -> None:
    check(functools.partial(SurrogateSearch, swap_reach=1))


def test_endgame_asks_a_move_of_every_tie_in_turn() -> None:
    """endgame=1: the finals' reserve goes to the untried one-axis moves of the configs tied with the best, one
    move per tie in turn (fastest measured tie first): the best's model-fastest move, then one of the tie's, then
    the best's next; endgame=0, the default, plans nothing."""
    assert SurrogateSearch(_space()).endgame == 0.0
    s = SurrogateSearch(_space(), seed=0, endgame=1.0)
    assert s.wants_finals()
    far = [{"BM": 32, "BN": 32, "num_warps": 2}, {"BM": 256, "BN": 256, "num_warps": 8},
           {"BM": 32, "BN": 256, "num_warps": 8}, {"BM": 256, "BN": 32, "num_warps": 2}]
    times = [(values, 3.0) for values in far]
    best, tie = {"BM": 128, "BN": 128, "num_warps": 4}, {"BM": 32, "BN": 64, "num_warps": 8}
    times += [(best, 1.0), (tie, 1.02)]  # 2% apart: inside the best's interval at 5% half-width
    for values, ms in times:
        c = s.candidates[_at(s, **values)]
        s.mark_asked(c)
        s.tell(c, Status.MEASURED, ms, ci=(ms / 1.05, ms * 1.05))
    b, t = s.index[s.candidates[_at(s, **best)]], s.index[s.candidates[_at(s, **tie)]]
    assert s._endgame_centres()[:2] == [b, t]
    score = s._scores()
    tie_moves = set(s.grid.neighbours(t)) - set(s.grid.neighbours(b))
    best_moves = sorted(s.grid.neighbours(b), key=lambda j: float(score[j]))
    # Without the turns, the model's two fastest moves of the best would both come before any move of the tie.
    assert not tie_moves & set(best_moves[:2])
    assert s.finals(4) == 4
    first = [s.index[c] for c in s.ask(2)]
    assert first[0] == best_moves[0] and first[1] in tie_moves
    for i in first:
        s.tell(s.candidates[i], Status.MEASURED, 2.0, ci=(2.0 / 1.05, 2.0 * 1.05))
    second = [s.index[c] for c in s.ask(3)]  # two end-game picks left (one per tie), then a guided one
    # (the model refits after the first picks, so only the turn order is asserted: a best's move, then a tie's)
    assert second[0] in set(best_moves) - set(first) and second[1] in tie_moves and s._ending == 0
    assert len(set(first + second)) == 5
    with pytest.raises(SearchError, match="endgame"):
        SurrogateSearch(_space(), endgame=-0.5)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_endgame_variant_passes_the_contract(check: Any) -> None:
    check(functools.partial(SurrogateSearch, endgame=1.0))


def test_grid_tile_per_warp_is_the_output_tile_over_the_warps() -> None:
    """Grid.tile_per_warp: log2(BLOCK_M x BLOCK_N / num_warps) scaled to [0, 1]; the reduction axis (BLOCK_K) does not
    count; None for a 1-D tile (gelu-like), without a varying num_warps, or with a non-numeric tile value."""
    from tritune.search.grid import Grid, is_reduction_axis

    assert is_reduction_axis("BLOCK_K") and is_reduction_axis("bk") and is_reduction_axis("TILE_K")
    assert not any(is_reduction_axis(n) for n in ("BLOCK_M", "BN", "GROUP_K", "num_stages", "BLOCK_SIZE"))
    space = Space({"BLOCK_M": pow2(32, 256), "BLOCK_N": pow2(32, 128), "BLOCK_K": [32, 64], "num_warps": [4, 8]})
    cands = list(space)
    grid = Grid(cands)
    col = grid.tile_per_warp()
    assert col is not None and col.shape == (len(cands),)
    raw = np.array([math.log2(c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] / c.num_warps) for c in cands])
    np.testing.assert_allclose(col, (raw - raw.min()) / (raw.max() - raw.min()))
    # BLOCK_K moves leave it; one warp doubling equals one tile halving
    by = {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_warps): v for c, v in zip(cands, col)}
    assert by[(128, 64, 32, 4)] == by[(128, 64, 64, 4)] > by[(64, 64, 32, 4)]
    assert by[(128, 64, 32, 8)] == pytest.approx(by[(64, 64, 32, 4)])
    assert by[(256, 128, 32, 4)] == 1.0 and by[(32, 32, 64, 8)] == 0.0
    assert Grid(list(Space({"BLOCK": pow2(64, 1024), "num_warps": [2, 4, 8]}))).tile_per_warp() is None
    assert Grid(list(Space({"BM": pow2(32, 256), "BN": pow2(32, 256), "num_warps": [4]}))).tile_per_warp() is None
    assert Grid(list(Space({"BM": [64, 128], "BN": [64, 128], "num_warps": [4, 8], "BLOCK_X": ["a", "b"]}))).tile_per_warp() is None


def test_surrogate_models_the_tile_per_warp_on_2d_tiles() -> None:
    """tile_per_warp (on by default): the Gaussian process gets the output tile per warp as one more
    input where the grid has a 2-D tile and varying warps (register spills follow it); the 1-D grid, the option off
    and the transfer (evaluated without it) keep the grid's own coordinates."""
    from tritune.search.transfer import KeyResults, TransferSearch

    s = SurrogateSearch(_space(), seed=0)
    assert s.tile_per_warp and s._gp is not None and s._gp.dims == s.grid.dims + 1
    off = SurrogateSearch(_space(), seed=0, tile_per_warp=False)
    assert not off.tile_per_warp and off._gp is not None and off._gp.dims == off.grid.dims
    flat = SurrogateSearch(Space({"BLOCK": pow2(64, 1024), "num_warps": [2, 4, 8]}), seed=0)
    assert not flat.tile_per_warp and flat._gp is not None and flat._gp.dims == flat.grid.dims
    c = next(iter(_space()))
    t = TransferSearch(_space(), key={"M": 2}, neighbours=[KeyResults({"M": 1}, {c: 1.0})], seed=0)
    assert not t.tile_per_warp
    # the extra input changes the model's ranking (same measurements, same seed)
    for search in (s, off):
        for values in ({"BM": 256, "BN": 64}, {"BM": 128, "BN": 32}, {"BM": 64, "BN": 64}, {"BM": 256, "BN": 256}):
            for warps in (2, 8):
                cfg = search.candidates[_at(search, **values, num_warps=warps)]
                search.mark_asked(cfg)
                search.tell(cfg, Status.MEASURED, _two_basins_ms(cfg))
    assert not np.allclose(s._scores(), off._scores())
    with pytest.raises(SearchError, match="tile_per_warp"):
        SurrogateSearch(_space(), tile_per_warp=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_without_tile_per_warp_passes_the_contract(check: Any) -> None:
    check(functools.partial(SurrogateSearch, tile_per_warp=False))
