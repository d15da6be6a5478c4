"""tritune vs triton.autotune on the same config lists, in one run, on one GPU.

    PYTHONPATH=src python benchmarks/vs_triton_autotune.py --out DIR [--part gelu|matmul|all] [--sizes 20 24 28]
        [--mm-size 4096 [4096 4096]] [--repeats 3] [--mm-repeats R] [--triton-repeats 1] [--jobs J]

Two parts. ``gelu``: the chapter's GELU space (80 configs) at n = 2^20, 2^24, 2^28. ``matmul``: the fp16
matmul space of examples/matmul.py (216 configs, about 48 of which need more shared memory than an H200
has) at M=N=K=4096, with GROUP_M=8 passed by the caller.

For each engine, from an empty Triton cache (a fresh TRITON_CACHE_DIR): the tuning wall time of the first
call at each key (cold for the first key, warm after), and its winner. The best is then found by an
independent, long, interleaved re-measurement of the top 10 configs of a full sweep (configs that fail to
launch are skipped and recorded); winner quality is winner time / best time. Engines: ``triton.autotune``;
``tritune.autotune`` (the decorator: serial compile, racing); ``tritune session`` (what ``tritune tune``
runs: parallel compile in worker processes, racing). Stability: the winners of the repeats, and for the
tritune engines whether they are the same or statistically tied. The matmul part also times cuBLAS
(torch.matmul) and reports TFLOP/s. Prints ratios against triton.autotune and writes raw JSON to
DIR/vs_triton_autotune_{gelu,matmul}.json (rewritten after every engine run, complete when its part ends).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import triton

import tritune

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

# Importable, so tritune's compile workers can rebuild the kernels; each engine jits its own copy of the
# Python function: no shared in-memory caches.
from gelu import gelu_args, gelu_forward_kernel  # noqa: E402
from matmul import MATMUL_SPACE, matmul_args, matmul_grid, matmul_kernel  # noqa: E402

TRITON, DECORATOR, SESSION = "triton.autotune", "tritune.autotune", "tritune session"


def log(*a: Any) -> None:
    print(*a, flush=True)


def fresh_cache() -> str:
    d = tempfile.mkdtemp(prefix="tcache-")
    os.environ["TRITON_CACHE_DIR"] = d
    return d


def median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


@dataclass
class Part:
    """One benchmark: a kernel, its config list, its keys, and how to call it."""

    name: str
    body: Callable[..., Any]  # the kernel's Python function
    configs: Callable[[], list[Any]]  # -> triton.Config list (the same for every engine)
    key_names: list[str]
    keys: list[dict[str, int]]
    label: Callable[[dict[str, int]], str]
    tag: Callable[[dict[str, int]], dict[str, Any]]  # what each run entry says about its key
    args: Callable[[dict[str, int]], tuple[Any, ...]]
    grid: Callable[[Any, dict[str, int]], tuple[int, ...]]
    workload: tuple[Path, str]  # (file, name) for the session
    kwargs: dict[str, Any] = field(default_factory=dict)  # caller kwargs, not part of any config
    flops: Callable[[dict[str, int]], float] | None = None
    cublas: Callable[[tuple[Any, ...]], Callable[[], Any]] | None = None  # library baseline on the same args


def gelu_part(sizes: list[int]) -> Part:
    def space() -> list[triton.Config]:
        return [triton.Config({"BLOCK": b}, num_warps=w, num_stages=s)
                for b in [128 << i for i in range(8)] for w in (1, 2, 4, 8, 16) for s in (1, 3)]

    return Part(
        "gelu", gelu_forward_kernel.fn, space, ["n"], [{"n": 1 << e} for e in sizes],
        label=lambda k: f"2^{k['n'].bit_length() - 1}", tag=lambda k: {"n_log2": k["n"].bit_length() - 1},
        args=lambda k: gelu_args(k, "cuda"), grid=lambda meta, k: (triton.cdiv(k["n"], meta["BLOCK"]),),
        workload=(ROOT / "examples" / "gelu_space.py", "gelu_space"),
    )  # fmt: skip


def matmul_part(size: list[int]) -> Part:
    m, n, k = size * 3 if len(size) == 1 else size
    return Part(
        "matmul", matmul_kernel.fn, lambda: [c.to_triton() for c in MATMUL_SPACE], ["M", "N", "K"],
        [{"M": m, "N": n, "K": k}], label=lambda k: f"{k['M']}x{k['N']}x{k['K']}", tag=dict,
        args=lambda k: matmul_args(k, "cuda"), grid=matmul_grid,
        workload=(ROOT / "examples" / "matmul.py", "matmul"), kwargs={"GROUP_M": 8},
        flops=lambda k: 2 * k["M"] * k["N"] * k["K"], cublas=lambda a: lambda: torch.matmul(a[0], a[1], out=a[2]),
    )  # fmt: skip


def cid(cfg_json: dict[str, Any] | None) -> str | None:
    return tritune.Config.from_json(cfg_json).id if cfg_json else None


def winner_json(cfg: Any, caller_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The tritune.Config.from_json form; caller kwargs (GROUP_M) are dropped so ids match the sweep's."""
    kw = {k: v for k, v in dict(cfg.kwargs).items() if k not in caller_kwargs}
    return {"kwargs": kw, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}


def run_decorator(part: Part, make: Callable[[], Any], what: str) -> list[dict[str, Any]]:
    fresh_cache()
    k = make()
    out = []
    for key in part.keys:
        args = part.args(key)
        torch.cuda.synchronize()
        t = time.perf_counter()
        k[lambda meta: part.grid(meta, key)](*args, **part.kwargs)  # noqa: B023
        torch.cuda.synchronize()
        out.append({**part.tag(key), "wall_s": time.perf_counter() - t,
                    "winner": winner_json(k.best_config, part.kwargs)})  # fmt: skip
        choice = getattr(k, "_last", None)  # tritune's Choice: how the pick was made (phases, race, ties)
        if choice is not None and getattr(choice, "stats", None):
            out[-1]["stats"] = choice.stats
            out[-1]["tie_ids"] = choice.stats.get("race", {}).get("ties", [])
        log(f"[{part.name}] {what} {part.label(key)}: {out[-1]['wall_s']:.2f} s -> "
            f"{cid(out[-1]['winner'])}")  # fmt: skip
    return out


def run_session(part: Part, jobs: int | None, what: str) -> list[dict[str, Any]]:
    """What `tritune tune` runs: per key, compile in forked workers while racing what compiled first."""
    from tritune.engine.options import TuneOptions
    from tritune.offline.tune import tune

    fresh_cache()
    (w,) = tritune.load_workloads(*part.workload)
    t = time.perf_counter()
    res = tune([w], keys=part.keys, ceilings=False, verify=False, options=TuneOptions(jobs=jobs))
    call_s = time.perf_counter() - t
    out = []
    for key, wr in zip(part.keys, res.workloads):
        wall = wr.extra["wall_s"]  # the key's compiles included (the later keys find most binaries cached)
        race = wr.extra["race"] or {}
        out.append({**part.tag(key), "wall_s": wall, "winner": wr.extra["winner"], "ties": wr.extra["ties"],
                    "measurements": race.get("measurements"), "full_measurements": race.get("full_measurements")})
        log(f"[{part.name}] {what} {part.label(key)}: {wall:.2f} s -> {cid(wr.extra['winner'])}"
            f" ({len(wr.extra['ties'])} ties)")  # fmt: skip
    out[0]["tune_call_s"] = call_s  # the whole tune() call, all keys: a check on the per-key accounting
    return out


def best_by_long_remeasure(part: Part) -> dict[str, Any]:
    """Full sweep at each key, then a long interleaved re-measurement of its top 10 (and cuBLAS, if any).

    The re-measurement is 20 rounds, each timing the 10 in a shuffled order (seeded), and each config's
    time is its median over the rounds. With 10 rounds in one fixed order, two GELU configs that differ only in
    num_stages (a loop-free kernel: the same binary) measured 2% apart at 2^28 on an H200.

    Runs in the last engine's Triton cache, so its compiles are mostly cache hits.
    """
    from tritune.bench import EventTimer

    timer = EventTimer()
    jit = triton.jit(part.body)
    cfgs = [tritune.Config.from_triton(c) for c in part.configs()]
    res = {}
    for key in part.keys:
        args = part.args(key)

        def fn(c: tritune.Config) -> Callable[[], Any]:
            g = part.grid(c.as_dict(), key)  # noqa: B023
            return lambda: jit[g](*args, **part.kwargs, **c.kwargs, **c.launch_options())  # noqa: B023

        sweep: dict[tritune.Config, float] = {}
        failed: dict[str, str] = {}
        for i, c in enumerate(cfgs):
            try:
                fn(c)()  # compile and load first: OutOfResources and the like are raised here
                torch.cuda.synchronize()
                sweep[c] = timer.measure(fn(c), budget_s=0.2).median_ms
            except Exception as e:
                failed[c.id] = f"{type(e).__name__}: {str(e).strip()[:300]}"
            if (i + 1) % 40 == 0 or i + 1 == len(cfgs):
                log(f"[{part.name}] sweep {part.label(key)}: {i + 1}/{len(cfgs)} ({len(failed)} failed to launch)")
        top = sorted(sweep, key=lambda c: sweep[c])[:10]
        acc: dict[tritune.Config, list[float]] = {c: [] for c in top}
        order = list(top)
        for r in range(20):  # interleaved rounds, each in a new (seeded) order: no config always follows the same one
            random.Random(r).shuffle(order)
            for c in order:
                acc[c].append(timer.measure(fn(c), budget_s=0.1).median_ms)
        final = {c.id: median(v) for c, v in acc.items()}
        entry: dict[str, Any] = {"sweep_ms": {c.id: t for c, t in sweep.items()}, "top10_ms": final,
                                 "failed": failed}  # fmt: skip
        if part.flops is not None:
            entry["best_tflops"] = part.flops(key) / (min(final.values()) * 1e-3) / 1e12
        if part.cublas is not None:
            entry["cublas_ms"] = timer.measure(part.cublas(args), budget_s=1.0).median_ms
            entry["cublas_tflops"] = part.flops(key) / (entry["cublas_ms"] * 1e-3) / 1e12 if part.flops else None
        log(f"[{part.name}] best {part.label(key)}: {min(final, key=final.__getitem__)} {min(final.values()):.4f} ms"
            + (f"; cuBLAS {entry['cublas_ms']:.4f} ms" if "cublas_ms" in entry else ""))  # fmt: skip
        res[part.label(key)] = entry
    return res


def stability(eng: str, entries: list[dict[str, Any]]) -> tuple[str, bool | None]:
    """'winners over N repeats: ...' plus, for the tritune engines, whether all winners are the same or tied."""
    ids = [e["winner_id"] for e in entries]
    text = f"winners over {len(ids)} repeats: " + ("same" if len(set(ids)) == 1 else f"{len(set(ids))} different")
    if eng == SESSION:
        ties = [{cid(t) for t in e.get("ties") or []} for e in entries]
        ok = all(a == b or a in tb or b in ta for a, ta in zip(ids, ties) for b, tb in zip(ids, ties))
        return text + f"; same or in another repeat's race ties: {'yes' if ok else 'NO'}", ok
    if eng == DECORATOR:
        ties = [set(e.get("tie_ids") or []) for e in entries]
        ok = all(a == b or a in tb or b in ta for a, ta in zip(ids, ties) for b, tb in zip(ids, ties))
        return text + f"; same or in another repeat's race ties: {'yes' if ok else 'NO'}", ok
    return text, None


def evaluate(part: Part, runs: dict[str, list[list[dict[str, Any]]]], best: dict[str, Any]) -> list[dict[str, Any]]:
    """Adds quality (and TFLOP/s) to every run entry, prints the per-key table, returns the summary rows."""
    mm = part.flops is not None
    ww = 60 if mm else 40  # winner column
    log(f"\n== {part.name} ==")
    log(f"{'engine':18s} {'key':>14s} {'tune s':>8s} {'ratio':>6s} {'winner (worst repeat)':{ww}s} {'quality':>8s}"
        + (f" {'TFLOP/s':>8s} {'x cuBLAS':>8s}" if mm else ""))  # fmt: skip
    summary = []
    for eng, reps in runs.items():
        if not reps:
            continue
        row: dict[str, Any] = {"part": part.name, "engine": eng, "stable": True}
        for i, key in enumerate(part.keys):
            b = best[part.label(key)]
            best_ms = min(b["top10_ms"].values())
            for r in reps:
                e = r[i]
                e["winner_id"] = wid = cid(e["winner"])
                t = b["top10_ms"].get(wid) or b["sweep_ms"].get(wid)
                e["winner_ms"], e["quality"] = t, (t / best_ms if t else None)
                if mm:
                    e["tflops"] = part.flops(key) / (t * 1e-3) / 1e12 if t else None
                    e["vs_cublas"] = b["cublas_ms"] / t if t and "cublas_ms" in b else None
            entries = [r[i] for r in reps]
            worst = max(entries, key=lambda e: e["quality"] if e["quality"] is not None else float("inf"))
            wall = median([e["wall_s"] for e in entries])
            ref = median([r[i]["wall_s"] for r in runs[TRITON]]) if runs.get(TRITON) else None
            text, ok = stability(eng, entries)
            row["stable"] &= len({e["winner_id"] for e in entries}) == 1 or bool(ok)
            q = f"{worst['quality']:8.3f}" if worst["quality"] else f"{'-':>8s}"
            extra = ""
            if mm:
                tf, vc = worst.get("tflops"), worst.get("vs_cublas")
                extra = f" {tf:8.1f} {vc:8.3f}" if tf and vc else f" {'-':>8s} {'-':>8s}"
                row["vs_cublas"] = min(x for x in (vc, row.get("vs_cublas"), float("inf")) if x is not None)
            log(f"{eng:18s} {part.label(key):>14s} {wall:8.2f} {wall / ref if ref else float('nan'):6.2f} "
                f"{worst['winner_id'] or '-':{ww}s} {q}{extra}  {text}")  # fmt: skip
            row["quality"] = max(worst["quality"] or float("inf"), row.get("quality", 0.0))
        cold = [r[0]["wall_s"] for r in reps]
        warm = [sum(e["wall_s"] for e in r[1:]) for r in reps] if len(part.keys) > 1 else None
        row["cold_s"], row["warm_s"] = median(cold), (median(warm) if warm else None)
        summary.append(row)
    tri = next((r for r in summary if r["engine"] == TRITON), None)
    for r in summary:
        r["cold_ratio"] = r["cold_s"] / tri["cold_s"] if tri else None
        r["warm_ratio"] = r["warm_s"] / tri["warm_s"] if tri and r["warm_s"] and tri["warm_s"] else None
    if part.cublas is not None:
        for label, b in best.items():
            log(f"cuBLAS {label}: {b['cublas_tflops']:.1f} TFLOP/s; best config {b['best_tflops']:.1f} TFLOP/s "
                f"({b['best_tflops'] / b['cublas_tflops']:.3f} x cuBLAS); target for the winners >= 0.98 x cuBLAS")
    return summary


def print_summary(rows: list[dict[str, Any]]) -> None:
    def f(x: float | None, w: int, p: int) -> str:
        return f"{x:{w}.{p}f}" if x is not None and x != float("inf") else f"{'-':>{w}s}"

    log("\n== summary (wall: median over repeats; ratio: tritune wall / triton.autotune wall; "
        "quality and x cuBLAS: worst repeat, worst key) ==")  # fmt: skip
    log(f"{'part':7s} {'engine':18s} {'cold s':>8s} {'ratio':>6s} {'warm s':>8s} {'ratio':>6s} {'quality':>8s} "
        f"{'x cuBLAS':>8s}  winners")  # fmt: skip
    for r in rows:
        log(f"{r['part']:7s} {r['engine']:18s} {f(r['cold_s'], 8, 2)} {f(r['cold_ratio'], 6, 2)} "
            f"{f(r['warm_s'], 8, 2)} {f(r['warm_ratio'], 6, 2)} {f(r['quality'], 8, 3)} {f(r.get('vs_cublas'), 8, 3)}"
            f"  {'same or tied' if r['stable'] else 'DIFFER'}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--part", choices=["gelu", "matmul", "all"], default="all")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 24, 28], help="GELU sizes, log2 n")
    ap.add_argument("--mm-size", type=int, nargs="+", default=[4096], help="matmul M N K (one value: M=N=K)")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of each tritune engine (stability)")
    ap.add_argument("--mm-repeats", type=int, default=None, help="tritune repeats for matmul (default --repeats)")
    ap.add_argument("--triton-repeats", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--engines", nargs="+", choices=[TRITON, DECORATOR, SESSION], default=[TRITON, DECORATOR, SESSION])
    a = ap.parse_args()
    if len(a.mm_size) not in (1, 3):
        ap.error("--mm-size takes one value (M=N=K) or three (M N K)")
    from tritune.bench.provenance import provenance

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = []
    if a.part in ("gelu", "all"):
        parts.append((gelu_part(a.sizes), a.repeats))
    if a.part in ("matmul", "all"):
        parts.append((matmul_part(a.mm_size), a.repeats if a.mm_repeats is None else a.mm_repeats))
    summary = []
    for part, repeats in parts:
        path = out / f"vs_triton_autotune_{part.name}.json"
        doc: dict[str, Any] = {"provenance": provenance(), "argv": sys.argv, "part": part.name, "keys": part.keys,
                               "complete": False}  # fmt: skip
        if part.name == "gelu":
            doc["sizes_log2"] = a.sizes

        def dump(doc: dict[str, Any] = doc, path: Path = path) -> None:
            path.write_text(json.dumps(doc, indent=1))

        def engine(eng: str) -> Callable[[], Any]:
            auto = triton.autotune if eng == TRITON else lambda **kw: tritune.autotune(**kw, store=False)
            return lambda: auto(configs=part.configs(), key=part.key_names)(triton.jit(part.body))  # noqa: B023

        runs: dict[str, list[Any]] = {TRITON: [], DECORATOR: [], SESSION: []}
        doc["runs"] = runs
        plan = [(TRITON, i) for i in range(a.triton_repeats) if TRITON in a.engines]
        plan += [(eng, i) for i in range(repeats) for eng in (DECORATOR, SESSION) if eng in a.engines]
        for eng, i in plan:
            what = f"{eng} #{i + 1}"
            log(f"[{part.name}] {what}: start")
            runs[eng].append(run_session(part, a.jobs, what) if eng == SESSION else run_decorator(part, engine(eng), what))
            dump()
        best = best_by_long_remeasure(part)
        doc["best"] = best
        rows = evaluate(part, runs, best)
        doc.update(summary=rows, complete=True)
        if part.cublas is not None:
            doc["cublas"] = {k: {x: b.get(x) for x in ("cublas_ms", "cublas_tflops", "best_tflops")}
                             for k, b in best.items()}  # fmt: skip
        dump()
        log(f"[{part.name}] wrote {path}")
        summary += rows
    print_summary(summary)


if __name__ == "__main__":
    main()
