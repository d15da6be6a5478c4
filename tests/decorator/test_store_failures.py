"""A kernel call never fails because its store did: a damaged row or a store another process holds locked is one
StoreFailureWarning, the call runs and returns the kernel's result, and the tuned result stays in memory.

TIMINGS ARE SYNTHETIC (a replay timer: no GPU here); the kernel runs in Triton's interpreter. The store is real
SQLite, damaged or locked with sqlite3 directly.
"""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import pytest
import torch
import triton

import tritune
from kernels import scale_kernel
from tritune.bench import ReplayTimer
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.store import StoreFailureWarning

CONFIGS = [triton.Config({"BLOCK": b}) for b in (128, 256, 512)]
TIMES = {128: 1.0, 256: 0.5, 512: 0.8}  # SYNTHETIC


def _kernel(path: Path):  # type: ignore[no-untyped-def]
    pts = [LandscapePoint(tritune.Config({"BLOCK": b}), Status.MEASURED, t) for b, t in TIMES.items()]
    timer = ReplayTimer(Landscape.from_points("scale_kernel", "synthetic", {}, pts), seed=0)
    return tritune.autotune(CONFIGS, ["n"], store=str(path), timer=timer)(scale_kernel)


def _call(k, n: int = 1000) -> None:  # type: ignore[no-untyped-def]
    x = torch.randn(n)
    out = torch.empty(n)
    k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    assert torch.equal(out, x * 2)


def test_a_damaged_winner_row_is_a_warning_and_the_call_tunes(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    _call(_kernel(db))  # tuned and stored
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE winners SET ties='[{'")
    k = _kernel(db)  # a new process's kernel: it reads the damaged row
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        _call(k)
    said = [str(w.message) for w in rec if issubclass(w.category, StoreFailureWarning)]
    assert len(said) == 1 and str(db) in said[0]
    assert k.best_config.kwargs["BLOCK"] == 256  # tuned again (replayed): the store's failure cost only the lookup


@pytest.mark.long  # waits out SQLite's busy timeout on a held write lock, twice
def test_a_store_locked_by_another_process_keeps_the_result_in_memory(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    _call(_kernel(db), n=500)  # the store exists, with another key
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write lock, held through the call
    try:
        k = _kernel(db)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            _call(k)
            _call(k)  # the key's choice is kept in this process
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    said = [str(w.message) for w in rec if issubclass(w.category, StoreFailureWarning)]
    assert len(said) == 1 and "memory" in said[0]
    assert k.best_config.kwargs["BLOCK"] == 256
