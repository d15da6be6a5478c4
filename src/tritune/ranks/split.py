"""Deterministic work splits: which rank measures which candidate.

Every rank computes the same split from the same list, with no communication: items are put in a
canonical order (by their id) first, so the order in which a rank built its list does not matter.
Two ways to deal them out:

* round-robin (default): item ``i`` of the sorted list goes to rank ``i % world``;
* by cost, when ``cost(item)`` estimates its tuning time: longest first, each to the least loaded
  rank, lower rank on equal load (the LPT rule, within 4/3 of the best possible makespan).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tritune.config import Config, as_config
from tritune.errors import ConfigError, DistributedError


def _check_rank(rank: int, world: int) -> None:
    if world < 1 or not 0 <= rank < world:
        raise DistributedError(f"rank {rank} is not a rank of a group of {world}; need 0 <= rank < world")


def assign(ids: Sequence[str], world: int, cost: Sequence[float] | None = None) -> list[int]:
    """The rank of each id (same order as ``ids``); ``cost`` (one per id) selects the LPT rule."""
    if world < 1:
        raise DistributedError(f"world size must be >= 1, got {world}")
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise ConfigError(f"work items must be distinct; listed more than once: {', '.join(dup[:3])}")
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    out = [0] * len(ids)
    if cost is None:
        for pos, i in enumerate(order):
            out[i] = pos % world
        return out
    if len(cost) != len(ids) or any(not math.isfinite(c) or c < 0 for c in cost):
        raise ConfigError("cost must give one finite, non-negative estimate per item")
    load = [0.0] * world
    for i in sorted(order, key=lambda i: -cost[i]):  # stable: equal costs keep id order
        r = min(range(world), key=lambda r: (load[r], r))
        out[i] = r
        load[r] += cost[i]
    return out


def split_configs(
    configs: Iterable[Any], rank: int, world: int, *, cost: Callable[[Config], float] | None = None
) -> list[Config]:
    """The configs rank ``rank`` of ``world`` measures, in config-id order (see the module docstring)."""
    _check_rank(rank, world)
    cfgs = [as_config(c) for c in configs]
    ids = [c.id for c in cfgs]
    ranks = assign(ids, world, None if cost is None else [float(cost(c)) for c in cfgs])
    return sorted((c for c, r in zip(cfgs, ranks, strict=True) if r == rank), key=lambda c: c.id)


def split_by_width(configs: Sequence[Config], widths: Sequence[int], rank: int) -> list[Config]:
    """The configs rank ``rank`` handles when rank ``r`` has a compile pool of ``widths[r]`` workers: in
    config-id order, each goes to the rank with the least work per worker (lower rank on equal), so a
    batch as wide as the pools' sum fills every pool once. Deterministic on every rank, no communication."""
    world = len(widths)
    _check_rank(rank, world)
    if any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in widths):
        raise DistributedError(f"compile pool widths must be positive integers, got {list(widths)}")
    load = [0] * world
    mine = []
    for c in sorted(configs, key=lambda c: c.id):
        r = min(range(world), key=lambda r: (load[r] / widths[r], r))
        load[r] += 1
        if r == rank:
            mine.append(c)
    return mine
