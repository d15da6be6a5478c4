"""Checks run before a store or a pretuned file is read: who owns it and every folder on its way, how it is
reached, and, for a store, its SQLite sidecars; then the file is held open while SQLite opens it by name.

A store or a pretuned file decides which config a kernel runs, so one another user can change is a way to make
your kernels run their configs. "Another user" is anyone but you and root (root can rewrite any file anyway,
and a pretuned file baked into an image is usually root's). :func:`trusted_path` walks the path one component
at a time, following symlinks itself, and refuses, with a :class:`~tritune.errors.StoreError` naming the path
and the fix:

* a folder anywhere on the way (the file's own included) owned by another user, or writable by everyone
  without the sticky bit: its owner, or anyone, could rename what it holds and put their own in its place;
  likewise the nearest existing folder of a path whose folders tritune would create;
* a symlink anywhere on the way owned by another user, or sitting in a world-writable folder (anyone there
  could have planted it before you). Your own symlink in your own folder is followed: pointing
  ``~/.cache/tritune/store.sqlite`` at a bigger disk is legitimate;
* a file that is not a regular file, or owned by another user.

Once every component is one that only you or root can change, nothing another user does can change what the
path names: the checks and the open that follows see the same file. :class:`StoreFile` then holds the store
open (``O_NOFOLLOW``; the file is judged by ``fstat`` of that descriptor), reads its header from it, and checks
after SQLite's open that the name still leads to that very file.

Sidecars. SQLite opens ``-wal``, ``-shm`` and ``-journal`` by name, and would use (and, for a ``-wal`` or a hot
``-journal``, copy into the store) whatever file it finds there. A sidecar that is a symlink, not a regular
file, or owned by another user is refused before SQLite runs. In a folder others can write to (a sticky one
such as ``/tmp``), a sidecar could be planted between that check and SQLite's open, so a writer first
*claims* each name: it creates the missing sidecars itself (empty, 0600), and since nobody else may remove or
rename your file in a sticky folder, SQLite finds yours. :meth:`StoreFile.verify` checks the sidecars again
after the open; a connection that met a refused sidecar is closed by :func:`close_unchecked`, which keeps
SQLite from copying that sidecar into the store.

New stores are created like other per-user caches: missing folders 0700, the file 0600 (SQLite gives its
sidecars the file's mode).

:func:`read_only_reason` says why a store cannot be written, judged by what survives running as root: a
read-only filesystem (``statvfs``), or the owner's write bit cleared on the file or its folder (``chmod a-w``),
or ``os.access`` denying the current user.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import stat
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from tritune.errors import StoreError

#: The files SQLite keeps next to a store.
SIDECARS = ("-wal", "-shm", "-journal")
_FIX = "point TRITUNE_STORE / --store at a path in a directory only you can write"
_PRETUNED_FIX = "copy it to a folder only you (or root) can write, owned by you or root, and pass that path"
#: Symlinks followed on one path at most (as the kernel's ELOOP).
MAX_LINKS = 40
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: SQLite's "dead man switch" byte of the ``-shm`` file: every live connection holds a shared lock on it.
_SHM_DMS = 128


def _trusted(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _world_writable(st: os.stat_result) -> bool:
    return bool(st.st_mode & stat.S_IWOTH)


def _open_to_all(st: os.stat_result) -> bool:
    """World-writable without the sticky bit: anyone may rename or replace what the folder holds."""
    return _world_writable(st) and not st.st_mode & stat.S_ISVTX


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


@dataclass(frozen=True)
class Kind:
    """What is being checked: how a refusal starts and what fix it suggests."""

    noun: str
    fix: str

    def refuse(self, path: Path, why: str) -> StoreError:
        return StoreError(f"refusing the {self.noun} {path}: {why}; {self.fix}")


STORE = Kind("store", _FIX)
PRETUNED = Kind("pretuned file", _PRETUNED_FIX)


@dataclass(frozen=True)
class Walked:
    """Where a path leads: ``real`` (symlinks resolved), the folders on the way from ``/`` with their stats (the
    last one holds ``real``, or is the nearest existing folder when folders are ``missing``), and the file's
    stat (None when it does not exist)."""

    real: Path
    folders: tuple[tuple[Path, os.stat_result], ...]
    st: os.stat_result | None
    #: How many folders of ``real`` do not exist yet (tritune would create them).
    missing: int = 0


def _walk(given: Path, kind: Kind) -> Walked:
    """Follow ``given`` one component at a time, resolving symlinks here (their checks are made on the way)."""
    todo = list((given if given.is_absolute() else Path(os.getcwd()) / given).parts)[1:]
    cur = Path("/")
    folders: list[tuple[Path, os.stat_result]] = [(cur, os.stat(cur))]
    links = 0
    while todo:
        name = todo.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            if len(folders) > 1:
                folders.pop()
            cur = folders[-1][0]
            continue
        nxt = cur / name
        st = _lstat(nxt)
        rest = [n for n in todo if n not in ("", ".")]
        if st is None:
            return Walked(Path(os.path.normpath(Path(nxt, *rest))), tuple(folders), None, len(rest))
        if stat.S_ISLNK(st.st_mode):
            shown = "it" if nxt == given else f"{nxt} on its way"
            if not _trusted(st.st_uid):
                raise kind.refuse(given, f"{shown} is a symlink owned by {_owner(st.st_uid)}")
            if _world_writable(folders[-1][1]):
                raise kind.refuse(given, f"{shown} is a symlink in the world-writable directory {cur}")
            links += 1
            if links > MAX_LINKS:
                raise kind.refuse(given, f"more than {MAX_LINKS} symlinks on its way")
            target = Path(os.readlink(nxt))
            if target.is_absolute():
                cur = Path("/")
                del folders[1:]
                todo = list(target.parts[1:]) + todo
            else:
                todo = list(target.parts) + todo
            continue
        if rest:
            if not stat.S_ISDIR(st.st_mode):
                raise kind.refuse(given, f"{nxt} on its way is not a directory")
            folders.append((nxt, st))
            cur = nxt
            continue
        return Walked(nxt, tuple(folders), st)
    # the path names a folder ("/", or one ending in ".."): the caller says what is wrong with that
    return Walked(cur, tuple(folders[:-1]) or tuple(folders), folders[-1][1])


def trusted_path(path: Path, kind: Kind = PRETUNED) -> Walked:
    """Walk ``path`` and check every folder on its way, every symlink and the file itself (module docstring).

    A missing file is not an error here (a store may be created); the folders that exist are checked.
    """
    given = Path(path).expanduser()
    w = _walk(given, kind)
    last = len(w.folders) - 1
    for i, (d, st) in enumerate(w.folders):
        if i == last and w.missing:
            where, sep = f"its directory would be created in {d}", ", "
        elif i == last:
            where, sep = f"its directory {d}", " is "
        else:
            where, sep = f"the folder {d} on its way", " is "
        if not _trusted(st.st_uid):
            raise kind.refuse(given, f"{where}{sep}owned by {_owner(st.st_uid)}")
        if _open_to_all(st):
            raise kind.refuse(given, f"{where}{sep}world-writable without the sticky bit")
    if w.st is None:
        return w
    if stat.S_ISDIR(w.st.st_mode):
        if os.path.islink(given):
            raise StoreError(f"the {kind.noun} path {given} links to the directory {w.real}: pass a file path")
        if kind is STORE:
            raise StoreError(
                f"the store path {given} is a directory, not a store file: pass a file path such as "
                f"{given / 'store.sqlite'} to TRITUNE_STORE / --store"
            )
        raise StoreError(f"the {kind.noun} path {given} is a directory: pass the path of a tritune.store/1 file")
    if not stat.S_ISREG(w.st.st_mode):
        raise kind.refuse(given, "it is not a regular file")
    if not _trusted(w.st.st_uid):
        raise kind.refuse(given, f"the file is owned by {_owner(w.st.st_uid)}")
    return w


def read_trusted(path: Path, kind: Kind = PRETUNED) -> bytes:
    """The bytes of the file at ``path`` after :func:`trusted_path`'s checks, read from a descriptor opened
    without following a symlink and judged by its own ``fstat`` (the very file that was checked).
    A missing or unreadable file raises OSError."""
    w = trusted_path(path, kind)
    if w.st is None:
        raise FileNotFoundError(2, "No such file or directory", str(path))
    fd = os.open(w.real, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (w.st.st_dev, w.st.st_ino) or not stat.S_ISREG(st.st_mode):
            raise kind.refuse(Path(path), "it changed while it was being opened; try again")
        if not _trusted(st.st_uid):
            raise kind.refuse(Path(path), f"the file is owned by {_owner(st.st_uid)}")
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _sidecar_problem(side: Path, st: os.stat_result) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return f"its sidecar {side} is a symlink"
    if not stat.S_ISREG(st.st_mode):
        return f"its sidecar {side} is not a regular file"
    if not _trusted(st.st_uid):
        return f"its sidecar {side} is owned by {_owner(st.st_uid)}"
    return None


def sidecar(real: Path, suffix: str) -> Path:
    return real.with_name(real.name + suffix)


def safe_store_path(path: Path) -> Path:
    """The file to open for the store at ``path`` (symlinks resolved), after every check above, sidecars too."""
    w = trusted_path(path, STORE)
    for suffix in SIDECARS:
        side = sidecar(w.real, suffix)
        sst = _lstat(side)
        if sst is not None:
            problem = _sidecar_problem(side, sst)
            if problem is not None:
                raise STORE.refuse(path, problem)
    return w.real


def shared_folder(real: Path) -> bool:
    """Whether others may create files in the folder of ``real`` (a sticky world-writable one, such as /tmp)."""
    try:
        return _world_writable(os.stat(real.parent))
    except OSError:
        return False


def create_store_file(real: Path, shown: Path) -> bool:
    """Create missing folders 0700 and the store file 0600; True when this call created the file.

    A folder or file that appears meanwhile is checked again by the caller (:func:`safe_store_path`): one made
    by another user in a shared folder is refused, never used.
    """
    missing = [p for p in (real.parent, *real.parent.parents) if not os.path.lexists(p)]
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    try:
        fd = os.open(real, os.O_CREAT | os.O_EXCL | os.O_WRONLY | _NOFOLLOW, 0o600)
    except FileExistsError:
        safe_store_path(shown)
        return False
    os.close(fd)
    if safe_store_path(shown) != real:
        raise StoreError(f"the store path {shown} changed while it was being created; try again")
    return True


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
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0))
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
            if not _trusted(st.st_uid):
                raise STORE.refuse(shown, f"the file is owned by {_owner(st.st_uid)}")
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
            sst = _lstat(side)
            if sst is not None:
                problem = _sidecar_problem(side, sst)
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
            fd = os.open(side, os.O_CREAT | os.O_EXCL | os.O_WRONLY | _NOFOLLOW | _NONBLOCK, 0o600)
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
            fd = os.open(side, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0))
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
                sst = _lstat(side)
                if sst is None:
                    continue
                before = self.sidecars.get(suffix)
                if self.shared and before is not None and (sst.st_dev, sst.st_ino) != (before.st_dev, before.st_ino):
                    self.swapped.append(side)
                    raise STORE.refuse(
                        self.shown, f"its sidecar {side} was replaced while the store was being opened (another "
                        "user may have planted it), and is removed unless a process uses the store; open it again"
                    )  # fmt: skip
                problem = _sidecar_problem(side, sst)
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
            sst = _lstat(p)
            if sst is not None and stat.S_ISREG(sst.st_mode) and sst.st_uid == os.geteuid():
                with contextlib.suppress(OSError):
                    os.unlink(p)
    finally:
        PINS.release(fd)


def space_problem(real: Path) -> str | None:
    """Why a write into ``real`` may have failed for lack of room: its disk is (nearly) full, or a file size
    limit (``ulimit -f``) is set; None when neither holds."""
    try:
        v = os.statvfs(real.parent)
        if v.f_bavail * v.f_frsize < 1 << 20:
            return f"the disk holding {real.parent} is full"
    except OSError:
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
        if soft != resource.RLIM_INFINITY:
            return f"the file size limit (ulimit -f) is {soft} bytes"
    except (ImportError, ValueError, OSError):
        pass
    return None


def read_only_reason(real: Path) -> str | None:
    """Why the store at ``real`` cannot be written (or created), or None when it can."""
    target = real if real.exists() else next(p for p in real.parents if p.exists())
    if os.statvfs(target).f_flag & os.ST_RDONLY:
        return f"{target} is on a read-only filesystem"
    if real.exists():
        mode = os.stat(real).st_mode
        if not mode & stat.S_IWUSR:
            return f"the file's mode is {stat.filemode(mode)}, without write permission"
        if not os.access(real, os.W_OK):
            return "the file is not writable by you"
    d = real.parent if real.parent.exists() else target
    dmode = os.stat(d).st_mode
    if not dmode & stat.S_IWUSR:
        return f"its directory {d} has mode {stat.filemode(dmode)}, without write permission"
    if not os.access(d, os.W_OK | os.X_OK):
        return f"its directory {d} is not writable by you"
    return None
