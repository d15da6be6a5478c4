"""``FailSafeStore``: the store a kernel call uses, which never makes the call fail because the store did.

A kernel call that tunes must return the kernel's result even when its store is damaged, locked by another
process, on a full disk, or refused for safety. :func:`tritune.store.open_store` with ``tolerant=True`` gives
this wrapper:

* **Reads** (:meth:`lookup_winner`, :meth:`candidates`, :meth:`times`, :meth:`entries`, :meth:`snapshot`) that
  fail (a damaged row, an I/O error) answer from what this process recorded alone (None, nothing stored), after
  one :class:`StoreFailureWarning`: the call tunes the key as if it were new.
* **Writes** (:meth:`record_many`, :meth:`record`) never raise. The store waits at most :data:`LOCK_WAIT_S` for
  another process's write lock (not SQLite's usual minute); a write that fails then, or for any other reason,
  is kept in memory with one warning, and this process's reads are served from it from then on.
* A store that cannot be opened for writing (:func:`tritune.store.open_store` raised StoreError) is one warning
  naming the reason; it serves what it holds where it can still be read (a full disk), and results stay in memory.

One warning for reads and one for writes per store, each naming the store, the error and what happens instead.
"""

from __future__ import annotations

import sqlite3
import threading
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from tritune.config import Config
from tritune.errors import StoreError
from tritune.store.base import Store
from tritune.store.keys import TuningKey
from tritune.store.memory import MemoryStore
from tritune.store.overlay import merged_snapshot, staged_on_top
from tritune.store.records import CandidateRecord, Entry, Snapshot, WinnerRecord, Write

T = TypeVar("T")

#: Seconds a write waits for another process's write lock before its result stays in memory.
LOCK_WAIT_S = 2.0
#: What a failing store raises (the store layer wraps SQLite's and the OS's errors; these are a safety net).
FAILURES = (StoreError, sqlite3.Error, OSError, ValueError)


class StoreFailureWarning(UserWarning):
    """The tuning store failed; the kernel call went on and its results are kept in memory for this process."""


class FailSafeStore(Store):
    """``base`` with an in-memory layer that takes over whatever ``base`` fails to do (module docstring)."""

    def __init__(self, base: Store, *, path: Path | None = None, why: object = None) -> None:
        self.base = base
        self.path = path if path is not None else base.path
        self._top = MemoryStore()
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        if why is not None:
            self._warn("open", why)
            self._warned.add("write")  # (said already: its results stay in memory)

    def _warn(self, what: str, why: object) -> None:
        with self._lock:
            if what in self._warned:
                return
            self._warned.add(what)
        then = {
            "open": "this process's results are kept in memory only",
            "read": "the key is tuned as if nothing were stored",
            "write": "the result is kept in memory for this process only",
        }[what]
        warnings.warn(
            f"the tuning store {self.path} failed ({why}): {then}; `tritune cache check` tells what is wrong "
            "(further failures of this store are not repeated)",
            StoreFailureWarning,
            stacklevel=4,
        )

    # -- writes --------------------------------------------------------------------------------
    def record_many(self, writes: Iterable[Write]) -> None:
        writes = list(writes)
        try:
            self.base.record_many(writes)
            return
        except FAILURES as e:
            self._warn("write", e)

        def readable(key: TuningKey, configs: list[Config]) -> list[CandidateRecord]:  # the base's, when it reads
            try:
                return self.base.candidates(key, configs)
            except FAILURES:
                return []

        for w in staged_on_top(writes, self._top, readable):
            try:
                self._top.record_many([w])
            except StoreError as e:  # its winner's record was only in the failed store: served by the caller alone
                self._warn("write", e)

    def clear(self, kernel: str | None = None) -> int:
        n = self._top.clear(kernel)
        return self.base.clear(kernel) + n

    # -- reads ---------------------------------------------------------------------------------
    def _read(self, read: Callable[[], T], instead: T) -> T:
        """``read()`` of the base store; ``instead`` (after the read warning) when it fails."""
        try:
            return read()
        except FAILURES as e:
            self._warn("read", e)
            return instead

    def lookup_winner(self, key: TuningKey) -> WinnerRecord | None:
        mine = self._top.lookup_winner(key)
        return mine if mine is not None else self._read(lambda: self.base.lookup_winner(key), None)

    def candidates(self, key: TuningKey, configs: Iterable[Config] | None = None) -> list[CandidateRecord]:
        wanted = None if configs is None else list(configs)
        merged = {c.config: c for c in self._read(lambda: self.base.candidates(key, wanted), list[CandidateRecord]())}
        merged.update((c.config, c) for c in self._top.candidates(key, wanted))
        return sorted(merged.values(), key=lambda r: r.config.id)

    def times(self, key: TuningKey, configs: Iterable[Config]) -> dict[Config, float | None]:
        asked = list(configs)
        mine = self._top.times(key, asked)
        out = self._read(lambda: self.base.times(key, asked), dict[Config, float | None]())
        out.update(mine)
        return dict(sorted(out.items(), key=lambda x: x[0].id))

    def snapshot(self, kernel: str | None = None) -> list[Snapshot]:
        return merged_snapshot(self._read(lambda: self.base.snapshot(kernel), list[Snapshot]()), self._top.snapshot(kernel))

    def entries(self, kernel: str | None = None) -> list[Entry]:
        base = self._read(lambda: self.base.entries(kernel), list[Entry]())
        mine = {e.key.digest: e for e in self._top.entries(kernel)}
        out = [mine.pop(e.key.digest, e) for e in base] + list(mine.values())
        return sorted(out, key=lambda e: (e.key.kernel, e.key.digest))

    def check(self) -> list[str]:
        return self.base.check()

    def close(self) -> None:
        self._top.close()
        try:
            self.base.close()
        except FAILURES as e:
            self._warn("write", e)
