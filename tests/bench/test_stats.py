"""Statistics of a Measurement, checked against known distributions and hand-worked examples."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritune.bench.stats import (
    Measurement,
    clearly_slower,
    median_ci,
    median_ci_ranks,
    overlaps,
    relative_halfwidth,
    within,
)

REQUIRED_JSON = {"median_ms", "mean_ms", "min_ms", "q1_ms", "q3_ms", "ci_low_ms", "ci_high_ms", "n", "stop"}


@pytest.mark.parametrize(
    ("n", "ranks"),
    # 1-based textbook ranks for the 95% interval of a median: n=10 -> (2, 9), n=30 -> (10, 21), n=100 -> (40, 61)
    [(10, (1, 8)), (30, (9, 20)), (100, (39, 60))],
)
def test_median_ci_ranks_match_binomial_tables(n: int, ranks: tuple[int, int]) -> None:
    lo, hi, coverage = median_ci_ranks(n)
    assert (lo, hi) == ranks
    assert coverage >= 0.95


def test_coverage_is_exact_binomial_and_at_least_requested() -> None:
    for n in range(6, 400, 7):
        lo, _, coverage = median_ci_ranks(n)
        exact = 1 - 2 * sum(math.comb(n, i) for i in range(lo + 1)) / 2**n
        assert coverage == pytest.approx(exact, abs=1e-9)
        assert coverage >= 0.95
        # one rank narrower would fall below 95%
        narrower = 1 - 2 * sum(math.comb(n, i) for i in range(lo + 2)) / 2**n
        assert narrower < 0.95


def test_too_few_samples_report_their_true_coverage() -> None:
    assert median_ci_ranks(5) == (0, 4, pytest.approx(1 - 2 / 32))
    assert median_ci_ranks(1)[:2] == (0, 0)


def test_normal_approximation_for_large_n_is_continuous_with_exact() -> None:
    lo_e, hi_e, _ = median_ci_ranks(5000)
    lo_a, hi_a, cov_a = median_ci_ranks(5001)
    assert abs(lo_e - lo_a) <= 1 and abs(hi_e - hi_a) <= 2
    assert cov_a >= 0.95 and cov_a < 0.96
    lo, hi, cov = median_ci_ranks(100_000)
    assert cov >= 0.95 and (hi - lo) == pytest.approx(1.96 * math.sqrt(100_000), rel=0.01)


@pytest.mark.parametrize("dist", ["normal", "lognormal", "exponential"])
@pytest.mark.parametrize("n", [15, 60])
def test_interval_covers_true_median_about_95_percent(dist: str, n: int) -> None:
    rng = np.random.default_rng(1234)
    trials = 2000
    if dist == "normal":
        data, true_median = rng.normal(5.0, 1.0, (trials, n)), 5.0
    elif dist == "lognormal":
        data, true_median = rng.lognormal(0.0, 0.5, (trials, n)), 1.0
    else:
        data, true_median = rng.exponential(1.0, (trials, n)), math.log(2)
    hits = 0
    for row in data:
        lo, hi = median_ci(row.tolist())
        hits += lo <= true_median <= hi
    expected = median_ci_ranks(n)[2]
    sd = math.sqrt(expected * (1 - expected) / trials)
    assert abs(hits / trials - expected) < 4 * sd, (hits / trials, expected)
    assert hits / trials > 0.93


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.001, 1000.0), min_size=1, max_size=200))
def test_summary_matches_numpy(samples: list[float]) -> None:
    m = Measurement.from_samples(samples)
    a = np.asarray(samples)
    assert m.n == len(samples)
    assert m.median_ms == pytest.approx(float(np.median(a)))
    assert m.mean_ms == pytest.approx(float(a.mean()))
    assert m.min_ms == min(samples)
    assert m.q1_ms == pytest.approx(float(np.percentile(a, 25)))
    assert m.q3_ms == pytest.approx(float(np.percentile(a, 75)))
    assert m.ci_low_ms <= m.median_ms <= m.ci_high_ms
    assert m.iqr_ms == pytest.approx(m.q3_ms - m.q1_ms)


def test_known_samples() -> None:
    m = Measurement.from_samples([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (m.median_ms, m.mean_ms, m.min_ms, m.q1_ms, m.q3_ms) == (3.0, 3.0, 1.0, 2.0, 4.0)
    assert (m.ci_low_ms, m.ci_high_ms) == (1.0, 5.0)  # n=5: the widest interval, below 95%


def test_stop_is_converged_only_when_interval_meets_rel_tol() -> None:
    tight = [1.0 + 0.0001 * i for i in range(50)]
    assert Measurement.from_samples(tight, rel_tol=0.01).stop == "converged"
    assert Measurement.from_samples(tight, rel_tol=0.01, min_samples=100).stop == "budget"
    wide = [1.0, 2.0, 3.0, 4.0] * 10
    m = Measurement.from_samples(wide, rel_tol=0.01)
    assert m.stop == "budget" and not m.converged()
    assert m.rel_halfwidth == pytest.approx(relative_halfwidth(wide))
    assert Measurement.from_samples(wide, stop="converged").stop == "converged"  # the timer may decide


def test_json_has_the_report_writers_fields_and_round_trips() -> None:
    m = Measurement.from_samples([1.0, 1.1, 0.9, 1.05, 0.95, 1.02], elapsed_s=0.5, extra={"timer": "event"})
    d = m.to_json()
    assert REQUIRED_JSON <= set(d)
    assert "samples" not in d and d["timer"] == "event"
    back = Measurement.from_json(json.loads(json.dumps(d)))
    assert back.samples == ()
    assert back.to_json() == d
    full = Measurement.from_json(m.to_json(samples=True))
    assert full == m
    with pytest.raises(ValueError, match="stop"):
        Measurement.from_json({**d, "stop": "maybe"})
    with pytest.raises(ValueError, match="malformed"):
        Measurement.from_json({"median_ms": 1.0})


def test_failures_are_not_numbers() -> None:
    with pytest.raises(ValueError, match="Status"):
        Measurement.from_samples([1.0, math.inf])
    with pytest.raises(ValueError):
        Measurement.from_samples([])


def test_merged_pools_samples() -> None:
    a = Measurement.from_samples([1.0, 2.0, 3.0], elapsed_s=1.0)
    b = Measurement.from_samples([4.0, 5.0], elapsed_s=2.0)
    ab = a.merged(b)
    assert ab.n == 5 and ab.median_ms == 3.0 and ab.elapsed_s == 3.0
    with pytest.raises(ValueError, match="samples"):
        Measurement.from_json(a.to_json()).merged(b)


def _m(lo: float, med: float, hi: float) -> Measurement:
    return Measurement((), 10, med, med, lo, lo, hi, lo, hi, "budget")


def test_comparisons() -> None:
    fast, slow, close = _m(0.99, 1.0, 1.01), _m(1.1, 1.12, 1.14), _m(1.0, 1.005, 1.012)
    assert clearly_slower(slow, fast) and not clearly_slower(fast, slow)
    assert not overlaps(fast, slow) and overlaps(fast, close)
    assert not clearly_slower(close, fast)
    assert within(close, fast, 0.03) and not within(close, fast, 0.01)
    assert not within(slow, fast, 0.1)
