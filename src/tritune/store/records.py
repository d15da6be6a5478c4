"""The frozen values a store takes and returns: candidate records, winners, entries, writes.

Records are deeply immutable: their JSON fields (``measurement``, ``provenance``) are frozen into
read-only mappings and tuples, so a record returned by a store can be shared between threads and
cannot change what the store holds. ``to_json`` gives plain dicts back.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tritune.config import Config, as_config
from tritune.errors import StoreError
from tritune.outcome import Status
from tritune.store.keys import TuningKey


def now() -> float:
    """Unix seconds, the ``recorded_at`` clock."""
    return time.time()



def freeze_json(value: Any, where: str) -> Any:
    """A read-only copy of a JSON value; anything that is not JSON (or a non-finite float) is an error."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise StoreError(f"{where}: JSON object keys must be strings, got {k!r}")
            out[k] = freeze_json(v, f"{where}.{k}")
        return MappingProxyType(out)
    if isinstance(value, (list, tuple)):
        return tuple(freeze_json(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, float) and not math.isfinite(value):
        raise StoreError(
            f"{where}: {value} is not a finite number; record a failure as a Status, not inf/nan"
        )
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise StoreError(f"{where}: {value!r} ({type(value).__name__}) is not a JSON value")


def thaw_json(value: Any) -> Any:
    """Plain dicts and lists from a value made by :func:`freeze_json`."""
    if isinstance(value, Mapping):
        return {k: thaw_json(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw_json(v) for v in value]
    return value


def check_time(time_ms: float | None, status: Status, config: Config) -> float | None:
    """A record's time as a float when ``status`` is measured (a finite time >= 0 required), else None (none
    allowed); StoreError otherwise."""
    if status is Status.MEASURED:
        if time_ms is None or isinstance(time_ms, bool) or not isinstance(time_ms, (int, float)):
            raise StoreError(
                f"candidate {config.id} is measured but its time_ms is {time_ms!r}: give the time"
            )
        if not math.isfinite(time_ms) or time_ms < 0:
            raise StoreError(f"candidate {config.id} has time_ms={time_ms}; a failure is a Status, never inf")
        return float(time_ms)
    if time_ms is not None:
        raise StoreError(
            f"candidate {config.id} has status {status.value} and time_ms={time_ms}: only measured candidates "
            "carry a time"
        )
    return None


@dataclass(frozen=True)
class CandidateRecord:
    """One candidate's outcome at one key. ``time_ms`` is set exactly when ``status`` is ``measured``.

    ``measurement`` is the timing engine's JSON (samples, spread, ...), ``provenance`` who measured
    and how; ``recorded_at`` (unix seconds) is filled in by the store when left ``None``.
    """

    config: Config
    status: Status
    time_ms: float | None = None
    reason: str | None = None
    measurement: Mapping[str, Any] | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    recorded_at: float | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "config", as_config(self.config))
        set_(self, "status", Status(self.status))
        set_(self, "time_ms", check_time(self.time_ms, self.status, self.config))
        if self.reason is not None and not isinstance(self.reason, str):
            raise StoreError(f"candidate {self.config.id}: reason must be a string or None")
        where = f"candidate {self.config.id}"
        if self.measurement is not None:
            set_(self, "measurement", freeze_json(dict(self.measurement), f"{where} measurement"))
        set_(self, "provenance", freeze_json(dict(self.provenance), f"{where} provenance"))

    def stamped(self, now: float | None = None) -> CandidateRecord:
        """This record with ``recorded_at`` set (kept when already set)."""
        if self.recorded_at is not None:
            return self
        out = copy.copy(self)  # its fields are checked and frozen already: no __post_init__ again
        object.__setattr__(out, "recorded_at", time.time() if now is None else now)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config.to_json(),
            "status": self.status.value,
            "time_ms": self.time_ms,
            "reason": self.reason,
            "measurement": thaw_json(self.measurement),
            "provenance": thaw_json(self.provenance),
            "recorded_at": self.recorded_at,
        }


@dataclass(frozen=True)
class WinnerRecord:
    """The config chosen at one key, its time (``None`` when it was not timed) and its ties."""

    key: TuningKey
    config: Config
    time_ms: float | None
    #: Other configs whose time was indistinguishable from the winner's (sorted by id).
    ties: tuple[Config, ...] = ()
    provenance: Mapping[str, Any] = field(default_factory=dict)
    recorded_at: float | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "config", as_config(self.config))
        set_(self, "ties", tuple(sorted({as_config(c) for c in self.ties} - {self.config})))
        set_(self, "provenance", freeze_json(dict(self.provenance), f"winner {self.config.id} provenance"))

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config.to_json(),
            "time_ms": self.time_ms,
            "ties": [c.to_json() for c in self.ties],
            "provenance": thaw_json(self.provenance),
            "recorded_at": self.recorded_at,
        }


@dataclass(frozen=True)
class Write:
    """One key's part of a write: candidate records to upsert and, optionally, the new winner.

    ``winner=None`` leaves any stored winner unchanged. A winner (and each tie) must have a candidate
    record at this key, given here or stored before, with a usable status; otherwise the whole
    write is refused.
    """

    key: TuningKey
    candidates: tuple[CandidateRecord, ...] = ()
    winner: Config | None = None
    ties: tuple[Config, ...] = ()
    provenance: Mapping[str, Any] = field(default_factory=dict)
    recorded_at: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.key, TuningKey):
            raise StoreError(f"a store write needs a TuningKey, got {type(self.key).__name__}")
        cands = tuple(self.candidates)
        for c in cands:
            if not isinstance(c, CandidateRecord):
                raise StoreError(f"candidates must be CandidateRecord values, got {type(c).__name__}")
        ids = [c.config for c in cands]
        if len(set(ids)) != len(ids):
            raise StoreError(f"kernel {self.key.kernel}: one write lists a config twice")
        set_ = object.__setattr__
        set_(self, "candidates", cands)
        set_(self, "winner", None if self.winner is None else as_config(self.winner))
        set_(self, "ties", tuple(as_config(c) for c in self.ties))
        if self.winner is None and self.ties:
            raise StoreError(f"kernel {self.key.kernel}: ties given without a winner")
        set_(self, "provenance", freeze_json(dict(self.provenance), "write provenance"))

    def winner_record(self, stored: Mapping[Config, CandidateRecord], now: float) -> WinnerRecord | None:
        """The WinnerRecord this write sets, checked against ``stored`` (the key's candidates after it)."""
        if self.winner is None:
            return None
        for cfg in (self.winner, *self.ties):
            rec = stored.get(cfg)
            if rec is None:
                raise StoreError(
                    f"kernel {self.key.kernel} at {self.key.describe_key() or 'its key'}: the winner or tie "
                    f"{cfg.id} has no candidate record; record its result with it"
                )
            if not (rec.status.ok or rec.status is Status.NOT_TIMED):
                raise StoreError(
                    f"kernel {self.key.kernel}: {cfg.id} cannot win, its status is {rec.status.value}"
                    + (f" ({rec.reason})" if rec.reason else "")
                )
        return WinnerRecord(
            self.key, self.winner, stored[self.winner].time_ms, self.ties, self.provenance,
            self.recorded_at if self.recorded_at is not None else now,
        )  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """One stored key, for listing: its winner (if any) and how many candidates it holds."""

    key: TuningKey
    winner: WinnerRecord | None
    n_candidates: int
    n_measured: int


@dataclass(frozen=True)
class KernelSummary:
    """One kernel name in the store: how many keys, winners and candidate records it has."""

    kernel: str
    entries: int
    winners: int
    candidates: int


def summarize(entries: Iterable[Entry]) -> list[KernelSummary]:
    """Per-kernel counts of ``entries``, sorted by kernel name."""
    acc: dict[str, list[int]] = {}
    for e in entries:
        a = acc.setdefault(e.key.kernel, [0, 0, 0])
        a[0] += 1
        a[1] += e.winner is not None
        a[2] += e.n_candidates
    return [KernelSummary(k, *v) for k, v in sorted(acc.items())]


#: One key's stored state: its key, its winner (or None) and its candidate records.
Snapshot = tuple[TuningKey, "WinnerRecord | None", list[CandidateRecord]]
