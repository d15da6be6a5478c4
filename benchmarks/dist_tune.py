"""Distributed tuning benchmark: every rank tunes the same kernel and keys through tritune.ranks.

On GPUs (one rank per GPU; the job's default group is NCCL, tuning runs on tritune's gloo side group)::

    PYTHONPATH=src torchrun --nproc-per-node=N benchmarks/dist_tune.py --out DIR
    PYTHONPATH=src python benchmarks/dist_tune.py --out DIR            # one GPU, no torchrun

On CPU, with made-up timings replayed with per-rank seeded noise (no GPU; gloo)::

    PYTHONPATH=src python benchmarks/dist_tune.py --replay synthetic:80 --out DIR
    PYTHONPATH=src torchrun --nproc-per-node=2 benchmarks/dist_tune.py --replay synthetic:80 --out DIR

Each ``--repeat`` pass tunes every key once: the first with an empty Triton cache per rank (compile
time included, as in a fresh job), later ones with it warm. Rank 0 prints a summary and writes
``DIR/dist_tune.json`` (wall times, every rank's winner and whether they are identical, who measured
what) and the store ``DIR/store.sqlite`` that it alone wrote.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import socket
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path, help="directory for dist_tune.json and store.sqlite")
    p.add_argument("--workload", default=str(ROOT / "examples" / "matmul.py") + ":matmul",
                   help="PATH[:NAME] of a tritune workload file (default: examples/matmul.py:matmul)")  # fmt: skip
    p.add_argument("--max-configs", type=int, default=48,
                   help="race at most this many statically legal configs, evenly spread by id (0 = all)")  # fmt: skip
    p.add_argument(
        "--replay", metavar="LANDSCAPE", help="'synthetic[:N]' or a tritune.landscape/1 file: CPU replay"
    )
    p.add_argument("--retime", action="store_true", help="re-time the finalists on rank 0 (retime_finalists)")
    p.add_argument("--repeat", type=int, default=2, help="tuning passes (first cold, then warm Triton cache)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a rank waits for the others")
    p.add_argument("--backend", default=None, help="default group backend (nccl on GPUs, else gloo)")
    p.add_argument("--warm-cache", action="store_true", help="keep Triton's own cache instead of a fresh one")
    return p.parse_args(argv)


def _init(backend: str, out: Path) -> None:
    import torch.distributed as dist

    if "RANK" in os.environ:  # torchrun
        dist.init_process_group(backend, timeout=timedelta(seconds=600))
    else:
        out.mkdir(parents=True, exist_ok=True)
        rdzv = Path(tempfile.mkdtemp()) / "rdzv"
        dist.init_process_group(backend, init_method=f"file://{rdzv}", rank=0, world_size=1)


class _Problem:
    """One key to tune: its label, candidates, measure and store key."""

    def __init__(
        self, label: str, configs: list[Any], measure: Any, key: Any, skipped: dict[str, int]
    ) -> None:
        self.label, self.configs, self.measure, self.key, self.skipped = label, configs, measure, key, skipped


def _replay_problems(spec: str, rank: int) -> list[_Problem]:
    import triton

    from tritune.bench import ReplayTimer, synthetic_landscape
    from tritune.landscape import Landscape
    from tritune.store import TuningKey

    if spec.startswith("synthetic"):
        n = int(spec.split(":", 1)[1]) if ":" in spec else 80
        land = synthetic_landscape(n, seed=0, near=(0.02, 0.04))
    else:
        land = Landscape.load(spec)
    timer = ReplayTimer(land, noise=0.05, seed=1000 + rank)
    key = TuningKey(
        land.kernel,
        "replay",
        triton.__version__,
        land.device,
        "replay",
        "replay",
        key=tuple(land.key.items()),
    )
    return [_Problem(f"{land.kernel} {land.key} (replay)", land.configs, timer.measure_config, key, {})]


def _gpu_problems(spec: str, max_configs: int) -> list[_Problem]:
    import torch

    from tritune.adapters.kernel import as_jit
    from tritune.bench import EventTimer, TimerMeasure
    from tritune.space import check_static
    from tritune.store import dtypes_of, make_key
    from tritune.workload import load_workloads

    path, _, name = spec.partition(":")
    (wl,) = load_workloads(path, name or None) if name else load_workloads(path)[:1]
    jit = as_jit(wl.kernel)
    timer = EventTimer()
    timer.warm_device(0.2)
    problems = []
    for key in wl.keys:
        kw = wl.caller_kwargs(key)
        torch.manual_seed(0)
        args = wl.make_args(key, "cuda")
        legal = sorted(c for c in wl.candidates() if check_static(c, wl.info, kw, wl.space) is None)
        chosen = legal
        if 0 < max_configs < len(legal):
            chosen = [legal[i * len(legal) // max_configs] for i in range(max_configs)]
        skipped = {
            "illegal (static rules)": len(wl.candidates()) - len(legal),
            "not chosen": len(legal) - len(chosen),
        }

        def make_fn(cfg: Any, key: Any = key, args: Any = args, kw: Any = kw) -> Any:
            opts = {**kw, **cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
            launcher = jit[wl.grid_for(cfg, key)]

            def call() -> None:
                launcher(*args, **opts)

            call()  # compile and load now: a config the GPU refuses fails here, as launch_failed
            torch.cuda.synchronize()
            return call

        measure = TimerMeasure(timer, make_fn)
        tkey = make_key(wl.info, dict(key), dtypes=dtypes_of(args))
        problems.append(_Problem(f"{wl.name} {dict(key)}", chosen, measure, tkey, skipped))
    return problems


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    import torch
    import torch.distributed as dist

    gpu = a.replay is None
    if gpu and not torch.cuda.is_available():
        print("no CUDA GPU here: use --replay synthetic:80 to run on CPU", file=sys.stderr)
        return 2
    if gpu:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    backend = a.backend or ("nccl" if gpu else "gloo")
    if gpu and not a.warm_cache:
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="tritune-dist-triton-")
    _init(backend, a.out)
    from tritune import ranks as td
    from tritune.store import SQLiteStore

    tg = td.TuningGroup.create(a.timeout)
    rank, world = tg.rank, tg.world_size
    problems = _replay_problems(a.replay, rank) if not gpu else _gpu_problems(a.workload, a.max_configs)
    store = SQLiteStore(a.out / "store.sqlite") if rank == 0 else None
    rows = []
    t_all = time.perf_counter()
    for rep in range(a.repeat):
        for pb in problems:
            t0 = time.perf_counter()
            res = td.distributed_race(
                pb.configs, pb.measure, label=pb.label, group=tg, retime_finalists=a.retime
            )
            wall = time.perf_counter() - t0
            mine = {"rank": rank, "wall_s": wall, "winner": res.winner.id if res.winner else None,
                    "ties": [c.id for c in res.ties], "host": socket.gethostname(),
                    "device": torch.cuda.get_device_name() if gpu else "cpu (replay)"}  # fmt: skip
            everyone = tg.all_gather(mine, pb.label, "benchmark report")
            if store is not None:
                td.record_on_rank0(store, pb.key, res, provenance={"benchmark": "dist_tune", "pass": rep})
            statuses = collections.Counter(o.status.value for o in res.outcomes)
            rows.append({
                "pass": rep, "cold_cache": rep == 0 and gpu and not a.warm_cache, "label": pb.label,
                "candidates": len(pb.configs), "skipped": pb.skipped, "statuses": dict(statuses),
                "wall_s": max(e["wall_s"] for e in everyone), "rank_wall_s": [e["wall_s"] for e in everyone],
                "rank_share_wall_s": list(res.rank_wall_s),
                "winners": [e["winner"] for e in everyone], "identical": len({e["winner"] for e in everyone}) == 1,
                "ties_identical": len({tuple(e["ties"]) for e in everyone}) == 1,
                "winner": res.winner.id if res.winner else None,
                "winner_median_ms": res.winner_measurement.median_ms if res.winner_measurement else None,
                "stop": res.stop, "measurements": res.measurements, "device_s": res.device_s,
                "configs_per_rank": collections.Counter(r for _, r in res.measured_on),
                "finalists": [c.id for c in res.finalists], "retimed": res.retimed is not None,
                "devices": [e["device"] for e in everyone], "hosts": [e["host"] for e in everyone],
            })  # fmt: skip
    total = time.perf_counter() - t_all
    if rank == 0:
        import triton

        stored = None
        if store is not None and problems:
            stored = [len(store.candidates(pb.key)) for pb in problems]
        doc = {
            "benchmark": "dist_tune", "world_size": world, "backend": backend, "timing": "replay" if not gpu else "cuda-events",
            "replay": a.replay, "workload": None if not gpu else a.workload, "retime_finalists": a.retime,
            "rule": td.WINNER_RULE, "total_wall_s": total, "store_candidates_per_key": stored,
            "all_identical": all(r["identical"] and r["ties_identical"] for r in rows),
            "provenance": {"torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
                           "NCCL_NVLS_ENABLE": os.environ.get("NCCL_NVLS_ENABLE")},
            "rows": rows,
        }  # fmt: skip
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "dist_tune.json").write_text(json.dumps(doc, indent=1, default=str))
        for r in rows:
            print(f"pass {r['pass']} {r['label']}: {r['candidates']} candidates on {world} rank(s), "
                  f"wall {r['wall_s']:.2f} s, winner {r['winner']} ({r['winner_median_ms'] or float('nan'):.4f} ms), "
                  f"identical on every rank: {r['identical']}, per rank {dict(r['configs_per_rank'])}")  # fmt: skip
        print(f"total {total:.1f} s; wrote {a.out / 'dist_tune.json'}")
    tg.barrier("dist_tune", "finish")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
