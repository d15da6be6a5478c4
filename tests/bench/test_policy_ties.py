"""Tie reports and the tie-breaking rule (a pure function), with timings from a labelled FAKE timer."""

from __future__ import annotations

import random

import pytest

from tritune.bench import Failure, Measurement, MeasurePolicy, TieCandidate, TieReport, break_tie, tie_report
from tritune.bench.ties import TIE_RULE, TIE_RULE_ID, race_tie_report, tied_with
from tritune.config import Config

# Same warps, so per-block and per-thread register counts rank alike; the per-block test makes its own.
A, B, C, D = (Config({"BLOCK": b}, num_warps=4) for b in (128, 256, 512, 1024))


def fake_timer(median_ms: float, spread: float = 0.002, n: int = 200, seed: int = 0) -> Measurement:
    """FAKE timer: ``n`` samples spread uniformly by ``spread`` (relative) around ``median_ms``."""
    rng = random.Random(seed)
    return Measurement.from_samples([median_ms * (1 + rng.uniform(-spread, spread)) for _ in range(n)])


def test_fewest_registers_first() -> None:
    a, b = Config({"BLOCK": 512}, num_warps=4), Config({"BLOCK": 1024}, num_warps=4)
    cands = [TieCandidate(a, 1.00, registers=64, shared=0), TieCandidate(b, 1.01, registers=32, shared=4096)]
    assert break_tie(cands) == b


def test_registers_are_counted_per_block_not_per_thread() -> None:
    """H200 softmax 4096x1024: w1 uses 48 registers per thread, w2 34; per block that is
    1,536 against 2,176, so w2's lower per-thread count is no saving, and the rule keeps w1 (which the long
    re-measurement put 1.2% ahead; per-thread counting had kept w2)."""
    w1, w2, w8 = (Config({"BLOCK_N": 1024}, num_warps=w) for w in (1, 2, 8))
    cands = [TieCandidate(w1, 6.117e-3, registers=48, shared=0), TieCandidate(w2, 6.123e-3, registers=34, shared=8)]
    assert break_tie(cands) == w1
    # Per block, 8 warps x 20 registers (5,120) is more than 1 warp x 48 (1,536).
    assert break_tie([TieCandidate(w8, 1.0, 20, 32), TieCandidate(w1, 1.0, 48, 0)]) == w1


def test_then_least_shared_memory() -> None:
    cands = [TieCandidate(A, 1.00, 32, 8192), TieCandidate(B, 1.01, 32, 1024), TieCandidate(C, 0.99, 32, None)]
    assert break_tie(cands) == B  # unknown shared memory ranks last


def test_then_best_under_the_other_policies() -> None:
    cands = [
        TieCandidate(A, 1.00, 32, 0, {"cold": 5.0, "graph": 1.9}),
        TieCandidate(B, 1.01, 32, 0, {"cold": 4.8, "graph": 1.8}),
        TieCandidate(C, 0.99, 32, 0, {"cold": 5.5}),  # graph unknown: only "cold" is shared by all
    ]
    assert break_tie(cands) == B
    # Without the other policies' times: the smallest median, then the id.
    assert break_tie([TieCandidate(A, 1.0), TieCandidate(B, 0.9)]) == B
    assert break_tie([TieCandidate(B, 1.0), TieCandidate(A, 1.0)]) == min(A, B, key=lambda c: c.id)


def test_rule_is_order_independent() -> None:
    cands = [TieCandidate(c, 1.0 + i / 100, 40 - 8 * (i % 2), 1024 * i) for i, c in enumerate([A, B, C, D])]
    picks = {break_tie(cands[i:] + cands[:i]) for i in range(4)}
    assert picks == {B}
    with pytest.raises(ValueError):
        break_tie([])


def test_tie_report_from_fake_measurements() -> None:
    meas = {A: fake_timer(1.000, seed=1), B: fake_timer(1.003, seed=2), C: fake_timer(1.001, seed=3)}
    facts = {A: {"registers": 64, "shared": 0}, B: {"registers": 40, "shared": 0}, C: {"registers": 40, "shared": 512}}
    rep = tie_report(meas, fastest=A, tied=[B, C], resolution=0.01, measure="graph", facts=facts)
    assert rep.is_tie and rep.tied == (A, C, B)  # fastest first, then by median
    assert rep.picked == B and rep.measure is MeasurePolicy.GRAPH
    assert rep.spread == pytest.approx(meas[B].median_ms / meas[A].median_ms - 1)
    line = rep.describe()
    assert "3 configs tied within 1.0% (graph" in line and f"picked {B.id}" in line and TIE_RULE in line
    assert TieReport.from_json(rep.to_json()) == rep


def test_clear_winner_is_no_tie() -> None:
    meas = {A: fake_timer(1.0)}
    rep = tie_report(meas, fastest=A, tied=[], resolution=0.01)
    assert not rep.is_tie and rep.picked == A and rep.spread == 0.0 and "wins clearly" in rep.describe()
    with pytest.raises(ValueError, match="tied must start with fastest"):
        TieReport(fastest=A, picked=B, tied=(A,), resolution=0.01)


def test_tied_with_uses_the_resolution() -> None:
    lead = fake_timer(1.000, seed=1)
    others = {B: fake_timer(1.004, seed=2), C: fake_timer(1.05, seed=3), D: fake_timer(1.0015, seed=4)}
    assert set(tied_with(lead, others, 0.01)) == {B, D}
    assert set(tied_with(lead, others, 0.06)) == {B, C, D}


def test_race_tie_report_from_a_race_with_a_fake_measure() -> None:
    """A real race over a FAKE ConfigMeasure (fixed times, 0.2% noise): three configs within 1%, one far off."""
    from tritune.engine.race import RaceOptions, race

    truth = {A: 1.000, B: 1.002, C: 1.001, D: 1.5}
    rng = random.Random(7)

    def fake_measure(config: Config, budget_s: float) -> Measurement | Failure:
        return Measurement.from_samples([truth[config] * (1 + rng.uniform(-0.002, 0.002)) for _ in range(50)],
                                        elapsed_s=budget_s)  # fmt: skip

    res = race([A, B, C, D], fake_measure, RaceOptions())
    rep = race_tie_report(res, "warm")
    assert rep is not None and rep.measure is MeasurePolicy.WARM and rep.resolution == 0.01
    assert set(rep.tied) == {A, B, C} and D not in rep.tied and rep.fastest == res.winner
    assert rep.picked == break_tie([TieCandidate(c, res.outcome(c).measurement.median_ms) for c in rep.tied])  # type: ignore[union-attr]
    assert race_tie_report(None) is None


def test_race_gives_near_ties_more_looks_before_it_stops() -> None:
    """FAKE ConfigMeasure: A is truly 2% faster than B, but A's first look reads 0.8% slow (a whole look off,
    each sample tight, as a short kernel's looks can be on the H200). With one look the race drops A; the
    confirmation looks of the configs within rel_tol of the leader find it."""
    from tritune.engine.race import RaceOptions, race

    looks: dict[Config, int] = {A: 0, B: 0, D: 0}
    rng = random.Random(3)

    def fake_measure(config: Config, budget_s: float) -> Measurement | Failure:
        looks[config] += 1
        t = {A: 1.008 if looks[A] == 1 else 0.98, B: 1.0, D: 1.3}[config]
        return Measurement.from_samples([t * (1 + rng.uniform(-0.001, 0.001)) for _ in range(50)], elapsed_s=budget_s)

    once = race([A, B, D], fake_measure, RaceOptions(confirm_looks=1))
    assert once.winner == B and once.outcome(A).eliminated_round == 0 and looks[A] == 1
    looks.update({A: 0, B: 0, D: 0})
    res = race([A, B, D], fake_measure, RaceOptions())
    assert res.winner == A and looks[A] >= 3 and looks[D] == 1  # the far-off config gets no extra look
    rep = race_tie_report(res, "graph")
    assert rep is not None and rep.picked == A and B not in rep.tied  # B is 2% slower: not a tie
    with pytest.raises(ValueError, match="confirm_looks"):
        RaceOptions(confirm_looks=0)


def test_only_ties_within_half_the_resolution_can_be_picked() -> None:
    """FAKE measurements: B (0.8% slower, fewest registers) is tied but too far to be picked; C (0.3%) is."""
    meas = {A: fake_timer(1.000, seed=1), B: fake_timer(1.008, seed=2), C: fake_timer(1.003, seed=3)}
    facts = {A: {"registers": 64}, B: {"registers": 24}, C: {"registers": 40}}
    rep = tie_report(meas, fastest=A, tied=[B, C], resolution=0.01, facts=facts)
    assert set(rep.tied) == {A, B, C} and rep.picked == C and rep.pick_within == pytest.approx(0.005)
    only_far = tie_report(meas, fastest=A, tied=[B], resolution=0.01, facts=facts)
    assert only_far.is_tie and only_far.picked == A  # the fastest is always eligible
    assert TieReport.from_json(rep.to_json()) == rep
    old = {k: v for k, v in rep.to_json().items() if k != "pick_within"}  # written before the half-resolution rule
    assert TieReport.from_json({**old, "rule": "registers,shared,other-policies,median,id"}).pick_within is None


def test_a_written_config_wins_a_tie_with_generated_ones_before_any_other_criterion() -> None:
    """A widened list: the written config, with more registers and a slower median, beats the generated ones it is
    tied with; among generated configs alone (a derived space) the registers rule decides as before."""
    w, g1, g2 = Config({"BLOCK": 128}), Config({"BLOCK": 64}), Config({"BLOCK": 256})
    cands = [TieCandidate(w, 1.002, 64, 0, written=True), TieCandidate(g1, 1.0, 32, 0, written=False),
             TieCandidate(g2, 1.001, 16, 0, written=False)]
    assert break_tie(cands) == w
    assert break_tie([TieCandidate(g1, 1.0, 32, 0, written=False), TieCandidate(g2, 1.001, 16, 0, written=False)]) == g2
    meas = {c: Measurement.from_samples([t] * 8, stop="budget") for c, t in ((g1, 1.0), (w, 1.004), (g2, 1.001))}
    rep = tie_report(meas, fastest=g1, tied=[w, g2], resolution=0.01, written={w})
    assert rep.picked == w and rep.rule == TIE_RULE_ID and "written" in TIE_RULE
    # beyond half the resolution the written config is tied but may not be picked: the fastest generated one is
    meas[w] = Measurement.from_samples([1.008] * 8, stop="budget")
    assert tie_report(meas, fastest=g1, tied=[w, g2], resolution=0.01, written={w}).picked == g1
