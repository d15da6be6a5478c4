"""``MemoryStore``: an in-process, thread-safe store with the full Store contract.

It keeps everything in dictionaries behind one lock and lives as long as the object. Use it for
tests, for a session that must not touch the disk, and as the backing of ``PretunedStore``. Its
"durability" is the process's: a write is visible to every thread once ``record_many`` returns.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from tritune.config import Config
from tritune.errors import StoreError
from tritune.store.base import Store, apply_write
from tritune.store.keys import TuningKey
from tritune.store.records import CandidateRecord, Entry, Snapshot, WinnerRecord, Write, now


class MemoryStore(Store):
    """A dictionary-backed store; every method takes one lock, so each call is atomic."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._keys: dict[str, TuningKey] = {}
        self._cands: dict[str, dict[Config, CandidateRecord]] = {}
        self._winners: dict[str, WinnerRecord] = {}
        self._closed = False

    def _open(self) -> None:
        if self._closed:
            raise StoreError("the in-memory store is closed")

    def record_many(self, writes: Iterable[Write]) -> None:
        writes = list(writes)
        with self._lock:
            self._open()
            t = now()
            # Compute everything first, then apply: a refused write changes nothing.
            staged_c: dict[str, dict[Config, CandidateRecord]] = {}
            staged_w: dict[str, WinnerRecord] = {}
            keys: dict[str, TuningKey] = {}
            for w in writes:
                d = w.key.digest
                keys[d] = w.key
                current = staged_c.get(d, self._cands.get(d, {}))
                stamped, winner = apply_write(w, current, t)
                staged_c[d] = {**current, **{c.config: c for c in stamped}}
                if winner is not None:
                    staged_w[d] = winner
            self._keys.update(keys)
            self._cands.update(staged_c)
            self._winners.update(staged_w)

    def clear(self, kernel: str | None = None) -> int:
        with self._lock:
            self._open()
            gone = [d for d, k in self._keys.items() if kernel is None or k.kernel == kernel]
            for d in gone:
                del self._keys[d]
                self._cands.pop(d, None)
                self._winners.pop(d, None)
            return len(gone)

    def lookup_winner(self, key: TuningKey) -> WinnerRecord | None:
        with self._lock:
            self._open()
            return self._winners.get(key.digest)

    def candidates(self, key: TuningKey, configs: Iterable[Config] | None = None) -> list[CandidateRecord]:
        with self._lock:
            self._open()
            recs = self._cands.get(key.digest, {})
            if configs is not None:
                wanted = set(configs)
                out = [r for c, r in recs.items() if c in wanted]
            else:
                out = list(recs.values())
        return sorted(out, key=lambda r: r.config.id)

    def _selected(self, kernel: str | None) -> list[str]:
        return sorted(
            (d for d, k in self._keys.items() if kernel is None or k.kernel == kernel),
            key=lambda d: (self._keys[d].kernel, d),
        )

    def entries(self, kernel: str | None = None) -> list[Entry]:
        with self._lock:
            self._open()
            out = []
            for d in self._selected(kernel):
                recs = self._cands.get(d, {}).values()
                n_meas = sum(1 for r in recs if r.time_ms is not None)
                out.append(Entry(self._keys[d], self._winners.get(d), len(recs), n_meas))
            return out

    def snapshot(self, kernel: str | None = None) -> list[Snapshot]:
        with self._lock:
            self._open()
            return [
                (
                    self._keys[d],
                    self._winners.get(d),
                    sorted(self._cands.get(d, {}).values(), key=lambda r: r.config.id),
                )
                for d in self._selected(kernel)
            ]

    def check(self) -> list[str]:
        problems: list[str] = []
        with self._lock:
            if self._closed:
                return ["the in-memory store is closed"]
            for d, k in self._keys.items():
                if k.digest != d:
                    problems.append(f"key of kernel {k.kernel} is filed under a wrong digest")
            for d, w in self._winners.items():
                if w.config not in self._cands.get(d, {}):
                    problems.append(f"winner {w.config.id} of kernel {w.key.kernel} has no candidate record")
        return problems

    def close(self) -> None:
        with self._lock:
            self._closed = True
