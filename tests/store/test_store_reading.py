"""Reading commands change no byte and create no file, whatever state a store was left in: a ``-wal`` left by a
``kill -9`` (said, not folded in), a ``-wal`` without its ``-shm`` on a read-only disk, a live writer; damaged rows
are skipped with one line each and reported by ``cache check``; an import is read back before it counts. Real
SQLite files and processes, no mocks."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritune.cli.main import main
from tritune.config import Config
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore
from tritune.testing.store_contract import make_test_key

A, B = Config({"BLOCK": 64}), Config({"BLOCK": 128})
READS = (["ls"], ["show", "gelu"], ["show", "gelu", "--candidates"], ["export", "-"], ["check"])
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def _store(path: Path, n: int = 3) -> Path:
    with SQLiteStore(path) as s:
        for i in range(n):
            s.record(make_test_key("gelu", 2**i), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    return path


def _killed_writer(path: Path) -> None:
    """A process that records one more key (its commit in the ``-wal`` only), then is killed with SIGKILL."""
    code = (
        "import os, sys\n"
        "from tritune.store import SQLiteStore, CandidateRecord\nfrom tritune.config import Config\n"
        "from tritune.outcome import Status\nfrom tritune.testing.store_contract import make_test_key\n"
        f"s = SQLiteStore({str(path)!r})\n"
        "s.record(make_test_key('late'), [CandidateRecord(Config({'BLOCK': 8}), Status.MEASURED, 1.0)],"
        " winner=Config({'BLOCK': 8}))\n"
        "os.kill(os.getpid(), 9)\n"
    )
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC}, check=False, timeout=120)
    assert path.with_name(path.name + "-wal").stat().st_size > 0


def test_reading_commands_after_a_kill_9_change_nothing_and_say_so(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = _store(tmp_path / "store.sqlite")
    _killed_writer(path)
    before = _files(tmp_path)
    for action in READS:
        code = main(["cache", *action, "--store", str(path)])
        cap = capsys.readouterr()
        assert code == 0, (action, cap.err)
        assert "store.sqlite-wal holds results that are not in the store file yet" in cap.err, action
        assert "Traceback" not in cap.err + cap.out
        assert _files(tmp_path) == before, action  # not a byte, not a file
    with SQLiteStore(path) as s:  # a writer folds the left commit in
        assert s.lookup_winner(make_test_key("late")) is not None
    main(["cache", "ls", "--store", str(path)])
    cap = capsys.readouterr()
    assert "holds results" not in cap.err and "late" in cap.out


@pytest.fixture
def ro_copy_without_shm(tmp_path: Path) -> Iterator[Path]:
    path = _store(tmp_path / "src" / "store.sqlite")
    _killed_writer(path)
    d = tmp_path / "image"
    d.mkdir()
    for name in ("store.sqlite", "store.sqlite-wal"):  # copied without its -shm
        (d / name).write_bytes((path.parent / name).read_bytes())
    d.chmod(0o555)
    yield d / "store.sqlite"
    d.chmod(0o755)


def test_a_read_only_store_with_a_wal_but_no_shm_opens_for_reading(ro_copy_without_shm: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    before = _files(ro_copy_without_shm.parent)
    for action in READS:
        assert main(["cache", *action, "--store", str(ro_copy_without_shm)]) == 0, action
    cap = capsys.readouterr()
    assert "gelu" in cap.out and "holds results" in cap.err
    assert _files(ro_copy_without_shm.parent) == before


def test_a_reader_beside_a_live_writer_sees_its_last_commit_and_creates_nothing(tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = _store(tmp_path / "store.sqlite")
    with SQLiteStore(path) as writer:
        writer.record(make_test_key("fresh"), [CandidateRecord(B, Status.MEASURED, 2.0)], winner=B)
        names = sorted(p.name for p in tmp_path.iterdir())
        code = subprocess.run([sys.executable, "-c", "import sys; from tritune.cli.main import main; "
                               f"sys.exit(main(['cache', 'ls', '--store', {str(path)!r}]))"],
                              env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert code.returncode == 0 and "fresh" in code.stdout and "holds results" not in code.stderr, code.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == names


def _damaged(tmp_path: Path) -> Path:
    path = _store(tmp_path / "store.sqlite", n=1)
    with SQLiteStore(path) as s:
        for k in ("relu", "silu", "tanh", "exp"):
            s.record(make_test_key(k), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    conn = sqlite3.connect(path)
    for kernel, sql in [("gelu", "UPDATE winners SET ties='[{'"), ("relu", "UPDATE keys SET key_json='{bad'"),
                        ("silu", "UPDATE candidates SET status='weird'"), ("tanh", "UPDATE winners SET config='[]'"),
                        ("exp", "UPDATE winners SET provenance='{'")]:  # fmt: skip
        table = "keys" if "keys" in sql else ""
        where = f"kernel='{kernel}'" if table else f"digest=(SELECT digest FROM keys WHERE kernel='{kernel}')"
        conn.execute(f"{sql} WHERE {where}")
    conn.commit()
    conn.close()
    return path


def test_damaged_rows_are_skipped_with_one_line_each_and_reported_by_check(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = _damaged(tmp_path)
    before = _files(tmp_path)
    for action in (["ls"], ["show", "gelu"], ["show", "silu", "--candidates"], ["export", "-"]):
        code = main(["cache", *action, "--store", str(path)])
        cap = capsys.readouterr()
        assert code == 0 and "Traceback" not in cap.err + cap.out, (action, cap.err)
        lines = [ln for ln in cap.err.splitlines() if ln]
        assert lines and all(ln.startswith("tritune: warning:") and "damaged" in ln for ln in lines), lines
        assert len(lines) == len(set(lines))
    assert main(["cache", "export", "-", "--store", str(path)]) == 0
    exported = capsys.readouterr()
    # relu's key; gelu's, tanh's and exp's winners; silu's record, and so its winner: one line each
    assert exported.err.count("\n") == 6
    assert main(["cache", "check", "--store", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.count("problem:") >= 5 and "Traceback" not in out
    assert _files(tmp_path) == before


def test_an_import_into_a_store_with_a_damaged_page_is_not_a_success(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "e.json"
    with SQLiteStore(_store(tmp_path / "src.sqlite", n=8)) as s:
        s.export(export)
    dst = tmp_path / "dst.sqlite"
    with SQLiteStore(dst) as s:
        for i in range(300):
            s.record(make_test_key("relu", i), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    conn = sqlite3.connect(dst)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='keys'").fetchone()[0]
    conn.close()
    with open(dst, "r+b") as f:  # the keys table's root page: inserts still work, a listing cannot
        f.seek((root - 1) * 4096 + 200)
        f.write(b"\xff" * 3800)
    assert main(["cache", "import", str(export), "--store", str(dst)]) == 2
    cap = capsys.readouterr()
    assert "imported" not in cap.out and "store is damaged" in cap.err and cap.err.count("\n") == 1


def test_an_export_with_a_lone_surrogate_is_refused_by_import(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "e.json"
    with SQLiteStore(_store(tmp_path / "src.sqlite", n=1)) as s:
        s.export(export)
    export.write_text(export.read_text().replace('"gelu"', '"gel\\ud800u"', 1))
    assert main(["cache", "import", str(export), "--store", str(tmp_path / "dst.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "lone surrogate" in err and "Traceback" not in err and not (tmp_path / "dst.sqlite").exists()
