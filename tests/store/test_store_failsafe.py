"""``open_store(tolerant=True)``: what a kernel call uses. A damaged row, a write lock held by another process, a
store that cannot be opened: one warning each, never an exception, and the result stays in memory. Real
SQLite files and processes, no mocks."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from tritune.config import Config
from tritune.outcome import Status
from tritune.store import CandidateRecord, FailSafeStore, SQLiteStore, StoreFailureWarning, open_store
from tritune.store.failsafe import LOCK_WAIT_S
from tritune.testing.store_contract import make_test_key

A, B = Config({"BLOCK": 64}), Config({"BLOCK": 128})
KEY = make_test_key("gelu")


def _store(path: Path) -> Path:
    with SQLiteStore(path) as s:
        s.record(KEY, [CandidateRecord(A, Status.MEASURED, 1.0), CandidateRecord(B, Status.MEASURED, 2.0)], winner=A)
        s.record(make_test_key("relu"), [CandidateRecord(B, Status.MEASURED, 2.0)], winner=B)
    return path


def _damage(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


@pytest.mark.parametrize("column, value", [("ties", "[{"), ("provenance", "{bad"), ("config", '{"kwargs": 3}')])
def test_a_damaged_winner_row_is_a_miss_with_one_warning_and_the_new_result_replaces_it(
    tmp_path: Path, column: str, value: str
) -> None:
    path = _store(tmp_path / "s.sqlite")
    _damage(path, f"UPDATE winners SET {column}='{value}' WHERE digest='{KEY.digest}'")
    with open_store(path, tolerant=True) as st:
        assert isinstance(st, FailSafeStore)
        with pytest.warns(StoreFailureWarning, match=r"s\.sqlite failed .*damaged") as caught:
            assert st.lookup_winner(KEY) is None
            assert st.lookup_winner(KEY) is None  # one warning only
            assert st.lookup_winner(make_test_key("relu")).config == B  # type: ignore[union-attr]  # others serve
        assert len(caught) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            st.record(KEY, [CandidateRecord(B, Status.MEASURED, 0.5)], winner=B)  # the tuned result, stored
            assert st.lookup_winner(KEY).config == B  # type: ignore[union-attr]
    with SQLiteStore(path) as s:
        assert s.lookup_winner(KEY).config == B  # type: ignore[union-attr]  # the damaged row was replaced


def test_a_damaged_candidate_row_is_skipped_by_reads(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.sqlite")
    _damage(path, f"UPDATE candidates SET measurement='[' WHERE digest='{KEY.digest}' AND config='{B.dumps()}'")
    with open_store(path, tolerant=True) as st, pytest.warns(StoreFailureWarning):
        assert st.candidates(KEY) == [] and st.missing(KEY, [A, B]) == [A, B]


@pytest.mark.long  # waits out a real lock timeout (about four seconds)
def test_a_held_write_lock_costs_a_bounded_wait_and_keeps_the_result(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.sqlite")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\n"
         f"c = sqlite3.connect({str(path)!r}, isolation_level=None); c.execute('BEGIN IMMEDIATE')\n"
         "print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with open_store(path, tolerant=True) as st:
            assert st.lookup_winner(KEY).config == A  # type: ignore[union-attr]  # reads never wait (WAL)
            t = time.monotonic()
            with pytest.warns(StoreFailureWarning, match=r"locked.*kept in memory") as caught:
                st.record(KEY, [CandidateRecord(B, Status.MEASURED, 0.5)], winner=B)
                st.record(make_test_key("silu"), [CandidateRecord(A, Status.MEASURED, 1.5)], winner=A)
            waited = time.monotonic() - t
            assert len(caught) == 1 and waited < 2 * (2 * LOCK_WAIT_S + 1), waited
            assert st.lookup_winner(KEY).config == B  # type: ignore[union-attr]  # served from memory
            assert st.lookup_winner(make_test_key("silu")).config == A  # type: ignore[union-attr]
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


@pytest.mark.parametrize("make", ["directory", "not_sqlite", "newer"])
def test_a_store_that_cannot_be_opened_is_one_warning_and_memory(tmp_path: Path, make: str) -> None:
    path = tmp_path / "s.sqlite"
    if make == "directory":
        path.mkdir()
    elif make == "not_sqlite":
        path.write_bytes(b"not a database at all" * 10)
    else:
        _store(path)
        _damage(path, "PRAGMA user_version=99")
    before = path.read_bytes() if path.is_file() else None
    with pytest.warns(StoreFailureWarning, match="in memory"):
        st = open_store(path, tolerant=True)
    with st, warnings.catch_warnings():
        warnings.simplefilter("error")
        assert st.lookup_winner(KEY) is None
        st.record(KEY, [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
        assert st.lookup_winner(KEY).config == A  # type: ignore[union-attr]
    if before is not None:
        assert path.read_bytes() == before
