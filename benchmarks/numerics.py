"""Tuning that never changes the numbers: fresh tunings under ``numerics="any"`` and ``numerics="exact"``.

    PYTHONPATH=src python benchmarks/numerics.py --out DIR [--runs 5] [--ops gelu,softmax,...,lib:mm,lib:fla_gla]

An op is an example's kernel at its GPU key, decorated with ``@tritune.autotune`` over the example's own config
list, or ``lib:NAME``: an op of ``real_libraries.py`` (FlagGems, Liger-Kernel, fla), unchanged, under
``tritune.patch_triton()`` with ``$TRITUNE_NUMERICS`` set to the mode; its digest is the op's output and its
winners are those of every autotuner the call reached. A library op's per-call comparison pins each autotuner of
Triton's own engine to each side's configs in turn (``real_libraries.remeasure_winners``, in a fresh process). For each mode, ``--runs`` fresh processes (an empty Triton cache, no store) tune every op once and
record each op's output digest, winner and (exact) class. Then one process times, per op, the exact-mode winner
against the unconstrained winner (``triton.testing.do_bench``, interleaved, the median of 5 alternations) and the
reference config (the first legal one, what a pinned run without a table would run). Prints per op: the number of
distinct outputs each mode gave over its runs (exact: must be 1, equal to the reference config's bits), and the
per-call ratio exact/any; writes DIR/numerics.json.

``--resume EARLIER`` counts an earlier call's runs (its ``any_N.json`` and ``exact_N.json``, the same ``--ops``) with
this call's, which are numbered after them: fresh runs from empty caches that one call's time limit cannot hold all
of add up over calls. Each run records its machine (GPU, driver, torch, triton); runs of another machine are refused
before anything runs. The earlier files are copied into DIR, and ``numerics.json`` says how many runs were resumed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OPS = ("gelu", "softmax", "rmsnorm", "layernorm", "matmul", "attention")
#: Where the ops run: ``cuda``; ``cpu`` (with ``TRITON_INTERPRET=1``) only checks the script itself.
DEVICE = os.environ.get("NUMERICS_DEVICE", "cuda")


def _pythonpath() -> str:
    """``src`` first, then whatever the caller's PYTHONPATH holds (where the libraries were installed)."""
    return os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)


def _sync() -> None:
    if DEVICE == "cuda":
        import torch

        torch.cuda.synchronize()


def _workload(op: str) -> Any:
    sys.path.insert(0, str(ROOT / "examples"))
    from tritune.workload import load_workloads

    (w,) = load_workloads(str(ROOT / "examples" / f"{op}.py"), op)
    return w


def _setup(op: str, configs: Any = None, numerics: str = "any") -> tuple[Any, Any, Any, Any]:
    """(decorated kernel, args, kwargs, grid) of ``op`` at its GPU key."""
    import torch

    import tritune
    from tritune.adapters.kernel import unwrap_jit

    w = _workload(op)
    key = w.keys[-1]
    torch.manual_seed(0)
    args = w.make_args(key, DEVICE)
    kw = w.caller_kwargs(key)
    cands = list(w.candidates()) if configs is None else configs
    k = tritune.autotune(cands, (), store=False, numerics=numerics)(unwrap_jit(w.kernel))  # one key: this call

    def grid(meta: dict[str, Any]) -> tuple[int, ...]:
        cfg = tritune.Config({n: meta[n] for n in cands[0].kwargs}, num_warps=meta.get("num_warps", 4))
        return w.grid_for(cfg, key)

    return k, args, kw, grid


def _digest(tensors: list[Any]) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().cpu().view(-1).view(__import__("torch").uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def _libs(ops: list[str]) -> tuple[Any, dict[str, Any]]:
    """``real_libraries`` and its ops named ``lib:NAME`` in ``ops``, their libraries imported (FlagGems enabled)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import real_libraries as rl

    by_name = {op.name: op for op in rl.OPS}
    want = {o: by_name[o[4:]] for o in ops if o.startswith("lib:")}
    # smoke: real_libraries' own tiny kernels; tutorials: each op imports its tutorial file itself
    for lib in sorted({op.lib for op in want.values()} - {"smoke", "tutorials"}):
        mod = __import__(lib)
        if lib == "flag_gems":
            mod.enable()
    return rl, want


def _lib_run(rl: Any, op: Any) -> tuple[Any, Any, list[Any]]:
    """Call a library op once (its autotuners tune); (fn, args, the autotuners it reached)."""
    import torch

    fn, args = op.make(torch, DEVICE, False)
    with rl.RunCounter() as counted:
        out = fn(*args)
        _sync()
    return fn, (args, out), counted.tuners()


def _machine() -> dict[str, Any]:
    """What a run's timings depend on besides the code: the GPU, its driver, torch and triton."""
    from tritune.bench.provenance import MACHINE, provenance

    p = provenance()
    return {k: p.get(k) for k in MACHINE}


def child(mode: str, ops: list[str], out: str) -> None:
    """One fresh process: tune every op once under ``mode``; its outputs' digests, winners and classes."""

    res: dict[str, Any] = {}
    if any(o.startswith("lib:") for o in ops):
        os.environ["TRITUNE_NUMERICS"] = mode
        import tritune

        tritune.patch_triton()
        rl, lib_ops = _libs(ops)
        for name, op in lib_ops.items():
            _, (_, output), tuners = _lib_run(rl, op)
            res[name] = {"digest": _digest([output]), "tuners": [
                {"name": rl.tuner_name(t), "config": rl.describe(t.best_config),
                 "numerics": next((st.get("numerics") for st in (rl._choice_stats(t) or {}).values()
                                   if isinstance(st, dict) and st.get("numerics")), None)} for t in tuners]}
            res[name]["winner_id"] = json.dumps([t["config"] for t in res[name]["tuners"]], sort_keys=True)
            res[name]["numerics"] = res[name]["tuners"][0]["numerics"] if res[name]["tuners"] else None
    for op in (o for o in ops if not o.startswith("lib:")):
        k, args, kw, grid = _setup(op, numerics=mode)
        w = _workload(op)
        k[grid](*args, **kw)
        _sync()
        (choice,) = k.choices().values()
        res[op] = {"winner": choice.config.to_json(), "winner_id": choice.config.id,
                   "digest": _digest(w.output_tensors(args)), "numerics": (choice.stats or {}).get("numerics"),
                   "source": choice.source}  # fmt: skip
    res["_machine"] = _machine()
    Path(out).write_text(json.dumps(res))


def compare_lib(results: dict[str, Any], ops: list[str]) -> dict[str, Any]:
    """Library ops under Triton's own engine: each side's configs pinned in every autotuner the op reached (the
    exact winners, the unconstrained winners, the exact runs' reference), timed interleaved; each side's digest."""
    import torch

    from tritune.config import as_config

    rl, lib_ops = _libs(ops)
    if DEVICE == "cpu":
        rl._fake_cpu_timer()  # labelled FAKE: Triton's autotuner cannot time configs under the interpreter
    out: dict[str, Any] = {}
    for name, op in lib_ops.items():
        try:
            fn, (args, _), tuners = _lib_run(rl, op)
            names = [rl.tuner_name(t) for t in tuners]
            sides: dict[str, list[Any]] = {}
            for side, mode in (("exact", "exact"), ("any", "any"), ("reference", "exact")):
                picked = {t["name"]: t for t in results[mode][0][name]["tuners"]}
                if sorted(picked) != sorted(names):
                    raise RuntimeError(f"the runs reached autotuners {sorted(picked)}, this process {sorted(names)}")
                cfgs = []
                for t, n in zip(tuners, names):
                    ref = (picked[n].get("numerics") or {}).get("reference") if side == "reference" else None
                    c = next((c for c in t.configs if as_config(c).id == ref), None) if ref else None
                    cfgs.append(c if c is not None else rl.matching_config(t, picked[n]["config"]) if side != "reference"
                                else t.configs[0])
                sides[side] = cfgs
            pinned, digests = rl.Pinned(tuners), {}
            try:
                for side, cfgs in sides.items():
                    pinned.pin(cfgs)
                    digests[side] = _digest([fn(*args)])
            finally:
                pinned.restore()
            got = rl.remeasure_winners(torch, fn, args, tuners, sides, blocks=30, calls=10, cuda=DEVICE == "cuda")
            us = got["us"]
            out[name] = {"ms": {k: v / 1e3 for k, v in us.items()}, "exact_over_any": us["exact"] / us["any"],
                         "reference_over_any": us["reference"] / us["any"], "reference_digest": digests["reference"],
                         "digests": digests, "winners": {k: [rl.describe(c) for c in v] for k, v in sides.items()}}
        except Exception as e:  # one op's failure is reported, the others still compare
            out[name] = {"error": f"{type(e).__name__}: {e}"[:500]}
    return out


def compare(results: dict[str, Any], ops: list[str]) -> dict[str, Any]:
    """Per op: the exact winner, the unconstrained winner and the reference config, timed interleaved."""
    from triton.testing import do_bench

    import tritune

    out: dict[str, Any] = {}
    for op in (o for o in ops if not o.startswith("lib:")):
        w = _workload(op)
        ref_id = ((results["exact"][0][op].get("numerics") or {}).get("reference")
                  or next(iter(w.candidates())).id)  # the exact runs' reference: the first legal config that ran
        ref = next(c for c in w.candidates() if c.id == ref_id)
        picks = {"exact": tritune.Config.from_json(results["exact"][0][op]["winner"]),
                 "any": tritune.Config.from_json(results["any"][0][op]["winner"]), "reference": ref}
        fns, digests = {}, {}
        for name, cfg in picks.items():
            k, args, kw, grid = _setup(op, configs=[cfg])
            fns[name] = (lambda k=k, a=args, kw=kw, g=grid: k[g](*a, **kw))
            fns[name]()
            _sync()
            digests[name] = _digest(w.output_tensors(args))
        times: dict[str, list[float]] = {n: [] for n in fns}
        for _ in range(5):
            for n, f in fns.items():
                times[n].append(float(do_bench(f, warmup=25, rep=100)))
        med = {n: statistics.median(t) for n, t in times.items()}
        out[op] = {"ms": med, "exact_over_any": med["exact"] / med["any"],
                   "reference_over_any": med["reference"] / med["any"], "reference_digest": digests["reference"],
                   "winners": {n: c.id for n, c in picks.items()}}  # fmt: skip
    return out


def resume(earlier: Path, out: Path, ops: list[str], results: dict[str, list[dict[str, Any]]],
           here: dict[str, Any]) -> int:  # fmt: skip
    """Load ``earlier``'s runs into ``results`` (and copy their files into ``out``); the number the next run takes.
    Every earlier run must hold every op of this call, and must have run on this machine (``here``: GPU, driver,
    torch, triton): one that does not is an error naming what differs."""
    from tritune.bench.provenance import machine_differences

    last = -1
    for mode in ("any", "exact"):
        found = sorted(earlier.glob(f"{mode}_*.json"), key=lambda f: int(f.stem.split("_")[1]))
        for f in found:
            run = json.loads(f.read_text())
            missing = [op for op in ops if op not in run]
            if missing:
                raise SystemExit(f"--resume {earlier}: {f.name} has no run of {', '.join(missing)}; resume with "
                                 "the --ops of that call")  # fmt: skip
            then = run.get("_machine")  # (a file written before machines were recorded has none)
            differ = machine_differences(then, here) if then else []
            if differ:
                raise SystemExit(f"--resume {earlier}: {f.name} ran elsewhere ({'; '.join(differ)}); its runs "
                                 "cannot count with this call's")  # fmt: skip
            results[mode].append(run)
            last = max(last, int(f.stem.split("_")[1]))
            if f.parent.resolve() != out.resolve():
                (out / f.name).write_text(f.read_text())
    if last < 0:
        raise SystemExit(f"--resume {earlier}: no any_N.json or exact_N.json there")
    return last + 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--shared-triton-cache", action="store_true",
                    help="the runs share one Triton cache (each still gets a new store and FlagGems cache)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="start no further pair of runs (any, exact) that would end past this many seconds minus"
                         " --compare-reserve-s, so that the comparison still runs")
    ap.add_argument("--compare-reserve-s", type=float, default=90.0)
    ap.add_argument("--resume", type=Path, default=None,
                    help="a folder of an earlier call's runs (any_N.json, exact_N.json) of the same --ops, counted "
                         "with this call's")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    ops = [o for o in a.ops.split(",") if o]
    if a.child and a.child[0] == "compare":  # the library ops' comparison, in a process of its own
        results = json.loads(Path(a.child[1]).read_text())
        Path(a.child[1]).write_text(json.dumps(compare_lib(results, ops)))
        return
    if a.child:
        child(a.child[0], ops, a.child[1])
        return
    a.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, Any]]] = {"any": [], "exact": []}
    first = resume(a.resume, a.out, ops, results, _machine()) if a.resume is not None else 0
    resumed = {m: len(r) for m, r in results.items()}
    # --shared-triton-cache: the runs share Triton's cache of compiled binaries (identical in every run; what decides
    # a winner is the timing), so each run costs its timing, not its compilation. Stores stay fresh either way.
    shared_cache = tempfile.mkdtemp(prefix="numerics_triton_") if a.shared_triton_cache else None
    started, pair_walls = time.monotonic(), []
    for run in range(first, first + a.runs):
        elapsed = time.monotonic() - started
        if a.budget_s is not None and pair_walls and elapsed + max(pair_walls) > a.budget_s - a.compare_reserve_s:
            print(f"runs stopped after {run - first} of {a.runs} per mode: another pair (up to {max(pair_walls):.0f} s) "
                  f"would pass --budget-s {a.budget_s:.0f} less the comparison's {a.compare_reserve_s:.0f} s")
            break
        for mode in ("any", "exact"):
            path = a.out / f"{mode}_{run}.json"
            fresh = Path(tempfile.mkdtemp(prefix=f"numerics_{mode}_{run}_"))  # a new store and library caches
            env = {**os.environ, "PYTHONPATH": _pythonpath(), "TRITUNE_STORE": str(fresh / "store.sqlite"),
                   "FLAGGEMS_CACHE_DIR": str(fresh / "flaggems"),
                   "TRITON_CACHE_DIR": shared_cache or str(fresh / "triton")}  # fmt: skip
            p = subprocess.run([sys.executable, __file__, "--out", str(a.out), "--ops", a.ops, "--child", mode, str(path)],
                               env=env,
                               capture_output=True, text=True)  # fmt: skip
            if p.returncode != 0:
                print(f"{mode} run {run}: rc={p.returncode}\n{p.stderr[-3000:]}")
                continue
            results[mode].append(json.loads(path.read_text()))
        pair_walls.append(time.monotonic() - started - elapsed)
    summary: dict[str, Any] = {"runs": {m: len(r) for m, r in results.items()}, "resumed": resumed, "ops": {},
                               "shared_triton_cache": bool(shared_cache),
                               "pair_walls_s": [round(w, 1) for w in pair_walls]}
    timed = compare(results, ops) if results["any"] and results["exact"] and DEVICE == "cuda" else {}
    if results["any"] and results["exact"] and any(o.startswith("lib:") for o in ops):
        path = a.out / "compare_lib.json"
        path.write_text(json.dumps(results))
        p = subprocess.run([sys.executable, __file__, "--out", str(a.out), "--ops", a.ops, "--child", "compare",
                            str(path)], env={**os.environ, "PYTHONPATH": _pythonpath()}, capture_output=True,
                           text=True)  # fmt: skip
        if p.returncode != 0:
            print(f"compare: rc={p.returncode}\n{p.stderr[-3000:]}")
        else:
            timed.update(json.loads(path.read_text()))
    print(f"{'op':26} {'any: distinct outputs':>22} {'exact: distinct':>16} {'exact = reference':>18} "
          f"{'class':>6} {'exact/any':>10} {'reference/any':>14}")
    for op in ops:
        d_any = {r[op]["digest"] for r in results["any"] if op in r}
        d_exact = {r[op]["digest"] for r in results["exact"] if op in r}
        ref_digest = timed.get(op, {}).get("reference_digest")
        n = (results["exact"][0][op].get("numerics") or {}) if results["exact"] else {}
        t = timed.get(op, {})
        summary["ops"][op] = {"any_distinct": len(d_any), "exact_distinct": len(d_exact),
                              "exact_is_reference": d_exact == {ref_digest}, "class_size": n.get("class_size"),
                              "reference": n.get("reference"), "timing": t,
                              "winners_any": sorted({r[op]["winner_id"] for r in results["any"] if op in r}),
                              "winners_exact": sorted({r[op]["winner_id"] for r in results["exact"] if op in r})}  # fmt: skip
        print(f"{op:26} {len(d_any):>22} {len(d_exact):>16} {d_exact == {ref_digest}!s:>18} "
              f"{n.get('class_size', '-')!s:>6} {t.get('exact_over_any', float('nan')):>10.3f} "
              f"{t.get('reference_over_any', float('nan')):>14.3f}")
    for op, v in summary["ops"].items():
        if "error" in v["timing"]:
            print(f"{op}: not compared: {v['timing']['error']}")
    ratios = [v["timing"]["exact_over_any"] for v in summary["ops"].values() if "exact_over_any" in v["timing"]]
    if ratios:
        summary["median_exact_over_any"] = statistics.median(ratios)
        summary["worst_exact_over_any"] = max(ratios)
        print(f"exact/any per call: median {summary['median_exact_over_any']:.3f}, worst {max(ratios):.3f}")
    (a.out / "numerics.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
