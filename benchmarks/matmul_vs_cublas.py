"""The best matmul config of examples/matmul.py against cuBLAS at 4096^3, interleaved, on one GPU.

    PYTHONPATH=src python benchmarks/matmul_vs_cublas.py [--config ID] [--rounds 10] [--json FILE]

Rounds alternate the Triton kernel and ``torch.matmul`` (same fp16 inputs), each timed with tritune's
event timer (L2 flushed) and with ``triton.testing.do_bench``; prints TFLOP/s per round and the median
ratio. Run it on a cool GPU and again after a long tuning run to see whether clocks move the ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from matmul import matmul_args, matmul_grid, matmul_kernel  # noqa: E402

import tritune  # noqa: E402
from tritune.bench import EventTimer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="BLOCK_K=64,BLOCK_M=128,BLOCK_N=256,num_warps=8,num_stages=3")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    kv = dict(p.split("=") for p in a.config.split(","))
    cfg = tritune.Config({k: int(v) for k, v in kv.items() if k.startswith("BLOCK")}, num_warps=int(kv["num_warps"]),
                         num_stages=int(kv["num_stages"]))  # fmt: skip
    key = {"M": a.size, "N": a.size, "K": a.size}
    args = matmul_args(key, "cuda")
    grid = matmul_grid(cfg.as_dict(), key)

    def ours() -> None:
        matmul_kernel[grid](*args, GROUP_M=8, **cfg.kwargs, **cfg.launch_options())

    def cublas() -> None:
        torch.matmul(args[0], args[1], out=args[2])

    flops = 2 * a.size**3
    timer = EventTimer()
    timer.warm_device(0.2)
    rows = []
    for r in range(a.rounds):
        row = {}
        for name, fn in (("triton", ours), ("cublas", cublas)):
            row[f"{name}_event_ms"] = timer.measure(fn, budget_s=0.2).median_ms
            row[f"{name}_do_bench_ms"] = float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
        rows.append(row)
        print(f"round {r}: " + "  ".join(f"{k} {v:.4f} ms ({flops / v / 1e9:.0f} TFLOP/s)" for k, v in row.items()),
              flush=True)  # fmt: skip

    def med(k: str) -> float:
        return sorted(x[k] for x in rows)[len(rows) // 2]

    summary = {k: {"ms": med(k), "tflops": flops / med(k) / 1e9} for k in rows[0]}
    for how in ("event", "do_bench"):
        ratio = med(f"cublas_{how}_ms") / med(f"triton_{how}_ms")
        summary[f"ratio_{how}"] = ratio
        print(f"{how}: triton {summary[f'triton_{how}_ms']['tflops']:.1f} TFLOP/s, cuBLAS "
              f"{summary[f'cublas_{how}_ms']['tflops']:.1f} TFLOP/s, triton/cuBLAS throughput {ratio:.3f}")
    if a.json:
        from tritune.tune.provenance import provenance

        Path(a.json).write_text(json.dumps({"provenance": provenance(), "config": cfg.id, "size": a.size,
                                            "rounds": rows, "summary": summary}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
