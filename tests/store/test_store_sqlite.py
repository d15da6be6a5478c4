"""SQLiteStore beyond the contract: processes at once, kill -9, corrupt and foreign files, schema versions."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import store_workers

from tritune.config import Config
from tritune.errors import StoreCorruptError, StoreError
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore, check_path, default_store_path
from tritune.store import sqlite as sqlite_mod
from tritune.testing.store_contract import make_test_key

A = Config({"BLOCK": 64})


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.long  # eight processes at once on two cores
def test_eight_processes_tune_and_read_one_store(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"  # does not exist yet: the processes also race to create it
    n = 12
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(8)
    procs = [ctx.Process(target=store_workers.tune_many, args=(str(path), w, n, start)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 8, "a worker failed (see its traceback above)"
    with SQLiteStore(path) as store:
        for w in range(8):
            for i in range(n):
                win = store.lookup_winner(make_test_key(f"k{w}", i))
                assert win is not None and win.config == Config({"BLOCK": w * 1000 + i})
        shared = {r.config["BLOCK"]: r.time_ms for r in store.candidates(store_workers.SHARED)}
        assert shared == {w * 1000 + i: float(w * 1000 + i) for w in range(8) for i in range(n)}
        assert len(store.entries()) == 8 * n + 1
        assert store.check() == []


def test_kill_9_mid_write_loses_nothing_committed(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    for _round in range(2):
        with subprocess.Popen(
            [sys.executable, store_workers.__file__, str(path)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        ) as child:
            assert child.stdout is not None
            done = []
            for line in child.stdout:
                done.append(int(line))
                if len(done) >= 40:
                    break
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        assert child.returncode == -signal.SIGKILL
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.close()
        with SQLiteStore(path) as store:
            assert store.check() == []
            for i in done:
                key = make_test_key("victim", i)
                assert store.lookup_winner(key) is not None, f"committed write {i} was lost"
                assert len(store.candidates(key)) == 20, f"write {i} is only partly there"


def test_random_bytes_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    path.write_bytes(os.urandom(8192))
    before = _sha(path)
    with pytest.raises(StoreCorruptError, match=f"{path}.*not a SQLite database.*left untouched"):
        SQLiteStore(path)
    assert _sha(path) == before
    [problem] = check_path(path)
    assert str(path) in problem and "not a tritune store" in problem
    assert _sha(path) == before


def test_damaged_sqlite_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with SQLiteStore(path) as s:
        s.record(make_test_key(), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    data = bytearray(path.read_bytes())
    data[16:] = os.urandom(len(data) - 16)  # keep the magic header, destroy the rest
    path.write_bytes(bytes(data))
    for side in ("-wal", "-shm"):
        Path(str(path) + side).unlink(missing_ok=True)
    before = _sha(path)
    with pytest.raises(StoreCorruptError, match=str(path)):
        SQLiteStore(path)
    assert _sha(path) == before


def test_other_applications_database_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ada')")
    conn.commit()
    conn.close()
    before = _sha(path)
    with pytest.raises(StoreCorruptError, match=f"{path}.*another application"):
        SQLiteStore(path)
    assert _sha(path) == before
    assert not Path(str(path) + "-wal").exists()
    assert "another application" in check_path(path)[0]


def test_newer_schema_is_refused_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=7")
    conn.close()
    before = _sha(path)
    with pytest.raises(StoreError, match=r"schema 7, newer than this tritune's 1"):
        SQLiteStore(path)
    assert _sha(path) == before


def test_migration_steps_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism, with a test-only v2 step: a v1 store opened by "v2 code" is migrated, data kept."""
    path = tmp_path / "store.sqlite"
    key = make_test_key()
    with SQLiteStore(path) as s:
        s.record(key, [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)

    def v1_to_v2(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE winners ADD COLUMN note TEXT")

    monkeypatch.setattr(sqlite_mod, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(sqlite_mod, "MIGRATIONS", {1: v1_to_v2})
    with SQLiteStore(path) as s:
        win = s.lookup_winner(key)
        assert win is not None and win.config == A
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (2,)
    assert "note" in [r[1] for r in conn.execute("PRAGMA table_info(winners)")]
    conn.close()
    monkeypatch.setattr(sqlite_mod, "SCHEMA_VERSION", 3)
    with pytest.raises(StoreError, match="no migration from store schema 2"):
        SQLiteStore(path)


def test_wal_mode_and_identity(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA application_id").fetchone() == (sqlite_mod.APPLICATION_ID,)
    conn.close()


def test_committed_write_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    key = make_test_key()
    with SQLiteStore(path) as s:
        s.record(key, [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    with SQLiteStore(path) as s:
        win = s.lookup_winner(key)
        assert win is not None and win.config == A and win.time_ms == 1.0


def test_check_finds_a_winner_without_its_candidate(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with SQLiteStore(path) as s:
        s.record(make_test_key(), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM candidates")
    conn.commit()
    conn.close()
    problems = check_path(path)
    assert len(problems) == 1 and "has no candidate record" in problems[0] and str(path) in problems[0]


def test_missing_store_is_not_created_when_asked_not_to(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "store.sqlite"
    with pytest.raises(StoreError, match="no store at"):
        SQLiteStore(path, create=False)
    assert not path.exists() and check_path(path) == []


def test_default_path_env_and_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITUNE_STORE", str(tmp_path / "env.sqlite"))
    assert default_store_path() == tmp_path / "env.sqlite"
    monkeypatch.delenv("TRITUNE_STORE")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # as on the GPU machine: not installed
    assert default_store_path() == tmp_path / ".cache" / "tritune" / "store.sqlite"


def test_a_read_never_waits_for_a_write_in_progress_and_then_sees_it(tmp_path: Path) -> None:
    import threading
    import time

    with SQLiteStore(tmp_path / "s.db") as store:
        key = make_test_key("k", 1)
        store.record(key, [CandidateRecord(A, Status.MEASURED, 1.0)], A)
        inside = threading.Event()

        def slow_write(conn: sqlite3.Connection) -> None:  # BEGIN IMMEDIATE held open (a slow commit)
            inside.set()
            time.sleep(1.0)

        writer = threading.Thread(target=lambda: store._run(slow_write, write=True))
        writer.start()
        assert inside.wait(5)
        t = time.perf_counter()
        win = store.lookup_winner(key)  # the last commit, read beside the open write
        waited = time.perf_counter() - t
        writer.join(10)
        assert win is not None and win.config == A
        assert waited < 0.5, f"the read waited {waited:.3f} s for the write transaction"
        key2 = make_test_key("k", 2)
        store.record(key2, [CandidateRecord(A, Status.MEASURED, 2.0)], A)
        win2 = store.lookup_winner(key2)  # a later commit: the reads' connection sees it
        assert win2 is not None and win2.time_ms == 2.0
    with pytest.raises(StoreError, match="closed"):
        store.lookup_winner(key)


def test_a_store_removed_after_it_was_opened_is_an_error_to_read_and_is_never_recreated(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    for f in tmp_path.iterdir():  # removed behind the open store's back (before its first read)
        f.unlink()
    with pytest.raises(StoreError, match="store"):
        store.entries()
    assert not path.exists()  # the reads' connection never creates a file (create_store_file's 0600 does)
    store.close()
