"""Landscapes: recorded timings of every candidate at one key, format ``tritune.landscape/1``.

::

    {"format": "tritune.landscape/1", "kernel": "mm", "device": "NVIDIA H200", "key": {"M": 4096, ...},
     "results": [{"config": {"kwargs": {...}, "num_warps": 8, "num_stages": 4}, "status": "measured", "time_ms": 0.1888},
                 {"config": {...}, "status": "illegal", "time_ms": null}]}

``measure`` names the measurement policy the times were taken under (:mod:`tritune.measure`); a
landscape without it was recorded before policies existed, with the L2 flushed before each launch, and
reads back as ``cold``, the default.

Other fields (``provenance``, a per-result ``reason``, ...) may be present; readers ignore what they do not know.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritune.config import Config
from tritune.errors import ConfigError
from tritune.measure import DEFAULT_POLICY, MeasurePolicy
from tritune.outcome import Status

FORMAT = "tritune.landscape/1"


@dataclass(frozen=True)
class LandscapePoint:
    config: Config
    status: Status
    time_ms: float | None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"config": self.config.to_json(), "status": self.status.value, "time_ms": self.time_ms}
        if self.reason:
            d["reason"] = self.reason
        return d


@dataclass
class Landscape:
    kernel: str
    device: str
    key: dict[str, Any]
    points: list[LandscapePoint]
    provenance: dict[str, Any] = field(default_factory=dict)
    measure: MeasurePolicy = DEFAULT_POLICY

    def __post_init__(self) -> None:
        self.measure = MeasurePolicy.parse(self.measure, where=f"landscape {self.kernel} measure")
        self._index = {p.config: p for p in self.points}

    def lookup(self, config: Config) -> LandscapePoint | None:
        return self._index.get(config)

    @property
    def configs(self) -> list[Config]:
        return [p.config for p in self.points]

    @property
    def measured(self) -> list[LandscapePoint]:
        return [p for p in self.points if p.status is Status.MEASURED and p.time_ms is not None]

    @property
    def best(self) -> LandscapePoint:
        return min(self.measured, key=lambda p: p.time_ms or float("inf"))

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"format": FORMAT, "kernel": self.kernel, "device": self.device, "key": self.key,
                             "measure": self.measure.value}
        if self.provenance:
            d["provenance"] = self.provenance
        d["results"] = [p.to_json() for p in self.points]
        return d

    def write(self, path: str | Path) -> None:
        """Write the JSON to ``path`` (:func:`tritune.paths.write_output`: never through a symlink)."""
        from tritune.paths import write_output

        write_output(path, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, source: str = "landscape") -> Landscape:
        if d.get("format") != FORMAT:
            raise ConfigError(f"{source}: format is {d.get('format')!r}, expected {FORMAT!r}")
        points = []
        for i, r in enumerate(d.get("results", [])):
            try:
                status = Status(r["status"])
                t = r.get("time_ms")
                points.append(
                    LandscapePoint(Config.from_json(r["config"]), status, None if t is None else float(t), r.get("reason"))
                )
            except (KeyError, ValueError, TypeError) as e:
                raise ConfigError(f"{source}: results[{i}] is malformed: {e}") from None
        measure = MeasurePolicy.parse(d.get("measure", DEFAULT_POLICY.value), where=f"{source}: measure")
        return cls(str(d.get("kernel", "")), str(d.get("device", "")), dict(d.get("key", {})), points,
                   dict(d.get("provenance", {})), measure)

    @classmethod
    def load(cls, path: str | Path) -> Landscape:
        return cls.from_json(json.loads(Path(path).read_text()), source=str(path))

    @classmethod
    def from_points(cls, kernel: str, device: str, key: Mapping[str, Any], points: Iterable[LandscapePoint],
                    measure: MeasurePolicy | str = DEFAULT_POLICY) -> Landscape:  # fmt: skip
        return cls(kernel, device, dict(key), list(points), measure=MeasurePolicy.parse(measure))
