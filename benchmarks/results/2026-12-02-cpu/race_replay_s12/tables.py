"""The README's tables from this folder's JSON (race_replay.py --out): per variant and cell, the racing calls and
the convergence, paired against default over the same seeds, and the promotions more than 5% off the best.

    python3 benchmarks/results/2026-12-02-cpu/race_replay_s12/tables.py VARIANT ...
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CELLS = [(land, c, s) for land in ("h200", "synthetic") for c in (60000, 6000) for s in ("1.5", "8")]
CELLS.append(("h200", 60000, "4"))


def load(land: str, variant: str, calls: int, span: str) -> dict[str, Any] | None:
    f = HERE / f"race_replay_{land}_{variant}_c{calls}_s{span}.json.gz"  # gzipped to keep the tree small
    return json.loads(gzip.decompress(f.read_bytes())) if f.exists() else None


def converged(run: dict[str, Any]) -> int:
    return sum(x["ratio"] is not None and x["ratio"] <= 1.02 for x in run["hot"])


def two_se(xs: list[float]) -> float:
    return 2 * statistics.stdev(xs) / math.sqrt(len(xs))


def main() -> None:
    variants = sys.argv[1:] or ["default"]
    print("| landscape | calls | span | variant | racing calls | paired vs default (+- 2 SE) | timed | race excess ms |"
          " converged (pooled) | per seed | paired vs default, of the hot buckets (+- 2 SE) | > 1.02x | > 1.05x (worst)"
          " | not promoted | extra GPU max |")  # fmt: skip
    print("|" + "---|" * 15)
    for land, calls, span in CELLS:
        base = load(land, "default", calls, span)
        if base is None:
            continue
        by_seed = {r["seed"]: r for r in base["runs"]}
        for v in variants:
            j = load(land, v, calls, span)
            if j is None:
                continue
            sm, co, runs = j["summary"], j["summary"]["cost"], j["runs"]
            rows = [x for r in runs for x in r["hot"]]
            off = [x["ratio"] for x in rows if x["ratio"] is not None and x["ratio"] > 1.05]
            dr = [r["cost"]["racing"] / by_seed[r["seed"]]["cost"]["racing"] - 1 for r in runs]
            dc = [converged(r) - converged(by_seed[r["seed"]]) for r in runs]
            print(f"| {land} | {calls} | {span} | {v} | {co['racing']['mean']:.0f} +- {co['racing']['sd']:.0f} | "
                  f"{statistics.mean(dr):+.1%} +- {two_se(dr):.1%} | {co['timed']['mean']:.0f} | "
                  f"{co['excess_us']['race']['mean'] / 1e3:.0f} | {sm['converged']}/{sm['hot']} = {sm['rate']:.1%} | "
                  f"{co['rate']['mean']:.1%} +- {co['rate']['sd']:.1%} | {statistics.mean(dc):+.2f} +- {two_se(dc):.2f} | "
                  f"{sum(x['ratio'] is not None and x['ratio'] > 1.02 for x in rows)} | "
                  f"{len(off)}{f' ({max(off):.2f})' if off else ''} | {sum(x['ratio'] is None for x in rows)} | "
                  f"{sm['extra_max']:.1%} |")  # fmt: skip


if __name__ == "__main__":
    main()
