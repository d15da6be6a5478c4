"""In-job consensus: every rank of a torchrun job calls the same ``@tritune.autotune(distributed=True)`` kernel.

    TRITON_CACHE_DIR=$(mktemp -d) PYTHONPATH=src torchrun --nproc-per-node=N benchmarks/dist_decorator.py --out DIR

The kernel is examples/matmul.py's, over its 216-config space; each rank calls it for the same keys
(default M=N=K in 4096, 2048, 8192), in the same order, as a training job's ranks would. On a miss each
rank compiles its share of the candidates in its own workers (cores / ranks on the node), races it on
its own GPU as the compiles finish, and every rank adopts the one winner of the merged shares. Run it
with N=1 and N=2 (each from an empty TRITON_CACHE_DIR, shared by the node's ranks) and compare the
walls: tuning should take about 1/N of the single-rank time. Rank 0 writes DIR/dist_decorator_nN.json:
per key, every rank's wall and winner, whether the winners are identical, and the provenance.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--sizes", default="4096,2048,8192", help="M=N=K of each key, in call order")
    a = ap.parse_args()
    import torch
    import torch.distributed as dist
    import triton
    from matmul import MATMUL_SPACE, matmul_args, matmul_grid, matmul_kernel

    import tritune
    from tritune.bench.provenance import provenance

    if not torch.cuda.is_available():
        print("dist_decorator.py needs CUDA GPUs (one rank per GPU)", file=sys.stderr)
        return 2
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    if "RANK" in os.environ:
        dist.init_process_group("nccl", device_id=torch.device("cuda", local), timeout=timedelta(seconds=600))
    else:
        dist.init_process_group("gloo", init_method=f"file://{a.out.resolve()}/rdzv", rank=0, world_size=1)
    rank, world = dist.get_rank(), dist.get_world_size()
    a.out.mkdir(parents=True, exist_ok=True)
    kernel = tritune.autotune(configs=list(MATMUL_SPACE), key=["M", "N", "K"], distributed=True,
                              store=False)(matmul_kernel)  # fmt: skip
    rows = []
    t_all = time.perf_counter()
    for size in (int(s) for s in a.sizes.split(",")):
        key = {"M": size, "N": size, "K": size}
        args = matmul_args(key, "cuda")
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        kernel[lambda meta, key=key: matmul_grid(meta, key)](*args, GROUP_M=8)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        ok = torch.allclose(args[2].float(), torch.matmul(args[0].float(), args[1].float()), atol=2e-2, rtol=2e-2)
        choice = getattr(kernel, "_last", None)
        mine = {"rank": rank, "wall_s": wall, "winner": kernel.best_config.id if kernel.best_config else None,
                "correct": bool(ok), "stats": getattr(choice, "stats", None)}  # fmt: skip
        everyone: list[Any] = [None] * world
        dist.all_gather_object(everyone, mine)
        rows.append({"size": size, "wall_s": max(e["wall_s"] for e in everyone),
                     "rank_wall_s": [e["wall_s"] for e in everyone], "winners": [e["winner"] for e in everyone],
                     "identical": len({e["winner"] for e in everyone}) == 1,
                     "correct": all(e["correct"] for e in everyone), "stats": [e["stats"] for e in everyone]})  # fmt: skip
        if rank == 0:
            r = rows[-1]
            print(f"N={world} {size}^3: {r['wall_s']:.2f} s, winners {'identical' if r['identical'] else 'DIFFER'}:"
                  f" {r['winners'][0]}", flush=True)  # fmt: skip
    total = time.perf_counter() - t_all
    if rank == 0:
        doc = {"provenance": {**provenance(), "world_size": world, "triton_cache": os.environ.get("TRITON_CACHE_DIR"),
                              "command": " ".join(sys.argv), "triton": triton.__version__},
               "keys": rows, "total_s": total,
               "all_identical": all(r["identical"] for r in rows)}  # fmt: skip
        (a.out / f"dist_decorator_n{world}.json").write_text(json.dumps(doc, indent=1, default=str))
        print(f"N={world}: total {total:.2f} s; winners identical on every key: {doc['all_identical']}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
