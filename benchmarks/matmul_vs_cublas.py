"""A matmul config against cuBLAS at 4096^3, interleaved, on one GPU.

    PYTHONPATH=src python benchmarks/matmul_vs_cublas.py [--example matmul] [--config ID] [--rounds 10] [--json FILE]

``--example`` names the workload whose kernel is timed: ``matmul`` (examples/matmul.py, the default),
``matmul_tma_persistent`` or ``matmul_tma`` (examples/matmul_tma.py: the TMA kernel with one program
per SM, or one per tile). ``--config`` is a config id as tritune prints it (``BLOCK_M=128,...,num_warps=8,
num_stages=3``); without it each example has a default config. Rounds alternate the Triton kernel and
``torch.matmul`` (same fp16 inputs), each timed with tritune's event timer (L2 flushed) and with
``triton.testing.do_bench``; prints TFLOP/s per round and the median ratio. Run it on a cool GPU and
again after a long tuning run to see whether clocks move the ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import matmul  # noqa: E402
import matmul_tma  # noqa: E402

import tritune  # noqa: E402
from tritune.bench import EventTimer  # noqa: E402
from tritune.config import LAUNCH_OPTIONS  # noqa: E402

EXAMPLES: dict[str, tritune.Workload] = {
    "matmul": matmul.matmul,
    "matmul_tma_persistent": matmul_tma.matmul_tma_persistent,
    "matmul_tma": matmul_tma.matmul_tma,
}
# The TMA defaults are the tiles known to do well on Hopper: 128x256x64 with 8 warps and a split epilogue
# (persistent), and the same tile warp-specialized into a producer and two consumer warp groups.
DEFAULT_CONFIGS = {
    "matmul": "BLOCK_K=64,BLOCK_M=128,BLOCK_N=256,num_warps=8,num_stages=3",
    "matmul_tma_persistent": (
        "BLOCK_K=64,BLOCK_M=128,BLOCK_N=256,EPILOGUE_SUBTILE=2,GROUP_M=8,WARP_SPECIALIZE=0,num_warps=8,num_stages=4"
    ),
    "matmul_tma": (
        "BLOCK_K=64,BLOCK_M=128,BLOCK_N=256,EPILOGUE_SUBTILE=1,GROUP_M=8,WARP_SPECIALIZE=1,num_warps=4,num_stages=3"
    ),
}


def parse_config(text: str) -> tritune.Config:
    """A Config from its id, ``NAME=INT,...``: launch options (num_warps, num_stages, ...) and meta-parameters."""
    kv: dict[str, int] = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep or not name:
            raise ValueError(f"config {text!r}: expected NAME=VALUE pairs separated by commas, got {part!r}")
        kv[name] = int(value)
    opts: dict[str, Any] = {k: v for k, v in kv.items() if k in LAUNCH_OPTIONS}
    return tritune.Config({k: v for k, v in kv.items() if k not in LAUNCH_OPTIONS}, **opts)


def launcher(w: tritune.Workload, cfg: tritune.Config, key: Mapping[str, int], args: Any) -> Any:
    """A no-argument callable launching ``w``'s kernel with ``cfg`` on ``args``, as a tuning session does."""
    grid = w.grid_for(cfg, key)
    h_args, h_kw = w.hooked(cfg, args, w.caller_kwargs(key))  # a workload's pre_hook, as tuning runs it
    kw = {**h_kw, **cfg.kwargs, **cfg.launch_options()}
    kernel = w.kernel[grid]

    def run() -> None:
        kernel(*h_args, **kw)

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--example", choices=sorted(EXAMPLES), default="matmul")
    ap.add_argument("--config", default=None, help="a config id (default: one per example)")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    w = EXAMPLES[a.example]
    cfg = parse_config(a.config or DEFAULT_CONFIGS[a.example])
    key = {"M": a.size, "N": a.size, "K": a.size}
    args = w.make_args(key, "cuda")
    ours = launcher(w, cfg, key, args)

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
            row[f"{name}_do_bench_ms"] = float(
                triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
            )
        rows.append(row)
        print(f"round {r}: " + "  ".join(f"{k} {v:.4f} ms ({flops / v / 1e9:.0f} TFLOP/s)" for k, v in row.items()),
              flush=True)  # fmt: skip

    def med(k: str) -> float:
        return sorted(x[k] for x in rows)[len(rows) // 2]

    summary: dict[str, Any] = {k: {"ms": med(k), "tflops": flops / med(k) / 1e9} for k in rows[0]}
    for how in ("event", "do_bench"):
        ratio = med(f"cublas_{how}_ms") / med(f"triton_{how}_ms")
        summary[f"ratio_{how}"] = ratio
        print(
            f"{how}: triton {summary[f'triton_{how}_ms']['tflops']:.1f} TFLOP/s, cuBLAS "
            f"{summary[f'cublas_{how}_ms']['tflops']:.1f} TFLOP/s, triton/cuBLAS throughput {ratio:.3f}"
        )
    if a.json:
        from tritune.bench.provenance import provenance

        Path(a.json).write_text(json.dumps({"provenance": provenance(), "example": a.example, "config": cfg.id,
                                            "size": a.size, "rounds": rows, "summary": summary}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
