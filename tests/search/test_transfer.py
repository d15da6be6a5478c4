"""Transfer between keys: neighbours' winners first, their landscape as the prior; checked on FAKE landscapes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tritune.config import Config
from tritune.errors import SearchError
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.search import Budget, KeyResults, SearchDriver, TransferSearch, get
from tritune.search.simulate_transfer import key_results, simulate_transfer
from tritune.search.transfer import cheap_variants, key_distance
from tritune.space import Space, pow2

SPACE = Space(
    {"BM": pow2(16, 256), "BN": pow2(16, 256), "num_warps": [1, 2, 4, 8], "num_stages": [1, 2, 3, 4]}
)


def fake_family(sizes: list[int], seed: int = 0) -> list[Landscape]:
    """FAKE: one kernel at several sizes; the optimum tile grows slowly with size, plus 2% roughness."""
    out = []
    for size in sizes:
        rng = np.random.default_rng([seed, size])
        points = []
        best_tile = 6 + 0.5 * math.log2(size)
        for c in SPACE:
            d = c.as_dict()
            lt = (math.log2(d["BM"]) - best_tile) ** 2 + 0.5 * (math.log2(d["BN"]) - 6) ** 2
            lt += 0.3 * (math.log2(d["num_warps"]) - 2) ** 2 + 0.05 * (d["num_stages"] - 3) ** 2
            points.append(LandscapePoint(c, Status.MEASURED, math.exp(0.2 * lt + rng.normal(0, 0.02))))
        out.append(Landscape.from_points("fake_family", "FAKE", {"size": size}, points))
    return out


def test_key_distance_is_log2_and_symmetric() -> None:
    assert key_distance({"M": 4096}, {"M": 8192}) == 1.0
    assert key_distance({"M": 4096, "dtype": "fp16"}, {"M": 1024, "dtype": "bf16"}) == 3.0
    assert key_distance({"M": 1}, {"M": 1}) == 0.0


def test_the_nearest_winner_is_asked_first_and_the_prior_leads() -> None:
    fam = fake_family([1, 2, 8])
    near, far = key_results(fam[1]), key_results(fam[2])
    s = TransferSearch(SPACE, key={"size": 1}, neighbours=[far, near], seed=0)
    first = s.ask(2)
    assert first == [near.winner(), far.winner()]
    with pytest.raises(SearchError, match="at least one tuned key"):
        TransferSearch(SPACE, key={"size": 1}, neighbours=[])


@pytest.mark.long  # a quarter of a minute: cold and transferred searches over many seeds
def test_transfer_reaches_the_bound_in_a_quarter_of_a_cold_search() -> None:
    rows = simulate_transfer(fake_family([1, 2, 4, 8]), budget=0.5, seeds=4)
    fractions = [r.fraction for r in rows]
    assert all(f is not None for f in fractions), rows
    assert float(np.median([f for f in fractions if f is not None])) <= 0.25, rows
    assert all(r.transfer_median is not None and r.transfer_median <= 1.02 for r in rows), rows


def test_transfer_is_registered_and_keeps_the_strategy_contract() -> None:
    fam = fake_family([1, 2])
    s = get("transfer", SPACE, seed=1, key={"size": 2}, neighbours=[key_results(fam[0])])
    seen: list[Config] = []
    while not s.done() and len(seen) < 40:
        for c in s.ask(7):
            seen.append(c)
            s.tell(c, Status.MEASURED, fam[1].lookup(c).time_ms)  # type: ignore[union-attr]
    assert len(seen) == len(set(seen)) >= 40
    assert isinstance(s, TransferSearch)
    stored = KeyResults({"size": 4}, {Config({"BM": 3}, num_warps=4, num_stages=3): 1.0})
    with pytest.raises(SearchError, match="nothing to transfer"):
        TransferSearch(SPACE, key={"size": 2}, neighbours=[stored])


WIDE = Space({"BLOCK_M": [64, 128], "BLOCK_N": [128, 256], "num_stages": [3, 4, 5], "GROUP_M": [4, 8, 16],
              "maxnreg": [None, 168]})  # fmt: skip


def _wide(bm: int, bn: int, stages: int, group: int, maxnreg: int | None) -> Config:
    return Config({"BLOCK_M": bm, "BLOCK_N": bn, "GROUP_M": group}, num_stages=stages, maxnreg=maxnreg)


def test_the_first_batch_holds_the_winners_cheap_variants_but_not_one_the_neighbours_found_slow() -> None:
    won = _wide(128, 256, 5, 16, 168)
    assert won in WIDE.configs()
    # FAKE tuned key: the winner, a stages-4 variant it found 20% slower, other tiles; never measured: the
    # winner without its register cap (maxnreg=None) nor with GROUP_M=8.
    times: dict[Config, float | None] = {won: 1.0, _wide(128, 256, 4, 16, 168): 1.2}
    for i, c in enumerate(c for c in WIDE.configs() if c.as_dict()["BLOCK_M"] == 64):
        times[c] = 1.05 + 0.01 * i
    # the tuning's pick (``best``) wins over a smaller stored median (the tie rule may pick another config)
    faster = _wide(64, 128, 3, 4, None)
    times[faster] = 0.99
    nb = KeyResults({"M": 4096}, times, best=won)
    assert nb.winner() == won and KeyResults({"M": 4096}, times).winner() == faster
    s = TransferSearch(WIDE, key={"M": 6144}, neighbours=[nb], warm=16)
    first = s.ask(16)
    assert first[0] == won
    variants = {_wide(128, 256, 5, 16, None), _wide(128, 256, 5, 8, 168)}
    assert set(first[1:3]) == variants  # the cheap-axis variants right after the winner, unmeasured or not
    assert _wide(128, 256, 4, 16, 168) not in first[:3]  # measured 20% slower there: not taken as a variant
    assert all(c.as_dict()["BLOCK_M"] == 64 or c in variants or c == won for c in first)  # the rest: the prior's


def test_tile_axes_are_not_the_cheap_ones() -> None:
    from tritune.search.transfer import is_tile_axis

    assert all(is_tile_axis(n) for n in ("BLOCK_M", "BLOCK", "BM", "bk", "TILE_N", "BLOCK_SIZE"))
    assert not any(is_tile_axis(n) for n in ("GROUP_M", "num_stages", "maxnreg", "EPILOGUE_SUBTILE", "BMX"))


def _ci(ms: float, half: float = 0.01) -> object:
    """FAKE measurement: a median and a +-``half`` interval (what a race's Measurement carries)."""
    from types import SimpleNamespace

    return SimpleNamespace(median_ms=ms, ci_low_ms=ms * (1 - half), ci_high_ms=ms * (1 + half))


def _three_neighbours() -> tuple[list[KeyResults], list[Config]]:
    """FAKE tuned keys M=2048, 4096, 8192: each measured the same 24 configs (SYNTHETIC times), each its own winner."""
    cands = WIDE.configs()
    measured = cands[::3][:24]
    near, winners = [], []
    for k, m in enumerate((2048, 4096, 8192)):
        won = measured[k]
        times = {c: (1.0 if c == won else 1.1 + 0.01 * i) for i, c in enumerate(measured)}
        near.append(KeyResults({"M": m}, times, best=won))
        winners.append(won)
    return near, winners


def _driver(near: list[KeyResults], confirm: bool = True) -> object:
    from tritune.search import Budget, SearchDriver

    s = TransferSearch(WIDE, key={"M": 6144}, neighbours=near, warm=16, first=8)
    nearest_first = [nb.winner() for nb in sorted(near, key=lambda nb: key_distance({"M": 6144}, nb.key))]
    return SearchDriver(s, Budget(evaluations=16), width=16, warm=nearest_first, first=8, confirm=confirm)


def test_the_transfer_opens_with_a_small_batch_of_recorded_configs_and_stops_when_it_confirms_a_winner() -> None:
    near, winners = _three_neighbours()
    recorded = {c for nb in near for c, t in nb.times.items() if t is not None}
    d = _driver(near)
    first = d.next_batch()  # type: ignore[attr-defined]
    assert len(first) == 8 and set(winners) <= set(first[:3])  # small, the winners first
    assert set(first) <= recorded  # all measured by a neighbour: compiled on the machine that tuned them
    assert d.next_batch() == [] and not d.may_propose_ahead  # type: ignore[attr-defined]  # nothing ahead of it
    # SYNTHETIC: a neighbour's winner is 0.5% slower than another config, inside the best's interval: a tie.
    for c in first:
        d.record(c, _ci(1.0 if c == winners[1] else 0.995 if c == first[5] else 1.2))  # type: ignore[attr-defined]
    assert d.done and d.why_stopped == "confirmed" and d.next_batch() == []  # type: ignore[attr-defined]
    assert d.summary()["evaluated"] == 8 and d.summary()["stopped"] == "confirmed"  # type: ignore[attr-defined]


def test_a_first_batch_that_beats_every_transferred_winner_goes_on_and_an_explicit_budget_is_spent() -> None:
    near, _ = _three_neighbours()
    d = _driver(near)
    first = d.next_batch()  # type: ignore[attr-defined]
    for c in first:  # SYNTHETIC: a config no neighbour won with is 10% faster, outside every interval
        d.record(c, _ci(0.9 if c == first[6] else 1.0))  # type: ignore[attr-defined]
    assert not d.done and len(d.next_batch()) == 8  # type: ignore[attr-defined]  # the rest of the budget
    d2 = _driver(near, confirm=False)  # a budget given explicitly: no early stop
    first = d2.next_batch()  # type: ignore[attr-defined]
    for c in first:
        d2.record(c, _ci(1.0 if c in {nb.winner() for nb in near} else 1.2))  # type: ignore[attr-defined]
    assert not d2.done and len(d2.next_batch()) == 8  # type: ignore[attr-defined]


def test_a_winner_within_the_races_resolution_confirms_though_outside_a_narrow_interval() -> None:
    # SYNTHETIC, after an H200 case: intervals of +-0.1% (a long kernel, many repeats); a neighbour's
    # winner 0.6% behind the batch's best is outside the best's interval but within the race's 1%: a tie.
    from tritune.search.transfer import CONFIRM_TOL

    near, winners = _three_neighbours()
    for behind, stops in ((1.006, True), (1.0 + 2 * CONFIRM_TOL, False)):
        d = _driver(near)
        first = d.next_batch()  # type: ignore[attr-defined]
        for c in first:
            t = 1.0 if c == first[5] else behind if c == winners[0] else 1.2
            d.record(c, _ci(t, 0.001))  # type: ignore[attr-defined]
        assert d.done is stops, behind  # type: ignore[attr-defined]
        assert (d.why_stopped == "confirmed") is stops  # type: ignore[attr-defined]


def test_confirmed_is_false_for_other_strategies_and_first_must_be_positive() -> None:
    from tritune.search import Budget, SearchDriver

    assert get("surrogate", WIDE, seed=0).confirmed() is False
    with pytest.raises(SearchError, match="first batch's size"):
        SearchDriver(get("random", WIDE), Budget(evaluations=4), first=0)
    near, _ = _three_neighbours()
    with pytest.raises(SearchError, match="first=0"):
        TransferSearch(WIDE, key={"M": 6144}, neighbours=near, first=0)


def _unconfirmed_driver(near: list[KeyResults], cached_next: bool, evaluations: int = 16) -> SearchDriver:
    """FAKE: the 3 tuned keys' transfer to M=6144 (opening 8), with the opening told so that it confirms nothing."""
    s = TransferSearch(WIDE, key={"M": 6144}, neighbours=near, warm=16, first=8, cached_next=cached_next)
    nearest_first = [nb.winner() for nb in sorted(near, key=lambda nb: key_distance({"M": 6144}, nb.key))]
    d = SearchDriver(s, Budget(evaluations=evaluations), width=16, warm=nearest_first, first=8, confirm=True)
    first = d.next_batch()
    assert len(first) == 8
    for c in first:  # SYNTHETIC: a config no neighbour won with is 10% faster, outside every interval
        d.record(c, _ci(0.9 if c == first[6] else 1.0))
    assert not d.done
    return d


def test_after_an_unconfirmed_opening_the_next_batch_is_the_configs_the_neighbours_measured_by_the_prior() -> None:
    near, _ = _three_neighbours()
    recorded = {c for nb in near for c, t in nb.times.items() if t is not None}
    d = _unconfirmed_driver(near, cached_next=True)
    s = d.strategy
    assert isinstance(s, TransferSearch)
    second = d.next_batch()
    assert len(second) == 8 and set(second) <= recorded  # cached binaries only: loads, no compile
    # the fastest of the unasked recorded configs by the prior, in its order
    prior = s._prior
    unasked = sorted((c for c in recorded if c not in set(s.opening)), key=lambda c: (prior[s.index[c]], s.index[c]))
    assert second == unasked[:8]
    # The rule before (cached_next=False) sends the winners' variants the neighbours never measured: compiles.
    old = _unconfirmed_driver(near, cached_next=False).next_batch()
    assert len(old) == 8 and not set(old) <= recorded


def test_the_cached_batch_is_as_large_as_the_opening_then_the_variants_follow() -> None:
    near, winners = _three_neighbours()
    recorded = {c for nb in near for c, t in nb.times.items() if t is not None}
    d = _unconfirmed_driver(near, cached_next=True, evaluations=32)
    s = d.strategy
    assert isinstance(s, TransferSearch)
    second = d.next_batch()
    assert len(second) == 16  # the pool's width: 8 recorded configs (the opening's size), then the warm start's rest
    assert set(second[:8]) <= recorded
    rest = [c for c in s.warm_start if c not in set(s.opening) and c not in set(second[:8])]
    assert second[8:8 + len(rest)] == rest[:8]  # the continuation as before: the winners' variants first
    variants = {s.candidates[j] for w in winners for j in cheap_variants(s.grid, s.index[w])} - recorded
    assert variants & set(second[8:])  # variants no neighbour measured come after the cached ones, not before
    assert not variants & set(second[:8])


def test_cached_next_waits_for_the_opening_and_must_be_a_bool() -> None:
    near, _ = _three_neighbours()
    assert TransferSearch(WIDE, key={"M": 6144}, neighbours=near, first=8).cached_next is False  # off by default
    s = TransferSearch(WIDE, key={"M": 6144}, neighbours=near, warm=16, first=8, cached_next=True)
    assert s.cached_picks(8) == []  # the opening not asked yet: nothing
    s.ask(4)
    assert s.cached_picks(8) == []  # half of it asked: still nothing
    no_opening = TransferSearch(WIDE, key={"M": 6144}, neighbours=near, warm=16, cached_next=True)
    no_opening.ask(8)
    assert no_opening.cached_picks(8) == []  # no opening batch (first=None): the warm start as before
    with pytest.raises(SearchError, match="cached_next"):
        TransferSearch(WIDE, key={"M": 6144}, neighbours=near, first=8, cached_next=1)  # type: ignore[arg-type]


def _opening_behind(near: list[KeyResults], behind: float) -> tuple[SearchDriver, list[Config]]:
    """FAKE: the transfer's opening told with a config no neighbour won with first, the nearest neighbour's winner
    ``behind`` it (narrow +-0.2% intervals: a long kernel), every other config 20% slower."""
    d = _driver(near)
    assert isinstance(d, SearchDriver)
    first = d.next_batch()
    for c in first:
        d.record(c, _ci(1.0 if c == first[5] else behind if c == first[0] else 1.2, 0.002))
    return d, first


def test_an_opening_that_puts_a_winner_just_behind_gets_a_check_race_and_that_race_decides() -> None:
    near, _ = _three_neighbours()
    # SYNTHETIC: the winner 1.8% behind: outside the race's 1% resolution, not confirmed on this first look
    d, first = _opening_behind(near, 1.018)
    assert not d.done and d.why_stopped is None
    field = d.check_field(4, 0.03)
    assert field == [first[5], first[0]]  # the best, then the transferred winner within 3%: race them again
    assert d.checked == tuple(field) and d.summary()["checked"] == [c.id for c in field]
    assert d.check_field(4, 0.03) == []  # once
    # The fresh race ties them (the winner 0.2% ahead): confirmed, on that race alone.
    assert d.recheck({first[5]: _ci(1.0, 0.002), first[0]: _ci(0.998, 0.002)})
    assert d.done and d.why_stopped == "confirmed"
    assert d.summary()["evaluated"] == 8  # the check race is no evaluation


def test_the_check_race_alone_decides_not_the_first_races_reading() -> None:
    near, _ = _three_neighbours()
    # SYNTHETIC, after an H100 case: the first race read the best on a cool GPU, 12% ahead of the winner;
    # timed together again, the winner is 0.5% behind it. Pooled with the first look it would stay 6% behind.
    d, first = _opening_behind(near, 1.12)
    assert d.check_field(4, 0.03, confirming_within=0.15) == [first[5], first[0]]
    assert d.recheck({first[5]: _ci(1.0, 0.002), first[0]: _ci(1.005, 0.002)}) and d.why_stopped == "confirmed"


def test_a_check_race_that_agrees_with_the_first_look_goes_on() -> None:
    near, _ = _three_neighbours()
    d, first = _opening_behind(near, 1.018)
    assert d.check_field(4, 0.03) == [first[5], first[0]]
    assert not d.recheck({first[5]: _ci(1.0, 0.002), first[0]: _ci(1.02, 0.002)})  # 2% behind again
    assert not d.done and len(d.next_batch()) == 8  # the search goes on as without the check
    with pytest.raises(SearchError, match="not in the check race's field"):
        d.recheck({first[1]: _ci(1.0)})
    fresh, _ = _opening_behind(near, 1.018)
    with pytest.raises(SearchError, match="no check race was asked"):
        fresh.recheck({first[0]: _ci(1.0)})


def test_no_check_race_when_no_winner_is_near_the_best_or_for_other_drivers() -> None:
    near, _ = _three_neighbours()
    d, first = _opening_behind(near, 1.05)  # 5% behind: beyond the plateau's 3%
    assert d.check_field(4, 0.03) == [] and d.checked is None and not d.done
    # ... unless the winners get a wider window (the tuner's: a look on a GPU whose clocks are settling)
    assert d.check_field(4, 0.03, confirming_within=0.15) == [first[5], first[0]]
    far, _ = _opening_behind(near, 1.2)  # 20% behind: the landscape moved
    assert far.check_field(4, 0.03, confirming_within=0.15) == [] and far.checked is None
    confirmed, _ = _opening_behind(near, 1.005)  # confirmed already: nothing to check
    assert confirmed.done and confirmed.check_field(4, 0.03) == []
    plain = SearchDriver(get("random", WIDE, seed=0), Budget(evaluations=16), width=8)  # no confirm
    for c in plain.next_batch():
        plain.record(c, _ci(1.0))
    assert plain.check_field(4, 0.03) == []
    assert get("random", WIDE).confirming() == frozenset()
    assert get("random", WIDE).confirmed_by({WIDE.configs()[0]: (1.0, None)}) is False
