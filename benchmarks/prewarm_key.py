"""How much of Triton's key hash (``triton_key()``) the background thread hides behind ``tritune tune``'s setup.

    PYTHONPATH=src python3 benchmarks/prewarm_key.py [--repeat 3] [--out DIR]

No GPU and nothing is timed on one: each run is a FRESH interpreter that does what ``tritune tune
benchmarks/search_tune.py --workload matmul_search --key M=6144,N=6144,K=6144`` does before its first compile
or cache lookup (import the CLI, then, in this order, :func:`tritune.workers.prewarm.prewarm` when on, load the
workload file, the static screen of the key's ~6,912 candidates), then asks for the key as the first cache
lookup does (``Specialization.cache_hash``: :func:`~tritune.workers.prewarm.wait`, then ``triton_key()``).
Printed per mode (``off``: no thread, as before; ``on``), the fastest of ``--repeat``: ``setup_s`` (load and
screen; and its main thread's CPU time, ``setup_cpu_s``: unchanged when the thread only competes for a core),
``key_s`` (what the key still costs on the critical path) and ``total_s``. On a shared 2-core machine
the thread competes with the setup for a core, so ``on`` may slow the setup a little; the H200 host has 16.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
t0 = time.perf_counter()
c0 = time.thread_time()
import tritune.cli.tune  # noqa: F401  (what the CLI has imported when it prewarms)
from tritune.workers import prewarm
t_import, c_import = time.perf_counter(), time.thread_time()
if {on}:
    prewarm.prewarm()
from tritune.workload import load_workloads
from tritune.tune.session import screen_static
sys.path.insert(0, {bench!r})
import search_tune as st
(wl,) = load_workloads({path!r}, "matmul_search")
screened = screen_static(wl, wl.caller_kwargs(st.NEW_KEY))
t_setup, c_setup = time.perf_counter(), time.thread_time()
prewarm.wait()
from triton.runtime.cache import triton_key
triton_key()
t_key = time.perf_counter()
print(json.dumps({{"import_s": t_import - t0, "setup_s": t_setup - t_import, "key_s": t_key - t_setup,
                  "total_s": t_key - t_import, "legal": len(screened.legal), "setup_cpu_s": c_setup - c_import}}))
"""


def one(on: bool) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT / "src")
    code = textwrap.dedent(CHILD.format(on=on, bench=str(ROOT / "benchmarks"), path=str(ROOT / "benchmarks" /
                                                                                          "search_tune.py")))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    for _ in range(a.repeat):  # interleaved: the machine's load drifts
        for mode in runs:
            runs[mode].append(one(mode == "on"))
    best = {mode: min(rs, key=lambda r: r["total_s"]) for mode, rs in runs.items()}
    for mode, r in best.items():
        print(f"{mode:3}: setup {r['setup_s']:.3f} s (main thread's CPU {r['setup_cpu_s']:.3f} s), key after setup {r['key_s']:.3f} s, total {r['total_s']:.3f} s "
              f"(fastest of {a.repeat}; {r['legal']} legal configs screened)")  # fmt: skip
    off, on = best["off"], best["on"]
    print(f"hidden: {off['key_s'] - on['key_s']:.3f} s of the key's {off['key_s']:.3f} s; "
          f"total {off['total_s'] - on['total_s']:+.3f} s saved")  # fmt: skip
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "prewarm_key.json").write_text(json.dumps({"runs": runs, "best": best}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
