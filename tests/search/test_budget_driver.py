"""Budget.parse, SearchDriver (batches, resume from stored results, warm starts, why it stopped), ties."""

from __future__ import annotations

import itertools
import math

import pytest

from tritune.bench.stats import Measurement
from tritune.config import Config
from tritune.errors import SearchError
from tritune.outcome import Status
from tritune.search import get
from tritune.search.base import Budget
from tritune.search.driver import SearchDriver
from tritune.space import Space, pow2

SPACE = Space({"BLOCK": pow2(16, 1024), "num_warps": [1, 2, 4, 8], "num_stages": [1, 2, 3]})  # 84


def fake_time(c: Config) -> float:
    """FAKE landscape: a bowl in log2(BLOCK) and log2(warps), best at BLOCK=256, 4 warps, 2 stages."""
    d = c.as_dict()
    return (
        1.0
        + (math.log2(d["BLOCK"]) - 8) ** 2
        + (math.log2(d["num_warps"]) - 2) ** 2
        + 0.1 * abs(d["num_stages"] - 2)
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("25%", Budget(share=0.25)),
        ("0.25", Budget(share=0.25)),
        (0.25, Budget(share=0.25)),
        ("1.0", Budget(share=1.0)),
        ("200", Budget(evaluations=200)),
        (200, Budget(evaluations=200)),
        ("1", Budget(evaluations=1)),
        ("90s", Budget(seconds=90.0)),
        ("1.5m", Budget(seconds=90.0)),
        ("25%+120s", Budget(share=0.25, seconds=120.0)),
        ("50, 30s", Budget(evaluations=50, seconds=30.0)),
    ],
)
def test_budget_parse_forms(text: str | float, expected: Budget) -> None:
    assert Budget.parse(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "0", "-3", "150%", "2.5", "0s", "10%+20%", "True", True])
def test_budget_parse_rejects_with_the_forms_named(text: object) -> None:
    with pytest.raises(SearchError, match="budget"):
        Budget.parse(text)  # type: ignore[arg-type]


def test_budget_share_resolves_against_the_space() -> None:
    assert Budget.parse("25%").resolve(84) == Budget(evaluations=21)
    assert Budget.parse("25%").resolve(1) == Budget(evaluations=1)
    assert Budget(share=0.5, evaluations=10).resolve(84) == Budget(evaluations=10)
    with pytest.raises(SearchError, match="resolve"):
        Budget.parse("25%").exhausted(3, 0.0)


def run(driver: SearchDriver, seen: list[Config] | None = None) -> None:
    while not driver.done:
        batch = driver.next_batch()
        assert batch, "a driver that is not done must give a batch"
        assert len(batch) <= driver.width
        for c in batch:
            if seen is not None:
                seen.append(c)
            driver.record(c, (Status.MEASURED, fake_time(c)))


def test_driver_spends_the_budget_in_batches_and_says_why_it_stopped() -> None:
    driver = SearchDriver(get("surrogate", SPACE, seed=1), "25%", width=8)
    assert driver.budget == Budget(evaluations=21)
    seen: list[Config] = []
    run(driver, seen)
    assert driver.why_stopped == "budget" and driver.spent == 21 == len(seen) == len(set(seen))
    assert driver.next_batch() == []
    s = driver.summary()
    assert s["evaluated"] == 21 and s["stopped"] == "budget" and s["best"] == driver.best.config.id  # type: ignore[union-attr]


def test_driver_exhausts_a_small_space() -> None:
    small = Space({"BLOCK": [64, 128, 256]})
    driver = SearchDriver(get("random", small), "100", width=2)
    run(driver)
    assert driver.why_stopped == "exhausted" and driver.spent == 3


def test_driver_stops_on_time_with_a_fake_clock() -> None:
    now = [0.0]  # FAKE clock: each recorded outcome takes 10 s
    driver = SearchDriver(get("random", SPACE), "25s", width=1, clock=lambda: now[0])
    while not driver.done:
        for c in driver.next_batch():
            now[0] += 10.0
            driver.record(c, fake_time(c))
    assert driver.why_stopped == "time" and driver.spent == 3


def test_resume_continues_where_the_last_budget_stopped() -> None:
    first = SearchDriver(get("surrogate", SPACE, seed=2), "10", width=4)
    run(first)
    stored = [(o.config, (o.status, o.time_ms)) for o in first.history]
    second = SearchDriver(get("surrogate", SPACE, seed=2), "30", width=4, known=stored)
    assert second.resumed == 10
    seen: list[Config] = []
    run(second, seen)
    assert second.spent == 30, "stored results must not spend the new budget"
    assert not set(seen) & {c for c, _ in stored}, "a stored config was proposed again"
    assert second.best is not None and second.best.time_ms <= first.best.time_ms  # type: ignore[union-attr]


def test_warm_start_tries_neighbour_winners_first() -> None:
    warm = [
        Config({"BLOCK": 256}, num_warps=4, num_stages=2),
        Config({"BLOCK": 512}, num_warps=4, num_stages=2),
    ]
    driver = SearchDriver(get("surrogate", SPACE, seed=3), "6", width=4, warm=[*warm, warm[0]])
    first = driver.next_batch()
    assert first[:2] == warm and len(first) == 4 and len(set(first)) == 4


def test_record_takes_a_measurement_and_its_interval_reaches_the_strategy() -> None:
    strategy = get("surrogate", SPACE, seed=0)
    driver = SearchDriver(strategy, "4", width=4)
    batch = driver.next_batch()
    for k, c in enumerate(batch):
        m = Measurement.from_samples([1.0 + 0.01 * k + 0.002 * j for j in range(21)])
        driver.record(c, m)
    assert strategy.noise > 0  # type: ignore[attr-defined]
    with pytest.raises(SearchError, match="not out in a batch"):
        driver.record(batch[0], 1.0)


def test_ties_are_the_times_inside_the_best_interval() -> None:
    s = get("random", SPACE, seed=0)
    a, b, c, e = s.ask(4)
    s.tell(a, Status.MEASURED, 1.00, ci=(0.98, 1.02))
    s.tell(b, Status.MEASURED, 1.015, ci=(0.995, 1.035))  # inside a's interval: a tie
    s.tell(c, Status.MEASURED, 1.03, ci=(1.01, 1.05))  # intervals overlap, but 1.03 is outside a's
    s.tell(e, Status.MEASURED, 1.10, ci=(1.08, 1.12))  # clearly slower
    assert [o.config for o in s.ties()] == [a, b]  # type: ignore[attr-defined]
    assert s.noise == pytest.approx(0.02, rel=0.05)  # type: ignore[attr-defined]
    with pytest.raises(SearchError, match="low <= time_ms"):
        d = s.ask(1)[0]
        s.tell(d, Status.MEASURED, 1.0, ci=(1.01, 1.02))


def test_a_batch_as_wide_as_the_pool_is_diverse() -> None:
    """ask(16) after the start must spread over the space, not fill one neighbourhood."""
    space = Space(
        {
            "BM": [32, 64, 128, 256],
            "BN": [32, 64, 128, 256],
            "BK": [32, 64, 128],
            "num_warps": [2, 4, 8],
            "num_stages": [2, 3, 4],
        }
    )  # 432
    s = get("surrogate", space, seed=0)
    for c in s.ask(24):
        d = c.as_dict()
        s.tell(c, Status.MEASURED, 1 + abs(math.log2(d["BM"] * d["BN"]) - 14) + 0.1 * d["num_stages"])
    batch = s.ask(16)
    assert len(batch) == 16 and len(set(batch)) == 16
    dicts = [c.as_dict() for c in batch]
    # not 16 copies of one neighbourhood: several tile shapes, and configs far apart on the grid
    assert len({(d["BM"], d["BN"]) for d in dicts}) >= 4
    far = max(
        sum(abs(math.log2(x[k]) - math.log2(y[k])) for k in ("BM", "BN", "BK", "num_warps"))
        for x, y in itertools.combinations(dicts, 2)
    )
    assert far >= 4


def test_the_batch_penalty_spreads_a_batch_further_than_the_plain_ranking() -> None:
    """Averaged over seeds, diversity=1 spreads ask(16) wider (grid distance) than diversity=0."""
    from tritune.search.surrogate import SurrogateSearch

    space = Space(
        {"BM": [32, 64, 128, 256], "BN": [32, 64, 128, 256], "BK": [32, 64, 128], "num_warps": [2, 4, 8]}
    )

    def spread(diversity: float) -> float:
        total = 0.0
        for seed in range(4):
            s = SurrogateSearch(space, seed=seed, diversity=diversity, explore=0.0)
            for c in s.ask(16):
                d = c.as_dict()
                s.tell(c, Status.MEASURED, 1 + abs(math.log2(d["BM"] * d["BN"]) - 14) + 0.1 * d["num_warps"])
            batch = s.ask(12)
            u = s._unit[[s.index[c] for c in batch]]
            total += float(sum(abs(x - y).sum() for x, y in itertools.combinations(u, 2)))
        return total

    assert spread(1.0) > spread(0.0)


def test_run_search_resolves_a_share_against_the_strategy_space() -> None:
    from tritune.search import run_search

    result = run_search(
        get("random", SPACE, seed=0), lambda c: (Status.MEASURED, fake_time(c)), Budget.parse("25%")
    )
    assert result.evaluations == math.ceil(0.25 * 84) and result.stopped == "budget"


def test_driver_resumes_failures_and_measurements_and_takes_transfer() -> None:
    from tritune.search import KeyResults, TransferSearch

    configs = SPACE.configs()
    neighbour = KeyResults({"n": 2}, {c: fake_time(c) * 1.1 for c in configs})
    strategy = TransferSearch(SPACE, key={"n": 1}, neighbours=[neighbour], seed=0)
    stored = [
        (configs[0], Status.COMPILE_FAILED),
        (configs[1], Measurement.from_samples([2.0, 2.1, 2.2, 2.0, 2.1])),
    ]
    driver = SearchDriver(strategy, "12", width=6, known=stored)
    assert driver.resumed == 2
    first = driver.next_batch()
    assert first[0] == neighbour.winner() and configs[0] not in first and configs[1] not in first
    for c in first:
        driver.record(c, fake_time(c))
    run(driver)
    assert driver.spent == 12 and driver.best is not None
    known_times = [o.time_ms for o in driver.history if o.time_ms is not None] + [2.1]  # + the stored median
    assert driver.best.time_ms == min(known_times)


def test_a_measurement_whose_interval_reaches_below_zero_is_read_as_its_median() -> None:
    """A cold graph timing of a 1.6 us kernel on an H100 gave a positive median with samples down to -39 us; told
    to a strategy its interval failed the search (``SearchError``), and a record stored that way would fail every
    tuning resumed from it. The driver reads such a measurement, stored or recorded, as its median alone (FAKE
    samples); a sound interval is still told."""
    rings = get("rings", SPACE, seed=0)
    configs = SPACE.configs()
    bad = Measurement.from_samples([-0.039, 0.0016, 0.0017, 0.0016, 0.0018])
    assert bad.median_ms > 0 and bad.ci_low_ms < 0
    driver = SearchDriver(rings, "10", width=4, known=[(configs[0], bad)])
    assert driver.resumed == 1 and driver.strategy.interval(driver.strategy.best()) == (bad.median_ms, bad.median_ms)
    batch = driver.next_batch()
    driver.record(batch[0], bad)  # recorded too: no SearchError
    good = Measurement.from_samples([1.0, 1.1, 0.9, 1.0, 1.05])
    driver.record(batch[1], good)
    obs = next(o for o in driver.strategy.history if o.config == batch[1])
    lo, hi = driver.strategy.interval(obs)
    assert lo < good.median_ms < hi  # told: a point would be (median, median)
    told_bad = next(o for o in driver.strategy.history if o.config == batch[0])
    assert driver.strategy.interval(told_bad) == (bad.median_ms, bad.median_ms)


def batch_sizes(driver: SearchDriver) -> list[int]:
    sizes = []
    while not driver.done:
        batch = driver.next_batch()
        assert batch
        sizes.append(len(batch))
        for c in batch:
            driver.record(c, (Status.MEASURED, fake_time(c)))
    return sizes


@pytest.mark.parametrize(("budget", "rounds", "sizes"), [
    ("21", None, [16, 5]),  # no rounds: batches as wide as the pool
    ("21", 6, [4, 4, 4, 4, 4, 1]),  # 21 evaluations allow fewer than 6 rounds of 16: ceil(21 / 6) = 4
    ("21", 30, [1] * 21),  # never narrower than one config
    ("84", 4, [16] * 5 + [4]),  # 84 allow 5 rounds of 16 >= 4: the pool's width
])  # fmt: skip
def test_rounds_narrow_the_batches_of_a_small_budget_only(budget: str, rounds: int | None, sizes: list[int]) -> None:
    driver = SearchDriver(get("random", SPACE, seed=0), budget, width=16, rounds=rounds)
    assert batch_sizes(driver) == sizes
    assert driver.summary()["width"] == 16 and driver.summary()["batch"] == max(sizes)


def test_rounds_count_the_budget_less_the_finals_reserve_and_keep_the_transfers_first_batch() -> None:
    # surrogate:probe=1 wants finals: 15% of 40 = 6 held back, so 34 searched in rounds of ceil(34 / 8) = 5.
    strategy = get("surrogate", SPACE, seed=0, probe=1)
    assert strategy.wants_finals()
    driver = SearchDriver(strategy, "40", width=16, rounds=8)
    assert driver.held == 6 and driver.batch_width == 5
    sizes = batch_sizes(driver)
    assert sum(sizes) == 40 and max(sizes) == 5 and driver.finals is not None
    # first= still caps only the first batch; the later ones follow the rounds.
    driver = SearchDriver(get("random", SPACE, seed=0), "21", width=16, first=2, rounds=6)
    assert batch_sizes(driver)[:3] == [2, 4, 4]


def test_rounds_leave_a_time_budget_at_the_pools_width_and_refuse_nonsense() -> None:
    now = [0.0]  # FAKE clock
    driver = SearchDriver(get("random", SPACE), "25s", width=8, rounds=6, clock=lambda: now[0])
    assert driver.batch_width == 8 and len(driver.next_batch()) == 8
    for bad in (0, -1, True, 2.5):
        with pytest.raises(SearchError, match="rounds"):
            SearchDriver(get("random", SPACE), "21", width=8, rounds=bad)  # type: ignore[arg-type]
