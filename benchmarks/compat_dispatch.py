"""Microseconds per call of a cached kernel for the call shapes real code uses, tritune against
``triton.autotune`` in one run (a small activation kernel, n = 1024 by default, so the host path dominates).

    PYTHONPATH=src python3 benchmarks/compat_dispatch.py --out DIR

Shapes: all positional; a meta-parameter by keyword (``ACT=``, as Triton's tutorials pass it);
``@triton.heuristics`` over the decorator and under it; and the same keyword call through ``triton.autotune`` while
``tritune.patch_triton()`` is on. Each shape checks its output against
torch before timing. Prints a table with ratios to ``triton.autotune`` for the same shape; writes the
raw numbers with provenance to DIR/compat_dispatch.json.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl
from _timing import dispatch_args, per_call_us


@triton.jit
def act_kernel(x_ptr, out_ptr, n, ACT: tl.constexpr, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask) * SCALE
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + offs, x, mask=mask)


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024) for w in (2, 4)]


def engines(make: Callable[..., Any], n: int, x: torch.Tensor, y: torch.Tensor) -> dict[str, Callable[[], Any]]:
    grid = lambda m: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
    pos = make(triton.jit(act_kernel.fn))
    kw = make(triton.jit(act_kernel.fn))
    heur = triton.heuristics({"SCALE": lambda a: 1})(make(triton.jit(act_kernel.fn)))
    under = make(triton.heuristics({"SCALE": lambda a: 1})(triton.jit(act_kernel.fn)))
    return {
        "positional": lambda: pos[grid](x, y, n, "relu", 1),
        "keyword meta-parameter": lambda: kw[grid](x, y, n, ACT="relu", SCALE=1),
        "heuristics over the decorator": lambda: heur[grid](x, y, n, ACT="relu"),
        "heuristics under the decorator": lambda: under[grid](x, y, n, ACT="relu"),
    }


def main() -> None:
    import tritune
    from tritune.bench.provenance import provenance

    a = dispatch_args()
    n = a.n
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    expect = torch.relu(x)
    makers = {
        "triton.autotune": lambda fn: triton.autotune(configs=CONFIGS, key=["n"])(fn),
        "tritune.autotune": lambda fn: tritune.autotune(CONFIGS, ["n"], store=False)(fn),
    }
    with tritune.patched_triton():
        patched = triton.autotune(configs=CONFIGS, key=["n"])(triton.jit(act_kernel.fn))
    results: dict[str, dict[str, float]] = {}
    for engine, make in makers.items():
        for shape, fn in engines(make, n, x, y).items():
            y.zero_()
            fn()
            torch.cuda.synchronize()
            torch.testing.assert_close(y, expect)
            results.setdefault(shape, {})[engine] = per_call_us(fn, a.calls, a.rounds)
    grid = lambda m: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
    results["keyword meta-parameter"]["triton.autotune under patch_triton()"] = per_call_us(
        lambda: patched[grid](x, y, n, ACT="relu", SCALE=1), a.calls, a.rounds)
    print(f"{'shape':32s} {'engine':40s} {'us/call':>8s} {'vs triton.autotune':>18s}")
    for shape, by_engine in results.items():
        ref = by_engine["triton.autotune"]
        for engine, us in by_engine.items():
            print(f"{shape:32s} {engine:40s} {us:8.2f} {us / ref:18.2f}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compat_dispatch.json").write_text(json.dumps(
        {"provenance": provenance(), "n": n, "calls": a.calls, "rounds": a.rounds, "us_per_call": results}, indent=1))


if __name__ == "__main__":
    main()
