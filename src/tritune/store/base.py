"""The ``Store`` contract: where tuning results live between processes.

What every store guarantees (``tritune.testing.store_contract.StoreContract`` checks it):

* **Identity.** An entry is keyed by a :class:`~tritune.store.keys.TuningKey`; a candidate inside
  it by ``(TuningKey, Config)``. Results are stored per candidate, so a caller that adds a config
  asks :meth:`Store.missing` and measures only the new one.
* **Atomic writes.** :meth:`Store.record_many` (and :meth:`Store.record`, one key) applies all of its
  writes or none. A write that is refused (a winner without a usable candidate record) leaves the
  store as it was. A later record of the same ``(key, config)`` replaces the earlier one.
* **Durability.** Once a write returns, every reader of the store sees it; for a store with a
  file (SQLite), that includes other processes and survives the writer being killed.
* **Concurrency.** Every method may be called from several threads at once; a file store may also
  be used by several processes at once. Nothing is lost and no caller sees half a write.
* **Immutable results.** Returned records are frozen values that share nothing mutable with the store.
* **Errors.** A file that is not a tritune store raises :class:`~tritune.errors.StoreCorruptError`
  naming the path, and the file is never written. A refused write, a read-only store, a store
  written by a newer tritune, or a closed store raise :class:`~tritune.errors.StoreError`. An import
  file that does not match the schema raises :class:`~tritune.errors.StoreSchemaError` naming the
  line and the field. Malformed keys or configs raise :class:`~tritune.errors.ConfigError`.

Backends implement the abstract methods; ``record``, ``missing``, ``times``, ``kernels``, ``export`` and
``import_`` are built on them here, so every backend shares their semantics (a backend may answer ``times``
faster, as SQLite does from fewer columns, with the same result: the contract suite checks it).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from tritune.config import Config, as_config
from tritune.errors import StoreCorruptError, StoreError
from tritune.outcome import Status
from tritune.store.keys import TuningKey
from tritune.store.records import (
    CandidateRecord,
    Entry,
    KernelSummary,
    Snapshot,
    WinnerRecord,
    Write,
    summarize,
)


class Store(ABC):
    """A place to keep per-candidate timings and per-key winners. See the module docstring."""

    #: The file behind the store, or ``None`` for in-process stores.
    path: Path | None = None
    #: False for read-only layers (``PretunedStore``): every write raises StoreError.
    writable: bool = True

    # -- writes --------------------------------------------------------------------------------
    @abstractmethod
    def record_many(self, writes: Iterable[Write]) -> None:
        """Apply every write atomically (all or none). Raises StoreError if any write is refused."""

    def record(
        self,
        key: TuningKey,
        results: Iterable[CandidateRecord],
        winner: Config | Any | None = None,
        *,
        ties: Iterable[Config | Any] = (),
        provenance: Mapping[str, Any] | None = None,
    ) -> WinnerRecord | None:
        """Store ``results`` at ``key`` and, if given, ``winner`` (with its ``ties``) in one transaction.

        Returns the key's winner after the write (the stored one when ``winner`` is None).
        """
        w = Write(
            key,
            tuple(results),
            None if winner is None else as_config(winner),
            tuple(as_config(t) for t in ties),
            dict(provenance or {}),
        )
        self.record_many([w])
        return self.lookup_winner(key)

    @abstractmethod
    def clear(self, kernel: str | None = None) -> int:
        """Remove every entry (or only ``kernel``'s); returns how many keys were removed."""

    # -- reads ---------------------------------------------------------------------------------
    @abstractmethod
    def lookup_winner(self, key: TuningKey) -> WinnerRecord | None:
        """The winner stored at exactly ``key``, or None."""

    @abstractmethod
    def candidates(self, key: TuningKey, configs: Iterable[Config] | None = None) -> list[CandidateRecord]:
        """The candidate records at ``key`` sorted by config id; only those in ``configs`` when given."""

    @abstractmethod
    def entries(self, kernel: str | None = None) -> list[Entry]:
        """Every stored key (or ``kernel``'s), sorted by kernel name then key digest."""

    @abstractmethod
    def snapshot(self, kernel: str | None = None) -> list[Snapshot]:
        """A consistent copy of every entry (or ``kernel``'s) with its candidates, for export."""

    @abstractmethod
    def check(self) -> list[str]:
        """Problems found in the store (empty when healthy). Never raises for a damaged store."""

    @abstractmethod
    def close(self) -> None:
        """Release the store's resources. Using it afterwards raises StoreError; closing twice is fine."""

    # -- built on the above --------------------------------------------------------------------
    def missing(self, key: TuningKey, configs: Iterable[Config | Any]) -> list[Config]:
        """The configs of ``configs`` (in order) that have no candidate record at ``key`` yet."""
        wanted = [as_config(c) for c in configs]
        have = {r.config for r in self.candidates(key, wanted)}
        return [c for c in wanted if c not in have]

    def times(self, key: TuningKey, configs: Iterable[Config]) -> dict[Config, float | None]:
        """The stored configs of ``configs`` at ``key``, in config id order, each with its measured time in ms or
        ``None`` for a failure: what a transfer reads of a tuned key (``tune.searching.neighbours``). The same as
        :meth:`candidates` gives; a backend may answer it without decoding the records' JSON fields."""
        return {r.config: (r.time_ms if r.status is Status.MEASURED else None) for r in self.candidates(key, configs)}

    def kernels(self) -> list[KernelSummary]:
        """Per-kernel counts of keys, winners and candidate records, sorted by kernel name."""
        return summarize(self.entries())

    def export(self, dest: str | Path | IO[str], *, kernel: str | None = None) -> int:
        """Write the ``tritune.store/1`` JSON of every entry (or ``kernel``'s); returns the entry count."""
        from tritune.store.exchange import write_export

        return write_export(self.snapshot(kernel), dest)

    def import_(self, src: str | Path | IO[str]) -> int:
        """Validate a ``tritune.store/1`` file, then record all of it in one atomic write.

        Raises StoreSchemaError (line and field) before writing anything if the file is bad.
        Imported records replace stored ones for the same ``(key, config)``; returns the entry count.
        """
        from tritune.store.exchange import load_export

        writes = load_export(src)
        self.record_many(writes)
        problems = self.unreadable(writes)
        if problems:
            raise StoreCorruptError(
                f"{self.path}: the import was written, but {len(problems)} of its {len(writes)} entries cannot be "
                f"read back ({problems[0]}); `tritune cache check` says what is damaged"
            )
        return len(writes)

    def unreadable(self, writes: Iterable[Write]) -> list[str]:
        """What of ``writes`` cannot be read back from this store, one line per entry (empty when all of it can):
        an import checks what it wrote, so a damaged store is never reported as holding it."""
        problems: list[str] = []
        for w in writes:
            where = f"kernel {w.key.kernel} at {w.key.describe_key() or 'its key'}"
            try:
                have = {c.config for c in self.candidates(w.key)}
                lost = sum(1 for c in w.candidates if c.config not in have)
                got = self.lookup_winner(w.key) if w.winner is not None else None
            except StoreError as e:
                problems.append(f"{where}: {e}")
                continue
            if lost:
                problems.append(f"{where}: {lost} of its {len(w.candidates)} candidate records are missing")
            elif w.winner is not None and (got is None or got.config != w.winner):
                problems.append(f"{where}: its winner is missing")
        return problems

    def _read_only(self, what: str) -> StoreError:
        return StoreError(f"{what}: this store is read-only")

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def apply_write(
    write: Write, stored: Mapping[Config, CandidateRecord], t: float
) -> tuple[list[CandidateRecord], WinnerRecord | None]:
    """What ``write`` does to a key holding ``stored``: the stamped records to upsert and the new winner.

    Shared by the backends so the winner rules are the same everywhere; raises StoreError to refuse.
    """
    stamped = [c.stamped(t) for c in write.candidates]
    after = dict(stored)
    after.update((c.config, c) for c in stamped)
    return stamped, write.winner_record(after, t)
