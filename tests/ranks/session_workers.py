"""Rank processes for the farmed ``tune()`` test: gloo on CPU, GELU in Triton's interpreter.

The screen compiles for sm90 for real (no GPU needed) and every candidate is launched in the
interpreter and checked against the oracle; the TIMINGS ARE SYNTHETIC (a made-up landscape replayed
by ReplayTimer with per-rank seeded noise). Each rank writes what it saw to ``<dir>/rank<r>.json``.
"""

from __future__ import annotations

import json
import os
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

from tritune.bench import ReplayTimer
from tritune.engine.race import RaceOptions
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.store import SQLiteStore

GELU = Path(__file__).resolve().parents[2] / "examples" / "gelu.py"
KEY = {"n": 4096}
OPTS = RaceOptions(brief_budget_s=0.001, round_budget_s=0.003)
TIMES = [0.010, 0.008, 0.006, 0.007]  # SYNTHETIC: BLOCK=1024 is made the fastest


class CountingStore(SQLiteStore):
    """A SQLite store that counts its writes in this process, to show which rank wrote."""

    writes = 0

    def record(self, *a: Any, **k: Any) -> Any:
        type(self).writes += 1
        return super().record(*a, **k)


def replay_timer(wl: Any, seed: int) -> ReplayTimer:
    """SYNTHETIC timings for GELU's four configs, replayed with seeded noise."""
    pts = [LandscapePoint(c, Status.MEASURED, t) for c, t in zip(wl.candidates(), TIMES, strict=True)]
    return ReplayTimer(Landscape.from_points("gelu", "synthetic", KEY, pts), noise=0.05, seed=seed)


def gelu() -> Any:
    from tritune.workload import load_workloads

    (wl,) = load_workloads(GELU, "gelu")
    return wl


def tune_gelu(wl: Any, store: Any, seed: int, group: Any, exhaustive: bool = False, **search: Any) -> Any:
    from tritune.engine.options import TuneOptions
    from tritune.offline.tune import tune

    opts = TuneOptions(jobs=1, race=OPTS, sweep=exhaustive, **search)
    return tune([wl], keys=[KEY], ceilings=False, options=opts, store=store, group=group, timer=replay_timer(wl, seed),
                target="sm90", device="cpu")  # fmt: skip


def farm(rank: int, world: int, init_file: str, out_dir: str, store_path: str) -> None:
    """Tune GELU farmed over ``world`` ranks (racing, then exhaustive)."""
    import torch.distributed as dist

    data: dict[str, Any] = {"rank": rank}
    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=60))  # fmt: skip
        wl = gelu()
        store = CountingStore(store_path)
        data["race"] = tune_gelu(wl, store, 100 + rank, "auto").to_json()
        data["sweep"] = tune_gelu(wl, None, 200 + rank, "auto", exhaustive=True).to_json()
        data["writes"] = CountingStore.writes
        # one search shared by the ranks: 2 of the 4 configs, one batch as wide as both pools (1 + 1); ROUNDS=1
        # keeps the pool's width (adaptive width would ask batches of ceil(2 / 16) = 1: rank 1 idle)
        from tritune.engine import plan as searching

        searching.ROUNDS = 1
        data["search"] = tune_gelu(wl, None, 300 + rank, "auto", search="random", budget=2).to_json()
    except BaseException:
        data["exception"] = traceback.format_exc()
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(data, default=str))
    os._exit(0)
