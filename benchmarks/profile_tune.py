"""Where a tuning's time goes, on the GPU: the decorator (cold, then a new key) and the session.

    PYTHONPATH=src python benchmarks/profile_tune.py --out DIR [--sizes 20 24]

Runs the chapter's GELU space (80 configs) from an empty Triton cache under cProfile, and writes for
each run the phase times tritune records (``Choice.stats``; the session's per-key wall time) and the
top functions by cumulative time to DIR/profile_*.txt. A diagnostic, not a comparison: the ratios
against triton.autotune come from vs_triton_autotune.py.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from vs_triton_autotune import gelu_body, space  # noqa: E402


def profiled(fn, path: Path, head: str) -> object:
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    out = fn()
    prof.disable()
    wall = time.perf_counter() - t
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(45)
    s2 = io.StringIO()
    pstats.Stats(prof, stream=s2).sort_stats("tottime").print_stats(25)
    path.write_text(f"{head}\nwall_s={wall:.3f}\n\n{s.getvalue()}\n\n{s2.getvalue()}")
    print(f"{path.name}: {head} wall {wall:.2f} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 24])
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    import tritune

    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="tcache-")
    k = tritune.autotune(configs=space(), key=["n"], store=False)(triton.jit(gelu_body))
    for i, e in enumerate(a.sizes):
        n = 1 << e
        x = torch.randn(n, device="cuda")
        y = torch.empty_like(x)
        torch.cuda.synchronize()

        def call():
            k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, n)  # noqa: B023
            torch.cuda.synchronize()

        profiled(call, out / f"profile_decorator_{i}_n2e{e}.txt", f"decorator n=2^{e}")
        ch = k.choices()[(n,)] if (n,) in k.choices() else list(k.choices().values())[-1]
        print(f"  winner {ch.config.id} {ch.detail} stats {json.dumps(ch.stats)}")
    from tritune.engine.options import TuneOptions
    from tritune.offline.tune import tune

    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="tcache-")
    (w,) = tritune.load_workloads(ROOT / "examples" / "gelu_space.py")

    def sess():
        return tune([w], keys=[{"n": 1 << e} for e in a.sizes], ceilings=False, verify=False, options=TuneOptions())

    res = profiled(sess, out / "profile_session.txt", "session")
    print(f"  compile_s {res.extra['compile_s']}", [(wr.key, wr.extra["wall_s"], (wr.extra["race"] or {}).get("stop"),
                                                    (wr.extra["race"] or {}).get("measurements")) for wr in res.workloads])


if __name__ == "__main__":
    main()
