"""Search in the loop on the GPU (issue 16): a 2,000-config Hopper matmul space, default search vs exhaustive.

    PYTHONPATH=src python benchmarks/search_tune.py --out DIR [--quick] [--exhaustive-keys 1|3] [--only transfer]

The space is ``examples/matmul_tma_wide.py``'s with ``num_ctas=1`` and ``maxnreg`` in {none, 168}: 2,000
legal configs before the screen (tiles, ``GROUP_M``, epilogue subtiling, warp specialization, warps,
stages, a register cap). Every engine runs as its own ``tritune tune`` process with an EMPTY Triton cache
(a fresh ``TRITON_CACHE_DIR``) and its own store:

1. ``exhaustive``: ``--strategy exhaustive`` (tritune's own race over every legal config) at 4096^3 only by
   default: compiling 2,000 configs takes minutes, and the whole run must fit in ~8 minutes on an H200
   with 16 cores (``--exhaustive-keys 3`` times all three keys);
2. ``search``: the default (no flag: the space is above the search threshold), keys 4096^3, 8192x8192x4096
   and 4096x4096x8192 in one process;
3. ``transfer``: a new key, 6144^3, into the store of step 2 (its 3 tuned keys seed the search);
4. ``cold_new``: the same new key with an empty store (the cold search it is compared to).

Steps 3 and 4 both start from a copy of step 2's Triton cache (``--new-key-cache shared``, the default): a
new key arrives on a machine that tuned the other three, and both searches may reuse what it compiled (the
matmul's binaries do not depend on M, N, K beyond their divisibility by 16). ``--new-key-cache empty`` starts
both from an empty cache instead (session 5's first run: 0.478, dominated by first-batch compiles).

Then, in this process, an interleaved re-measurement (rounds in rotating order, tritune's event timer, L2
flushed): at 4096^3 the search winner, the exhaustive run's 3 fastest configs and ``torch.matmul``
(cuBLAS); at 6144^3 the transfer winner and the cold search's winner. It prints and writes to
``DIR/search_tune.json``:

* ``search wall / exhaustive wall`` at 4096^3 (each engine's in-process wall for the key; target <= 0.2);
* ``quality``: search winner time / best of the exhaustive top 3, re-measured (target <= 1.02);
* ``vs cuBLAS``: cuBLAS time / search winner time at 4096^3 (target >= 0.98);
* ``transfer wall / cold search wall`` at 6144^3 (target <= 0.25) and the transfer winner's quality
  against the cold search's winner (<= 1.02).

``--quick`` re-measures in 8 rounds instead of 16. ``--only transfer`` runs steps 2-4 and the 6144^3
re-measurement only (no exhaustive race: about 80 s on the H200). Each tune's JSON result and log are kept
in DIR, and each key's phases (store and setup, every batch's compile and race, the strategy's asks, the
final race) are in ``search_tune.json`` and printed, with every config a transfer or cold search measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import matmul_tma_wide as wide  # noqa: E402

import tritune  # noqa: E402

SEARCH_GRID = {**wide.WIDE_GRID, "num_ctas": [1], "maxnreg": [None, 168]}
SEARCH_SPACE = tritune.Space(SEARCH_GRID, constraints=wide.CONSTRAINTS)
KEYS = [{"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 4096}, {"M": 4096, "N": 4096, "K": 8192}]
NEW_KEY = {"M": 6144, "N": 6144, "K": 6144}

matmul_search = tritune.Workload(
    name="matmul_search",
    kernel=wide.matmul_tma_kernel,
    configs=SEARCH_SPACE,
    args=wide.matmul_tma_args,
    grid=wide.persistent_grid,
    outputs=[2],
    oracle=wide.matmul_tma_oracle,
    keys=KEYS,
    atol=2e-3,
    rtol=2e-3,
    flops=lambda key: 2 * key["M"] * key["N"] * key["K"],
)


def key_arg(key: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in key.items())


def tune_process(name: str, out: Path, keys: Sequence[Mapping[str, int]], store: Path, *extra: str,
                 cache_from: str | None = None) -> dict[str, Any]:
    """One ``tritune tune`` process with an empty Triton cache, or a copy of ``cache_from`` (another run's
    cache); its JSON result, process wall, per-key walls and the cache directory it used."""
    cache = tempfile.mkdtemp(prefix=f"tcache-{name}-")
    if cache_from is not None:
        shutil.copytree(cache_from, cache, dirs_exist_ok=True)
    env = {**os.environ, "TRITON_CACHE_DIR": cache}
    env.pop("TRITUNE_SEARCH", None)
    cmd = [sys.executable, "-m", "tritune", "tune", __file__, "--workload", "matmul_search", "--quiet",
           "--store", str(store), "--json", str(out / f"{name}.json"), *extra]  # fmt: skip
    for k in keys:
        cmd += ["--key", key_arg(k)]
    print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    with open(out / f"{name}.log", "w") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.perf_counter() - t0
    doc = json.loads((out / f"{name}.json").read_text()) if (out / f"{name}.json").exists() else {"workloads": []}
    keyed = []
    for w in doc["workloads"]:
        best = tritune.Config.from_json(w["winner"]) if w.get("winner") else None
        measured = sorted(
            ((c["measurement"]["median_ms"], tritune.Config.from_json(c["config"]))
             for c in w["candidates"] if c["status"] == "measured" and c.get("measurement")),
            key=lambda t: t[0],
        )  # fmt: skip
        phases = phase_summary(w)
        keyed.append({"key": w["key"], "wall_s": w.get("wall_s"), "winner": best, "search": w.get("search"),
                      "top": [c for _, c in measured[:3]], "winner_ms": measured[0][0] if measured else None,
                      "measured": len(measured), "phases": phases,
                      "times": [[c.id, round(t, 5)] for t, c in measured]})  # fmt: skip
        s = w.get("search") or {}
        print(f"   {w['key']}: {w.get('wall_s')} s, winner {best.id if best else None}, "
              f"{len(measured)} measured" + (f", searched {s.get('evaluated')} ({s.get('stopped')})" if s else ""),
              flush=True)  # fmt: skip
        if phases:
            print(f"      phases: {json.dumps(phases, default=str)}", flush=True)
    print(f"   rc={rc} process wall {wall:.1f} s", flush=True)
    return {"rc": rc, "process_wall_s": round(wall, 2), "keys": keyed, "cache": cache}


def phase_summary(w: Mapping[str, Any]) -> dict[str, Any]:
    """Where one key's wall went: each batch's seconds and compile phase, the strategy's asks (those proposed
    while a batch compiles are inside its seconds too), the final race, the race's device time, and the rest
    outside the batches (the key's setup: store reads, screen, arguments, oracle, the strategy's first ask)."""
    ph = w.get("phases") or {}
    batches = ph.get("batches") or []
    race = w.get("race") or {}
    final = ph.get("final_race") or {}
    inside = sum(float(b.get("s") or 0) for b in batches) + float(final.get("s") or 0)  # asks: some in both
    wall = w.get("wall_s")
    return {"batches": [{k: b.get(k) for k in ("configs", "s", "compiled_s")} for b in batches],
            "first_race": ph.get("first_race"), "ask_s": ph.get("ask_s"), "final_race": final or None,
            "race_device_s": race.get("device_s"), "race_stop": race.get("stop"),
            "outside_batches_s": round(float(wall) - inside, 3) if wall is not None else None}  # fmt: skip


def interleave(fns: Mapping[str, Callable[[], None]], rounds: int) -> dict[str, float]:
    """Median ms of each contestant over ``rounds`` rounds in rotating order (tritune's event timer)."""
    from tritune.bench import EventTimer

    timer = EventTimer()
    timer.warm_device(0.2)
    names = list(fns)
    rows: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            rows[n].append(timer.measure(fns[n], budget_s=0.05).median_ms)
    return {n: statistics.median(v) for n, v in rows.items()}


def launch(key: Mapping[str, int], cfg: tritune.Config, args: Any) -> Callable[[], None]:
    from matmul_vs_cublas import launcher

    return launcher(matmul_search, cfg, key, args)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory for the JSON results and logs")
    ap.add_argument("--quick", action="store_true", help="8 interleaved rounds instead of 16")
    ap.add_argument("--exhaustive-keys", type=int, choices=(1, 3), default=1)
    ap.add_argument("--only", choices=("transfer",), help="transfer: the 3-key search, the new key's transfer and "
                    "cold search and their interleaved re-measurement only (no exhaustive race)")  # fmt: skip
    ap.add_argument("--new-key-cache", choices=("shared", "empty"), default="shared",
                    help="the Triton cache the new key's transfer and cold search both start from: a copy of the "
                    "3-key search's (shared, as on a machine that tuned them) or an empty one")  # fmt: skip
    a = ap.parse_args(argv)
    import torch

    from tritune.tune.provenance import provenance

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stores = Path(tempfile.mkdtemp(prefix="search-stores-"))
    print(f"space: {len(SEARCH_SPACE.configs())} legal configs before the screen", flush=True)
    t0 = time.perf_counter()
    runs: dict[str, Any] = {}
    if a.only != "transfer":
        runs["exhaustive"] = tune_process("exhaustive", out, KEYS[: a.exhaustive_keys], stores / "ex.db",
                                          "--strategy", "exhaustive")  # fmt: skip
    runs["search"] = tune_process("search", out, KEYS, stores / "search.db")
    # The new key is tuned where the 3 keys were: both the transfer and the cold search start from a copy of
    # the search run's Triton cache (--new-key-cache shared), or both from an empty one (empty).
    warm = runs["search"]["cache"] if a.new_key_cache == "shared" else None
    runs["transfer"] = tune_process("transfer", out, [NEW_KEY], stores / "search.db", cache_from=warm)
    runs["cold_new"] = tune_process("cold_new", out, [NEW_KEY], stores / "cold.db", cache_from=warm)
    rounds = 8 if a.quick else 16
    ex, se, tr, cn = (runs[n]["keys"] if n in runs else [] for n in ("exhaustive", "search", "transfer", "cold_new"))
    result: dict[str, Any] = {"space": len(SEARCH_SPACE.configs()), "rounds": rounds}
    if ex and se and ex[0]["winner"] and se[0]["winner"]:
        key = KEYS[0]
        args = matmul_search.make_args(key, "cuda")
        fns = {f"exhaustive#{i + 1}": launch(key, c, args) for i, c in enumerate(ex[0]["top"])}
        fns["search"] = launch(key, se[0]["winner"], args)
        fns["cublas"] = lambda: torch.matmul(args[0], args[1], out=args[2])
        ms = interleave(fns, rounds)
        best_ex = min(v for n, v in ms.items() if n.startswith("exhaustive#"))
        result["key_4096"] = {
            "ms": ms,
            "wall_ratio": se[0]["wall_s"] / ex[0]["wall_s"],
            "quality": ms["search"] / best_ex,
            "vs_cublas": ms["cublas"] / ms["search"],
            "search_winner": se[0]["winner"].id,
            "exhaustive_winner": ex[0]["winner"].id,
            "search": se[0]["search"],
        }
        if len(ex) == 3:  # --exhaustive-keys 3: the whole runs, 3 keys each (the search's keys 2-3 transfer)
            result["three_keys_wall_ratio"] = sum(k["wall_s"] for k in se) / sum(k["wall_s"] for k in ex)
    if tr and cn and tr[0]["winner"] and cn[0]["winner"]:
        args = matmul_search.make_args(NEW_KEY, "cuda")
        fns = {"transfer": launch(NEW_KEY, tr[0]["winner"], args), "cold": launch(NEW_KEY, cn[0]["winner"], args)}
        ms = interleave(fns, rounds)
        result["new_key"] = {"ms": ms, "wall_ratio": tr[0]["wall_s"] / cn[0]["wall_s"],
                             "quality": ms["transfer"] / min(ms.values()), "transfer": tr[0]["search"],
                             "cold": cn[0]["search"], "transfer_phases": tr[0]["phases"],
                             "cold_phases": cn[0]["phases"], "transfer_times": tr[0]["times"],
                             "cold_top_times": cn[0]["times"][:10]}  # fmt: skip
    total = time.perf_counter() - t0
    k4, nk = result.get("key_4096"), result.get("new_key")
    print("\n== search vs exhaustive (targets: wall <= 0.2, quality <= 1.02, cuBLAS >= 0.98; new key <= 0.25)")
    if k4:
        print(f"4096^3: search wall / exhaustive wall = {k4['wall_ratio']:.3f}; quality {k4['quality']:.3f}; "
              f"cuBLAS / search winner = {k4['vs_cublas']:.3f}")  # fmt: skip
    if "three_keys_wall_ratio" in result:
        print(f"3 keys: search wall / exhaustive wall = {result['three_keys_wall_ratio']:.3f}")
    if nk:
        print(f"6144^3 new key after 3 tuned: transfer wall / cold search wall = {nk['wall_ratio']:.3f}; "
              f"quality vs the cold search's winner {nk['quality']:.3f}")  # fmt: skip
        print(f"   transfer {tr[0]['wall_s']} s: {json.dumps(nk['transfer_phases'], default=str)}")
        print(f"   cold {cn[0]['wall_s']} s: outside batches {nk['cold_phases']['outside_batches_s']} s, "
              f"{len(nk['cold_phases']['batches'])} batches, asks {nk['cold_phases']['ask_s']} s")  # fmt: skip
    print(f"total {total:.0f} s")
    doc = {"provenance": provenance(command=" ".join(sys.argv)), "total_s": round(total, 1), "result": result,
           "runs": {n: {**r, "keys": [{**k, "winner": k["winner"].id if k["winner"] else None,
                                       "top": [c.id for c in k["top"]]} for k in r["keys"]]}
                    for n, r in runs.items()}}  # fmt: skip
    (out / "search_tune.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0 if nk and (k4 or a.only == "transfer") else 1


if __name__ == "__main__":
    sys.exit(main())
