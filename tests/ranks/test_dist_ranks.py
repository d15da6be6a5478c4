"""Distributed tuning across real processes: gloo on CPU, 2 and 4 ranks, the replay timer.

SYNTHETIC timings (made-up landscapes replayed with per-rank seeded noise). Each test starts its ranks as
spawned processes that meet through a file:// rendezvous in tmp_path (no network), and reads back what
each rank wrote (see dist_workers.py).
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dist_workers
import pytest

from tritune.outcome import Status
from tritune.store import SQLiteStore
from tritune.testing.store_contract import make_test_key

pytestmark = pytest.mark.slow


def _run(
    target: Callable[..., None], world: int, tmp: Path, *args: Any, limit_s: float = 90
) -> list[dict[str, Any]]:
    # forkserver: torch.distributed (~5 s to import on 2 cores) is imported once, by the server, not per rank
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch.distributed", "triton", "dist_workers", "tritune.ranks"])
    out = tmp / "out"
    out.mkdir()
    init = tmp / "rendezvous"
    procs = [ctx.Process(target=target, args=(r, world, str(init), str(out), *args)) for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + limit_s
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
        p.join()
    assert not alive, f"{len(alive)} rank(s) still running after {limit_s} s: a hang"
    results = []
    for r in range(world):
        f = out / f"rank{r}.json"
        results.append(
            json.loads(f.read_text()) if f.exists() else {"rank": r, "exitcode": procs[r].exitcode}
        )
    for res in results:
        assert "exception" not in res, res["exception"]
    return results


@pytest.mark.parametrize("world", [2, pytest.param(4, marks=pytest.mark.long)])  # 4 ranks on 2 cores: long
def test_ranks_agree_measure_each_config_once_and_store_the_union_once(world: int, tmp_path: Path) -> None:
    store_path = tmp_path / "store.sqlite"
    res = _run(dist_workers.tune_all, world, tmp_path, str(store_path))
    land = dist_workers.landscape()
    ids = {c.id for c in land.configs}

    # every rank adopts the identical winner (and ties), and it is the landscape's true best (3% clear)
    for scenario in ("race", "sweep", "retime"):
        winners = {r[scenario]["winner"] for r in res}
        assert winners == {land.best.config.id}, (scenario, winners)
    assert len({tuple(r["race"]["ties"]) for r in res}) == 1

    # each config is measured on exactly one rank, and every config is measured
    for scenario in ("race", "sweep"):
        ranks_of: dict[str, set[int]] = {}
        for r in res:
            for cid in r[scenario]["calls"]:
                ranks_of.setdefault(cid, set()).add(r["rank"])
        assert set(ranks_of) == ids
        assert all(len(s) == 1 for s in ranks_of.values()), {c: s for c, s in ranks_of.items() if len(s) > 1}
        shares = [len(r[scenario]["calls"]) for r in res]
        assert max(shares) - min(shares) <= 1  # round-robin: balanced shares
    assert all(sum(r["sweep"]["calls"].values()) == len(r["sweep"]["calls"]) for r in res)  # once, exactly
    assert all(r["race"]["measured_on"] == res[0]["race"]["measured_on"] for r in res)

    # re-timing: only rank 0 times the finalists a second time; its race picks the winner for everyone
    finalists = res[0]["retime"]["finalists"]
    assert len(finalists) >= 2 and all(r["retime"]["finalists"] == finalists for r in res)
    assert res[0]["retime"]["retimed_winner"] == land.best.config.id
    assert all(r["retime"]["recorded_same_as_retimed"] for r in res)  # the finalists carry rank 0's times
    share = {
        r["rank"]: {c for c, rk in res[0]["race"]["measured_on"].items() if rk == r["rank"]} for r in res
    }
    for r in res[1:]:
        assert set(r["retime"]["calls"]) == share[r["rank"]]  # the split is the same in every race
    assert set(res[0]["retime"]["calls"]) == share[0] | set(finalists)
    assert any(c not in share[0] for c in finalists)  # rank 0 re-timed configs other ranks measured

    # the store holds the union of every rank's results, written once, by rank 0
    assert [r["store_writes"] for r in res] == [1] + [0] * (world - 1)
    with SQLiteStore(store_path) as store:
        key = make_test_key("synthetic", 4096)
        recs = {c.config.id: c for c in store.candidates(key)}
        assert set(recs) == ids
        illegal = {c.id for c in land.configs if land.lookup(c).status is Status.ILLEGAL}
        assert len(illegal) == 2 and illegal == {i for i, c in recs.items() if c.status is Status.ILLEGAL}
        assert all(c.time_ms is not None for i, c in recs.items() if i not in illegal)
        assert {c.provenance["rank"] for c in recs.values()} == set(range(world))
        win = store.lookup_winner(key)
        assert win is not None and win.config.id == res[0]["race"]["winner"]

    # real launches in the interpreter: each GELU config ran on exactly one rank, correctly
    launched = [c for r in res for c in r["interp"]["launched"]]
    assert sorted(launched) == sorted(set(launched)) and len(launched) == 4
    assert {r["interp"]["winner"] for r in res} == {"BLOCK=1024,num_warps=8,num_stages=3"}

    if world == 4:  # subgroups: each pair splits the 40 configs between its two ranks
        assert [r["pairs"]["group"] for r in res] == [[0, 1], [0, 1], [2, 3], [2, 3]]
        assert [r["pairs"]["rank"] for r in res] == [0, 1, 0, 1]
        assert [r["pairs"]["calls"] for r in res] == [20, 20, 20, 20]
        assert {r["pairs"]["winner"] for r in res} == {land.best.config.id}

    # prepare (compile/verify) runs once per config, on its owner; a config it fails is never timed
    prepared = [c for r in res for c in r["prepared"]["prepared"]]
    assert sorted(prepared) == sorted(ids) and all(
        n == 1 for r in res for n in r["prepared"]["prepared"].values()
    )
    best = land.best.config.id
    assert all(best not in r["prepared"]["calls"] for r in res)
    assert {r["prepared"]["best_status"] for r in res} == {"incorrect"}
    runner_up = min((p for p in land.measured if p.config.id != best), key=lambda p: p.time_ms or 0.0)
    assert {r["prepared"]["winner"] for r in res} == {runner_up.config.id}

    # the cached lookup: the one rank with a hit answers for all
    assert {r["cached"] for r in res} == {land.configs[5].id}

    # disagreement is detected on every rank, naming the ranks that differ
    for r in res:
        assert "rank 1" in r["errors"]["label"] and "gelu n=4000" in r["errors"]["label"]
        assert (
            f"rank {world - 1}" in r["errors"]["candidates"] and "39 candidates" in r["errors"]["candidates"]
        )


def test_a_rank_crashing_mid_tune_makes_the_others_fail_within_the_timeout(tmp_path: Path) -> None:
    timeout_s = 15.0
    res = _run(dist_workers.crash_one, 3, tmp_path, timeout_s)
    assert res[1] == {"rank": 1, "exitcode": 7}  # it died; it wrote nothing
    for r in (res[0], res[2]):
        assert r["outcome"] == "DistributedError", r
        assert "gelu at n=4096" in r["message"]
        assert r["elapsed_s"] < timeout_s + 5


@pytest.mark.long  # two gloo ranks wait out a 3-second collective timeout
def test_a_rank_that_misses_alone_gets_a_clear_error_naming_the_absent_rank(tmp_path: Path) -> None:
    timeout_s = 3.0
    res = _run(dist_workers.miss_alone, 2, tmp_path, timeout_s)
    r0 = res[0]
    assert r0["outcome"] == "DistributedError", r0
    assert "gelu at n=4096" in r0["message"] and "Ranks 1 failed to pass" in r0["message"], r0["message"]
    assert timeout_s - 0.5 < r0["elapsed_s"] < timeout_s + 5
    assert res[1]["outcome"] == "carried on"
