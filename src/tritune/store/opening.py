"""Holding a store open while SQLite opens it by name, and checking after the open what SQLite found.

:mod:`tritune.store.safety` checks a store's path; SQLite then opens the file and its sidecars *by name*. What
keeps the names leading to the checked files, and what happens when they do not:

* :class:`StoreFile` holds the store open (``O_NOFOLLOW``; the file is judged by ``fstat`` of that descriptor),
  reads SQLite's header from it, and after SQLite's open checks that the name still leads to that very file.
* In a folder others can write to (a sticky one such as ``/tmp``), a sidecar could be planted between the checks
  and SQLite's open, so a writer first *claims* each name: it creates the missing sidecars itself (empty, 0600);
  nobody else may remove or rename your file in a sticky folder, so SQLite finds yours. After the open each
  sidecar must be the very file found before it (held open, so its inode cannot be reused): its owner proves
  nothing then, because SQLite running as root makes a ``-wal`` or ``-journal`` it opens the store owner's.
* A connection that met a refused sidecar is closed by :func:`close_unchecked`, which keeps SQLite from copying
  it into the store, and the sidecar is removed once no process uses the store.
* Descriptors on a store file and its ``-shm`` are pinned (:class:`_Pins`): closing any descriptor of a file
  drops every POSIX lock the process holds on it, SQLite's included.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import stat
import struct
import threading
from pathlib import Path
from urllib.parse import quote

from tritune.errors import StoreError
from tritune.store.safety import (
    NOFOLLOW,
    NONBLOCK,
    SIDECARS,
    STORE,
    lstat,
    owner,
    shared_folder,
    sidecar,
    sidecar_problem,
    trusted,
)

#: SQLite's "dead man switch" byte of the ``-shm`` file: every live connection holds a shared lock on it.
_SHM_DMS = 128


class _Pins:
    """Descriptors on store files and their ``-shm``, one per file per process, closed only when no store of this
    process uses that file any more.

    Closing *any* descriptor of a file drops every POSIX lock this process holds on it, SQLite's included: its
    connections lock the store file and its ``-shm``, and a lost lock lets another process believe it is the
    last one and delete the ``-wal`` in use. So tritune opens each such file once per process and counts who
    uses it: the count reaches zero only after every connection of this process's stores to it was closed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fds: dict[tuple[int, int], list[int]] = {}  # (dev, ino) -> [fd, users]
        #: Descriptors opened on a file pinned already (a name that moved on meanwhile): closed with its pin.
        self._extra: dict[tuple[int, int], list[int]] = {}

    def acquire(self, path: Path) -> tuple[int, os.stat_result]:
        """A pinned descriptor on the file at ``path`` (not following a symlink) and its stat; FileNotFoundError
        when there is none. Give it back with :meth:`release`."""
        with self._lock:
            st = os.lstat(path)
            held = self._fds.get((st.st_dev, st.st_ino))
            if held is not None:
                held[1] += 1
                return held[0], os.fstat(held[0])
            fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            fst = os.fstat(fd)
            key = (fst.st_dev, fst.st_ino)
            if key in self._fds:  # the name moved on to a file pinned already: use that descriptor
                self._extra.setdefault(key, []).append(fd)  # (closing this one would drop SQLite's locks)
                held = self._fds[key]
                held[1] += 1
                return held[0], fst
            self._fds[key] = [fd, 1]
            return fd, fst

    def release(self, fd: int) -> None:
        with self._lock:
            for key, held in self._fds.items():
                if held[0] == fd:
                    held[1] -= 1
                    if held[1] <= 0:
                        del self._fds[key]
                        for one in (fd, *self._extra.pop(key, ())):
                            with contextlib.suppress(OSError):
                                os.close(one)
                    return

    def users(self, fd: int) -> int:
        """How many stores of this process hold the pinned descriptor ``fd``."""
        with self._lock:
            return next((held[1] for held in self._fds.values() if held[0] == fd), 0)


PINS = _Pins()


class StoreFile:
    """The store file held open while SQLite opens it by name, and its sidecars as they were found.

    ``claim=True`` (a writer in a folder others can write to) creates the missing sidecars first, so that the
    names SQLite opens are this user's files (module docstring). Keep it until the connections opened with it are
    closed (:class:`_Pins` says why), then :meth:`close` it.
    """

    def __init__(self, real: Path, shown: Path, *, claim: bool = False) -> None:
        self.real = real
        self.shown = shown
        self.fd = -1
        self._shm_fd = -1
        #: Descriptors on the ``-wal`` and ``-journal`` found, held until :meth:`verify`: while one is open its
        #: inode cannot be reused by a file planted under its name. (SQLite locks neither file.)
        self._window: dict[str, int] = {}
        #: Sidecars whose name led to another file after SQLite's open than before it (see :meth:`verify`).
        self.swapped: list[Path] = []
        self.shared = shared_folder(real)
        try:
            self.fd, st = PINS.acquire(real)
        except FileNotFoundError:
            raise StoreError(f"no store at {shown}: nothing has been tuned into it yet") from None
        except OSError as e:
            raise STORE.refuse(shown, f"it cannot be opened ({e.strerror or e})") from None
        try:
            if not stat.S_ISREG(st.st_mode):
                raise STORE.refuse(shown, "it is not a regular file")
            if not trusted(st.st_uid):
                raise STORE.refuse(shown, f"the file is owned by {owner(st.st_uid)}")
            self.identity = (st.st_dev, st.st_ino)
            self.sidecars: dict[str, os.stat_result | None] = {}
            for suffix in SIDECARS:
                self.sidecars[suffix] = self._found(suffix, claim)
        except BaseException:
            self.close()
            raise

    def _found(self, suffix: str, claim: bool) -> os.stat_result | None:
        """The sidecar at ``suffix`` as found (held open) and judged; with ``claim``, created first when missing,
        and claimed again when it vanished between the claim and the look (another user's file, taken back), so
        that every sidecar name is held, and checked, before SQLite opens it."""
        side = sidecar(self.real, suffix)
        for _ in range(20):
            if claim:
                self._claim(side)
            sst = lstat(side)
            if sst is not None:
                problem = sidecar_problem(side, sst)
                if problem is not None:
                    raise STORE.refuse(self.shown, problem)
                held = self._hold(suffix, side)
                if held is not None and (held.st_dev, held.st_ino) == (sst.st_dev, sst.st_ino):
                    return held
                continue  # it changed between the look and the open: look again
            if not claim:
                return None
        raise STORE.refuse(self.shown, f"its sidecar {side} keeps appearing and vanishing (another user is "
                                       "racing for its name); try again")  # fmt: skip

    def _claim(self, side: Path) -> None:
        try:
            fd = os.open(side, os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW | NONBLOCK, 0o600)
        except OSError:  # there already (judged as any sidecar found), or a folder that takes no file
            return
        os.close(fd)  # (a new file: nobody holds a lock on it)

    def _hold(self, suffix: str, side: Path) -> os.stat_result | None:
        """Keep the sidecar found open (its stat, as opened); None when it went away meanwhile."""
        try:
            if suffix == "-shm":
                if self._shm_fd >= 0:
                    PINS.release(self._shm_fd)
                    self._shm_fd = -1
                self._shm_fd, st = PINS.acquire(side)
                return st
            fd = os.open(side, os.O_RDONLY | NOFOLLOW | NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        old = self._window.pop(suffix, None)
        if old is not None:
            os.close(old)
        self._window[suffix] = fd
        return os.fstat(fd)

    def header(self) -> bytes:
        """The first 100 bytes of the file (SQLite's header), read from the descriptor that was checked."""
        return os.pread(self.fd, 100, 0)

    def size(self, suffix: str) -> int:
        st = self.sidecars.get(suffix)
        return 0 if st is None else st.st_size

    def state(self) -> tuple[int, int, int]:
        """Size, modification time and inode of the file now: a read from it must see these unchanged."""
        st = os.fstat(self.fd)
        return (st.st_size, st.st_mtime_ns, st.st_ino)

    def live_writer(self) -> bool:
        """Whether another process has the store open in WAL mode now (it holds a lock on the ``-shm``)."""
        return self._shm_fd >= 0 and _locked_by_others(self._shm_fd, _SHM_DMS, 1)

    def in_use_elsewhere(self) -> bool:
        """Whether another process has the store open (every SQLite connection locks the file)."""
        return self.fd < 0 or _locked_by_others(self.fd, 0, 0)

    def verify(self, *, sidecars: bool = True) -> None:
        """After SQLite's open: the name still leads to the checked file, and (unless ``sidecars`` is False: an
        ``immutable`` connection opens none) no sidecar is one refused above.

        In a shared folder each sidecar found (or claimed) before the open must be the very same file after it:
        its owner proves nothing then, since SQLite running as root gives a ``-wal`` or ``-journal`` it opens the
        store's owner. A refused sidecar is listed in :attr:`swapped` for :meth:`discard_swapped`."""
        try:
            try:
                st = os.stat(self.real)
            except OSError:
                st = None
            if st is None or (st.st_dev, st.st_ino) != self.identity:
                raise StoreError(f"the store path {self.shown} changed while it was being opened; try again")
            for suffix in SIDECARS if sidecars else ():
                side = sidecar(self.real, suffix)
                sst = lstat(side)
                if sst is None:
                    continue
                before = self.sidecars.get(suffix)
                if self.shared and before is not None and (sst.st_dev, sst.st_ino) != (before.st_dev, before.st_ino):
                    self.swapped.append(side)
                    raise STORE.refuse(
                        self.shown, f"its sidecar {side} was replaced while the store was being opened (another "
                        "user may have planted it), and is removed unless a process uses the store; open it again"
                    )  # fmt: skip
                problem = sidecar_problem(side, sst)
                if problem is not None:
                    self.swapped.append(side)
                    raise STORE.refuse(self.shown, problem)
        finally:
            self._end_window()

    def discard_swapped(self) -> None:
        """Remove the sidecars :meth:`verify` refused, once the connection that met them is closed and no other
        process has the store open: nobody's data is in them, and a later open must not meet them again (running
        as root, SQLite made such a file root's when it opened it: its owner would no longer give it away)."""
        if not self.swapped or self.in_use_elsewhere():
            return
        for side in self.swapped:
            with contextlib.suppress(OSError):
                os.unlink(side)

    def _end_window(self) -> None:
        window, self._window = self._window, {}
        for fd in window.values():
            with contextlib.suppress(OSError):
                os.close(fd)

    def close(self) -> None:
        """Give the descriptors back; call it once the connections opened with this file are closed."""
        self._end_window()
        fd, self.fd = self.fd, -1
        if fd >= 0:
            PINS.release(fd)
        shm, self._shm_fd = self._shm_fd, -1
        if shm >= 0:
            PINS.release(shm)

    def __enter__(self) -> StoreFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def close_unchecked(conn: sqlite3.Connection, real: Path) -> None:
    """Close ``conn`` without SQLite copying its ``-wal`` into the store (a WAL that was refused).

    A connection's last close checkpoints the WAL into the file when it can lock the file exclusively. A
    read-only connection to the same file, open in this process meanwhile, holds the shared lock that prevents
    it, and a read-only connection never checkpoints when it closes.
    """
    guard = None
    try:
        guard = sqlite3.connect(f"file:{quote(str(real))}?mode=ro", uri=True, isolation_level=None)
        guard.execute("PRAGMA schema_version").fetchone()
    except sqlite3.Error:
        pass
    try:
        conn.close()
    finally:
        if guard is not None:
            guard.close()


def _locked_by_others(fd: int, start: int, length: int) -> bool:
    try:
        got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, start, length, 0))
        return bool(struct.unpack("hhqqi", got)[0] != fcntl.F_UNLCK)
    except OSError:
        return True  # cannot tell: leave the file alone


def remove_new_store(real: Path) -> None:
    """Remove a store file this process has just created, with its sidecars, when no other process (and no other
    store of this one) has it open: a store whose creation failed (a full disk) leaves nothing behind. Only
    regular files of this user go."""
    try:
        fd, st = PINS.acquire(real)
    except OSError:
        return
    try:
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or _locked_by_others(fd, 0, 0):
            return
        if PINS.users(fd) > 1:
            return  # another store of this process holds it
        for suffix in ("-shm", "-wal", "-journal", ""):
            p = sidecar(real, suffix)
            sst = lstat(p)
            if sst is not None and stat.S_ISREG(sst.st_mode) and sst.st_uid == os.geteuid():
                with contextlib.suppress(OSError):
                    os.unlink(p)
    finally:
        PINS.release(fd)
