"""The H200 serving stream replayed on the CPU with every config's recorded H200 timing, at any length: how many hot
buckets the incremental mode converges (pruning, checks and the race as in ``tests/incremental/test_h200_stream.py``,
whose ``serve`` it runs: the real ``Incremental``, a FAKE clock with session 5's timings of 8 configs at 24 keys).

    PYTHONPATH=src python3 benchmarks/prune_replay.py CALLS SEEDS
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "incremental"), str(ROOT / "tests")]

import test_h200_stream as stream  # noqa: E402


def main() -> None:
    stream.CALLS = int(sys.argv[1])
    seeds = int(sys.argv[2])
    for kernel in ("matmul", "rmsnorm"):
        rows = [stream.serve(kernel, seed=s) for s in range(seeds)]
        conv = [round(r["hot_converged"], 3) for r in rows]
        print(f"{kernel} {stream.CALLS} converged {conv} mean {statistics.mean(conv):.3f} checks "
              f"{[r['checks'] for r in rows]} extra {[round(r['extra'], 3) for r in rows]}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
