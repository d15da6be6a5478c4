"""Compare one search shared by the ranks of a farm with the same search in one process (issue 16).

    python3 benchmarks/dist_search_compare.py ONE_PROCESS.json FARMED.json [--out DIR]

Reads two ``tritune tune --json`` results of the same workload and keys (``gpu.sh distsearch`` makes them)
and prints, per key, each run's search (strategy, configs evaluated, why it stopped, ranks), its winner
with the median it won with, and its wall time; then the farmed/one-process wall-time ratio. The two
winners' medians come from separate runs (the farmed one re-timed on rank 0's GPU): a quality check within
run-to-run noise, not an interleaved re-measurement. Writes the table as JSON under ``--out`` when given.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _rows(path: str) -> dict[str, dict[str, Any]]:
    data = json.loads(Path(path).read_text())
    out = {}
    for w in data["workloads"]:
        s = w.get("search") or {}
        win = w.get("winner")
        ms = None
        for c in w["candidates"]:
            if win is not None and c["config"] == win and c.get("measurement"):
                ms = c["measurement"]["median_ms"]
        out[json.dumps(w["key"], sort_keys=True)] = {
            "strategy": s.get("strategy"), "evaluated": s.get("evaluated"), "stopped": s.get("stopped"),
            "ranks": s.get("ranks", 1), "winner_ms": ms, "wall_s": w.get("wall_s"),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("one")
    ap.add_argument("farmed")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    one, farmed = _rows(a.one), _rows(a.farmed)
    table = []
    print("== shared search vs one process: key, evaluated (1 / farm), ranks, winner ms (1 / farm), wall s (1 / farm)")
    for key, r1 in one.items():
        r2 = farmed.get(key, {})
        ratio = (r2.get("winner_ms") or float("nan")) / (r1.get("winner_ms") or float("nan"))
        print(f"{key}: {r1['evaluated']} / {r2.get('evaluated')}, ranks {r2.get('ranks')}, "
              f"{r1['winner_ms']} / {r2.get('winner_ms')} (farm/one {ratio:.3f}), {r1['wall_s']} / {r2.get('wall_s')}")
        table.append({"key": json.loads(key), "one": r1, "farmed": r2, "winner_ratio": ratio})
    w1 = sum(r["wall_s"] or 0 for r in one.values())
    w2 = sum(r.get("wall_s") or 0 for r in farmed.values())
    print(f"wall: one process {w1:.1f} s, farmed {w2:.1f} s, farmed/one {w2 / w1 if w1 else float('nan'):.3f}")
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "compare.json").write_text(json.dumps({"keys": table, "wall_one_s": w1, "wall_farmed_s": w2},
                                                             indent=2))


if __name__ == "__main__":
    main()
