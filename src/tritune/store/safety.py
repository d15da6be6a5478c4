"""Checks run before SQLite touches a store file: who owns it, how it is reached, whether it may be written.

A store decides which config a kernel runs, so a store another user can write is a way to make
your kernels run their configs. Before a store (or any of its ``-wal``, ``-shm``, ``-journal``
sidecars) is opened, :func:`safe_store_path` refuses, with a :class:`~tritune.errors.StoreError`
naming the path and the fix:

* a store path that is a directory, or a store that is not a regular file;
* a store, a sidecar, or the directory holding the store, owned by another user (root is trusted:
  it can rewrite any file anyway, and a pretuned store baked into an image is usually root's);
* a directory holding the store that others can write to without the sticky bit (they could
  replace the file); likewise, for a store whose folders do not exist yet, the nearest existing
  folder, where tritune would create them (its owner could rename them away and plant their own);
* a symlink at the store path that another user owns, or that sits in a world-writable directory
  (anyone there could have planted it before you). Your own symlink in your own directory is
  followed: pointing ``~/.cache/tritune/store.sqlite`` at a bigger disk is legitimate;
* any symlinked sidecar (SQLite creates sidecars itself, so a symlink there was planted). A sidecar
  you own is trusted like the store: in a directory others cannot write, only you could have put it
  there, and processes creating the store at once legitimately leave a ``-wal`` beside an empty file.

New stores are created like other per-user caches: missing directories 0700, the file 0600
(SQLite gives its sidecars the file's mode).

:func:`read_only_reason` says why a store cannot be written, judged by what survives running as
root: a read-only filesystem (``statvfs``), or the owner's write bit cleared on the file or its
directory (``chmod a-w``), or ``os.access`` denying the current user.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tritune.errors import StoreError

#: The files SQLite keeps next to a store.
SIDECARS = ("-wal", "-shm", "-journal")
_FIX = "point TRITUNE_STORE / --store at a path in a directory only you can write"


def _trusted(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _unsafe(path: Path, why: str) -> StoreError:
    return StoreError(f"refusing the store {path}: {why}; {_FIX}")


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _world_writable(st: os.stat_result) -> bool:
    return bool(st.st_mode & stat.S_IWOTH)


def safe_store_path(path: Path) -> Path:
    """The file to open for the store at ``path`` (symlinks resolved), after the checks above."""
    if path.is_dir():
        raise StoreError(
            f"the store path {path} is a directory, not a store file: pass a file path such as "
            f"{path / 'store.sqlite'} to TRITUNE_STORE / --store"
        )
    parent_st = _lstat(path.parent) if path.parent.exists() else None
    st = _lstat(path)
    real = path
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not _trusted(st.st_uid):
            raise _unsafe(path, f"it is a symlink owned by {_owner(st.st_uid)}")
        if parent_st is not None and _world_writable(os.stat(path.parent)):
            raise _unsafe(path, f"it is a symlink in the world-writable directory {path.parent}")
        real = path.resolve()
        if real.is_dir():
            raise StoreError(f"the store path {path} links to the directory {real}: pass a file path")
        st = _lstat(real)
    if not real.parent.exists():  # tritune will create the missing folders: not where others could swap them
        base = next(p for p in real.parent.parents if p.exists())
        bst = os.stat(base)
        if not _trusted(bst.st_uid):
            raise _unsafe(path, f"its directory would be created in {base}, owned by {_owner(bst.st_uid)}")
        if _world_writable(bst) and not bst.st_mode & stat.S_ISVTX:
            raise _unsafe(path, f"its directory would be created in {base}, world-writable without the sticky bit")
    if real.parent.exists():
        dst = os.stat(real.parent)
        if not _trusted(dst.st_uid):
            raise _unsafe(path, f"its directory {real.parent} is owned by {_owner(dst.st_uid)}")
        if _world_writable(dst) and not dst.st_mode & stat.S_ISVTX:
            raise _unsafe(path, f"its directory {real.parent} is world-writable without the sticky bit")
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise _unsafe(path, "it is not a regular file")
        if not _trusted(st.st_uid):
            raise _unsafe(path, f"the file is owned by {_owner(st.st_uid)}")
    for suffix in SIDECARS:
        side = real.with_name(real.name + suffix)
        sst = _lstat(side)
        if sst is None:
            continue
        if stat.S_ISLNK(sst.st_mode):
            raise _unsafe(path, f"its sidecar {side} is a symlink")
        if not stat.S_ISREG(sst.st_mode):
            raise _unsafe(path, f"its sidecar {side} is not a regular file")
        if not _trusted(sst.st_uid):
            raise _unsafe(path, f"its sidecar {side} is owned by {_owner(sst.st_uid)}")
    return real


def create_store_file(real: Path) -> None:
    """Create missing directories 0700 and the store file 0600 (nothing happens if it exists)."""
    missing = [p for p in (real.parent, *real.parent.parents) if not p.exists()]
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    try:
        fd = os.open(real, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return
    os.close(fd)


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
