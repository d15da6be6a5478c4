"""Persistent tuning results: the Store contract, its SQLite and in-memory backends, keys, export.

Open the default store with :func:`open_store` (``$TRITUNE_STORE`` or the user cache dir).
See :mod:`tritune.store.base` for what every store guarantees.
"""

from __future__ import annotations

from pathlib import Path

from tritune.store.base import Store
from tritune.store.exchange import FORMAT, load_export, parse_export
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
from tritune.store.pretuned import PretunedStore
from tritune.store.records import CandidateRecord, Entry, KernelSummary, WinnerRecord, Write
from tritune.store.sqlite import SQLiteStore, check_path, default_store_path


def open_store(path: str | Path | None = None, *, create: bool = True) -> SQLiteStore:
    """The SQLite store at ``path``, else ``$TRITUNE_STORE``, else the user cache dir's."""
    return SQLiteStore(path, create=create)


__all__ = [
    "FORMAT",
    "INTERPRETER",
    "CandidateRecord",
    "Entry",
    "KernelSummary",
    "MemoryStore",
    "PretunedStore",
    "SQLiteStore",
    "Store",
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
