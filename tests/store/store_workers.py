"""Code run in child processes by the SQLite store tests (imported by multiprocessing's spawn)."""

from __future__ import annotations

import sys
from typing import Any

from tritune.config import Config
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore
from tritune.testing.store_contract import make_test_key

SHARED = make_test_key("shared", 1)


def tune_many(path: str, worker: int, n: int, start: Any) -> None:
    """Record ``n`` keys of this worker's own kernel and ``n`` candidates at one key all workers share.

    ``start`` is a barrier: every worker opens (and maybe creates) the store at the same moment.
    """
    start.wait(60)
    store = SQLiteStore(path)
    for i in range(n):
        cfg = Config({"BLOCK": worker * 1000 + i})
        key = make_test_key(f"k{worker}", i)
        store.record(key, [CandidateRecord(cfg, Status.MEASURED, 1.0 + i)], winner=cfg)
        store.record(SHARED, [CandidateRecord(cfg, Status.MEASURED, float(worker * 1000 + i))])
        winner = store.lookup_winner(key)
        assert winner is not None and winner.config == cfg, winner
        store.candidates(SHARED)
    store.close()


def write_until_killed(path: str) -> None:
    """Record keys 0, 1, 2, ... forever, printing each index once its write has returned."""
    store = SQLiteStore(path)
    i = 0
    while True:
        key = make_test_key("victim", i)
        cands = [CandidateRecord(Config({"BLOCK": 2**b}), Status.MEASURED, 0.1 * b) for b in range(20)]
        store.record(key, cands, winner=Config({"BLOCK": 1}))
        print(i, flush=True)
        i += 1


if __name__ == "__main__":
    write_until_killed(sys.argv[1])
