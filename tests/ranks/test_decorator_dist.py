"""``@tritune.autotune(distributed=True)`` across 2 gloo ranks on CPU (SYNTHETIC timings: decorator_workers.py)."""

from __future__ import annotations

import os
from pathlib import Path

import decorator_workers as dw
import pytest

from ranks import run_ranks
from tritune.store import SQLiteStore

pytestmark = pytest.mark.slow


def test_ranks_split_agree_record_once_and_a_partial_miss_does_not_hang(tmp_path: Path) -> None:
    os.environ.setdefault("TRITON_INTERPRET", "1")
    out = tmp_path / "out"
    out.mkdir()
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    res = run_ranks(dw.run, 2, out, (str(tmp_path / "rdv"), str(out), str(a), str(b), str(tmp_path / "c.sqlite")),
                    ["torch.distributed", "triton", "tritune"])
    # every rank adopts the same winner, the true best of the synthetic landscape, labelled replayed
    assert res[0]["first"] == res[1]["first"] == {"config": "BLOCK=512,num_warps=4,num_stages=3", "source": "replayed"}
    # the ranks split the statically legal candidates, each loaded and raced on exactly one rank (BLOCK=300 fails
    # the compiler's front end on its rank, before any timing); then rank 0 re-times the finalists (each rank's
    # winner and ties) on its own GPU: rank 1 measured only its share
    from tritune import Config
    from tritune.ranks import split_configs

    legal = [Config({"BLOCK": b}, num_warps=4) for b in (*dw.BLOCKS, 300)]
    share0, share1 = ({c.id for c in split_configs(legal, r, 2)} - {legal[-1].id} for r in (0, 1))
    m0, m1 = set(res[0]["measured"]), set(res[1]["measured"])
    assert m1 == share1 and share0 <= m0 and m0 - share0 and m0 - share0 <= share1
    # the store holds the key once, written by rank 0, with every candidate including the illegal one
    with SQLiteStore(a) as st:
        (entry,) = st.entries()
        assert entry.n_candidates == len(dw.BLOCKS) + 1
        assert st.lookup_winner(entry.key).config.kwargs["BLOCK"] == 512
    # rank 0 missed (empty store b), rank 1 hit: the collective lookup gives both the hit, nobody tunes alone
    assert res[0]["second"] == res[1]["second"] == {"config": "BLOCK=512,num_warps=4,num_stages=3", "source": "store"}

    # distributed=True with a search: one strategy (rank 0's) for both ranks; budget 4 counts both ranks' timings
    s0, s1 = res[0]["searched"], res[1]["searched"]
    assert s0["config"] == s1["config"] and s0["source"] == "replayed"
    assert s0["search"] == s1["search"] and s0["search"]["ranks"] == 2 and s0["search"]["width_per_rank"] == [1, 1]
    assert s0["search"]["evaluated"] == 4 and s0["search"]["stopped"] == "budget" and s0["search"]["width"] == 2
    assert s1["measured"]  # rank 1 timed its share of the batches
    assert res[0]["searched_again"] == res[1]["searched_again"] == {"config": s0["config"], "source": "store"}
    m0, m1 = res[0]["resumed"], res[1]["resumed"]
    assert m0 == m1 and m0["search"]["resumed"] == 4 and m0["search"]["evaluated"] == 2
    with SQLiteStore(tmp_path / "c.sqlite") as st:
        (entry,) = st.entries()
        tried = {r.config.id for r in st.candidates(entry.key)}
        assert len(tried) == 6 and set(s1["measured"]) <= tried  # rank 1's share is in rank 0's records
        win = st.lookup_winner(entry.key)
        assert win.config.id == m0["config"] and win.provenance["search"]["ranks"] == 2
    with SQLiteStore(str(tmp_path / "c.sqlite") + ".rank1") as st:
        assert st.entries() == []  # only rank 0 writes
    # a widened list over ranks: both ranks serve the race's generated pick; no rank ran a warm check of its own
    # (rank 0's warm twin would have made it fall back to the written config alone)
    w0, w1 = res[0]["widened"], res[1]["widened"]
    assert w0["config"] == w1["config"] and not w0["config"].startswith("BLOCK=512,")
    assert not w0["warm_check"] and not w1["warm_check"] and w0["warm_looks"] == w1["warm_looks"] == []
