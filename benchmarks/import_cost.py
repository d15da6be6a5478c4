"""What the switch costs a library's import: ``import LIB`` under Triton against ``tritune.patch_triton()`` first.

    PYTHONPATH=src python benchmarks/import_cost.py --out DIR [--libs fla,liger_kernel,flag_gems] [--rounds 7]

Each sample is a fresh Python process that imports the library and every module under its kernels' packages
(``fla.ops``, ``liger_kernel.ops``, ``flag_gems.ops``: where their ``triton.autotune`` sites are, 200 and more in
fla), timed inside the process from before its first import to after the last. Under the switch the sample
includes ``import tritune`` and ``tritune.patch_triton()``, so the ratio is the whole price a library's user
pays. Rounds alternate the engines and which of them goes first; the verdict is the median over rounds of the
per-round ratio tritune / Triton (each round's two processes run back to back, on the same warm file cache). The
processes also count the autotuner objects the import made (``triton.runtime.autotuner.Autotuner`` instances,
Triton's or tritune's stand-in).

Runs on any machine: a library that does not import here (FlagGems needs a GPU device) is reported as not run, with
its one-line reason. Writes DIR/import_cost.json with every sample and the provenance.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: Per library: the package to import, and the packages whose modules hold its kernels (all imported).
LIBS = {
    "fla": ("fla", ("fla.ops",)),
    "liger_kernel": ("liger_kernel", ("liger_kernel.ops",)),
    "flag_gems": ("flag_gems", ("flag_gems.ops", "flag_gems.fused")),
}

#: The child: imports, times and counts; prints one JSON line.
CHILD = r"""
import time
t0 = time.perf_counter()
import json, os, sys, importlib, pkgutil
switch = os.environ["IMPORT_COST_ENGINE"] == "tritune"
if switch:
    import tritune
    tritune.patch_triton()
import triton.runtime.autotuner as _at
made = [0]
_init = _at.Autotuner.__init__
def _counting(self, *a, **k):
    made[0] += 1
    return _init(self, *a, **k)
_at.Autotuner.__init__ = _counting
top, packages = sys.argv[1], sys.argv[2:]
importlib.import_module(top)
modules, failed = 0, []
for name in packages:
    try:
        pkg = importlib.import_module(name)
    except Exception as e:
        failed.append(f"{name}: {type(e).__name__}: {e}"[:200])
        continue
    for m in pkgutil.walk_packages(pkg.__path__, name + "."):
        try:
            importlib.import_module(m.name)
            modules += 1
        except Exception as e:
            failed.append(f"{m.name}: {type(e).__name__}: {e}"[:200])
seconds = time.perf_counter() - t0
print("IMPORT_COST " + json.dumps({"s": seconds, "modules": modules, "autotuners": made[0], "failed": failed[:5],
                                    "n_failed": len(failed)}))
"""


def sample(engine: str, lib: str, src: Path) -> dict[str, Any]:
    """One fresh process's import of ``lib`` under ``engine`` ("triton" or "tritune")."""
    top, packages = LIBS[lib]
    env = dict(os.environ, IMPORT_COST_ENGINE=engine, PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH", "")) if p)
    env.pop("TRITUNE_PATCH_TRITON", None)  # the switch is this benchmark's variable, not the environment's
    p = subprocess.run([sys.executable, "-c", CHILD, top, *packages], capture_output=True, text=True, env=env,
                       timeout=600)  # fmt: skip
    for line in p.stdout.splitlines():
        if line.startswith("IMPORT_COST "):
            return dict(json.loads(line[len("IMPORT_COST "):]))
    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"{lib} did not import under {engine}: {tail[:300]}"}


def run_lib(lib: str, rounds: int, src: Path) -> dict[str, Any]:
    """``rounds`` rounds of a sample per engine, the first mover alternating; the first round is a warm-up of the
    file cache and is dropped."""
    samples: dict[str, list[dict[str, Any]]] = {"triton": [], "tritune": []}
    for r in range(rounds + 1):
        order = ("triton", "tritune") if r % 2 == 0 else ("tritune", "triton")
        got = {e: sample(e, lib, src) for e in order}
        bad = [g["error"] for g in got.values() if "error" in g]
        if bad:
            return {"error": bad[0], "samples": samples}
        if r > 0:
            for e in order:
                samples[e].append(got[e])
    ratios = [b["s"] / a["s"] for a, b in zip(samples["triton"], samples["tritune"], strict=True)]
    return {
        "samples": samples,
        "ratios": ratios,
        "ratio_median": statistics.median(ratios),
        "triton_s_median": statistics.median(s["s"] for s in samples["triton"]),
        "tritune_s_median": statistics.median(s["s"] for s in samples["tritune"]),
        "modules": samples["tritune"][0]["modules"],
        "autotuners": {e: samples[e][0]["autotuners"] for e in samples},
        "failed_modules": samples["tritune"][0]["n_failed"],
    }


def provenance(argv: list[str]) -> dict[str, Any]:
    """:func:`tritune.bench.provenance.provenance` (date, torch, triton, tritune, GPU and driver) with this run's
    command, host and the measured libraries' installed versions (read from their metadata, not imported)."""
    from tritune.bench.provenance import installed_version
    from tritune.bench.provenance import provenance as base

    return base(command="python benchmarks/import_cost.py " + " ".join(argv), machine=platform.node(),
                cores=os.cpu_count(),
                libraries={d: installed_version(d) for d in ("fla-core", "liger-kernel", "flag-gems")})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--libs", default="fla,liger_kernel,flag_gems", help="comma-separated: " + ", ".join(LIBS))
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds per library (one warm-up round more)")
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the tritune source tree to import")
    args = ap.parse_args(argv)
    libs = [x.strip() for x in args.libs.split(",") if x.strip()]
    unknown = [x for x in libs if x not in LIBS]
    if unknown:
        ap.error(f"unknown libraries {unknown}; known: {', '.join(LIBS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    print(f"import under tritune's switch / under Triton, median of {args.rounds} paired rounds of fresh processes")
    for lib in libs:
        res = run_lib(lib, args.rounds, args.src.resolve())
        results[lib] = res
        if "error" in res:
            print(f"  {lib:14s} not run: {res['error']}")
            continue
        print(f"  {lib:14s} {res['tritune_s_median']:.2f} s / {res['triton_s_median']:.2f} s = "
              f"{res['ratio_median']:.3f} (rounds {min(res['ratios']):.3f}-{max(res['ratios']):.3f}; "
              f"{res['modules']} modules, {res['autotuners']['tritune']} autotuners)")  # fmt: skip
    ran = [r["ratio_median"] for r in results.values() if "ratio_median" in r]
    if ran:
        print(f"worst library: {max(ran):.3f}")
    (args.out / "import_cost.json").write_text(
        json.dumps({"provenance": provenance(argv), "libs": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
