"""Microseconds per call of a cached kernel, four ways in one run (GELU, n = 1024 by default).

    PYTHONPATH=src python benchmarks/dispatch.py --out DIR

plain ``kernel[grid](...)`` with a fixed config; ``triton.autotune`` after tuning; ``tritune.autotune``
after tuning (its fast dispatch); ``torch.nn.functional.gelu``. Each is called ``--calls`` times in a loop,
the GPU synchronized at the end; the median of ``--rounds`` rounds of wall time per call is reported.
At n = 1024 the GPU work is tiny, so this measures the host-side launch path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from _timing import dispatch_args, per_call_us  # noqa: E402
from gelu import gelu_forward_kernel  # noqa: E402

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024) for w in (2, 4)]


def main() -> None:
    import tritune
    from tritune.bench.provenance import provenance

    a = dispatch_args()
    n = a.n
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731

    plain = triton.jit(gelu_forward_kernel.fn)
    tri = triton.autotune(configs=CONFIGS, key=["n"])(triton.jit(gelu_forward_kernel.fn))
    tt = tritune.autotune(configs=CONFIGS, key=["n"], store=False)(triton.jit(gelu_forward_kernel.fn))
    tri[grid](x, y, n)
    tt[grid](x, y, n)
    best = tt.best_config
    calls = {
        "plain kernel[grid]": lambda: plain[grid](x, y, n, BLOCK=best.kwargs["BLOCK"], num_warps=best.num_warps),
        "triton.autotune cached": lambda: tri[grid](x, y, n),
        "tritune.autotune cached": lambda: tt[grid](x, y, n),
        "torch.nn.functional.gelu": lambda: torch.nn.functional.gelu(x),
    }
    results = {name: per_call_us(fn, a.calls, a.rounds) for name, fn in calls.items()}
    # the fast path computed the right thing
    tt[grid](x, y, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.nn.functional.gelu(x), atol=1e-5, rtol=1e-5)
    ref = results["triton.autotune cached"]
    print(f"{'call':28s} {'us/call':>8s} {'vs triton.autotune':>18s}")
    for name, us in results.items():
        print(f"{name:28s} {us:8.2f} {us / ref:18.2f}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "dispatch.json").write_text(json.dumps({"provenance": provenance(), "n": n, "calls": a.calls,
                                                   "rounds": a.rounds, "us_per_call": results,
                                                   "tritune_config": best.id}, indent=1))


if __name__ == "__main__":
    main()
