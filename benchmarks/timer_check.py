"""Sanity check of tritune's GPU event timer (under a minute on an H200).

    PYTHONPATH=src python benchmarks/timer_check.py --out benchmarks/results/timer_check.json

It reports, and writes as JSON to ``--out``:

* the L2 size read from the device and the flush buffer used;
* a Triton copy kernel and torch's copy at 2^28 floats: achieved GB/s with tritune.bench and with
  triton.testing.do_bench (the copy is the bandwidth ceiling a memory-bound kernel can reach);
* the copy at 2^20 floats (the GELU size of issue 3), tritune vs do_bench;
* a tiny copy (1024 floats), where launch overhead dominates: events with and without flush, CUDA-graph
  mode with and without flush, and do_bench / do_bench_cudagraph;
* for every tritune measurement: samples, stop reason, the 95% interval's relative half-width, wall time;
* crash isolation on the real driver: a wild store (illegal address) in a worker, then a good config in
  the replacement worker (skip with ``--no-isolate``).

This file is also a tritune workload file (``copy`` below), which the isolation check loads in its worker.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

import tritune
from tritune.config import Config
from tritune.device import gpu_unavailable_reason
from tritune.workload import Workload


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, WILD: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if WILD:  # deliberately broken: stores 4 TB past the buffer (an illegal address), for the crash check
        tl.store(y_ptr + offs + (1 << 40), x, mask=mask)
    else:
        tl.store(y_ptr + offs, x, mask=mask)


def _copy_args(key: Any, device: str) -> list[Any]:
    import torch

    x = torch.randn(key["n"], device=device)
    return [x, torch.empty_like(x), key["n"]]


copy = Workload(
    name="copy",
    kernel=copy_kernel,
    configs=[
        Config({"BLOCK": 1024, "WILD": 0}, num_warps=4),
        Config({"BLOCK": 1024, "WILD": 1}, num_warps=4),
    ],
    args=_copy_args,
    grid=lambda meta, key: (triton.cdiv(key["n"], meta["BLOCK"]),),
    keys=[{"n": 1 << 20}],
    bytes=lambda key: 2 * 4 * key["n"],
)


def _m(m: Any, nbytes: float | None = None) -> dict[str, Any]:
    d = {k: m.to_json()[k] for k in ("median_ms", "ci_low_ms", "ci_high_ms", "q1_ms", "q3_ms", "n", "stop")}
    d.update(
        rel_halfwidth=m.rel_halfwidth, elapsed_s=round(m.elapsed_s, 4), calls_per_sample=m.calls_per_sample
    )
    if nbytes:
        d["gbps"] = nbytes / (m.median_ms * 1e-3) / 1e9
    return d


def _gbps(nbytes: float, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="write the raw results here as JSON")
    ap.add_argument("--no-isolate", action="store_true", help="skip the crash-isolation check (saves ~10 s)")
    ap.add_argument(
        "--big-log2", type=int, default=28, help="log2 of the large copy's float count (28: 1 GiB)"
    )
    args = ap.parse_args(argv)
    out: dict[str, Any] = {
        "script": "benchmarks/timer_check.py",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    reason = gpu_unavailable_reason()
    if reason is not None:
        out["error"] = f"no GPU: {reason}"
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
        print(f"timer_check: cannot run here: {reason}", file=sys.stderr)
        return 1

    import torch
    from triton.testing import do_bench, do_bench_cudagraph

    from tritune.bench import EventTimer, bench

    t_start = time.perf_counter()
    out["provenance"] = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "tritune": tritune.__version__,
        "python": platform.python_version(),
    }
    timer = EventTimer()
    out["timer"] = timer.to_json()
    print(f"GPU {out['provenance']['gpu']}: L2 {timer.l2_bytes / 2**20:.1f} MiB ({timer.l2_source}), "
          f"flush buffer {timer.flush_bytes / 2**20:.1f} MiB")  # fmt: skip
    timer.warm_device(0.2)

    def triton_copy(x: Any, y: Any) -> Any:
        n = x.numel()
        return lambda: copy_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096, WILD=0, num_warps=8)

    rows: dict[str, Any] = {}
    for label, log2 in (("big", args.big_log2), ("gelu_size", 20)):
        n = 1 << log2
        x = torch.randn(n, device="cuda")
        y = torch.empty_like(x)
        nbytes = 2 * 4 * n
        fns = {"triton_copy": triton_copy(x, y), "torch_copy": lambda x=x, y=y: y.copy_(x)}
        for name, fn in fns.items():
            m = bench(fn, budget_s=2.0)
            db = do_bench(fn, return_mode="median")
            rows[f"{name}_{label}"] = {
                "n": n, "tritune": _m(m, nbytes), "do_bench_median_ms": db, "do_bench_gbps": _gbps(nbytes, db),
                "tritune_over_do_bench": m.median_ms / db,
            }  # fmt: skip
            print(f"{name:12s} n=2^{log2}: tritune {m.median_ms * 1e3:9.2f} us ({_gbps(nbytes, m.median_ms):7.0f} GB/s, "
                  f"±{m.rel_halfwidth * 100:.2f}%, n={m.n}, {m.stop})  do_bench {db * 1e3:9.2f} us "
                  f"({_gbps(nbytes, db):7.0f} GB/s)")  # fmt: skip
        del x, y
    torch.cuda.empty_cache()
    big = rows["triton_copy_big"]["tritune"]["gbps"], rows["torch_copy_big"]["tritune"]["gbps"]
    out["copy_bandwidth"] = {
        "triton_gbps": big[0],
        "torch_gbps": big[1],
        "triton_over_torch": big[0] / big[1],
    }

    # tiny kernel: launch overhead against the kernel itself
    x = torch.randn(1024, device="cuda")
    y = torch.empty_like(x)
    tiny = triton_copy(x, y)
    modes = {
        "events_flush": EventTimer(flush_l2=True),
        "events_noflush": EventTimer(flush_l2=False),
        "graph_flush": EventTimer(flush_l2=True, graph=True),
        "graph_noflush": EventTimer(flush_l2=False, graph=True),
    }
    for name, t in modes.items():
        m = t.measure(tiny, budget_s=1.0)
        rows[f"tiny_{name}"] = _m(m)
        print(f"tiny copy {name:15s}: {m.median_ms * 1e3:7.2f} us  ±{m.rel_halfwidth * 100:.2f}% "
              f"n={m.n} calls/sample={m.calls_per_sample} {m.stop} ({m.elapsed_s:.2f} s)")  # fmt: skip
    rows["tiny_do_bench_ms"] = do_bench(tiny, return_mode="median")
    rows["tiny_do_bench_cudagraph_ms"] = do_bench_cudagraph(tiny, return_mode="median")
    print(f"tiny copy do_bench: {rows['tiny_do_bench_ms'] * 1e3:.2f} us, "
          f"do_bench_cudagraph: {rows['tiny_do_bench_cudagraph_ms'] * 1e3:.2f} us")  # fmt: skip
    rot = bench([triton_copy(torch.randn(1024, device="cuda"), torch.empty(1024, device="cuda")) for _ in range(4)],
                budget_s=0.5, flush_l2=False)  # fmt: skip
    rows["tiny_rotation4_noflush"] = _m(rot)
    out["measurements"] = rows

    if not args.no_isolate:
        from tritune.engine.isolate import BenchTask, IsolatedBench

        here = Path(__file__).resolve()
        with IsolatedBench(timeout_s=60.0) as iso:
            t0 = time.perf_counter()
            wild = iso.run(BenchTask.of(here, "copy", {"n": 1 << 20}, copy.configs[1], 0.05))
            good = iso.run(BenchTask.of(here, "copy", {"n": 1 << 20}, copy.configs[0], 0.05))
            out["isolation"] = {
                "wild": wild.to_json(),
                "good_after": good.to_json(),
                "restarts": iso.restarts,
                "wall_s": time.perf_counter() - t0,
            }
        print(f"isolation: wild store -> {out['isolation']['wild']}; next config -> "
              f"{out['isolation']['good_after'].get('median_ms', out['isolation']['good_after'])}; "
              f"restarts={iso.restarts}")  # fmt: skip

    out["wall_s"] = time.perf_counter() - t_start
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out} ({out['wall_s']:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
