"""``tune()`` farmed over 2 gloo ranks on CPU equals the single-process run, structurally.

Real static screen and real interpreter launches checked against the oracle; SYNTHETIC
timings (see session_workers.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import session_workers as sw

from ranks import run_ranks
from tritune.config import Config
from tritune.store import SQLiteStore

pytestmark = pytest.mark.slow


def test_farmed_tune_matches_single_process_and_rank0_alone_writes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    store_path = tmp_path / "store.sqlite"
    res = run_ranks(sw.farm, 2, out, (str(tmp_path / "rdv"), str(out), str(store_path)),
                    ["torch.distributed", "triton", "session_workers", "tritune.offline.tune"])

    wl = sw.gelu()
    single = sw.tune_gelu(wl, None, 100, None).to_json()
    ids = {c.id for c in wl.candidates()}
    for scenario in ("race", "sweep"):
        runs = [r[scenario] for r in res]
        for run in runs:
            (w,) = run["workloads"]
            (sw1,) = single["workloads"]
            assert [Config.from_json(c["config"]).id for c in w["candidates"]] == [
                c.id for c in wl.candidates()
            ]
            assert [c["status"] for c in w["candidates"]] == [c["status"] for c in sw1["candidates"]]
            assert w["winner"] == sw1["winner"] and w["winner"]["kwargs"]["BLOCK"] == 1024
            assert run["winners_identical_across_ranks"] is True
            assert run["provenance"]["world_size"] == 2 and len(run["provenance"]["rank_wall_s"]) == 2
            assert [x["rank"] for x in run["ranks"]] == [0, 1]
            measured_on = w["race"]["distributed"]["measured_on"]
            assert set(measured_on) == ids and set(measured_on.values()) == {0, 1}
        assert runs[0]["workloads"][0]["candidates"] == runs[1]["workloads"][0]["candidates"]
    assert "distributed" not in single["workloads"][0]["race"] and "world_size" not in single["provenance"]

    assert [r["writes"] for r in res] == [1, 0]  # the store is written once, by rank 0
    with SQLiteStore(store_path) as store:
        (entry,) = store.entries()
        assert len(store.candidates(entry.key)) == len(ids)
        win = store.lookup_winner(entry.key)
        assert win is not None and win.config.kwargs["BLOCK"] == 1024

    searched = [r["search"]["workloads"][0] for r in res]
    assert searched[0]["candidates"] == searched[1]["candidates"] and searched[0]["winner"] == searched[1]["winner"]
    s0, s1 = (w["search"] for w in searched)
    assert s0 == s1 and s0["ranks"] == 2 and s0["evaluated"] == 2 and s0["width"] == 2
    tried = [c for c in searched[0]["candidates"] if c.get("searched") is not False]
    assert len(tried) == 2 and set(searched[0]["race"]["distributed"]["measured_on"].values()) == {0, 1}
