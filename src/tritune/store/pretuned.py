"""``PretunedStore``: a read-only layer over a shipped ``tritune.store/1`` export file.

A kernel library ships the winners it tuned; ``tritune.autotune(..., pretuned="configs.json")``
consults this layer before its own store, so a hit needs no timing at all. Every write raises
StoreError. :meth:`PretunedStore.resolve` is the lookup the decorator uses: an exact key match
first, then, in this order, the same kernel source, key values and dtypes

1. on the same device and capability, with another Triton version or codegen environment;
2. on another device of the same capability (e.g. H100 and H200 at ``cuda:90``);
3. only for an ``"interpreter"`` key: on any device (the shipped config is the one the interpreter
   runs, since the interpreter has no clock to tune with).

Ties inside a step are broken by device, capability, Triton version and digest, so the result is
the same in every process.

The file decides which configs your kernels run, so it gets a store's checks
(:func:`tritune.store.safety.trusted_path`): a file owned by another user, or reached through a folder or
symlink another user could change (anywhere on its path, relative paths from the working directory), is
refused with one StoreError naming the path and the fix, and read from the very descriptor that was checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tritune.config import Config
from tritune.errors import StoreError
from tritune.store.base import Store
from tritune.store.exchange import load_export
from tritune.store.keys import INTERPRETER, TuningKey
from tritune.store.memory import MemoryStore
from tritune.store.records import CandidateRecord, Entry, Snapshot, WinnerRecord, Write


class PretunedStore(Store):
    """The entries of an export file at ``path``, read once, served read-only."""

    writable = False

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._mem = MemoryStore()
        self._mem.record_many(load_export(self.path, trusted=True))

    def _refuse(self, what: str) -> StoreError:
        return StoreError(
            f"{what}: {self.path} is a read-only pretuned file; record into a writable store "
            "(tritune.store.open_store()), or regenerate the file with `tritune cache export`"
        )

    def record_many(self, writes: Iterable[Write]) -> None:
        raise self._refuse("cannot record")

    def clear(self, kernel: str | None = None) -> int:
        raise self._refuse("cannot clear")

    def import_(self, src: object) -> int:  # type: ignore[override]
        raise self._refuse("cannot import")

    def lookup_winner(self, key: TuningKey) -> WinnerRecord | None:
        return self._mem.lookup_winner(key)

    def candidates(self, key: TuningKey, configs: Iterable[Config] | None = None) -> list[CandidateRecord]:
        return self._mem.candidates(key, configs)

    def entries(self, kernel: str | None = None) -> list[Entry]:
        return self._mem.entries(kernel)

    def snapshot(self, kernel: str | None = None) -> list[Snapshot]:
        return self._mem.snapshot(kernel)

    def check(self) -> list[str]:
        return self._mem.check()

    def close(self) -> None:
        self._mem.close()

    def resolve(self, key: TuningKey) -> WinnerRecord | None:
        """The winner serving ``key``: exact, else the fallbacks in the module docstring, else None."""
        exact = self._mem.lookup_winner(key)
        if exact is not None:
            return exact
        same = [
            e.winner
            for e in self._mem.entries(key.kernel)
            if e.winner is not None
            and e.key.source_hash == key.source_hash
            and e.key.key == key.key
            and e.key.buckets == key.buckets
            and e.key.dtypes == key.dtypes
            and e.key.measure == key.measure  # a winner measured cold never serves a warm or graph key
        ]

        def order(w: WinnerRecord) -> tuple[str, str, str, str]:
            return (w.key.device, w.key.capability, w.key.triton_version, w.key.digest)

        steps = [
            lambda k: k.device == key.device and k.capability == key.capability,
            lambda k: k.capability == key.capability and k.device != INTERPRETER,
        ]
        if key.device == INTERPRETER:
            steps.append(lambda k: True)
        for accept in steps:
            hits = sorted((w for w in same if accept(w.key)), key=order)
            if hits:
                return hits[0]
        return None
