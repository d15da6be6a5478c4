"""Value-list helpers for declaring parameters."""

from __future__ import annotations

from typing import Any

from tritune.errors import ConfigError


def pow2(lo: int, hi: int) -> list[int]:
    """Every power of 2 from ``lo`` to ``hi`` inclusive: ``pow2(128, 1024) == [128, 256, 512, 1024]``."""
    for name, v in (("lo", lo), ("hi", hi)):
        if not isinstance(v, int) or v < 1 or v & (v - 1):
            raise ConfigError(f"pow2({lo}, {hi}): {name}={v!r} is not a positive power of 2")
    if lo > hi:
        raise ConfigError(f"pow2({lo}, {hi}): lo is larger than hi")
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


def values(*vals: Any) -> list[Any]:
    """An explicit value list, de-duplicated in order."""
    out: list[Any] = []
    for v in vals:
        if v not in out:
            out.append(v)
    if not out:
        raise ConfigError("values() needs at least one value")
    return out
