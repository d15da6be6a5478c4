"""Read-only deployments, and reading commands that never write.

Read-only-ness is made with real mode bits (``chmod a-w``). Root ignores them for access, so tritune
judges a store read-only by the owner's write bit (and a read-only filesystem), which these tests
exercise as root and as any other user alike.
"""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritune.cli.main import main
from tritune.config import Config
from tritune.outcome import Status
from tritune.store import CandidateRecord, OverlayStore, ReadOnlyStoreWarning, SQLiteStore, open_store
from tritune.testing.store_contract import make_test_key

A, B = Config({"BLOCK": 1024}, num_warps=8), Config({"BLOCK": 512})
READS = (["ls"], ["show", "gelu"], ["check"], ["export", "-"])


def _good_store(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with SQLiteStore(path) as s:
        s.record(make_test_key("gelu"), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    return path


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


@pytest.fixture
def ro_dir(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "image"
    _good_store(d / "store.sqlite")
    d.chmod(0o555)
    yield d
    d.chmod(0o755)


def test_reading_commands_work_in_a_read_only_directory(
    ro_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _files(ro_dir)
    path = ro_dir / "store.sqlite"
    for action in READS:
        assert main(["cache", *action, "--store", str(path)]) == 0, action
    out = capsys.readouterr().out
    assert "gelu" in out and f"ok: {path} (1 entries)" in out
    assert _files(ro_dir) == before  # nothing written, no sidecar created


def test_reading_commands_work_on_a_read_only_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _good_store(tmp_path / "store.sqlite")
    path.chmod(0o444)
    before = _files(tmp_path)
    for action in READS:
        assert main(["cache", *action, "--store", str(path)]) == 0, action
    assert "gelu" in capsys.readouterr().out
    assert _files(tmp_path) == before


def test_read_only_store_serves_lookups_and_keeps_new_results_in_memory_with_one_warning(
    ro_dir: Path,
) -> None:
    path = ro_dir / "store.sqlite"
    before = _files(ro_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with open_store(path) as st:
            assert isinstance(st, OverlayStore)
            assert st.lookup_winner(make_test_key("gelu")).config == A  # type: ignore[union-attr]
            # a miss: tune, record (the winner may be a config measured earlier, stored in the base)
            k2 = make_test_key("gelu", 8192)
            assert st.missing(k2, [A, B]) == [A, B]
            st.record(k2, [CandidateRecord(A, Status.MEASURED, 2.0), CandidateRecord(B, Status.MEASURED, 1.5)],
                      winner=B)  # fmt: skip
            st.record(make_test_key("gelu"), [CandidateRecord(B, Status.MEASURED, 3.0)], winner=A)
            assert st.lookup_winner(k2).config == B  # type: ignore[union-attr]
            assert st.missing(k2, [A, B]) == [] and st.missing(make_test_key("gelu"), [A, B]) == []
            assert [e.n_candidates for e in st.entries("gelu")] == [2, 2]
    relevant = [w for w in caught if issubclass(w.category, ReadOnlyStoreWarning)]
    assert len(relevant) == 1 and str(path) in str(relevant[0].message)
    assert _files(ro_dir) == before


def test_new_store_in_a_read_only_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        path = d / "store.sqlite"
        export = tmp_path / "e.json"
        with SQLiteStore(tmp_path / "src.sqlite") as s:
            s.record(make_test_key("gelu"), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
            s.export(export)
        assert main(["cache", "import", str(export), "--store", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err and "without write permission" in err
        assert "writable path" in err
        with pytest.warns(ReadOnlyStoreWarning), open_store(path) as st:  # the decorator's path
            st.record(make_test_key("gelu"), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
            assert st.lookup_winner(make_test_key("gelu")) is not None
        assert list(d.iterdir()) == []
    finally:
        d.chmod(0o755)


def _sqlite_file(path: Path, *stmts: str) -> Path:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=DELETE")
    for s in stmts:
        conn.execute(s)
    conn.close()
    return path


def _strange_files(tmp_path: Path) -> dict[str, Path]:
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    newer = _good_store(tmp_path / "newer.sqlite")
    _sqlite_file(newer, "PRAGMA user_version=99")
    return {
        "empty": empty,
        "foreign_tableless": _sqlite_file(tmp_path / "app.sqlite", "PRAGMA application_id=1234"),
        "foreign_tables": _sqlite_file(tmp_path / "app2.sqlite", "CREATE TABLE notes(x)"),
        "half_created": _sqlite_file(tmp_path / "half.sqlite", "CREATE TABLE t(x)", "DROP TABLE t"),
        "newer_delete_mode": newer,
    }


def test_reading_commands_never_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, path in _strange_files(tmp_path).items():
        before = _files(tmp_path)
        for action in READS:
            code = main(["cache", *action, "--store", str(path)])
            cap = capsys.readouterr()
            text = cap.err + cap.out
            assert code in (1, 2), (name, action, text)
            assert str(path) in text and "Traceback" not in text, (name, action, text)
            problem_lines = [ln for ln in text.splitlines() if "tritune: error" in ln or "problem" in ln]
            assert len(problem_lines) >= 1
            assert _files(tmp_path) == before, (name, action)  # byte-identical, no sidecars
        if path.stat().st_size:
            assert path.read_bytes()[18:20] == b"\x01\x01", name  # still in rollback (DELETE) mode


def test_writing_to_a_newer_store_refuses_before_changing_its_journal_mode(tmp_path: Path) -> None:
    from tritune.errors import StoreError

    path = _strange_files(tmp_path)["newer_delete_mode"]
    before = path.read_bytes()
    with pytest.raises(StoreError, match="newer than this tritune"):
        SQLiteStore(path)
    assert path.read_bytes() == before and not path.with_name(path.name + "-wal").exists()


def test_decorator_over_a_read_only_store_tunes_in_memory_with_one_warning(tmp_path: Path) -> None:
    """The kernel call must not raise: a miss tunes, keeps the result in memory and warns once.

    The timings are SYNTHETIC (a replay landscape through ``Tuner(timer=...)``, no GPU); the kernel
    really runs in Triton's interpreter.
    """
    import torch
    import triton

    import tritune
    from kernels import scale_kernel
    from tritune.bench import ReplayTimer
    from tritune.landscape import Landscape, LandscapePoint

    configs = [Config({"BLOCK": 64}), Config({"BLOCK": 128})]
    d = tmp_path / "image"
    d.mkdir()
    d.chmod(0o555)
    try:
        pts = [LandscapePoint(c, Status.MEASURED, t) for c, t in zip(configs, (0.02, 0.01))]  # SYNTHETIC
        timer = ReplayTimer(Landscape.from_points("scale_kernel", "synthetic", {"n": 100}, pts), seed=0)
        k = tritune.autotune(configs=configs, key=["n"], store=str(d / "store.sqlite"), timer=timer)(
            scale_kernel
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for n in (100, 300):
                x = torch.arange(n, dtype=torch.float32)
                out = torch.empty_like(x)
                k[lambda m, n=n: (triton.cdiv(n, m["BLOCK"]),)](x, out, n)
                assert torch.equal(out, x * 2)
        assert len([w for w in caught if issubclass(w.category, ReadOnlyStoreWarning)]) == 1
        assert list(d.iterdir()) == []
    finally:
        d.chmod(0o755)


def test_read_only_stores_refuse_writes_and_clear(tmp_path: Path, ro_dir: Path) -> None:
    from tritune.errors import StoreError

    path = _good_store(tmp_path / "rw" / "store.sqlite")  # writable, but opened read-only
    before = path.read_bytes()
    with SQLiteStore(path, read_only=True) as s:
        with pytest.raises(StoreError, match="read-only"):
            s.record(make_test_key("x"), [CandidateRecord(A, Status.MEASURED, 1.0)])
        with pytest.raises(StoreError, match="read-only"):
            s.clear()
        assert s.lookup_winner(make_test_key("gelu")) is not None
    assert path.read_bytes() == before
    with open_store(ro_dir / "store.sqlite") as st, pytest.raises(StoreError, match="cannot clear"):
        st.clear()
