"""``@tritune.autotune(distributed=True)`` across 2 gloo ranks on CPU (SYNTHETIC timings: decorator_workers.py)."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

import decorator_workers as dw
import pytest

from tritune.store import SQLiteStore

pytestmark = pytest.mark.slow


def test_ranks_split_agree_record_once_and_a_partial_miss_does_not_hang(tmp_path: Path) -> None:
    os.environ.setdefault("TRITON_INTERPRET", "1")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch.distributed", "triton", "tritune"])
    out = tmp_path / "out"
    out.mkdir()
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    procs = [ctx.Process(target=dw.run, args=(r, 2, str(tmp_path / "rdv"), str(out), str(a), str(b))) for r in range(2)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 120
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
    assert not alive, "a rank hung"
    res = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    for r in res:
        assert "exception" not in r, r["exception"]
    # every rank adopts the same winner, the true best of the synthetic landscape, labelled replayed
    assert res[0]["first"] == res[1]["first"] == {"config": "BLOCK=512,num_warps=4,num_stages=3", "source": "replayed"}
    # the ranks split the legal candidates: each measured on exactly one rank; BLOCK=300 on none
    m0, m1 = set(res[0]["measured"]), set(res[1]["measured"])
    assert not m0 & m1 and len(m0 | m1) == len(dw.BLOCKS) and m0 and m1
    # the store holds the key once, written by rank 0, with every candidate including the illegal one
    with SQLiteStore(a) as st:
        (entry,) = st.entries()
        assert entry.n_candidates == len(dw.BLOCKS) + 1
        assert st.lookup_winner(entry.key).config.kwargs["BLOCK"] == 512
    # rank 0 missed (empty store b), rank 1 hit: the collective lookup gives both the hit, nobody tunes alone
    assert res[0]["second"] == res[1]["second"] == {"config": "BLOCK=512,num_warps=4,num_stages=3", "source": "store"}
