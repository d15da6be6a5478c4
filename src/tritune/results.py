"""The result values every command produces, and their one JSON shape.

``verify``, ``screen`` and ``tune`` all write::

    {"tritune": "<version>", "command": "verify|screen|tune", "timing": "<what was timed, or why nothing>",
     "provenance": {...}, "workloads": [
        {"name": "gelu", "key": {"n": 4096}, ...per-command fields...,
         "candidates": [{"config": {...}, "status": "correct", "reason": null, ...per-command fields...}]}]}

Per-command candidate fields: verify adds ``max_abs_error`` and ``unwritten``; screen adds the resource
fields (``shared``, ``registers``, ``spilled_bytes``, ``threads``, ``blocks_per_sm``, ``limiter``);
tune adds ``measurement`` (see :class:`tritune.bench.Measurement`) and ``gbps``/``tflops`` when the
workload gives bytes or flops. Readers ignore fields they do not know.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritune.config import Config
from tritune.outcome import Status


def version() -> str:
    from tritune._version import __version__

    return __version__


@dataclass(frozen=True)
class CandidateResult:
    """One candidate's outcome in one command, with the command's own fields in ``extra``."""

    config: Config
    status: Status
    reason: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"config": self.config.to_json(), "status": self.status.value, "reason": self.reason}
        d.update(self.extra)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CandidateResult:
        extra = {k: v for k, v in d.items() if k not in ("config", "status", "reason")}
        return cls(Config.from_json(d["config"]), Status(d["status"]), d.get("reason"), extra)


@dataclass
class WorkloadResult:
    """All candidates of one workload at one key, plus the command's per-key fields in ``extra``."""

    name: str
    key: dict[str, Any]
    candidates: list[CandidateResult]
    extra: dict[str, Any] = field(default_factory=dict)

    def by_status(self, *statuses: Status) -> list[CandidateResult]:
        return [c for c in self.candidates if c.status in statuses]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.candidates:
            out[c.status.value] = out.get(c.status.value, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "key": self.key}
        d.update(self.extra)
        d["candidates"] = [c.to_json() for c in self.candidates]
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> WorkloadResult:
        extra = {k: v for k, v in d.items() if k not in ("name", "key", "candidates")}
        return cls(d["name"], dict(d["key"]), [CandidateResult.from_json(c) for c in d["candidates"]], extra)


@dataclass
class RunResult:
    """What one command produced: the ``timing`` sentence says plainly what was timed, or why nothing was."""

    command: str
    timing: str
    workloads: list[WorkloadResult]
    provenance: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"tritune": version(), "command": self.command, "timing": self.timing}
        if self.provenance:
            d["provenance"] = self.provenance
        d.update(self.extra)
        d["workloads"] = [w.to_json() for w in self.workloads]
        return d

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, default=_default)

    def write(self, path: str | Path) -> None:
        """Write the JSON to ``path`` (:func:`tritune.paths.write_output`: never through a symlink)."""
        from tritune.paths import write_output

        write_output(path, self.dumps() + "\n")

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunResult:
        extra = {k: v for k, v in d.items() if k not in ("tritune", "command", "timing", "provenance", "workloads")}
        return cls(
            d["command"],
            d.get("timing", ""),
            [WorkloadResult.from_json(w) for w in d.get("workloads", [])],
            dict(d.get("provenance", {})),
            extra,
        )

    @classmethod
    def load(cls, path: str | Path) -> RunResult:
        return cls.from_json(json.loads(Path(path).read_text()))


def _default(o: Any) -> Any:
    if isinstance(o, Config):
        return o.to_json()
    if isinstance(o, Status):
        return o.value
    to_json = getattr(o, "to_json", None)
    if callable(to_json):
        return to_json()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return str(o)


def ids(results: Sequence[CandidateResult]) -> list[str]:
    return [r.config.id for r in results]
