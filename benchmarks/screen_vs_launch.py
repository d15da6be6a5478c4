"""The screen checked on a GPU: the CPU-side screen for sm90 against real launches on the device.

    PYTHONPATH=src python benchmarks/screen_vs_launch.py --out /tmp/screen_vs_launch.json

1. Screens examples/matmul.py (216 configs) and examples/softmax.py for sm90 in the worker pool, as a
   user without a GPU would (timed).
2. Compiles again without the llir gate so that every binary, the illegal ones too, is in Triton's cache
   (so launching an illegal config costs no ptxas here; timed separately).
3. Launches every config through the JIT on the GPU and records what fails (OutOfResources etc.) and
   what the loaded kernel reports: metadata.shared, n_regs, n_spills, its cache hash, and through the
   driver API its static shared memory and occupancy.
Writes the comparison as JSON under --out and prints a short table. Target: under 5 minutes on 16 cores.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = [("examples/matmul.py", "matmul"), ("examples/softmax.py", "softmax")]


def _driver_attrs(kernel: Any, threads: int, shared: int) -> dict[str, Any]:
    """Static shared memory and occupancy as the CUDA driver reports them for the loaded function."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        func = ctypes.c_void_p(int(kernel.function))
        static = ctypes.c_int(-1)
        cuda.cuFuncGetAttribute(ctypes.byref(static), 1, func)  # CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
        blocks = ctypes.c_int(-1)
        rc = cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(blocks), func, threads, shared)
        return {"static_shared": static.value, "blocks_per_sm": blocks.value if rc == 0 else None}
    except Exception as e:  # the figures are extra evidence, not the proof
        return {"driver_error": f"{type(e).__name__}: {e}"}


def launch_all(path: str, name: str, screened: dict[str, Any]) -> dict[str, Any]:
    import torch

    from tritune.adapters.kernel import as_jit
    from tritune.config import Config
    from tritune.workload import load_workloads

    (w,) = load_workloads(ROOT / path, name)
    key = w.keys[0]
    args = w.make_args(key, "cuda")
    jit = as_jit(w.kernel)
    out: dict[str, Any] = {}
    for cid, cand in screened.items():
        config = Config.from_json(cand["config"])
        rec: dict[str, Any] = {}
        if cand["status"] in ("compile_timeout", "compile_failed") or cand.get("rule", "").startswith(
            "static"
        ):
            out[cid] = {"launched": False, "why": f"screen status {cand['status']}"}
            continue
        t0 = time.perf_counter()
        try:
            k = jit[w.grid_for(config, key)](
                *args,
                **w.caller_kwargs(key),
                **config.kwargs,
                num_warps=config.num_warps,
                num_stages=config.num_stages,
            )
            torch.cuda.synchronize()
            rec.update(
                launched=True,
                failed=False,
                shared=int(k.metadata.shared),
                registers=int(k.n_regs),
                n_spills=int(k.n_spills),
                hash=k.hash,
            )
            rec.update(_driver_attrs(k, config.num_warps * 32, int(k.metadata.shared)))
        except Exception as e:
            rec.update(launched=True, failed=True, error=f"{type(e).__name__}: {str(e)[:200]}")
        rec["launch_s"] = round(time.perf_counter() - t0, 3)
        out[cid] = rec
    return out


def compare(screened: dict[str, Any], launched: dict[str, Any]) -> dict[str, Any]:
    illegal = {
        c
        for c, s in screened.items()
        if s["status"] == "illegal" and not s.get("rule", "").startswith("static")
    }
    failed = {c for c, r in launched.items() if r.get("failed")}
    mism: list[dict[str, Any]] = []
    for cid, r in launched.items():
        s = screened[cid]
        if not r.get("launched") or r.get("failed") or s["status"] != "fits":
            continue
        for field, theirs in (
            ("shared", r["shared"]),
            ("registers", r["registers"]),
            ("n_spills", r["n_spills"]),
            ("hash", r["hash"]),
            ("static_shared", r.get("static_shared")),
            ("blocks_per_sm", r.get("blocks_per_sm")),
        ):
            if theirs is not None and s.get(field) != theirs:
                mism.append({"config": cid, "field": field, "screen": s.get(field), "device": theirs})
    return {
        "illegal_equals_failed": illegal == failed,
        "illegal_not_failed": sorted(illegal - failed),
        "failed_not_illegal": sorted(failed - illegal),
        "n_illegal": len(illegal),
        "n_failed": len(failed),
        "mismatches": mism,
        "not_launched": sorted(c for c, r in launched.items() if not r.get("launched")),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--compile-timeout", type=float, default=240.0)
    a = p.parse_args()
    import torch
    import triton

    from tritune.screen import screen

    report: dict[str, Any] = {
        "provenance": {
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "triton": triton.__version__,
            "torch": torch.__version__,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": " ".join(sys.argv),
        },
        "cases": {},
    }
    ok = True
    for path, name in CASES:
        t0 = time.perf_counter()
        res = screen(ROOT / path, "sm90", name=name, jobs=a.jobs, compile_timeout=a.compile_timeout)
        screen_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        screen(ROOT / path, "sm90", name=name, jobs=a.jobs, compile_timeout=a.compile_timeout, gate=False)
        precompile_s = time.perf_counter() - t0
        screened = {c.config.id: c.to_json() for c in res.workloads[0].candidates}
        if not torch.cuda.is_available():
            print(
                f"{name}: screened {len(screened)} configs in {screen_s:.1f} s; no GPU here, nothing launched"
            )
            report["cases"][name] = {"screen_s": screen_s, "screen": screened}
            continue
        t0 = time.perf_counter()
        launched = launch_all(path, name, screened)
        launch_s = time.perf_counter() - t0
        cmp = compare(screened, launched)
        ok &= cmp["illegal_equals_failed"] and not cmp["mismatches"]
        report["cases"][name] = {
            "screen_s": round(screen_s, 2),
            "precompile_s": round(precompile_s, 2),
            "launch_s": round(launch_s, 2),
            "screen_timing": res.timing,
            "comparison": cmp,
            "screen": screened,
            "launch": launched,
        }
        print(
            f"{name}: {len(screened)} configs | screen {screen_s:.1f} s | illegal {cmp['n_illegal']} "
            f"vs failed at launch {cmp['n_failed']} | sets equal: {cmp['illegal_equals_failed']} | "
            f"field mismatches: {len(cmp['mismatches'])} | not launched: {len(cmp['not_launched'])}"
        )
        for m in cmp["mismatches"][:10]:
            print(f"   {m['config']}: {m['field']} screen={m['screen']} device={m['device']}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(f"wrote {a.out}; all equal: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
