"""Another user tries to decide what your kernels run through your store: a ``-wal`` planted in a shared folder
while you open it, a symlink in the middle of the store's path, a folder anyone may rename. Asserted: no attacker
config is ever served, no byte of the victim's store changes, each refusal is one line, no traceback."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from attacks import (
    EVIL,
    as_attacker,
    attacker_wal,
    keep_planting,
    mkdir,
    needs_attacker,
    plant,
    start_attacker,
    stop,
    symlink,
)

from tritune.cli.main import main
from tritune.config import Config
from tritune.errors import StoreError
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore, open_store
from tritune.store import opening as opening_mod
from tritune.testing.store_contract import make_test_key

GOOD = Config({"BLOCK": 64})
KEY = make_test_key("gelu")


def _victim_store(path: Path) -> Path:
    with SQLiteStore(path) as s:
        s.record(KEY, [CandidateRecord(GOOD, Status.MEASURED, 1.0)], winner=GOOD)
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_attacker
def test_a_wal_planted_while_the_victim_opens_its_store_is_never_served_nor_copied_in(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = _victim_store(shared / "store.sqlite")
    before = _digest(victim)
    wal = attacker_wal(tmp_path, KEY)
    attacker = start_attacker(keep_planting, str(victim) + "-wal", wal)
    served, used = 0, 0
    try:
        for i in range(60):
            try:
                with open_store(victim) as s:
                    w = s.lookup_winner(KEY)
                    used += 1
                    served += w is not None and w.config == EVIL
            except StoreError as e:
                assert "-wal is owned by uid" in str(e) and "\n" not in str(e)  # refused: one line
            if i % 10 == 0:  # a reading command meanwhile: never the attacker's winner either
                code = main(["cache", "show", "gelu", "--store", str(victim)])
                out = capsys.readouterr()
                assert "Traceback" not in out.err and "BLOCK=13" not in out.out and code in (0, 2), out.err
    finally:
        stop(attacker)
    assert served == 0 and used > 0
    assert _digest(victim) == before


@needs_attacker
def test_a_wal_that_reaches_sqlite_after_the_checks_is_refused_and_never_copied_in(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The narrowest window, forced: the victim's claimed ``-wal`` is gone (its own other process's last close
    removed it) just after the checks, and the attacker plants theirs before SQLite opens the name."""
    victim = _victim_store(shared / "store.sqlite")
    before = _digest(victim)
    wal = attacker_wal(tmp_path, KEY)
    real_init = opening_mod.StoreFile.__init__

    def claimed_then_lost(self: opening_mod.StoreFile, *a: object, **kw: object) -> None:
        real_init(self, *a, **kw)  # type: ignore[arg-type]
        side = Path(str(victim) + "-wal")
        if side.exists():
            side.unlink()
        assert as_attacker(plant, str(side), wal)

    monkeypatch.setattr(opening_mod.StoreFile, "__init__", claimed_then_lost)
    with pytest.raises(StoreError, match=r"-wal was replaced while the store was being opened") as e:
        open_store(victim)  # (as root, SQLite made the planted -wal root's when it opened it: its owner proves nothing)
    assert "\n" not in str(e.value)
    monkeypatch.undo()
    assert _digest(victim) == before
    assert not Path(str(victim) + "-wal").exists()  # removed: no later open meets it
    with open_store(victim) as s:
        assert s.lookup_winner(KEY).config == GOOD  # type: ignore[union-attr]


@needs_attacker
def test_a_victim_claims_its_sidecars_first_in_a_shared_folder(shared: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    victim = _victim_store(shared / "store.sqlite")
    wal = attacker_wal(tmp_path, KEY)
    real_init = opening_mod.StoreFile.__init__
    planted: list[bool] = []

    def right_after_the_checks(self: opening_mod.StoreFile, *a: object, **kw: object) -> None:
        real_init(self, *a, **kw)  # type: ignore[arg-type]
        for suffix in ("-wal", "-journal"):
            planted.append(as_attacker(plant, f"{victim}{suffix}", wal))

    monkeypatch.setattr(opening_mod.StoreFile, "__init__", right_after_the_checks)
    with open_store(victim) as s:
        assert s.lookup_winner(KEY).config == GOOD  # type: ignore[union-attr]
    assert planted and not any(planted)  # the names were the victim's files already: nobody else may replace them


@needs_attacker
def test_a_symlink_in_the_middle_of_the_path_is_refused_even_while_it_flips(shared: Path, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    _victim_store(mine / "store.sqlite")
    theirs = shared / "theirs"
    as_attacker(mkdir, str(theirs), 0o755)
    evil_src = tmp_path / "evil.sqlite"
    with SQLiteStore(evil_src) as s:
        s.record(KEY, [CandidateRecord(EVIL, Status.MEASURED, 0.001)], winner=EVIL)
    as_attacker(plant, str(theirs / "store.sqlite"), evil_src.read_bytes())
    link = shared / "cache"
    for target in (str(theirs), str(mine), str(theirs)):  # the attacker's link, pointing either way
        if os.path.lexists(link):
            assert as_attacker(os.unlink, str(link))
        assert as_attacker(symlink, target, str(link))
        for read_only in (False, True):
            with pytest.raises(StoreError, match=r"cache on its way is a symlink owned by uid 54321"):
                open_store(link / "store.sqlite", read_only=read_only)
        assert main(["cache", "show", "gelu", "--store", str(link / "store.sqlite")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "symlink owned by" in err


@needs_attacker
def test_a_folder_anyone_may_rename_is_refused_anywhere_on_the_path(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # world-writable, no sticky bit: anyone may rename "mine" away and put theirs there
    mine = open_dir / "mine"
    mine.mkdir(mode=0o700)
    _victim_store(tmp_path / "elsewhere.sqlite")
    os.replace(tmp_path / "elsewhere.sqlite", mine / "store.sqlite")
    for read_only in (False, True):
        with pytest.raises(StoreError, match=r"folder .*open on its way is world-writable without the sticky bit"):
            open_store(mine / "store.sqlite", read_only=read_only)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 54_321, 54_321)
    (theirs / "sub").mkdir()
    with pytest.raises(StoreError, match=r"folder .*theirs on its way is owned by uid 54321"):
        open_store(theirs / "sub" / "store.sqlite")
    assert not (theirs / "sub" / "store.sqlite").exists()
