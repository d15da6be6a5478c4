"""Stores on shared machines: real file modes, owners and symlinks (no mocks).

"Another user" is uid 65534 (nobody): the tests chown files to it, which needs root. Where the
OS cannot chown (not root), those tests skip, and the tests of symlinks, directories and modes for
the current user still run.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tritune.cli.main import main
from tritune.config import Config
from tritune.errors import StoreError
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore, check_path, open_store
from tritune.testing.store_contract import make_test_key

OTHER = 65534
A = Config({"BLOCK": 1024}, num_warps=8)


def _can_chown() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


needs_other_user = pytest.mark.skipif(not _can_chown(), reason="chown to another uid needs root")


def _good_store(path: Path) -> Path:
    with SQLiteStore(path) as s:
        s.record(make_test_key("gelu"), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    return path


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def test_new_store_is_0600_in_a_0700_directory(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "cache" / "tritune" / "store.sqlite"
        with SQLiteStore(path) as s:
            s.record(make_test_key(), [CandidateRecord(A, Status.MEASURED, 1.0)])
            wal = path.with_name(path.name + "-wal")
            assert wal.exists() and _mode(wal) == 0o600  # SQLite gives sidecars the file's mode
        assert _mode(path) == 0o600
        assert _mode(path.parent) == 0o700 and _mode(path.parent.parent) == 0o700
    finally:
        os.umask(old)


def test_a_directory_as_store_path_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(StoreError, match=r"is a directory, not a store file.*store.sqlite"):
        SQLiteStore(tmp_path)
    for action in (["ls"], ["check"], ["import", str(tmp_path / "x.json")], ["clear", "--yes"]):
        code = main(["cache", *action, "--store", str(tmp_path)])
        captured = capsys.readouterr()
        text = captured.err + captured.out
        assert code in (1, 2) and "is a directory" in text and "Traceback" not in text, (action, text)


def test_symlink_in_a_world_writable_directory_is_refused(tmp_path: Path) -> None:
    mine = _good_store(tmp_path / "mine" / "store.sqlite")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: anyone may create a link here first
    link = shared / "store.sqlite"
    link.symlink_to(mine)
    with pytest.raises(StoreError, match="symlink in the world-writable directory"):
        open_store(link)
    with pytest.raises(StoreError, match="symlink"):
        open_store(link, read_only=True)
    assert any("symlink" in p for p in check_path(link))


def test_own_symlink_in_own_directory_is_followed(tmp_path: Path) -> None:
    """Pointing your cache path at a bigger disk is legitimate: the link and its directory are yours."""
    real = _good_store(tmp_path / "disk" / "store.sqlite")
    link = tmp_path / "home" / "store.sqlite"
    link.parent.mkdir(mode=0o700)
    link.symlink_to(real)
    with open_store(link) as s:
        assert s.lookup_winner(make_test_key("gelu")) is not None


def test_symlinked_sidecar_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _good_store(tmp_path / "store.sqlite")
    (tmp_path / "elsewhere").write_bytes(b"")
    path.with_name("store.sqlite-wal").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StoreError, match=r"sidecar .*-wal is a symlink"):
        SQLiteStore(path)
    assert main(["cache", "check", "--store", str(path)]) == 1
    assert "is a symlink" in capsys.readouterr().out


@needs_other_user
def test_store_owned_by_another_user_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _good_store(tmp_path / "store.sqlite")
    os.chown(path, OTHER, OTHER)
    with pytest.raises(StoreError, match=r"owned by .*65534"):
        open_store(path)
    with pytest.raises(StoreError, match="owned by"):
        open_store(path, read_only=True)
    assert main(["cache", "ls", "--store", str(path)]) == 2
    assert "owned by" in capsys.readouterr().err


@needs_other_user
def test_file_planted_first_by_another_user_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "store.sqlite"
    planted.write_bytes(b"")  # an empty file the victim would turn into its store
    os.chown(planted, OTHER, OTHER)
    with pytest.raises(StoreError, match="owned by"):
        open_store(planted)
    assert planted.stat().st_size == 0


@needs_other_user
def test_symlink_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    victim_empty = tmp_path / "victim" / "empty.sqlite"
    victim_empty.parent.mkdir()
    victim_empty.write_bytes(b"")
    link = tmp_path / "store.sqlite"
    link.symlink_to(victim_empty)
    os.lchown(link, OTHER, OTHER)
    with pytest.raises(StoreError, match="symlink owned by"):
        open_store(link)
    assert victim_empty.stat().st_size == 0


@needs_other_user
def test_planted_wal_of_another_user_is_refused_and_check_notices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _good_store(tmp_path / "store.sqlite")
    wal = path.with_name("store.sqlite-wal")
    wal.write_bytes(b"\x37\x7f\x06\x82" + b"\0" * 28)  # a WAL header: an ordinary-looking -wal file
    os.chown(wal, OTHER, OTHER)
    with pytest.raises(StoreError, match=r"sidecar .*-wal is owned by"):
        open_store(path)
    assert main(["cache", "check", "--store", str(path)]) == 1
    out = capsys.readouterr().out
    assert "-wal is owned by" in out and "problem" in out


@needs_other_user
def test_directory_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, OTHER, OTHER)
    with pytest.raises(StoreError, match=r"its directory .* is owned by"):
        open_store(theirs / "store.sqlite")
    assert not (theirs / "store.sqlite").exists()


@needs_other_user
def test_no_store_directory_is_created_inside_another_users_directory(tmp_path: Path) -> None:
    """Another user made ``theirs`` first (in a shared folder): tritune would create ``theirs/tritune`` there,
    which they could rename away and replace at will."""
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, OTHER, OTHER)
    path = theirs / "tritune" / "store.sqlite"
    with pytest.raises(StoreError, match=r"would be created in .*theirs.* owned by"):
        SQLiteStore(path)
    assert not (theirs / "tritune").exists()
    export = tmp_path / "e.json"
    with SQLiteStore(_good_store(tmp_path / "src.sqlite")) as s:
        s.export(export)
    assert main(["cache", "import", str(export), "--store", str(path)]) == 2
    assert not (theirs / "tritune").exists()


def test_no_store_directory_is_created_in_a_world_writable_directory_without_the_sticky_bit(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone may rename what is created here
    try:
        with pytest.raises(StoreError, match=r"world-writable without the sticky bit"):
            SQLiteStore(shared / "tritune" / "store.sqlite")
        assert not (shared / "tritune").exists()
        shared.chmod(0o1777)  # like /tmp: others cannot remove or rename what you created
        with SQLiteStore(shared / "tritune" / "store.sqlite") as s:
            s.record(make_test_key(), [CandidateRecord(A, Status.MEASURED, 1.0)])
    finally:
        shared.chmod(0o755)
