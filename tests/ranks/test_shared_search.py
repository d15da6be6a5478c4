"""One search shared by 2 gloo ranks on CPU (``tritune.ranks.search``), against one process's search.

SYNTHETIC timings replayed without noise (search_workers.py): what is compared is the search's logic
(one strategy, the batches, the budget, the winner), never a timing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import search_workers as sw

from ranks import run_ranks
from tritune.engine.finals import FINAL_LIMIT
from tritune.engine.loop import LocalField, Parts, run_batches


def search_and_race(driver, *, prepare, measure, options, compiler=None, finalists=(), stats=None, on_batch=None,
                    overlap=True, final=FINAL_LIMIT, recover=None, probe=None):
    """The batch loop in this process over a search driver (``run_batches`` with a ``LocalField``)."""
    return run_batches(driver, Parts(prepare, measure, options, compiler), field=LocalField(overlap), finalists=finalists,
                       final=final, stats=stats, on_batch=on_batch, recover=recover, probe=probe)


PRELOAD = ["torch.distributed", "search_workers", "tritune.ranks.search"]


def _run(tmp_path: Path, strategy: str, fail_rank: int | None = None) -> list[dict]:
    out = tmp_path / "out"
    out.mkdir()
    return run_ranks(sw.shared, 2, out, (str(tmp_path / "rdv"), str(out), strategy, fail_rank), PRELOAD, 90.0)


def _single(strategy: str) -> tuple[list[str], str | None]:
    """The same search in one process with one pool as wide as both ranks' (no overlap of batches)."""
    land = sw.landscape()
    legal = list(land.configs)
    driver, _ = sw.make_driver(legal, strategy, seed=5)(2 * sw.WIDTH)
    res = search_and_race(driver, prepare=sw.prepare_for(land), measure=sw.FakeMeasure(land), options=sw.OPTS,
                          overlap=False)  # fmt: skip
    assert res is not None
    return [o.config.id for o in res.outcomes], None if res.winner is None else res.winner.id


@pytest.mark.parametrize("strategy", ["random", "surrogate"])
def test_two_ranks_share_one_search_and_measure_what_one_process_would(tmp_path: Path, strategy: str) -> None:
    r0, r1 = _run(tmp_path, strategy)
    # one strategy: both ranks saw the same batches, each as wide as the two pools together
    assert r0["batches"] == r1["batches"] and len(r0["batches"]) == sw.BUDGET // (2 * sw.WIDTH)
    assert all(len(b) == 2 * sw.WIDTH for b in r0["batches"])
    tried = sorted(c for b in r0["batches"] for c in b)
    assert len(set(tried)) == len(tried) == sw.BUDGET
    # every config was timed on exactly one rank, and both ranks worked
    assert set(r0["measured_on"]) == set(tried) and set(r0["measured_on"].values()) == {0, 1}
    # the budget counts both ranks' evaluations
    assert r0["summary"]["evaluated"] == r1["summary"]["evaluated"] == sw.BUDGET
    assert r0["summary"]["stopped"] == "budget" and r1["summary"] == r0["summary"]
    assert r0["info"]["ranks"] == 2 and r0["info"]["width_per_rank"] == [sw.WIDTH, sw.WIDTH]
    # one winner everywhere, the one a single process finds from the same configs
    single_tried, single_winner = _single(strategy)
    assert sorted(single_tried) == tried
    assert r0["winner"] == r1["winner"] == single_winner is not None
    assert r0["retimed"] and r1["retimed"]
    assert r0["budgets"] == [None] * len(r0["batches"])  # no opening: every batch on the race's own budget


def test_every_rank_races_a_transfers_opening_on_a_share_of_the_budget(tmp_path: Path) -> None:
    from tritune.engine.finals import OPENING_BUDGET

    r0, r1 = _run(tmp_path, "random+confirm")
    assert r0["batches"] == r1["batches"] and len(r0["batches"]) == 3  # random never confirms: the search goes on
    per = sw.OPTS.budget_per_candidate_s
    assert per is not None
    assert r0["budgets"] == r1["budgets"] == [pytest.approx(per * OPENING_BUDGET), None, None]


def test_the_shared_search_asks_the_strategys_finals_once_on_rank_0(tmp_path: Path) -> None:
    """surrogate with probe=1: rank 0's driver holds back the finalists' reserve (15% of 24 = 4) and, once every
    rank's batch is back, asks the strategy's finals; the probes go to the ranks as one more batch, counted in
    the budget, and the ranks end with what one process's search finds."""
    r0, r1 = _run(tmp_path, "surrogate:probe=1")
    assert r0["batches"] == r1["batches"]
    assert [len(b) for b in r0["batches"]] == [8, 8, 4, 4]  # 20, then the reserve after the finals
    tried = sorted(c for b in r0["batches"] for c in b)
    assert len(set(tried)) == len(tried) == sw.BUDGET
    assert r0["summary"]["finals"] == {"reserve": 4, "probes": 4, "at": 20} and r1["summary"] == r0["summary"]
    assert r0["summary"]["evaluated"] == sw.BUDGET
    single_tried, single_winner = _single("surrogate:probe=1")
    assert sorted(single_tried) == tried
    assert r0["winner"] == r1["winner"] == single_winner is not None


@pytest.mark.parametrize("fail_rank", [0, 1])
def test_a_rank_raising_mid_search_makes_every_rank_raise(tmp_path: Path, fail_rank: int) -> None:
    res = _run(tmp_path, "random", fail_rank=fail_rank)
    for r in res:
        assert r["raised"].startswith("DistributedError"), r
        assert f"on rank {fail_rank}" in r["raised"] and "went away mid-search" in r["raised"]
