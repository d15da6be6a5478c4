"""The deterministic parts of distributed tuning, in one process: splits, the winner rule, merging, records.

SYNTHETIC timings throughout (made-up landscapes and hand-made measurements).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tritune import ranks as td
from tritune.bench import Measurement, ReplayTimer, synthetic_landscape
from tritune.config import Config
from tritune.engine.race import RaceOptions, race
from tritune.errors import ConfigError, DistributedError
from tritune.outcome import Status
from tritune.ranks.race import RankShare
from tritune.store import MemoryStore
from tritune.testing.store_contract import make_test_key

OPTS = RaceOptions(brief_budget_s=0.001, round_budget_s=0.003)
CONFIGS = synthetic_landscape(30, seed=1).configs


def _m(median: float, half: float = 0.0) -> Measurement:
    return Measurement.from_samples([median - half, median, median, median + half] * 3)


# -- splits ----------------------------------------------------------------------------------------------
@given(st.integers(1, 30), st.integers(1, 9), st.randoms(use_true_random=False))
def test_split_is_a_partition_independent_of_list_order(n: int, world: int, rnd: object) -> None:
    cfgs = CONFIGS[:n]
    shuffled = list(cfgs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    parts = [td.split_configs(cfgs, r, world) for r in range(world)]
    assert parts == [td.split_configs(shuffled, r, world) for r in range(world)]
    assert sorted(itertools.chain(*parts)) == sorted(cfgs)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_split_by_cost_balances_the_load() -> None:
    cost = {c: (10.0 if i < 2 else 1.0) for i, c in enumerate(CONFIGS[:12])}  # two expensive configs
    parts = [td.split_configs(CONFIGS[:12], r, 2, cost=cost.__getitem__) for r in range(2)]
    loads = [sum(cost[c] for c in p) for p in parts]
    assert loads == [15.0, 15.0] and all(CONFIGS[0] in p or CONFIGS[1] in p for p in parts)


def test_split_rejects_bad_ranks_duplicates_and_bad_costs() -> None:
    with pytest.raises(DistributedError, match="rank 2 is not a rank of a group of 2"):
        td.split_configs(CONFIGS, 2, 2)
    with pytest.raises(ConfigError, match="listed more than once"):
        td.split_configs([CONFIGS[0], CONFIGS[0]], 0, 2)
    with pytest.raises(ConfigError, match="finite, non-negative"):
        td.split_configs(CONFIGS[:3], 0, 2, cost=lambda c: float("inf"))


def test_winner_is_smallest_median_then_smallest_id_and_ties_overlap() -> None:
    a, b, c, d = CONFIGS[:4]
    first_id = min(a, b, key=lambda x: x.id)
    win, ties = td.pick_winner([(c, _m(1.0, 0.05)), (a, _m(1.0)), (b, _m(1.0)), (d, _m(1.2))])
    assert win == first_id
    assert set(ties) == {a, b, c} - {first_id}  # c overlaps (1.0 +- 0.05), d does not
    assert td.pick_winner([]) == (None, ())


def _share(rank: int, cfgs: list[Config], seed: int) -> RankShare:
    land = synthetic_landscape(30, seed=1, near=(0.03, 0.05))
    return RankShare(rank, race(cfgs, ReplayTimer(land, seed=seed, noise=0.05).measure_config, OPTS), 0.0)


def test_merge_gives_the_same_answer_whatever_order_shares_arrive() -> None:
    land = synthetic_landscape(30, seed=1, near=(0.03, 0.05))
    shares = [_share(r, td.split_configs(land.configs, r, 3), seed=r) for r in range(3)]
    merged, finalists, measured_on = td.merge_shares(land.configs, shares, OPTS)
    again, fin2, _ = td.merge_shares(land.configs, list(reversed(shares)), OPTS)
    assert merged.winner == again.winner == land.best.config and finalists == fin2
    assert [o.config for o in merged.outcomes] == land.configs
    assert set(measured_on.values()) == {0, 1, 2} and len(measured_on) == 30
    assert merged.measurements == sum(s.result.measurements for s in shares if s.result)
    with pytest.raises(DistributedError, match="no rank reported a result"):
        td.merge_shares(land.configs, shares[:2], OPTS)


# -- records ---------------------------------------------------------------------------------------------
@pytest.fixture
def world1(tmp_path: Path) -> Iterator[None]:
    import torch.distributed as dist

    assert not dist.is_initialized()
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path}/rdzv", rank=0, world_size=1, timeout=timedelta(seconds=30)
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_world_of_one_races_everything_locally_and_records_once(world1: None) -> None:
    land = synthetic_landscape(20, seed=4, near=(0.03,), failures={Status.ILLEGAL: 1})
    res = td.distributed_race(land.configs, ReplayTimer(land, seed=1).measure_config, label="g", options=OPTS)
    assert res.winner == land.best.config and res.world_size == 1 and res.rank == 0
    assert {r for _, r in res.measured_on} == {0} and len(res.measured_on) == 20
    store = MemoryStore()
    key = make_test_key("g", 1)
    won = td.record_on_rank0(store, key, res)
    assert won is not None and won.config == land.best.config
    recs = store.candidates(key)
    assert len(recs) == 20 and sum(r.status is Status.ILLEGAL for r in recs) == 1
    assert td.record_on_rank0(store, key, res, rank=1) is None  # not rank 0: writes nothing
    assert res.to_json()["distributed"]["world_size"] == 1
    assert td.agree_on_cached("g", None) is None


def test_not_initialized_is_a_clear_error() -> None:
    with pytest.raises(DistributedError, match="init_process_group"):
        td.distributed_race(CONFIGS[:2], lambda c, b: _m(1.0), label="g")


def test_a_failing_measure_raises_distributed_error_naming_the_rank(world1: None) -> None:
    def measure(c: Config, budget_s: float) -> Measurement:
        raise ValueError("no args")

    # race() turns a measure exception into launch_failed; only errors outside it reach the exchange
    res = td.distributed_race(CONFIGS[:3], measure, label="g", options=OPTS)
    assert res.winner is None and all(o.status is Status.LAUNCH_FAILED for o in res.outcomes)

    from tritune.errors import TimingUnavailableError

    def no_gpu(c: Config, budget_s: float) -> Measurement:
        raise TimingUnavailableError("no GPU here")

    with pytest.raises(
        DistributedError, match=r"g: batch 1: timing 3 configs failed on rank 0: TimingUnavailableError"
    ):
        td.distributed_race(CONFIGS[:3], no_gpu, label="g", options=OPTS)


def test_rank_and_world_alone_and_broken(monkeypatch) -> None:
    """Not initialized: (0, 1). FAKE broken state (initialized, but the default group cannot answer): an
    error that says so, never a silent world of 1 in which this rank would tune alone."""
    import torch.distributed as tdist

    from tritune.errors import DistributedError
    from tritune.ranks import rank_and_world

    assert rank_and_world() == (0, 1)
    monkeypatch.setattr(tdist, "is_initialized", lambda: True)

    def broken() -> int:
        raise RuntimeError("Default process group has not been initialized")

    monkeypatch.setattr(tdist, "get_rank", broken)
    monkeypatch.setattr(tdist, "get_world_size", broken)
    with pytest.raises(DistributedError, match="cannot say this process's rank"):
        rank_and_world()
