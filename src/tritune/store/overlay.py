"""``OverlayStore``: a read-only store that serves lookups and keeps new results in memory.

A pretuned store baked into a container image, or one on a cluster's read-only filesystem, must
still serve its winners; a tuning miss must still tune. :func:`tritune.store.open_store` wraps such
a store in an ``OverlayStore``: reads see the base store with this process's results on top, and
the first write emits one :class:`ReadOnlyStoreWarning` saying the results will not outlive the
process. ``clear`` raises StoreError: the base cannot be changed.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable

from tritune.config import Config
from tritune.store.base import Store
from tritune.store.keys import TuningKey
from tritune.store.memory import MemoryStore
from tritune.store.records import CandidateRecord, Entry, Snapshot, WinnerRecord, Write


def staged_on_top(writes: Iterable[Write], top: Store,
                  base_candidates: Callable[[TuningKey, list[Config]], Iterable[CandidateRecord]]) -> list[Write]:  # fmt: skip
    """``writes`` as the in-memory layer over a base store records them: a winner (or tie) measured earlier and
    stored only in the base brings its record from ``base_candidates(key, configs)``."""
    staged = []
    for w in writes:
        have = {c.config for c in w.candidates} | {c.config for c in top.candidates(w.key)}
        need = [c for c in ((w.winner, *w.ties) if w.winner is not None else ()) if c not in have]
        extra = tuple(base_candidates(w.key, need)) if need else ()
        staged.append(Write(w.key, extra + w.candidates, w.winner, w.ties, w.provenance, w.recorded_at))
    return staged


def merged_snapshot(base: Iterable[Snapshot], top: Iterable[Snapshot]) -> list[Snapshot]:
    """A base store's snapshot with an in-memory layer's on top: per key, the top's winner (else the base's) and
    the candidates of both, the top's record where both have one."""
    out: dict[str, Snapshot] = {k.digest: (k, w, c) for k, w, c in base}
    for key, win, cands in top:
        _, old_win, old = out.get(key.digest, (key, None, []))
        merged = {c.config: c for c in old}
        merged.update((c.config, c) for c in cands)
        out[key.digest] = (key, win or old_win, sorted(merged.values(), key=lambda r: r.config.id))
    return sorted(out.values(), key=lambda s: (s[0].kernel, s[0].digest))


class ReadOnlyStoreWarning(UserWarning):
    """Results are kept in memory only, because the store on disk cannot be written."""


class OverlayStore(Store):
    """``base`` (read-only) with an in-memory layer on top; see the module docstring."""

    def __init__(self, base: Store, why: str) -> None:
        self.base = base
        self.path = base.path
        self.why = why
        self._top = MemoryStore()
        self._warned = False
        self._lock = threading.Lock()

    def _warn_once(self) -> None:
        with self._lock:
            if self._warned:
                return
            self._warned = True
        warnings.warn(
            f"the tuning store {self.path} is read-only ({self.why}): new tuning results are kept in "
            "memory for this process only; point TRITUNE_STORE at a writable path to keep them",
            ReadOnlyStoreWarning,
            stacklevel=3,
        )

    def record_many(self, writes: Iterable[Write]) -> None:
        self._top.record_many(staged_on_top(writes, self._top, self.base.candidates))
        self._warn_once()

    def clear(self, kernel: str | None = None) -> int:
        raise self._read_only(f"cannot clear {self.path} ({self.why})")

    def lookup_winner(self, key: TuningKey) -> WinnerRecord | None:
        return self._top.lookup_winner(key) or self.base.lookup_winner(key)

    def candidates(self, key: TuningKey, configs: Iterable[Config] | None = None) -> list[CandidateRecord]:
        wanted = None if configs is None else list(configs)
        merged = {c.config: c for c in self.base.candidates(key, wanted)}
        merged.update((c.config, c) for c in self._top.candidates(key, wanted))
        return sorted(merged.values(), key=lambda r: r.config.id)

    def snapshot(self, kernel: str | None = None) -> list[Snapshot]:
        return merged_snapshot(self.base.snapshot(kernel), self._top.snapshot(kernel))

    def entries(self, kernel: str | None = None) -> list[Entry]:
        return [
            Entry(k, w, len(c), sum(r.time_ms is not None for r in c)) for k, w, c in self.snapshot(kernel)
        ]

    def check(self) -> list[str]:
        return self.base.check()

    def close(self) -> None:
        self._top.close()
        self.base.close()
