"""engine.loop.run_batches: batches from a SearchDriver, one race across them, outcomes told back.

FAKES: no compiling (compiler=None), a ``prepare`` that refuses one config as a binary the GPU would not
load, and SYNTHETIC times replayed by a ReplayTimer with 1% noise.
"""

from __future__ import annotations

import pytest

import tritune
from fake_compiling import FakeCompiling
from tritune.bench import Failure, ReplayTimer
from tritune.engine.finals import FINAL_LIMIT
from tritune.engine.loop import LocalField, Parts, run_batches
from tritune.engine.race import RaceOptions
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.search import SearchDriver, get
from tritune.space import Space


def search_and_race(driver, *, prepare, measure, options, compiler=None, finalists=(), stats=None, on_batch=None,
                    overlap=True, final=FINAL_LIMIT, recover=None, probe=None):
    """The batch loop in this process over a search driver (``run_batches`` with a ``LocalField``)."""
    return run_batches(driver, Parts(prepare, measure, options, compiler), field=LocalField(overlap), finalists=finalists,
                       final=final, stats=stats, on_batch=on_batch, recover=recover, probe=probe)


CONFIGS = [tritune.Config({"B": b, "C": c}) for b in range(8) for c in range(6)]
TIMES = {cfg: 1.0 + 0.05 * ((i * 11) % len(CONFIGS)) for i, cfg in enumerate(CONFIGS)}  # SYNTHETIC
BEST = min(TIMES, key=TIMES.__getitem__)
REFUSED = max(TIMES, key=TIMES.__getitem__)
OPTS = RaceOptions(brief_budget_s=0.001, round_budget_s=0.002)


def test_one_race_decides_across_batches_and_every_outcome_reaches_the_strategy() -> None:
    replay = ReplayTimer(Landscape.from_points("k", "synthetic", {}, [LandscapePoint(c, Status.MEASURED, t)
                                                                     for c, t in TIMES.items()]), noise=0.01, seed=1)  # fmt: skip
    timed: list[tritune.Config] = []

    def measure(config, budget_s):  # type: ignore[no-untyped-def]
        timed.append(config)
        return replay.measure_config(config, budget_s)

    def prepare(config):  # type: ignore[no-untyped-def]
        return Failure(Status.ILLEGAL, "FAKE: too much shared memory") if config == REFUSED else None

    strategy = get("random", Space.from_configs(CONFIGS), seed=3)
    driver = SearchDriver(strategy, 20, width=5, warm=[BEST, REFUSED])  # type: ignore[arg-type]
    seen: list[list[tritune.Config]] = []
    stats: dict = {}
    result = search_and_race(driver, prepare=prepare, measure=measure, options=OPTS, stats=stats,
                             on_batch=lambda batch, _: seen.append(list(batch)))  # fmt: skip
    assert result is not None
    assert [len(b) for b in seen] == [5, 5, 5, 5] and len(stats["batches"]) == 4
    tried = [c for b in seen for c in b]
    assert len(set(tried)) == 20 and BEST in seen[0] and REFUSED in seen[0]
    assert {o.config for o in result.outcomes} == set(tried)  # the race covers every batch
    assert result.winner == BEST
    # BEST came in the first batch and raced on against the later ones with the samples it had.
    assert result.outcome(BEST).timings > 1 and timed.count(BEST) > 1
    assert REFUSED not in timed and result.outcome(REFUSED).status is Status.ILLEGAL
    told = {o.config: o for o in strategy.history}
    assert told[REFUSED].status is Status.ILLEGAL and told[BEST].ok  # every outcome reached the strategy
    assert driver.why_stopped == "budget" and driver.spent == 20


def test_stored_finalists_race_again_without_being_told_twice() -> None:
    replay = ReplayTimer(Landscape.from_points("k", "synthetic", {}, [LandscapePoint(c, Status.MEASURED, t)
                                                                     for c, t in TIMES.items()]), noise=0.0, seed=1)  # fmt: skip
    strategy = get("random", Space.from_configs(CONFIGS), seed=0)
    driver = SearchDriver(strategy, 10, width=5, known=[(BEST, TIMES[BEST])])  # type: ignore[arg-type]
    result = search_and_race(driver, prepare=lambda c: None, measure=replay.measure_config, options=OPTS,
                             finalists=[BEST])  # fmt: skip
    assert result is not None and result.winner == BEST  # the stored winner raced with the new configs
    assert driver.resumed == 1 and driver.spent == 10  # the stored one is known, not proposed nor told again
    assert len(strategy.history) == 11 and sum(o.config == BEST for o in strategy.history) == 1


@pytest.mark.parametrize("overlap", [True, False])
def test_the_next_batch_compiles_while_the_last_compiles_of_this_one_finish(overlap: bool) -> None:
    """FAKE compile workers (tests/fake_compiling.py): each batch's last config is a straggler."""
    replay = ReplayTimer(Landscape.from_points("k", "synthetic", {}, [LandscapePoint(c, Status.MEASURED, t)
                                                                     for c, t in TIMES.items()]), noise=0.0, seed=1)  # fmt: skip
    started: list[FakeCompiling] = []
    at_start: list[int] = []

    def compiler(todo):  # type: ignore[no-untyped-def]
        at_start.append(len(started[-1].pending) if started else -1)
        started.append(FakeCompiling(list(todo), {todo[-1]: None}, workers=4))
        return started[-1]

    driver = SearchDriver(get("random", Space.from_configs(CONFIGS), seed=0), 12, width=4)  # type: ignore[arg-type]
    result = search_and_race(driver, prepare=lambda c: None, measure=replay.measure_config, options=OPTS,
                             compiler=compiler, overlap=overlap)  # fmt: skip
    assert result is not None and len(started) == 3 and driver.spent == 12
    # overlapped: batches 2 and 3 started while the previous batch's straggler was still compiling
    assert at_start == ([-1, 1, 1] if overlap else [-1, 0, 0])
    assert all(f.closed for f in started)


class DriftTimer:
    """FAKE timer of a GPU that heats: once ``hot`` is set every config reads 5% slower. Deterministic samples
    (0.1% jitter), so the race's decisions depend on the drift alone."""

    def __init__(self, times: dict[tritune.Config, float]) -> None:
        self.times = times
        self.hot = False
        self.calls = 0

    def measure(self, config: tritune.Config, budget_s: float):  # type: ignore[no-untyped-def]
        from tritune.bench.stats import Measurement

        self.calls += 1
        t = self.times[config] * (1.05 if self.hot else 1.0)
        samples = [t * (1 + 0.001 * ((k % 3) - 1)) for k in range(8)]
        return Measurement.from_samples(samples, elapsed_s=budget_s, extra={"timer": "FAKE drift"})


@pytest.mark.parametrize("final", [4, 0])
def test_the_final_race_re_times_the_best_together_so_drift_between_batches_does_not_pick(final: int) -> None:
    fast, slow_cool = tritune.Config({"B": 0, "C": 0}), tritune.Config({"B": 0, "C": 1})
    others = [tritune.Config({"B": 1, "C": 0}), tritune.Config({"B": 1, "C": 1})]
    times = {slow_cool: 1.03, others[0]: 1.20, fast: 1.00, others[1]: 1.30}  # SYNTHETIC: fast is 3% faster
    timer = DriftTimer(times)
    strategy = get("random", Space.from_configs(list(times)), seed=0)
    driver = SearchDriver(strategy, 4, width=2, warm=[slow_cool, others[0], fast, others[1]])  # type: ignore[arg-type]

    def heat(batch, _):  # type: ignore[no-untyped-def]
        timer.hot = True  # the second batch and everything after run on a hot GPU

    stats: dict = {}
    result = search_and_race(driver, prepare=lambda c: None, measure=timer.measure, options=OPTS, stats=stats,
                             on_batch=heat, final=final)  # fmt: skip
    assert result is not None
    if final:
        # fast read 1.05 hot against slow_cool's cool 1.03 and was dropped; timed together again, it wins
        assert result.winner == fast
        assert set(stats["final_race"]["configs"]) == {fast.id, slow_cool.id}
        assert stats["final_race"]["winner"] == fast.id
        assert result.outcome(fast).measurement.median_ms < result.outcome(slow_cool).measurement.median_ms  # type: ignore[union-attr]
        assert {o.config for o in result.outcomes} == set(times)  # every config keeps an outcome
    else:  # without it the batches' race keeps the config it only ever saw cool
        assert result.winner == slow_cool and "final_race" not in stats
    assert "ask_s" in stats and stats["ask_s"] >= 0


def test_after_the_final_race_only_its_configs_tie_with_its_winner() -> None:
    """The final race re-times the finalists on a hotter GPU (SYNTHETIC: +5%, from the end of the second batch);
    a config the batches timed cool only, not a finalist, must not tie with the final race's read of the winner (seen on an H200:
    one such config, the tie rule's pick for its fewer registers, was 1.06x the winner)."""
    from tritune.bench.ties import race_tie_report

    fast, near = tritune.Config({"B": 0, "C": 0}), tritune.Config({"B": 0, "C": 1})
    cool_only = tritune.Config({"B": 1, "C": 0})  # 1.035 cool: out of the final field (3% of 1.00)
    times = {fast: 1.00, near: 1.02, cool_only: 1.035}
    timer = DriftTimer(times)
    driver = SearchDriver(get("random", Space.from_configs(list(times)), seed=0), 3, width=2,
                          warm=[fast, cool_only, near])  # type: ignore[arg-type]  # fmt: skip
    stats: dict = {}
    result = search_and_race(driver, prepare=lambda c: None, measure=timer.measure, options=OPTS, stats=stats,
                             on_batch=lambda b, _: setattr(timer, "hot", near in b), final=4)  # fmt: skip
    assert result is not None and set(stats["final_race"]["configs"]) == {fast.id, near.id}
    assert set(result.decided_by) == {fast, near} and result.winner == fast
    # the final race read fast at 1.05 (hot): cool_only's 1.035 from the batch is below it
    assert result.outcome(cool_only).measurement.median_ms < result.winner_measurement.median_ms  # type: ignore[union-attr]
    tie = race_tie_report(result)
    assert tie is not None and cool_only not in tie.tied and tie.picked == fast
    # the same outcomes as if one race had measured them all: cool_only would tie, and be eligible
    from dataclasses import replace

    assert cool_only in race_tie_report(replace(result, decided_by=())).tied  # type: ignore[union-attr]
    assert "decided_by" in result.to_json()


class LookTimer:
    """FAKE timer, deterministic samples (0.1% jitter): ``first_look`` scales configs' times until ``later`` is set
    (a first race on a GPU in another state: clocks, heat)."""

    def __init__(self, times: dict[tritune.Config, float], first_look: dict[tritune.Config, float]) -> None:
        self.times, self.first_look, self.later = times, first_look, False

    def measure(self, config: tritune.Config, budget_s: float):  # type: ignore[no-untyped-def]
        from tritune.bench.stats import Measurement

        t = self.times[config] * (1.0 if self.later else self.first_look.get(config, 1.0))
        samples = [t * (1 + 0.001 * ((k % 3) - 1)) for k in range(8)]
        return Measurement.from_samples(samples, elapsed_s=budget_s, extra={"timer": "FAKE looks"})


def _transfer_driver() -> tuple[SearchDriver, tritune.Config, tritune.Config, dict[tritune.Config, float]]:
    """FAKE transfer: one tuned key whose winner ``leader`` ties at the new key with ``other`` (both 1.00,
    SYNTHETIC), every other config slower; an opening of 4, a budget of 8."""
    from tritune.search import KeyResults, TransferSearch

    space = Space({"BLOCK_M": [32, 64, 128, 256], "num_stages": [2, 3, 4, 5]})
    configs = space.configs()
    leader, other = configs[5], configs[6]
    times = {c: 1.0 if c in (leader, other) else 1.2 + 0.01 * i for i, c in enumerate(configs)}
    tuned = KeyResults({"M": 4096}, {c: t * (0.9 if c == leader else 1.0) for c, t in times.items()}, best=leader)
    s = TransferSearch(space, key={"M": 6144}, neighbours=[tuned], first=4)
    assert other in s.opening and leader in s.opening
    driver = SearchDriver(s, 8, width=4, warm=[leader], first=4, confirm=True)
    return driver, leader, other, times


@pytest.mark.parametrize("noise_only", [True, False])
def test_an_unconfirmed_opening_is_raced_again_and_a_confirming_second_look_ends_the_search(noise_only: bool) -> None:
    driver, leader, other, times = _transfer_driver()
    # SYNTHETIC: the first race reads the transferred winner 1.5% slow, outside the race's 1% resolution.
    # noise_only: it is that look's noise (later looks tie it with ``other``); else it is really 1.5% slower.
    if not noise_only:
        times = {**times, leader: 1.015}
    timer = LookTimer(times, {leader: 1.015 if noise_only else 1.0})
    stats: dict = {}
    result = search_and_race(driver, prepare=lambda c: None, measure=timer.measure, options=OPTS, stats=stats,
                             on_batch=lambda b, _: setattr(timer, "later", True))  # fmt: skip
    assert result is not None
    check = stats["check_race"]
    assert set(check["configs"]) == {leader.id, other.id}  # the best and the winner within 3% of it
    assert len(stats["batches"]) == (1 if noise_only else 2)
    if noise_only:
        # the second look pools with the first (1.5% and 0%): 0.75% behind, a tie: the transfer is confirmed,
        # the check race was of the final field, and no final race follows
        assert check["confirmed"] and driver.why_stopped == "confirmed" and driver.spent == 4
        assert "final_race" not in stats and set(result.decided_by) == {leader, other}
        assert result.winner in (leader, other)
    else:  # behind again: the search goes on, spends its budget, and the final race decides as before
        assert not check["confirmed"] and driver.why_stopped == "budget" and driver.spent == 8
        assert "final_race" in stats and result.winner == other



class CoolStartTimer:
    """FAKE GPU that reads every config 10% fast during the race's first round (its first ``cool`` looks) and true
    after; deterministic samples +-2%."""

    def __init__(self, times: dict[tritune.Config, float], cool: int) -> None:
        self.times, self.cool, self.calls = times, cool, 0

    def measure(self, config: tritune.Config, budget_s: float):  # type: ignore[no-untyped-def]
        from tritune.bench.stats import Measurement

        t = self.times[config] * (0.9 if self.calls < self.cool else 1.0)
        self.calls += 1
        return Measurement.from_samples([t * (1 + 0.02 * ((k % 3) - 1)) for k in range(8)], elapsed_s=budget_s)


@pytest.mark.parametrize("drift", [True, False])
def test_a_transfer_is_not_held_up_by_a_config_its_opening_dropped_on_a_cooler_gpu(drift: bool) -> None:
    driver, leader, other, times = _transfer_driver()
    # SYNTHETIC: ``other`` is really 6% slower than the tuned winner; timed first in a cool round 0 it reads 0.954,
    # ahead of the winner's later readings of 1.00. Round 0 puts it 6% behind the winner, and the race drops it.
    times = {**times, other: 1.06}
    timer = CoolStartTimer(times, cool=4)  # the opening's 4 configs, one brief look each
    stats: dict = {}
    opts = RaceOptions(brief_budget_s=0.001, round_budget_s=0.002, confirm_looks=1, drift=drift)
    result = search_and_race(driver, prepare=lambda c: None, measure=timer.measure, options=opts, stats=stats)
    assert result is not None and result.winner == leader
    if drift:  # its time is rescaled by the drift the winner saw: 1.06, behind the winner: confirmed at once
        assert driver.why_stopped == "confirmed" and "check_race" not in stats
        assert result.outcome(other).measurement.extra["drift_factor"] > 1.05  # type: ignore[union-attr]
    else:  # its stale 0.954 stays the best median, so the opening does not confirm and a check race is needed
        assert "check_race" in stats and stats["check_race"]["confirmed"]


@pytest.mark.parametrize(("confirm", "final"), [(True, 4), (False, 4), (True, 0)])
def test_a_transfers_opening_races_on_a_share_of_the_budget(confirm: bool, final: int) -> None:
    """Only a transfer's opening (a ``confirm`` driver's first batch) with a final race after it, which re-times
    its leaders, races on the smaller budget."""
    from tritune.engine.finals import OPENING_BUDGET

    driver, leader, _other, times = _transfer_driver()
    if not confirm:
        driver = SearchDriver(driver.strategy, 8, width=4, warm=[leader], first=4)
    flat = {c: 0.01 for c in times}  # SYNTHETIC: every config alike, so no race ends before its budget
    replay = ReplayTimer(Landscape.from_points("k", "synthetic", {}, [LandscapePoint(c, Status.MEASURED, t)
                                                                     for c, t in flat.items()]), noise=0.3, seed=2)  # fmt: skip
    opts = RaceOptions(brief_budget_s=0.001, round_budget_s=0.002, budget_per_candidate_s=0.02, confirm_looks=1)
    first_race: list[float] = []

    def on_batch(batch, result) -> None:  # type: ignore[no-untyped-def]
        first_race.append(result.device_s) if not first_race else None

    stats: dict = {}
    search_and_race(driver, prepare=lambda c: None, measure=replay.measure_config,
                    options=opts, stats=stats, on_batch=on_batch, final=final)  # fmt: skip
    share = OPENING_BUDGET if confirm and final > 1 else 1.0
    # the race stops at its first check past the budget: one round of 4 looks of 2 ms at most beyond it
    assert 4 * 0.02 * share <= first_race[0] + 1e-9 <= 4 * 0.02 * share + 4 * 0.002 + 1e-9
    assert stats["batches"][0].get("budget_per_candidate_s") == (pytest.approx(0.02 * share) if share < 1 else None)
