"""The pure state machine of one tuning key (no kernels): the token bucket, the decision rule, the merge."""

from __future__ import annotations

import pytest

from tritune.config import Config
from tritune.tune.serving_state import GpuBudget, IncrementalOptions, KeyState, Proposal, merge

A, B, C = (Config({"BLOCK": b}) for b in (1, 2, 3))


def test_bucket_earns_a_fraction_caps_bursts_and_goes_into_debt():
    b = GpuBudget(0.1, burst_calls=5)
    assert not b.try_spend(0.05)  # nothing earned yet
    for _ in range(100):
        b.earn(1.0)
    assert b.tokens_ms == pytest.approx(0.5)  # capped at 5 calls' worth
    assert b.try_spend(0.4) and not b.try_spend(0.4)
    b.correct(0.4, 1.0)  # the scratch run took longer than estimated: debt
    assert b.tokens_ms < 0 and b.spent_ms == pytest.approx(1.0)
    assert b.extra_fraction == pytest.approx(1.0 / 100)


def feed(st: KeyState, cfg: Config, ms: float, n: int) -> None:
    for i in range(n):
        st.sample(cfg, ms * (1 + 0.001 * (i % 3)))


def test_no_promotion_while_a_candidate_is_unsettled_then_decided():
    st = KeyState([A, B, C], A, IncrementalOptions(min_samples=4))
    st.compiled(B)
    st.checked(B, None)
    feed(st, A, 1.0, 8)
    feed(st, B, 0.5, 8)
    p = st.propose()
    assert A in p.eliminated and p.promoted is None  # C is still compiling
    st.apply(p)
    st.compiled(C, "no such luck")
    p = st.propose()
    assert p.promoted == B and p.stop == "decided" and C in p.failed


def test_ties_within_rel_tol_are_ties():
    st = KeyState([A, B], A, IncrementalOptions(min_samples=4, rel_tol=0.05))
    st.compiled(B)
    st.checked(B, None)
    feed(st, A, 1.0, 8)
    feed(st, B, 1.001, 8)
    p = st.propose()
    assert p.stop == "tied" and {p.promoted, *p.ties} == {A, B}


def test_round_robin_by_dispatch_count():
    st = KeyState([A, B, C], A, IncrementalOptions())
    for c in (B, C):
        st.compiled(c)
        st.checked(c, None)
    st.apply(st.propose())
    assert [st.next_racer() for _ in range(6)] == [A, B, C, A, B, C]


def test_merge_needs_every_rank_and_takes_rank_zeros_promotion():
    p0 = Proposal(frozenset({A, B, C}), frozenset({A, B}), {}, {}, frozenset({C}), B, "decided")
    p1 = Proposal(frozenset({A, B}), frozenset({A, B}), {}, {C: "differs"}, frozenset(), None)
    m = merge([p0, p1], [A, B, C])
    assert m.ready == {A, B} and m.racing == {A, B} and m.promoted == B and C in m.disagreed
    m2 = merge([p1, p0], [A, B, C])  # rank 0 promotes nothing: nobody does
    assert m2.promoted is None
