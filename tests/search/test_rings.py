"""RingSearch: a widened list searched outward from its written configs, a neighbour asked only where a config one
step nearer the list was measured near the best; the plan that picks it. FAKE times throughout."""

from __future__ import annotations

from tritune.config import Config
from tritune.engine.plan import RINGS, make_driver, plan
from tritune.outcome import Status
from tritune.search import RingSearch, get
from tritune.search.driver import SearchDriver
from tritune.search.rings import ADMIT_MARGIN, out_of_race, why_untimed
from tritune.space import Space


def c(block: int, warps: int = 4) -> Config:
    return Config({"BLOCK": block}, num_warps=warps)


# Two written configs and two rings: 64's neighbours 32 and 128, 512's 256 and 1024; then 16 (from 32), 2048 (from 1024)
WRITTEN = [c(64), c(512)]
ORIGINS = {c(32): (c(64),), c(128): (c(64),), c(256): (c(512),), c(1024): (c(512),),
           c(16): (c(32),), c(2048): (c(1024),)}  # fmt: skip
SPACE = Space.from_configs([*WRITTEN, c(32), c(128), c(256), c(1024), c(16), c(2048)])


def blocks(configs: list[Config]) -> list[int]:
    return [x.kwargs["BLOCK"] for x in configs]


def test_the_written_configs_come_first_and_a_neighbour_waits_for_its_origin() -> None:
    s = RingSearch(SPACE, origins=ORIGINS)
    assert blocks(s.ask(8)) == [64, 512]
    assert s.ask(8) == [] and not s.done()  # their neighbours wait for them
    s.tell(c(64), Status.MEASURED, 2.0)
    assert blocks(s.ask(8)) == [32, 128]  # 64 is the best so far: its ring is admitted
    s.tell(c(512), Status.MEASURED, 1.0)
    assert blocks(s.ask(8)) == [256, 1024]
    for b, t in ((32, 4.0), (128, 1.5), (256, 1.2), (1024, 0.9)):
        s.tell(c(b), Status.MEASURED, t)
    # the second ring: 2048 (from 1024, the best) admitted; 16 (from 32, 4.4x the best) never
    assert blocks(s.ask(8)) == [2048]
    s.tell(c(2048), Status.MEASURED, 1.0)
    assert s.done() and blocks(list(s.untimed())) == [16]
    assert s.untimed()[c(16)] == why_untimed([c(32)]) and "BLOCK=32" in s.untimed()[c(16)]


def test_a_config_only_a_little_slower_or_not_slower_with_confidence_keeps_its_neighbours_in() -> None:
    assert ADMIT_MARGIN == 0.20
    assert not out_of_race(1.15, (1.14, 1.16), 1.0, (0.99, 1.01))  # within the margin
    assert not out_of_race(1.30, (0.95, 1.60), 1.0, (0.99, 1.01))  # intervals overlap: not slower with confidence
    assert out_of_race(1.30, (1.28, 1.32), 1.0, (0.99, 1.01))
    assert out_of_race(1.10, (1.08, 1.12), 1.0, (0.99, 1.01), margin=0.05)  # a margin of one's own
    s = RingSearch(SPACE, origins=ORIGINS)
    s.ask(2)
    s.tell(c(64), Status.MEASURED, 1.30, ci=(0.95, 1.60))  # noisy: 30% slower, not with confidence
    s.tell(c(512), Status.MEASURED, 1.0, ci=(0.99, 1.01))
    assert blocks(s.ask(8)) == [32, 128, 256, 1024]
    tight = RingSearch(SPACE, origins=ORIGINS, margin=0.05)
    tight.ask(2)
    tight.tell(c(64), Status.MEASURED, 1.15, ci=(1.14, 1.16))  # 15%: in at 20%, out at 5%
    tight.tell(c(512), Status.MEASURED, 1.0, ci=(0.99, 1.01))
    assert blocks(tight.ask(8)) == [256, 1024]


def test_when_every_written_config_fails_every_config_is_admitted_in_order() -> None:
    s = RingSearch(SPACE, origins=ORIGINS)
    s.ask(8)
    s.tell(c(64), Status.COMPILE_FAILED)
    assert s.ask(8) == []  # 512 is still out: it may yet be measured
    s.tell(c(512), Status.INCORRECT)
    assert blocks(s.ask(3)) == [32, 128, 256]


def test_a_screened_out_origin_admits_nothing_and_the_registry_builds_the_strategy() -> None:
    s = get("rings", SPACE, illegal=[c(512)], origins=ORIGINS)
    assert isinstance(s, RingSearch) and blocks(s.ask(8)) == [64]
    s.tell(c(64), Status.MEASURED, 1.0)
    assert blocks(s.ask(8)) == [32, 128]
    for x in s.ask(8) or [c(32), c(128)]:
        s.tell(x, Status.MEASURED, 3.0)
    assert s.done() and "none legal" in s.untimed()[c(256)]


def test_the_plan_takes_rings_for_a_widened_list_unless_a_search_or_budget_is_named() -> None:
    p = plan(None, None, 10, widened=True)
    assert p is not None and p.strategy == RINGS and p.budget is None
    assert plan(None, None, 10) is None  # a list as written: raced whole
    assert plan("exhaustive", None, 10, widened=True) is None
    named = plan(None, "50%", 10, widened=True)
    assert named is not None and named.strategy != RINGS
    assert plan("random", None, 10, widened=True).strategy == "random"  # type: ignore[union-attr]


def test_a_rings_driver_has_no_budget_but_its_own_stop_and_no_transfer() -> None:
    p = plan(None, None, len(SPACE.configs()), widened=True)
    assert p is not None
    driver, info = make_driver(p, SPACE.configs(), width=16, key_values={"n": 4096}, origins=ORIGINS)
    assert isinstance(driver, SearchDriver) and info["budget"].startswith("none")
    times = {64: 2.0, 512: 1.0, 32: 4.0, 128: 2.5, 256: 1.5, 1024: 0.8, 2048: 0.7}
    rounds = 0
    while not driver.done:
        batch = driver.next_batch()
        assert batch, "a driver that is not done proposes"
        rounds += 1
        for x in batch:
            driver.record(x, times[x.kwargs["BLOCK"]])
    assert driver.why_stopped == "exhausted" and rounds == 3  # written, 512's ring, 2048
    # 64 (2x the best) is out of the race: its neighbours 32 and 128, and 16 beyond, are never compiled or timed
    assert blocks([o.config for o in driver.history]) == [64, 512, 256, 1024, 2048]
    assert driver.best is not None and driver.best.config == c(2048)


def test_every_neighbour_of_the_best_written_config_is_timed() -> None:
    """Whatever the times, the best written config's whole first ring is asked (its origin is the best)."""
    s = RingSearch(SPACE, origins=ORIGINS)
    s.ask(2)
    s.tell(c(64), Status.MEASURED, 9.0)
    s.tell(c(512), Status.MEASURED, 1.0)
    assert set(blocks(s.ask(8))) == {256, 1024}
