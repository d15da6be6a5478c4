"""tritune vs triton.autotune on the chapter's GELU space (80 configs), in one run, on one GPU.

    PYTHONPATH=src python benchmarks/vs_triton_autotune.py --out DIR [--sizes 20 24 28]

For each engine, from an empty Triton cache (a fresh TRITON_CACHE_DIR): the tuning wall time of the first
call at each size (cold for the first size, warm after), and its winner. The best is then found by an
independent, long, interleaved re-measurement of the top 10 configs of a full sweep; winner quality is
winner time / best time. Engines: ``triton.autotune``; ``tritune.autotune`` (the decorator: serial
compile, racing); ``tritune session`` (what ``tritune tune`` runs: parallel compile in worker processes,
racing). Prints ratios against triton.autotune and writes raw JSON to DIR/vs_triton_autotune.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))


from gelu import gelu_forward_kernel  # noqa: E402  (importable, so tritune's compile workers can rebuild it)

gelu_body = gelu_forward_kernel.fn  # each engine jits its own copy: no shared in-memory caches


def space() -> list[triton.Config]:
    return [triton.Config({"BLOCK": b}, num_warps=w, num_stages=s)
            for b in [128 << i for i in range(8)] for w in (1, 2, 4, 8, 16) for s in (1, 3)]


def fresh_cache() -> str:
    d = tempfile.mkdtemp(prefix="tcache-")
    os.environ["TRITON_CACHE_DIR"] = d
    return d


def run_decorator(make, sizes):
    fresh_cache()
    k = make()
    out = []
    for e in sizes:
        n = 1 << e
        x = torch.randn(n, device="cuda")
        y = torch.empty_like(x)
        torch.cuda.synchronize()
        t = time.perf_counter()
        k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, n)  # noqa: B023
        torch.cuda.synchronize()
        wall = time.perf_counter() - t
        cfg = k.best_config
        out.append({"n_log2": e, "wall_s": wall, "winner": {"kwargs": dict(cfg.kwargs), "num_warps": cfg.num_warps,
                                                            "num_stages": cfg.num_stages}})
    return out


def run_session(sizes, jobs):
    """What `tritune tune` runs: one parallel screen for all sizes, then a race per size."""
    import tritune
    from tritune.tune.session import TuneOptions, tune

    fresh_cache()
    (w,) = tritune.load_workloads(ROOT / "examples" / "gelu_space.py")
    res = tune([w], keys=[{"n": 1 << e} for e in sizes], options=TuneOptions(jobs=jobs, verify=False, ceilings=False))
    out = []
    for i, (e, wr) in enumerate(zip(sizes, res.workloads)):
        wall = wr.extra["wall_s"] + (res.extra["compile_s"] if i == 0 else 0.0)
        race = wr.extra["race"] or {}
        out.append({"n_log2": e, "wall_s": wall, "winner": wr.extra["winner"],
                    "measurements": race.get("measurements"), "full_measurements": race.get("full_measurements")})
    return out


def best_by_long_remeasure(sizes):
    """Full sweep at each size, then a long interleaved re-measurement of its top 10."""
    from tritune import Config
    from tritune.bench import EventTimer

    timer = EventTimer()
    jit = triton.jit(gelu_body)
    res = {}
    for e in sizes:
        n = 1 << e
        x = torch.randn(n, device="cuda")
        y = torch.empty_like(x)
        cfgs = [Config.from_triton(c) for c in space()]

        def fn(c):
            g = (triton.cdiv(n, c.kwargs["BLOCK"]),)  # noqa: B023
            return lambda: jit[g](x, y, n, BLOCK=c.kwargs["BLOCK"], num_warps=c.num_warps, num_stages=c.num_stages)  # noqa: B023

        sweep = {c: timer.measure(fn(c), budget_s=0.2).median_ms for c in cfgs}
        top = sorted(cfgs, key=lambda c: sweep[c])[:10]
        acc = {c: [] for c in top}
        for _ in range(10):  # interleaved rounds
            for c in top:
                acc[c].append(timer.measure(fn(c), budget_s=0.1).median_ms)
        final = {c.id: sorted(v)[len(v) // 2] for c, v in acc.items()}
        res[e] = {"sweep_ms": {c.id: t for c, t in sweep.items()}, "top10_ms": final}
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 24, 28])
    ap.add_argument("--repeats", type=int, default=3, help="repeats of each tritune engine (stability)")
    ap.add_argument("--triton-repeats", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()
    import tritune
    from tritune.tune.provenance import provenance

    def triton_engine():
        return triton.autotune(configs=space(), key=["n"])(triton.jit(gelu_body))

    def tritune_engine():
        return tritune.autotune(configs=space(), key=["n"], store=False)(triton.jit(gelu_body))

    runs = {"triton.autotune": [], "tritune.autotune": [], "tritune session": []}
    for _ in range(a.triton_repeats):
        runs["triton.autotune"].append(run_decorator(triton_engine, a.sizes))
    for _ in range(a.repeats):
        runs["tritune.autotune"].append(run_decorator(tritune_engine, a.sizes))
        runs["tritune session"].append(run_session(a.sizes, a.jobs))
    best = best_by_long_remeasure(a.sizes)
    print(f"{'engine':18s} {'n':>5s} {'tune s':>8s} {'ratio':>6s} {'winner':40s} {'quality':>8s}")
    for eng, reps in runs.items():
        for i, e in enumerate(a.sizes):
            walls = [r[i]["wall_s"] for r in reps]
            med_wall = sorted(walls)[len(walls) // 2]
            tw = sorted(r[i]["wall_s"] for r in runs["triton.autotune"])
            ref = tw[len(tw) // 2]
            top = best[e]["top10_ms"]
            best_ms = min(top.values())
            qual = []
            for r in reps:
                w = r[i]["winner"]
                wid = tritune.Config.from_json(w).id if w else None
                t = top.get(wid) or best[e]["sweep_ms"].get(wid)
                qual.append(t / best_ms if t else None)
                r[i]["quality"] = qual[-1]
            ids = [tritune.Config.from_json(r[i]["winner"]).id for r in reps]
            q = max(x for x in qual if x is not None)
            same = "same" if len(set(ids)) == 1 else f"{len(set(ids))} different"
            print(f"{eng:18s} 2^{e:<3d} {med_wall:8.2f} {med_wall / ref:6.2f} {ids[0]:40s} {q:8.3f}  "
                  f"winners over {len(reps)} repeats: {same}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "vs_triton_autotune.json").write_text(json.dumps(
        {"provenance": provenance(), "sizes_log2": a.sizes, "runs": runs,
         "best": {str(k): v for k, v in best.items()}}, indent=1))


if __name__ == "__main__":
    main()
