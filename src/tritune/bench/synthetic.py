"""Synthetic landscapes: made-up timings with a known best, for testing tuning logic on CPU.

Nothing here was measured. A synthetic landscape says so in its ``device`` and ``provenance`` fields.
Its configs follow the chapter's GELU space (BLOCK x num_warps x num_stages); the fastest config is
``best_ms``, the runners-up sit at the relative gaps given in ``near`` (so a test controls how hard the
best is to tell apart), and the rest are log-uniformly ``min_gap`` to ``spread`` slower.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence

from tritune.config import Config
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status

SYNTHETIC_DEVICE = "synthetic (made-up timings, no GPU)"


def synthetic_configs(n: int) -> list[Config]:
    """``n`` distinct configs from BLOCK 2^5..2^20 x num_warps {1..16} x num_stages {1, 3, 4}."""
    space = itertools.product(
        [2**p for p in range(7, 15)] + [2**p for p in (5, 6, 15, 16, 17, 18, 19, 20)],
        [1, 2, 4, 8, 16],
        [1, 3, 4],
    )
    configs = [Config({"BLOCK": b}, num_warps=w, num_stages=s) for b, w, s in itertools.islice(space, n)]
    if len(configs) < n:
        raise ValueError(f"synthetic_configs makes at most {len(configs)} configs, asked for {n}")
    return configs


def synthetic_landscape(
    n: int = 80,
    *,
    seed: int = 0,
    best_ms: float = 0.0061,
    near: Sequence[float] = (0.005, 0.015, 0.03),
    min_gap: float = 0.05,
    spread: float = 3.0,
    failures: Mapping[Status, int] | None = None,
) -> Landscape:
    """A made-up landscape of ``n`` configs with a unique, known best (``landscape.best``).

    ``near`` are the relative gaps of the runners-up (0.005 = 0.5% slower than the best); the other
    measured configs are ``min_gap`` to ``spread`` times slower, log-uniformly. ``failures`` maps a
    failure status to how many configs carry it (they have no time). Config order is shuffled by ``seed``.
    """
    failures = dict(failures or {})
    n_failed = sum(failures.values())
    if any(g <= 0 for g in near) or min_gap <= 0 or spread <= min_gap:
        raise ValueError("gaps must be positive and spread > min_gap")
    if n < 1 + len(near) + n_failed:
        raise ValueError(f"n={n} is too small for a best, {len(near)} runners-up and {n_failed} failures")
    rng = random.Random(seed)
    configs = synthetic_configs(n)
    rng.shuffle(configs)
    times: list[float] = [best_ms] + [best_ms * (1.0 + g) for g in near]
    lo, hi = math.log1p(min_gap), math.log1p(spread)
    n_rest = n - len(times) - n_failed
    times += [best_ms * math.exp(rng.uniform(lo, hi)) for _ in range(n_rest)]
    points = [
        LandscapePoint(c, Status.MEASURED, t) for c, t in zip(configs[: len(times)], times, strict=True)
    ]
    rest = configs[len(times) :]
    for status, count in failures.items():
        if status.ok:
            raise ValueError(f"{status.value} is not a failure status")
        for _ in range(count):
            c = rest.pop()
            points.append(LandscapePoint(c, status, None, f"{c.id}: synthetic {status.value}"))
    rng.shuffle(points)
    land = Landscape.from_points("synthetic", SYNTHETIC_DEVICE, {"n": 1 << 20}, points)
    land.provenance = {"synthetic": True, "seed": seed, "best_ms": best_ms, "near": list(near)}
    return land
