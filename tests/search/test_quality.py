"""Search quality on a FAKE multiplicative landscape (analytic, not GPU data): the model beats random."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tritune.config import Config
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.search.simulate import simulate


def fake_matmul_landscape() -> Landscape:
    """FAKE: product of per-parameter factors over log2 sizes, an smem cliff and 3% roughness."""
    rng = np.random.default_rng(0)
    points = []
    for bm, bn, bk, warps, stages in itertools.product(
        [32, 64, 128, 256], [32, 64, 128, 256], [32, 64, 128], [2, 4, 8], [2, 3, 4]
    ):
        c = Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=warps, num_stages=stages)
        if (bm + bn) * bk * 2 * stages > 160_000:
            points.append(LandscapePoint(c, Status.ILLEGAL, None))
            continue
        lm, ln, lw = math.log2(bm), math.log2(bn), math.log2(warps)
        t = (1 + 0.3 * (lm - 7) ** 2) * (1 + 0.2 * (ln - 7) ** 2) * (1 + 0.3 * (lw - (lm + ln - 11)) ** 2)
        t *= 1 + 0.2 / (stages - 1) + 0.05 * (bk == 32)
        points.append(LandscapePoint(c, Status.MEASURED, t * math.exp(rng.normal(0, 0.03))))
    return Landscape.from_points("fake_mm", "FAKE", {}, points)


@pytest.mark.parametrize("strategy", ["surrogate", "neighbourhood"])
def test_beats_random_at_a_quarter_budget(strategy: str) -> None:
    land = fake_matmul_landscape()
    rand = simulate(land, "random", 0.25, 10)
    smart = simulate(land, strategy, 0.25, 10)
    assert smart.median_best_ratio is not None and rand.median_best_ratio is not None
    assert smart.median_best_ratio <= rand.median_best_ratio
    if strategy == "surrogate":  # the default must meet the quality targets here
        assert smart.median_best_ratio <= 1.02
        assert smart.p90_best_ratio is not None and smart.p90_best_ratio <= 1.05
