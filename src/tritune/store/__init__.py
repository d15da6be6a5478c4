"""Persistent tuning results: the Store contract, its SQLite and in-memory backends, keys, export.

Open the default store with :func:`open_store` (``$TRITUNE_STORE`` or the user cache dir).
See :mod:`tritune.store.base` for what every store guarantees.

Shared and read-only disks. A store decides which config your kernels run, so it is refused
(StoreError naming the path and the fix) when it, any folder on its path or its ``-wal``/``-shm``/``-journal``
sidecars belong to another user (root excepted), when a folder on its path is world-writable without the
sticky bit, when it is reached through another user's symlink or a symlink in a world-writable directory,
or when a sidecar is a symlink; the file is held open while SQLite opens it, and its sidecars are checked
again after; new stores are created 0600 in 0700 directories (:mod:`tritune.store.safety`).
A store that cannot be written (read-only filesystem, or the write bit cleared on the file or its
directory: mode bits, because root ignores them for access) is opened read-only with SQLite's
``immutable=1``/``mode=ro``: it serves lookups, and new results stay in memory with one
:class:`ReadOnlyStoreWarning` (:class:`OverlayStore`). Reading commands open stores read-only and
never create, convert or change a file. A kernel call opens its store with ``tolerant=True``
(:class:`FailSafeStore`): a store that fails is a warning, never an exception.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from tritune.errors import StoreError
from tritune.store.base import Store
from tritune.store.exchange import FORMAT, load_export, parse_export
from tritune.store.failsafe import FAILURES, LOCK_WAIT_S, FailSafeStore, StoreFailureWarning
from tritune.store.keys import (
    INTERPRETER,
    TuningKey,
    codegen_env,
    codegen_env_hash,
    current_device,
    dtypes_of,
    interpreter_key,
    make_key,
)
from tritune.store.memory import MemoryStore
from tritune.store.overlay import OverlayStore, ReadOnlyStoreWarning
from tritune.store.pretuned import PretunedStore
from tritune.store.records import CandidateRecord, Entry, KernelSummary, WinnerRecord, Write
from tritune.store.safety import read_only_reason, safe_store_path
from tritune.store.sqlite import SQLiteStore, check_path, default_store_path


def open_store(
    path: str | Path | None = None, *, create: bool = True, read_only: bool = False, tolerant: bool = False
) -> Store:
    """The store at ``path``, else ``$TRITUNE_STORE``, else the user cache dir's.

    Normally a :class:`SQLiteStore`. Where the store cannot be written (a read-only filesystem or
    directory, a file without write permission) it is opened read-only inside an
    :class:`OverlayStore`: lookups are served from it, and new results stay in memory with one
    warning. ``read_only=True`` is for reading commands: it never creates or changes a file, and a
    missing store reads as an empty one. Unsafe stores (see :mod:`tritune.store.safety`) raise
    StoreError in every mode but ``tolerant``.

    ``tolerant=True`` is for kernel calls: the store returned (a :class:`FailSafeStore`) never raises because
    the store failed. A damaged row, an I/O error or another process's write lock held past
    :data:`~tritune.store.failsafe.LOCK_WAIT_S` is one :class:`StoreFailureWarning`, and results stay in memory;
    a store that cannot be opened for writing is such a warning too: it serves what it holds when it can be read
    (a full disk), else nothing (unsafe, corrupt, newer), and results stay in memory.
    """
    p = Path(path).expanduser() if path is not None else default_store_path()
    if tolerant:
        try:
            return FailSafeStore(_open(p, create=create, read_only=read_only, timeout=LOCK_WAIT_S))
        except FAILURES as e:
            base: Store = MemoryStore()
            if not read_only:  # it may still serve what it holds (a full disk takes no -wal): read it, if it is safe
                with contextlib.suppress(*FAILURES):
                    base = SQLiteStore(p, create=False, read_only=True, timeout=LOCK_WAIT_S)
            return FailSafeStore(base, path=p, why=e)
    return _open(p, create=create, read_only=read_only, timeout=60.0)


def _open(p: Path, *, create: bool, read_only: bool, timeout: float) -> Store:
    real = safe_store_path(p)
    if read_only:
        if not real.exists():
            empty = MemoryStore()
            empty.path = p
            return empty
        return SQLiteStore(p, create=False, read_only=True, timeout=timeout)
    why = read_only_reason(real)
    if why is None:
        return SQLiteStore(p, create=create, timeout=timeout)
    if real.exists() and real.stat().st_size > 0:
        base: Store = SQLiteStore(p, create=False, read_only=True, timeout=timeout)
    elif create:
        base = MemoryStore()
        base.path = p
    else:
        raise StoreError(f"no store at {p}: nothing has been tuned into it yet")
    return OverlayStore(base, why)


__all__ = [
    "FORMAT",
    "INTERPRETER",
    "CandidateRecord",
    "Entry",
    "FailSafeStore",
    "KernelSummary",
    "MemoryStore",
    "OverlayStore",
    "PretunedStore",
    "ReadOnlyStoreWarning",
    "SQLiteStore",
    "Store",
    "StoreFailureWarning",
    "TuningKey",
    "WinnerRecord",
    "Write",
    "check_path",
    "codegen_env",
    "codegen_env_hash",
    "current_device",
    "default_store_path",
    "dtypes_of",
    "interpreter_key",
    "load_export",
    "make_key",
    "open_store",
    "parse_export",
]
