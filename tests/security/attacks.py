"""The attacker's side of the security tests: another user on the same machine, and what they plant.

``as_attacker(fn, *args)`` runs ``fn`` in a fork of the test process that has become another user
(:data:`ATTACKER_UID`, no groups): what it can and cannot do is what the kernel lets that user do, no mocks.
A uid without an account is as much another user to the kernel as one made by ``useradd``, and needs no change
to the machine's user database. Needs root (the tests skip, saying so, otherwise).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tritune.config import Config
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore
from tritune.store.keys import TuningKey

ATTACKER_UID = 54_321
#: The config another user wants your kernel to run.
EVIL = Config({"BLOCK": 13}, num_warps=1)


def can_be_another_user() -> str | None:
    """None when the tests can act as another user; else why not (the reason of the skip)."""
    if not hasattr(os, "fork") or not hasattr(os, "setresuid"):
        return "acting as another user needs fork and setresuid (POSIX)"
    if os.geteuid() != 0:
        return "acting as another user needs root (setresuid to another uid); run the suite as root, as CI does"
    return None


def as_attacker(fn: Callable[..., Any], *args: Any) -> bool:
    """Run ``fn(*args)`` as the attacker; True when it returned, False when the kernel refused it (OSError)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the attacker
        code = 2
        try:
            os.close(r)
            os.setgroups([])
            os.setresgid(ATTACKER_UID, ATTACKER_UID, ATTACKER_UID)
            os.setresuid(ATTACKER_UID, ATTACKER_UID, ATTACKER_UID)
            try:
                fn(*args)
                code = 0
            except OSError:
                code = 1
        except BaseException:
            os.write(w, traceback.format_exc().encode()[-2000:])
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        err = f.read().decode()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 1), f"the attacker's step failed unexpectedly ({code}):\n{err}"
    return code == 0


def _needs_attacker() -> Any:
    import pytest

    why = can_be_another_user()
    return pytest.mark.skipif(why is not None, reason=why or "")


def shared_dir(mode: int = 0o1777) -> Path:
    """A fresh folder directly in /tmp (reachable by the attacker), like /tmp itself by default."""
    d = Path(tempfile.mkdtemp(prefix="tritune-sec-", dir="/tmp"))
    d.chmod(mode)
    return d


def remove(d: Path) -> None:
    shutil.rmtree(d, ignore_errors=True)


def attacker_wal(work: Path, key: TuningKey, config: Config = EVIL) -> bytes:
    """A ``-wal`` holding a whole tritune store whose winner at ``key`` is ``config``: planted next to any store of
    the same page size, SQLite reads that store instead (and a checkpoint would copy it into the file)."""
    src = work / "attacker-made.sqlite"
    with SQLiteStore(src) as s:
        s.record(key, [CandidateRecord(config, Status.MEASURED, 0.001)], winner=config)
    conn = sqlite3.connect(src, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("VACUUM")  # every page of it, into its -wal
    wal = Path(str(src) + "-wal").read_bytes()
    conn.close()
    for p in work.glob("attacker-made.sqlite*"):
        p.unlink()
    return wal


def plant(path: str, data: bytes) -> None:
    """Attacker: create ``path`` (only if nobody has: in a sticky folder, another user's file stays theirs)."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, 0o666)


def symlink(target: str, link: str) -> None:
    os.symlink(target, link)


def mkdir(path: str, mode: int = 0o755) -> None:
    os.mkdir(path, mode)
    os.chmod(path, mode)


def start_attacker(fn: Callable[..., Any], *args: Any) -> int:
    """Run ``fn(*args)`` as the attacker in the background; returns its pid (end it with :func:`stop`). It dies
    with the test process too (a parent-death signal, set once it is the attacker: a change of user clears it)."""
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(ATTACKER_UID, ATTACKER_UID, ATTACKER_UID)
            os.setresuid(ATTACKER_UID, ATTACKER_UID, ATTACKER_UID)
            import ctypes
            import signal

            ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
            if os.getppid() == parent:
                fn(*args)
        finally:
            os._exit(0)
    return pid


def stop(pid: int) -> None:
    import signal

    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def keep_planting(path: str, data: bytes) -> None:
    """Attacker, in a loop: plant ``path`` whenever it is free, leave it a moment, take it back, again."""
    import random
    import time

    while True:
        try:
            plant(path, data)
        except OSError:
            continue
        time.sleep(random.uniform(0, 0.003))
        try:
            os.unlink(path)
        except OSError:
            pass
        time.sleep(random.uniform(0, 0.003))


#: Marks a test that acts as another user (skipped, with the reason, where that cannot be done).
needs_attacker = _needs_attacker()
