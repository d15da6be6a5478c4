"""Rank processes for the distributed tests: gloo on CPU, the replay timer over synthetic landscapes.

Each rank writes what it saw to ``<dir>/rank<r>.json`` and leaves with ``os._exit`` (a crashed peer
leaves gloo's teardown nothing good to do). Nothing here is measured: timings are made up
(``synthetic_landscape``) and replayed with per-rank seeded noise.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from tritune.bench import Failure, ReplayTimer, synthetic_landscape
from tritune.config import Config
from tritune.engine.race import RaceOptions
from tritune.landscape import Landscape
from tritune.outcome import Status
from tritune.store import SQLiteStore
from tritune.testing.store_contract import make_test_key

OPTS = RaceOptions(brief_budget_s=0.001, round_budget_s=0.003)
NOISE = 0.05


def landscape(n_key: int = 4096) -> Landscape:
    """SYNTHETIC: 40 configs with a 3%-clear best, two illegal; a different landscape per key."""
    return synthetic_landscape(40, seed=n_key % 97, near=(0.03, 0.05), failures={Status.ILLEGAL: 2})


class CountingStore(SQLiteStore):
    """A SQLite store that counts its writes in this process, to show which rank wrote."""

    writes = 0

    def record_many(self, writes: Any) -> None:
        type(self).writes += 1
        super().record_many(writes)


class CountingMeasure:
    """The replay timer's ConfigMeasure, counting calls per config; optionally dies at call ``die_at``."""

    def __init__(self, land: Landscape, seed: int, die_at: int | None = None) -> None:
        self.timer = ReplayTimer(land, noise=NOISE, seed=seed)
        self.calls: Counter[str] = Counter()
        self.die_at = die_at

    def __call__(self, config: Config, budget_s: float) -> Any:
        self.calls[config.id] += 1
        if self.die_at is not None and sum(self.calls.values()) >= self.die_at:
            os._exit(7)  # a rank crashing mid-tune
        return self.timer.measure_config(config, budget_s)


def _init(rank: int, world: int, init_file: str) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world, timeout=timedelta(seconds=60)
    )


def _finish(out: Path, rank: int, data: dict[str, Any]) -> None:
    (out / f"rank{rank}.json").write_text(json.dumps(data))
    os._exit(0)


def tune_all(rank: int, world: int, init_file: str, out_dir: str, store_path: str) -> None:
    """Every scenario that should succeed, in one process group: race, sweep, re-time, lookup, checks."""
    from tritune import ranks as td
    from tritune.errors import DistributedError

    out = Path(out_dir)
    data: dict[str, Any] = {"rank": rank}
    try:
        _init(rank, world, init_file)
        tg = td.TuningGroup.create(30.0)
        land = landscape()
        store = CountingStore(store_path)
        key = make_test_key("synthetic", 4096)

        m = CountingMeasure(land, seed=1000 + rank)
        res = td.distributed_race(land.configs, m, label="synthetic n=4096", group=tg, options=OPTS)
        data["race"] = {"winner": res.winner.id if res.winner else None, "ties": [c.id for c in res.ties],
                        "calls": dict(m.calls), "measured_on": dict(res.measured_on), "stop": res.stop,
                        "statuses": {o.config.id: o.status.value for o in res.outcomes}}  # fmt: skip
        td.record_on_rank0(store, key, res)

        m = CountingMeasure(land, seed=2000 + rank)
        res = td.distributed_race(land.configs, m, label="sweep", group=tg, options=OPTS, method="sweep")
        data["sweep"] = {"winner": res.winner.id if res.winner else None, "calls": dict(m.calls)}

        m = CountingMeasure(land, seed=3000 + rank)
        res = td.distributed_race(
            land.configs, m, label="retime", group=tg, options=OPTS, retime_finalists=True
        )
        data["retime"] = {"winner": res.winner.id if res.winner else None, "calls": dict(m.calls),
                          "finalists": [c.id for c in res.finalists],
                          "retimed_winner": res.retimed.winner.id if res.retimed and res.retimed.winner else None,
                          "recorded_same_as_retimed": all(
                              res.outcome(c).measurement == res.retimed.outcome(c).measurement
                              for c in res.finalists) if res.retimed else False}  # fmt: skip

        data["interp"] = _interpreted(td, tg, rank)

        prepared: Counter[str] = Counter()
        best = land.best.config

        def prepare(c: Config) -> Failure | None:  # the true best is made to fail verification
            prepared[c.id] += 1
            return Failure(Status.INCORRECT, f"{c.id}: wrong output") if c == best else None

        m = CountingMeasure(land, seed=5000 + rank)
        res = td.distributed_race(land.configs, m, label="prepared", group=tg, options=OPTS, prepare=prepare)
        data["prepared"] = {"winner": res.winner.id if res.winner else None, "prepared": dict(prepared),
                            "calls": dict(m.calls), "best_status": res.outcome(best).status.value}  # fmt: skip

        if world == 4:  # two tuning groups of two ranks, made by their members only
            pair = [0, 1] if rank < 2 else [2, 3]
            sub = td.TuningGroup.create(30.0, ranks=pair)
            m = CountingMeasure(land, seed=4000 + rank)
            res = td.distributed_race(land.configs, m, label="pairs", group=sub, options=OPTS)
            data["pairs"] = {"winner": res.winner.id if res.winner else None, "calls": len(m.calls),
                             "group": list(sub.global_ranks), "rank": sub.rank}  # fmt: skip

        local = land.configs[5] if rank == world - 1 else None
        got = td.agree_on_cached("synthetic n=4096", local, group=tg)
        data["cached"] = None if got is None else got.id

        errors = {}
        try:
            td.agree_on_cached(f"gelu n={4096 if rank == 0 else 4000}", None, group=tg)
        except DistributedError as e:
            errors["label"] = str(e)
        cands = land.configs if rank != world - 1 else land.configs[1:]
        try:
            td.distributed_race(cands, CountingMeasure(land, seed=rank), label="mismatch", group=tg)
        except DistributedError as e:
            errors["candidates"] = str(e)
        data["errors"] = errors
        data["store_writes"] = CountingStore.writes
    except BaseException:
        data["exception"] = traceback.format_exc()
    _finish(out, rank, data)


class InterpretedGelu:
    """Launches the chapter's GELU kernel for real, in Triton's interpreter, and checks it against torch;
    the time it returns is replayed from a made-up landscape (the interpreter's speed means nothing)."""

    def __init__(self, rank: int) -> None:
        import torch

        from tritune.adapters.interpreter import as_interpreted
        from tritune.landscape import LandscapePoint
        from tritune.workload import load_workloads

        (self.wl,) = load_workloads(Path(__file__).resolve().parents[2] / "examples" / "gelu.py", "gelu")
        self.key = {"n": 4096}
        self.kernel = as_interpreted(self.wl.kernel)
        torch.manual_seed(rank)
        self.args = self.wl.make_args(self.key, "cpu")
        self.expected = self.wl.oracle(self.args)[0]  # type: ignore[misc]
        times = [0.010, 0.008, 0.006, 0.007]  # SYNTHETIC: BLOCK=1024 is made the fastest
        land = Landscape.from_points(
            "gelu",
            "synthetic",
            self.key,
            [LandscapePoint(c, Status.MEASURED, t) for c, t in zip(self.wl.candidates(), times, strict=True)],
        )
        self.timer = ReplayTimer(land, noise=NOISE, seed=rank)
        self.launches: Counter[str] = Counter()

    def __call__(self, config: Config, budget_s: float) -> Any:
        import torch

        if config.id not in self.launches:
            out = self.args[1]
            out.fill_(float("nan"))
            self.kernel[self.wl.grid_for(config, self.key)](
                *self.args, **config.kwargs, num_warps=config.num_warps
            )
            torch.testing.assert_close(out, self.expected, atol=self.wl.atol, rtol=self.wl.rtol)
        self.launches[config.id] += 1
        return self.timer.measure_config(config, budget_s)


def _interpreted(td: Any, tg: Any, rank: int) -> dict[str, Any]:
    m = InterpretedGelu(rank)
    res = td.distributed_race(m.wl.candidates(), m, label="gelu n=4096 (interpreter)", group=tg, options=OPTS)
    return {"winner": res.winner.id if res.winner else None, "launched": sorted(m.launches)}


def crash_one(rank: int, world: int, init_file: str, out_dir: str, timeout_s: float) -> None:
    """Rank 1 dies at its 3rd measurement; the others must raise DistributedError, not hang."""
    from tritune import ranks as td

    out = Path(out_dir)
    data: dict[str, Any] = {"rank": rank}
    try:
        _init(rank, world, init_file)
        tg = td.TuningGroup.create(timeout_s)
        land = landscape()
        m = CountingMeasure(land, seed=rank, die_at=3 if rank == 1 else None)
        t0 = time.monotonic()
        try:
            td.distributed_race(land.configs, m, label="gelu at n=4096", group=tg, options=OPTS)
            data["outcome"] = "returned"
        except Exception as e:
            data.update(outcome=type(e).__name__, message=str(e))
        data["elapsed_s"] = time.monotonic() - t0
    except BaseException:
        data["exception"] = traceback.format_exc()
    _finish(out, rank, data)


def miss_alone(rank: int, world: int, init_file: str, out_dir: str, timeout_s: float) -> None:
    """Rank 0 misses and tunes; rank 1 hit its own cache and never arrives (it carries on with other work)."""
    from tritune import ranks as td

    out = Path(out_dir)
    data: dict[str, Any] = {"rank": rank}
    try:
        _init(rank, world, init_file)
        tg = td.TuningGroup.create(timeout_s)
        land = landscape()
        t0 = time.monotonic()
        if rank == 0:
            try:
                td.distributed_race(land.configs, CountingMeasure(land, 0), label="gelu at n=4096", group=tg)
                data["outcome"] = "returned"
            except Exception as e:
                data.update(outcome=type(e).__name__, message=str(e))
        else:
            while not (out / "rank0.json").exists() and time.monotonic() - t0 < 4 * timeout_s:
                time.sleep(0.05)
            data["outcome"] = "carried on"
        data["elapsed_s"] = time.monotonic() - t0
    except BaseException:
        data["exception"] = traceback.format_exc()
    _finish(out, rank, data)
