"""Transfer between keys: neighbours' winners first, their landscape as the prior; checked on FAKE landscapes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tritune.config import Config
from tritune.errors import SearchError
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.search import KeyResults, TransferSearch, get
from tritune.search.simulate_transfer import key_results, simulate_transfer
from tritune.search.transfer import key_distance
from tritune.space import Space, pow2

SPACE = Space(
    {"BM": pow2(16, 256), "BN": pow2(16, 256), "num_warps": [1, 2, 4, 8], "num_stages": [1, 2, 3, 4]}
)


def fake_family(sizes: list[int], seed: int = 0) -> list[Landscape]:
    """FAKE: one kernel at several sizes; the optimum tile grows slowly with size, plus 2% roughness."""
    out = []
    for size in sizes:
        rng = np.random.default_rng([seed, size])
        points = []
        best_tile = 6 + 0.5 * math.log2(size)
        for c in SPACE:
            d = c.as_dict()
            lt = (math.log2(d["BM"]) - best_tile) ** 2 + 0.5 * (math.log2(d["BN"]) - 6) ** 2
            lt += 0.3 * (math.log2(d["num_warps"]) - 2) ** 2 + 0.05 * (d["num_stages"] - 3) ** 2
            points.append(LandscapePoint(c, Status.MEASURED, math.exp(0.2 * lt + rng.normal(0, 0.02))))
        out.append(Landscape.from_points("fake_family", "FAKE", {"size": size}, points))
    return out


def test_key_distance_is_log2_and_symmetric() -> None:
    assert key_distance({"M": 4096}, {"M": 8192}) == 1.0
    assert key_distance({"M": 4096, "dtype": "fp16"}, {"M": 1024, "dtype": "bf16"}) == 3.0
    assert key_distance({"M": 1}, {"M": 1}) == 0.0


def test_the_nearest_winner_is_asked_first_and_the_prior_leads() -> None:
    fam = fake_family([1, 2, 8])
    near, far = key_results(fam[1]), key_results(fam[2])
    s = TransferSearch(SPACE, key={"size": 1}, neighbours=[far, near], seed=0)
    first = s.ask(2)
    assert first == [near.winner(), far.winner()]
    with pytest.raises(SearchError, match="at least one tuned key"):
        TransferSearch(SPACE, key={"size": 1}, neighbours=[])


def test_transfer_reaches_the_bound_in_a_quarter_of_a_cold_search() -> None:
    rows = simulate_transfer(fake_family([1, 2, 4, 8]), budget=0.5, seeds=4)
    fractions = [r.fraction for r in rows]
    assert all(f is not None for f in fractions), rows
    assert float(np.median([f for f in fractions if f is not None])) <= 0.25, rows
    assert all(r.transfer_median is not None and r.transfer_median <= 1.02 for r in rows), rows


def test_transfer_is_registered_and_keeps_the_strategy_contract() -> None:
    fam = fake_family([1, 2])
    s = get("transfer", SPACE, seed=1, key={"size": 2}, neighbours=[key_results(fam[0])])
    seen: list[Config] = []
    while not s.done() and len(seen) < 40:
        for c in s.ask(7):
            seen.append(c)
            s.tell(c, Status.MEASURED, fam[1].lookup(c).time_ms)  # type: ignore[union-attr]
    assert len(seen) == len(set(seen)) >= 40
    assert isinstance(s, TransferSearch)
    stored = KeyResults({"size": 4}, {Config({"BM": 3}, num_warps=4, num_stages=3): 1.0})
    with pytest.raises(SearchError, match="nothing to transfer"):
        TransferSearch(SPACE, key={"size": 2}, neighbours=[stored])
