"""SearchDriver and the strategy's finals (``Strategy.finals``): a reserve held back, released once, counted.

FAKES: ``NeedleFinals`` is a FAKE strategy (it proposes in the space's stable order and, once its finals
are called, proposes a fixed 'needle' config first); times are a SYNTHETIC bowl.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from tritune.config import Config
from tritune.errors import SearchError
from tritune.outcome import Status
from tritune.search import get
from tritune.search.base import Strategy
from tritune.search.driver import CONFIRM, SearchDriver, finals_reserve
from tritune.search.surrogate import SurrogateSearch
from tritune.space import Space, pow2

SPACE = Space({"BM": pow2(32, 256), "BN": pow2(32, 256), "num_warps": [2, 4, 8]})  # 48 configs


class NeedleFinals(Strategy):
    """FAKE strategy: asks configs in stable order; ``finals(reserve)`` plans ``want`` probes, the first of
    them the ``needle`` (the LAST config in stable order, so the ordinary asks reach it only at the end)."""

    name = "fake-needle"

    def __init__(self, space: Space, *, want: int = 1, **kw: object) -> None:
        super().__init__(space, **kw)  # type: ignore[arg-type]
        self.want = want
        self.calls: list[tuple[int, int]] = []  # (reserve, evaluations told when called)
        self.needle = self.candidates[-1]
        self._plan = 0

    def wants_finals(self) -> bool:
        return self.want > 0

    def finals(self, reserve: int) -> int:
        self.calls.append((reserve, self.evaluations))
        self._plan = min(reserve, self.want)
        return self._plan

    def _propose(self, n: int) -> Sequence[Config]:
        free = self.unasked()
        out: list[Config] = []
        if self._plan and not self.is_asked(self.index[self.needle]):
            out.append(self.needle)
            self._plan = 0
        out += [self.candidates[i] for i in free if self.candidates[i] not in out][: n - len(out)]
        return out


def bowl(c: Config) -> float:
    """SYNTHETIC times: a bowl around BM=128, BN=128, 4 warps."""
    d = c.as_dict()
    return 1.0 + 0.3 * sum(abs(math.log2(d.get(k, v) / v)) for k, v in (("BM", 128), ("BN", 128), ("num_warps", 4)))


def drive(driver: SearchDriver, times=bowl) -> list[list[Config]]:  # type: ignore[no-untyped-def]
    batches = []
    while not driver.done:
        batch = driver.next_batch()
        assert batch, "a driver that is not done must give a batch"
        batches.append(batch)
        for c in batch:
            t = times(c)
            driver.record(c, (Status.MEASURED, t))
    return batches


def test_finals_reserve_is_the_simulators_share() -> None:
    assert CONFIRM == 0.15
    assert finals_reserve(20) == 3 and finals_reserve(100) == 15 and finals_reserve(4) == 1
    assert finals_reserve(3) == 0 and finals_reserve(None) == 0 and finals_reserve(40, 0.0) == 0
    assert finals_reserve(10, 0.9) == 5  # at most half


def test_the_reserve_is_held_back_and_finals_is_called_once_with_every_batch_back() -> None:
    s = NeedleFinals(SPACE, want=2)
    driver = SearchDriver(s, 20, width=4)
    assert driver.held == 3  # 15% of 20
    batches = drive(driver, lambda c: 0.5 if c == s.needle else bowl(c))  # the needle is the fastest
    # 17 evaluations first (4 + 4 + 4 + 4 + 1), then the reserve of 3 released in one batch.
    assert [len(b) for b in batches] == [4, 4, 4, 4, 1, 3]
    assert s.calls == [(3, 17)]  # once, with everything told
    assert batches[-1][0] == s.needle  # the probe came first in the batch after the finals
    seen = [c for b in batches for c in b]
    assert len(seen) == len(set(seen)) == 20 == driver.spent  # never proposed twice, counted
    summary = driver.summary()
    assert summary["evaluated"] == 20 and summary["measured"] == 20
    assert summary["finals"] == {"reserve": 3, "probes": 2, "at": 17}
    assert driver.best is not None and driver.best.config == s.needle


def test_no_reserve_without_a_strategy_that_wants_finals() -> None:
    s = NeedleFinals(SPACE, want=0)
    driver = SearchDriver(s, 20, width=4)
    assert driver.held == 0
    batches = drive(driver)
    assert [len(b) for b in batches] == [4] * 5 and s.calls == [] and driver.summary()["finals"] is None
    assert s.needle not in {c for b in batches for c in b}  # stable order never reaches it in 20


def test_no_batch_is_proposed_ahead_across_the_finals() -> None:
    """With batches out at the boundary, next_batch gives nothing until they are back (the finals must see
    every outcome), then the probes."""
    s = NeedleFinals(SPACE, want=1)
    driver = SearchDriver(s, 8, width=8)  # reserve 1: a first batch of 7
    first = driver.next_batch()
    assert len(first) == 7 and not driver.done
    assert driver.next_batch() == [] and s.calls == []  # still out: no finals yet
    for c in first:
        driver.record(c, bowl(c))
    assert driver.next_batch() == [s.needle] and s.calls == [(1, 7)]
    driver.record(s.needle, bowl(s.needle))
    assert driver.done and driver.why_stopped == "budget" and driver.spent == 8


def test_time_budgets_and_exhausted_spaces_have_no_probes() -> None:
    s = NeedleFinals(SPACE, want=3)
    assert SearchDriver(s, "10s", width=4).held == 0
    small = Space({"BM": [32, 64, 128]})
    tiny = NeedleFinals(small, want=3)
    driver = SearchDriver(tiny, 100, width=2)  # more than the space: exhausted before any reserve matters
    drive(driver)
    assert driver.why_stopped == "exhausted" and driver.spent == 3
    with pytest.raises(SearchError, match="finals"):
        SearchDriver(NeedleFinals(SPACE), 20, finals=1.0)


def test_surrogate_probe_wants_finals_and_its_probes_are_neighbours_of_the_ties() -> None:
    """The real SurrogateSearch with probe=1 under the driver: stored results (a tie pair at 1.3 ms and the far
    configs) teach it, three warm configs far from the ties take the main phase, and the reserve goes to
    untried neighbours of the ties, the bowl's best among them. probe=0 wants no finals."""
    assert not SurrogateSearch(SPACE).wants_finals() and SurrogateSearch(SPACE, probe=1).wants_finals()
    s = SurrogateSearch(SPACE, seed=0, probe=1.0, explore=0.0)
    at = {tuple(c.as_dict()[k] for k in ("BM", "BN", "num_warps")): c for c in s.candidates}
    needle = at[128, 128, 4]
    ties = [at[64, 128, 4], at[128, 64, 4]]
    coords = {c: s.grid.coords[s.index[c]] for c in s.candidates}
    far = [c for c in s.candidates if c not in ties and np.abs(coords[c] - coords[needle]).max() >= 2]
    known = [(c, (Status.MEASURED, bowl(c))) for c in ties + far]
    warm = [at[256, 256, w] for w in (2, 4, 8)]
    driver = SearchDriver(s, 6, width=4, known=known, warm=warm, finals=0.5)
    assert driver.held == 3 and driver.resumed == len(known)
    batches = drive(driver)
    assert batches[0] == warm and driver.finals == {"reserve": 3, "probes": 3, "at": 3}
    probes = batches[1]
    assert len(probes) == 3 and needle in probes
    for c in probes:
        step = np.abs(np.array([coords[t] for t in ties]) - coords[c])
        assert ((step.max(axis=1) <= 1) & (step.sum(axis=1) <= s.reach)).any(), f"{c.id} is no tie's neighbour"
    assert driver.best is not None and driver.best.config == needle and driver.spent == 6
    off = SearchDriver(get("surrogate", SPACE, seed=0), 6, width=4)
    assert off.held == 0


def test_parse_spec_reads_options_and_refuses_bad_ones() -> None:
    from tritune.search.registry import parse_spec

    assert parse_spec("surrogate") == ("surrogate", {})
    assert parse_spec("surrogate:probe=1,model=ridge,clip=null") == (
        "surrogate",
        {"probe": 1, "model": "ridge", "clip": None},
    )
    with pytest.raises(SearchError, match="unknown search strategy 'nope'"):
        parse_spec("nope:probe=1")
    with pytest.raises(SearchError, match="key=value"):
        parse_spec("surrogate:probe")
