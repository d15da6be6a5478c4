"""Rank processes for ``@tritune.autotune(distributed=True)``: gloo on CPU, kernels in Triton's interpreter.

Legality is real (sm90 front end) and the kernel really runs in the interpreter; the TIMINGS ARE
SYNTHETIC: a made-up landscape replayed through the Tuner's test timer (``Tuner(timer=...)``), with
per-rank seeded noise. Each rank writes what it saw to ``<dir>/rank<r>.json``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KEY = {"n": 3000}
BLOCKS = (64, 128, 256, 512, 1024, 2048)
TIMES = (0.030, 0.020, 0.012, 0.008, 0.010, 0.015)  # SYNTHETIC: BLOCK=512 is made the fastest


class CountingReplay:
    """SYNTHETIC timer: replays TIMES with noise and records which configs this rank measured."""

    def __init__(self, seed: int) -> None:
        from tritune import Config
        from tritune.bench import ReplayTimer
        from tritune.landscape import Landscape, LandscapePoint
        from tritune.outcome import Status

        pts = [LandscapePoint(Config({"BLOCK": b}, num_warps=4), Status.MEASURED, t) for b, t in zip(BLOCKS, TIMES)]
        pts.append(LandscapePoint(Config({"BLOCK": 300}, num_warps=4), Status.ILLEGAL, None))
        self._replay = ReplayTimer(Landscape.from_points("scale", "synthetic", KEY, pts), noise=0.02, seed=seed)
        self.measured: set[str] = set()

    def measure_config(self, config: Any, budget_s: float = 0.05, **kw: Any) -> Any:
        self.measured.add(config.id)
        return self._replay.measure_config(config, budget_s, **kw)


class WidenedFake:
    """SYNTHETIC timer for a widened list: larger blocks are faster with the L2 flushed (``measure_config``); its warm
    twin (``measure_config_warm``) makes blocks above 512 slower on rank 0 only, so a warm check run by each rank
    would pick differently on the two ranks."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.warm: list[str] = []

    def measure_config(self, config: Any, budget_s: float = 0.05, **kw: Any) -> Any:
        from tritune.bench import Measurement

        t = 1.0 / config.kwargs["BLOCK"] + 1e-5 * config.num_warps + 1e-6 * config.num_stages
        return Measurement.from_samples([t] * 8, stop="budget")

    def measure_config_warm(self, config: Any, budget_s: float = 0.05, **kw: Any) -> Any:
        from tritune.bench import Measurement

        self.warm.append(config.id)
        slow = self.rank == 0 and config.kwargs["BLOCK"] > 512
        return Measurement.from_samples([2.0 if slow else 1.0] * 8, stop="budget")


def run(rank: int, world: int, init_file: str, out_dir: str, store_a: str, store_b: str, store_c: str) -> None:
    import torch
    import torch.distributed as dist
    import triton

    import tritune
    from kernels import scale_kernel
    from tritune.engine.race import RaceOptions

    data: dict[str, Any] = {"rank": rank}
    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=60))  # fmt: skip
        configs = [tritune.Config({"BLOCK": b}, num_warps=4) for b in (*BLOCKS, 300)]
        opts = RaceOptions(brief_budget_s=0.001, round_budget_s=0.003)

        def launch(store: str | bool, timer: Any, cfgs: Any = configs, **search: Any) -> Any:
            k = tritune.autotune(configs=cfgs, key=["n"], store=store, distributed=True, timer=timer, race=opts,
                                 **search)(scale_kernel)  # fmt: skip
            n = KEY["n"]
            x = torch.randn(n)
            out = torch.empty_like(x)
            k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, out, n)
            assert torch.equal(out, x * 2)
            (choice,) = k.choices().values()
            return choice

        timer = CountingReplay(seed=10 + rank)
        first = launch(store_a, timer)
        data["first"] = {"config": first.config.id, "source": first.source}
        data["measured"] = sorted(timer.measured)
        # Partial miss: rank 0 looks in an empty store, the others in the one just written. Rank 0 writes it
        # after the race every rank shares: wait for that write, or a rank may look before it is there.
        dist.barrier()
        second = launch(store_b if rank == 0 else store_a, CountingReplay(seed=20 + rank))
        data["second"] = {"config": second.config.id, "source": second.source}
        # One search shared by the ranks: budget 4 of the 6 legal configs, batches of 2 (one worker per rank).
        # ROUNDS=1 keeps every batch as wide as the 2-wide pool, as before adaptive width (which would ask
        # batches of ceil(4 / 16) = 1 here, and rank 1 would time nothing).
        from tritune.engine import plan as searching

        searching.ROUNDS = 1
        timer = CountingReplay(seed=30 + rank)
        searched = launch(store_c, timer, search="random", budget=4, jobs=1)
        data["searched"] = {"config": searched.config.id, "source": searched.source,
                            "search": searched.stats["search"], "measured": sorted(timer.measured)}  # fmt: skip
        dist.barrier()  # rank 0 has written the search; the same budget again is a store hit on every rank
        again = launch(store_c, CountingReplay(seed=40 + rank), search="random", budget=4, jobs=1)
        data["searched_again"] = {"config": again.config.id, "source": again.source}
        # A larger budget resumes from rank 0's store (rank 1 is given an empty one: its view does not count)
        more = launch(store_c if rank == 0 else store_c + f".rank{rank}", CountingReplay(seed=50 + rank),
                      search="random", budget=6, jobs=1)  # fmt: skip
        data["resumed"] = {"config": more.config.id, "search": more.stats["search"]}
        # A widened list over ranks: the race's pick stands on every rank (no rank-local warm check)
        wide_timer = WidenedFake(rank)
        wide = launch(False, wide_timer, [tritune.Config({"BLOCK": 512}, num_warps=4)], widen=True)
        data["widened"] = {"config": wide.config.id, "warm_check": "warm_check" in wide.stats,
                           "warm_looks": wide_timer.warm}  # fmt: skip
    except BaseException:
        data["exception"] = traceback.format_exc()
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(data))
    os._exit(0)
