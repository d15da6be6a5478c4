"""Wall time of screening the 216-config matmul space for sm90: --jobs 1 against --jobs N (issue 9).

    PYTHONPATH=src python benchmarks/screen_speed.py --out benchmarks/results/screen_speed.json [--subset K]

Each run gets a fresh, empty Triton cache so nothing is reused between them. ``--subset K`` screens
every K-th config only (the full space takes many minutes on a 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=None, help="parallel run's workers (default: one per core)")
    p.add_argument("--subset", type=int, default=1, help="screen every K-th config")
    p.add_argument("--compile-timeout", type=float, default=60.0)
    p.add_argument("--skip-serial", action="store_true", help="time only the parallel run")
    a = p.parse_args()
    import triton

    from tritune.screen import screen, summary_counts
    from tritune.screen.run import default_jobs
    from tritune.workload import load_workloads

    path = ROOT / "examples/matmul.py"
    (w,) = load_workloads(path, "matmul")
    configs = w.candidates()[:: a.subset]
    jobs = a.jobs or default_jobs()
    runs = {}
    for label, n in ([] if a.skip_serial else [("jobs_1", 1)]) + [(f"jobs_{jobs}", jobs)]:
        with tempfile.TemporaryDirectory() as cache:
            os.environ["TRITON_CACHE_DIR"] = cache  # nothing reused between runs
            t0 = time.perf_counter()
            res = screen(
                path, "sm90", name="matmul", jobs=n, compile_timeout=a.compile_timeout, configs=configs
            )
            wall = time.perf_counter() - t0
        runs[label] = {
            "jobs": n,
            "wall_s": round(wall, 2),
            "configs": len(configs),
            "counts": summary_counts(res),
            "timing": res.timing,
        }
        print(
            f"{label}: {len(configs)} configs in {wall:.1f} s wall; {summary_counts(res)['status']}",
            flush=True,
        )
    out = {
        "provenance": {
            "triton": triton.__version__,
            "cpus": os.cpu_count(),
            "subset": a.subset,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": " ".join(sys.argv),
        },
        "runs": runs,
        "configs_in_space": len(w.candidates()),
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
