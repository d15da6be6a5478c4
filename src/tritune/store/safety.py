"""Checks run before a store or a pretuned file is read: who owns it and every folder on its way, how it is
reached, and, for a store, its SQLite sidecars.

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
path names: the checks and the open that follows see the same file (:mod:`tritune.store.opening` holds it open
while SQLite opens it, and checks it again after).

Sidecars. SQLite opens ``-wal``, ``-shm`` and ``-journal`` by name, and would use (and, for a ``-wal`` or a hot
``-journal``, copy into the store) whatever file it finds there. A sidecar that is a symlink, not a regular
file, or owned by another user is refused before SQLite runs; :mod:`tritune.store.opening` says what keeps one
from being planted after that.

New stores are created like other per-user caches: missing folders 0700, the file 0600 (SQLite gives its
sidecars the file's mode).

:func:`read_only_reason` says why a store cannot be written, judged by what survives running as root: a
read-only filesystem (``statvfs``), or the owner's write bit cleared on the file or its folder (``chmod a-w``),
or ``os.access`` denying the current user.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tritune.errors import StoreError

#: The files SQLite keeps next to a store.
SIDECARS = ("-wal", "-shm", "-journal")
_FIX = "point TRITUNE_STORE / --store at a path in a directory only you can write"
_PRETUNED_FIX = "copy it to a folder only you (or root) can write, owned by you or root, and pass that path"
#: Symlinks followed on one path at most (as the kernel's ELOOP).
MAX_LINKS = 40
NOFOLLOW = getattr(os, "ONOFOLLOW", 0)
NONBLOCK = getattr(os, "ONONBLOCK", 0)


def trusted(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


def owner(uid: int) -> str:
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


def lstat(path: Path) -> os.stat_result | None:
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
        st = lstat(nxt)
        rest = [n for n in todo if n not in ("", ".")]
        if st is None:
            return Walked(Path(os.path.normpath(Path(nxt, *rest))), tuple(folders), None, len(rest))
        if stat.S_ISLNK(st.st_mode):
            shown = "it" if nxt == given else f"{nxt} on its way"
            if not trusted(st.st_uid):
                raise kind.refuse(given, f"{shown} is a symlink owned by {owner(st.st_uid)}")
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
        if not trusted(st.st_uid):
            raise kind.refuse(given, f"{where}{sep}owned by {owner(st.st_uid)}")
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
    if not trusted(w.st.st_uid):
        raise kind.refuse(given, f"the file is owned by {owner(w.st.st_uid)}")
    return w


def read_trusted(path: Path, kind: Kind = PRETUNED) -> bytes:
    """The bytes of the file at ``path`` after :func:`trusted_path`'s checks, read from a descriptor opened
    without following a symlink and judged by its own ``fstat`` (the very file that was checked).
    A missing or unreadable file raises OSError."""
    w = trusted_path(path, kind)
    if w.st is None:
        raise FileNotFoundError(2, "No such file or directory", str(path))
    fd = os.open(w.real, os.O_RDONLY | NOFOLLOW | NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (w.st.st_dev, w.st.st_ino) or not stat.S_ISREG(st.st_mode):
            raise kind.refuse(Path(path), "it changed while it was being opened; try again")
        if not trusted(st.st_uid):
            raise kind.refuse(Path(path), f"the file is owned by {owner(st.st_uid)}")
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def sidecar_problem(side: Path, st: os.stat_result) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return f"its sidecar {side} is a symlink"
    if not stat.S_ISREG(st.st_mode):
        return f"its sidecar {side} is not a regular file"
    if not trusted(st.st_uid):
        return f"its sidecar {side} is owned by {owner(st.st_uid)}"
    return None


def sidecar(real: Path, suffix: str) -> Path:
    return real.with_name(real.name + suffix)


def safe_store_path(path: Path) -> Path:
    """The file to open for the store at ``path`` (symlinks resolved), after every check above, sidecars too."""
    w = trusted_path(path, STORE)
    for suffix in SIDECARS:
        side = sidecar(w.real, suffix)
        sst = lstat(side)
        if sst is not None:
            problem = sidecar_problem(side, sst)
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
        fd = os.open(real, os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW, 0o600)
    except FileExistsError:
        safe_store_path(shown)
        return False
    os.close(fd)
    if safe_store_path(shown) != real:
        raise StoreError(f"the store path {shown} changed while it was being created; try again")
    return True


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
