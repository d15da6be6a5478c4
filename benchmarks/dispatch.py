"""Microseconds per call of a cached kernel: tritune's dispatch against ``triton.autotune``'s, in one run.

    PYTHONPATH=src python benchmarks/dispatch.py --out DIR [--part gelu|shapes] [--n 1024]

Needs a CUDA GPU. At n = 1024 elements the GPU work is tiny, so this measures the host-side launch path. Each
call is made ``--calls`` times in a loop with one GPU synchronize at the end; the median over ``--rounds`` rounds
of wall time per call is reported, with its ratio to ``triton.autotune`` making the same call.

``gelu``: examples/gelu.py's kernel four ways: a plain ``kernel[grid](...)`` with the winner's config;
``triton.autotune`` after tuning; ``tritune.autotune`` after tuning; ``torch.nn.functional.gelu``.

``shapes``: the call shapes real code uses, each checked against torch before it is timed: all positional;
a meta-parameter by keyword (``ACT=``, as Triton's tutorials pass it); ``@triton.heuristics`` over the decorator
and under it; and the keyword call through ``triton.autotune`` while ``tritune.patch_triton()`` is on.

Writes DIR/dispatch.json with both parts' numbers and the provenance (GPU, driver, versions, date, command).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from gelu import gelu_forward_kernel  # noqa: E402

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024) for w in (2, 4)]


def per_call_us(fn: Callable[[], Any], calls: int, rounds: int) -> float:
    """Median over ``rounds`` of the wall time per call, in microseconds, of ``calls`` back-to-back calls of
    ``fn`` followed by one GPU synchronize; 50 untimed calls warm up first."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    res = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        res.append((time.perf_counter() - t) / calls * 1e6)
    return sorted(res)[len(res) // 2]


def gelu_part(n: int, calls: int, rounds: int) -> dict[str, Any]:
    import tritune

    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    plain = triton.jit(gelu_forward_kernel.fn)
    tri = triton.autotune(configs=CONFIGS, key=["n"])(triton.jit(gelu_forward_kernel.fn))
    tt = tritune.autotune(configs=CONFIGS, key=["n"], store=False)(triton.jit(gelu_forward_kernel.fn))
    tri[grid](x, y, n)
    tt[grid](x, y, n)
    best = tt.best_config
    ways = {
        "plain kernel[grid]": lambda: plain[grid](x, y, n, BLOCK=best.kwargs["BLOCK"], num_warps=best.num_warps),
        "triton.autotune cached": lambda: tri[grid](x, y, n),
        "tritune.autotune cached": lambda: tt[grid](x, y, n),
        "torch.nn.functional.gelu": lambda: torch.nn.functional.gelu(x),
    }
    results = {name: per_call_us(fn, calls, rounds) for name, fn in ways.items()}
    tt[grid](x, y, n)  # the fast path computed the right thing
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.nn.functional.gelu(x), atol=1e-5, rtol=1e-5)
    ref = results["triton.autotune cached"]
    print(f"{'call':28s} {'us/call':>8s} {'vs triton.autotune':>18s}")
    for name, us in results.items():
        print(f"{name:28s} {us:8.2f} {us / ref:18.2f}")
    return {"us_per_call": results, "tritune_config": best.id}


@triton.jit
def act_kernel(x_ptr, out_ptr, n, ACT: tl.constexpr, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask) * SCALE
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + offs, x, mask=mask)


def shapes(make: Callable[..., Any], n: int, x: torch.Tensor, y: torch.Tensor) -> dict[str, Callable[[], Any]]:
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


def shapes_part(n: int, calls: int, rounds: int) -> dict[str, Any]:
    import tritune

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
        for shape, fn in shapes(make, n, x, y).items():
            y.zero_()
            fn()
            torch.cuda.synchronize()
            torch.testing.assert_close(y, expect)
            results.setdefault(shape, {})[engine] = per_call_us(fn, calls, rounds)
    grid = lambda m: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
    results["keyword meta-parameter"]["triton.autotune under patch_triton()"] = per_call_us(
        lambda: patched[grid](x, y, n, ACT="relu", SCALE=1), calls, rounds)
    print(f"{'shape':32s} {'engine':40s} {'us/call':>8s} {'vs triton.autotune':>18s}")
    for shape, by_engine in results.items():
        ref = by_engine["triton.autotune"]
        for engine, us in by_engine.items():
            print(f"{shape:32s} {engine:40s} {us:8.2f} {us / ref:18.2f}")
    return {"us_per_call": results}


def main(argv: list[str] | None = None) -> int:
    from tritune.bench.provenance import provenance

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="directory for dispatch.json")
    ap.add_argument("--part", choices=("gelu", "shapes"), action="append",
                    help="run only this part (repeatable; default: both)")
    ap.add_argument("--n", type=int, default=1024, help="elements per call (default 1024)")
    ap.add_argument("--calls", type=int, default=2000, help="calls per round (default 2000)")
    ap.add_argument("--rounds", type=int, default=7, help="rounds; the median is reported (default 7)")
    a = ap.parse_args(argv)
    parts = {"gelu": gelu_part, "shapes": shapes_part}
    doc: dict[str, Any] = {"provenance": provenance(), "n": a.n, "calls": a.calls, "rounds": a.rounds}
    for name in a.part or list(parts):
        doc[name] = parts[name](a.n, a.calls, a.rounds)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "dispatch.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
