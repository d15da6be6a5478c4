"""The pure state machine of one tuning key (no kernels): the token bucket, the decision rule, the merge."""

from __future__ import annotations

import pytest

from tritune.config import Config
from tritune.serving.state import GpuBudget, IncrementalOptions, KeyState, Proposal, merge

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


def test_each_key_spends_only_what_its_own_calls_earned_and_the_account_sums_them():
    total = GpuBudget(0.1, burst_calls=50)
    hot, rare = GpuBudget(0.1, 50, parent=total), GpuBudget(0.1, 50, parent=total)
    for _ in range(100):
        hot.earn(1.0)
    assert not rare.try_spend(0.5)  # the hot key's savings are not the rare key's
    assert hot.try_spend(2.0)
    hot.correct(2.0, 2.5)  # the check took longer than estimated
    rare.earn(1.0)
    assert total.earned_from_ms == pytest.approx(101.0) and total.spent_ms == pytest.approx(2.5)
    assert hot.extra_fraction == pytest.approx(2.5 / 100)


def test_a_check_sample_counts_and_the_next_check_is_estimated_from_the_last():
    st = KeyState([A, B], A, IncrementalOptions())
    assert st.check_estimate_ms() is None  # nothing timed yet: no check can be afforded
    st.sample(A, 1.0)
    assert st.check_estimate_ms() == pytest.approx(3.0)  # three real calls before any check was timed
    st.compiled(B)
    st.checked(B, None, ms=0.7)
    assert st.obs.samples[B] == [0.7]  # the scratch run is the candidate's first sample
    st.check_cost.append(1.9)
    assert st.check_estimate_ms() == pytest.approx(1.9)
    st.checked(C, "differs", ms=0.1)
    assert C not in st.obs.samples  # a disagreeing run is no timing


def test_one_outlier_first_check_does_not_set_the_estimate_the_kernels_estimate_votes():
    # H200: a key's first check measured 0.49 ms where the kernel's checks cost ~0.06 ms; with the
    # key's own checks alone as the estimate it saved up for 800 calls and was never promoted.
    st = KeyState([A, B, C], A, IncrementalOptions())
    st.sample(A, 0.01)
    st.check_calls = 6.0  # learned from the other keys' checks: 6 calls' worth, 0.06 ms here
    st.check_cost.append(0.49)
    assert st.check_estimate_ms() == pytest.approx(0.06)
    st.check_cost += [0.5, 0.52]  # this key's checks really are dearer: its own checks outvote the kernel's
    assert st.check_estimate_ms() == pytest.approx(0.49)


def test_a_candidate_joining_the_race_takes_max_samples_calls_in_a_row_then_takes_turns():
    st = KeyState([A, B], A, IncrementalOptions(min_samples=3, max_samples=4))
    assert [st.next_racer() for _ in range(10)] == [A] * 10
    st.compiled(B)
    st.checked(B, None)
    st.apply(st.propose())
    # B catches up by max_samples calls (enough to be eliminated or tie), not by all 10 A had, then turns.
    assert [st.next_racer() for _ in range(8)] == [B, B, B, B, A, B, A, B]


def test_candidates_joining_one_after_another_each_get_min_samples_soon():
    # The H200's RMSNorm bucket 17 (spin run): the provisional raced alone for 264 calls, then seven
    # candidates were checked over ~40 calls. Each joiner started max_samples below the *fewest* racer's
    # count, i.e. below the joiner before it, and the first joiners waited for every later one to climb to
    # them: two racers ended the 541-call stream with one sample each (their counts read "sent=232", "200").
    cfgs = [Config({"BLOCK": b}) for b in range(8)]
    opts = IncrementalOptions(min_samples=8, max_samples=32)
    st = KeyState(cfgs, cfgs[0], opts)
    joins = {61: 1, 66: 2, 69: 3, 70: 4, 72: 5, 73: 6, 75: 7}  # the default run's bucket 11 checked at these
    sent = {c: 0 for c in cfgs}
    for call in range(1, 76 + 7 * opts.min_samples):
        if call in joins:
            c = cfgs[joins[call]]
            st.compiled(c)
            st.checked(c, None)
            st.apply(st.propose())
        sent[st.next_racer()] += 1
    # 7 joiners x min_samples calls after the last join: every one of them had its min_samples calls.
    assert all(sent[c] >= opts.min_samples for c in cfgs[1:]), sent
    assert all(st.sent(c) == sent[c] for c in cfgs), (sent, {c: st.sent(c) for c in cfgs})  # real calls


def test_checks_follow_the_given_order_then_the_declared_one():
    st = KeyState([A, B, C], A, IncrementalOptions(), check_order=[C])
    for c in (B, C):
        st.compiled(c)
    st.apply(st.propose())
    assert st.check_order == [C, A, B] and st.next_check() == C


def test_a_check_dearer_than_burst_calls_saves_up_for_it_and_never_overspends():
    b = GpuBudget(0.1, burst_calls=5)  # burst: half a call's time; the bucket saves up for a 3 ms check
    checks = 0
    for i in range(1000):
        b.earn(1.0, hold_ms=3.0)
        if b.try_spend(3.0):  # every check costs three calls
            checks += 1
        assert b.spent_ms <= 0.1 * b.earned_from_ms + 1e-9, i  # never ahead of the fraction, at any call
    assert checks == 33  # one every 30 calls: exactly the fraction
    b2 = GpuBudget(0.1, burst_calls=5)
    for _ in range(1000):  # without hold_ms the bucket never holds a 3 ms check: none runs (no debt)
        b2.earn(1.0)
        assert not b2.try_spend(3.0)


def test_an_estimate_below_the_measured_cost_leaves_at_most_that_error_as_debt():
    b = GpuBudget(0.1, burst_calls=50)
    for _ in range(40):
        b.earn(1.0, hold_ms=3.0)
    assert b.try_spend(3.0)
    b.correct(3.0, 4.0)  # measured 4 ms: 1 ms of debt, no new check until it is repaid
    assert b.tokens_ms == pytest.approx(b.fraction * 40 - 4.0)
    assert b.spent_ms == pytest.approx(4.0) and b.extra_fraction == pytest.approx(0.1)


def test_the_resolver_thread_resolves_what_queued_up_in_one_batch():
    import threading

    from tritune.serving.runtime import Resolver

    gate = threading.Event()

    class GatedClock:  # FAKE clock: the first handle "resolves" only once the test opens the gate
        def elapsed_ms(self, handle):
            if handle == 0:
                gate.wait(10)
            return float(handle)

    got = []
    res = Resolver(GatedClock(), batch_s=0.001)
    for i in range(100):
        res.submit(i, got.append)
    gate.set()
    for _ in range(1000):
        if len(got) == 100:
            break
        threading.Event().wait(0.01)
    assert got == [float(i) for i in range(100)] and res.wakes == 1 and not res.errors


def test_the_resolver_calls_after_once_per_batch_and_at_the_end_of_a_poll():
    from tritune.serving.runtime import Resolver

    class Clock:  # FAKE clock: a handle is its own time
        def elapsed_ms(self, handle):
            return float(handle)

    got, batches = [], []
    res = Resolver(Clock(), thread=False, after=lambda: batches.append(len(got)))
    for i in range(5):
        res.submit(i, got.append)
    assert res.poll() == 5 and batches == [5]  # once, after all five callbacks


def test_the_decision_statistics_are_measurements_numbers():
    import random

    from tritune.bench.stats import Measurement
    from tritune.serving.state import _median_ci

    rng = random.Random(3)
    for n in (3, 7, 8, 9, 16, 31, 32):
        xs = [rng.lognormvariate(0, 0.2) for _ in range(n)]
        m = Measurement.from_samples(xs, confidence=0.99)
        assert _median_ci(sorted(xs), 0.99) == (m.median_ms, m.ci_low_ms, m.ci_high_ms) and m.n == n


def reference_propose(st: KeyState) -> Proposal:
    """The decision rule as it was written before the resolver's cost was cut: set comprehensions
    and a median-with-interval object per racer (the numbers of ``_median_ci``, which the test above holds to
    Measurement's; the observations here include NaN samples, which Measurement refuses). KeyState.propose must
    give the same proposal on any observations."""
    from types import SimpleNamespace

    from tritune.bench.stats import within
    from tritune.serving.state import _median_ci

    o, opts = st.obs, st.options
    gone = set(o.failed) | set(o.disagreed)
    ready = frozenset(c for c in st.configs if c in o.compiled and c not in gone)
    racing = frozenset(c for c in ready if c in o.checked)
    failed, disagreed = dict(o.failed), dict(o.disagreed)
    eliminated = set(st.applied.eliminated)
    samples = {c: list(o.samples[c]) for c in racing
               if len(o.samples.get(c, ())) >= opts.min_samples and c not in eliminated}  # fmt: skip
    alive = [c for c in st.configs if c in racing and c not in eliminated]
    settled = all(c in failed or c in disagreed or c in racing for c in st.configs)
    if len(alive) < 2 and not settled:
        return Proposal(ready, frozenset(alive), failed, disagreed, frozenset(eliminated))
    ms = {c: SimpleNamespace(**dict(zip(("median_ms", "ci_low_ms", "ci_high_ms"),
                                        _median_ci(sorted(samples[c]), opts.elimination_confidence))))
          for c in alive if c in samples}  # fmt: skip
    if len(ms) >= 2:
        bound = min(m.ci_high_ms for m in ms.values())
        eliminated |= {c for c, m in ms.items() if m.ci_low_ms > bound}
    alive = [c for c in alive if c not in eliminated]
    promoted, stop, ties = None, "", ()
    if settled and alive and all(c in ms for c in alive):
        leader = min(alive, key=lambda c: ms[c].median_ms)
        others = tuple(c for c in alive if c != leader)
        if not others:
            promoted, stop = leader, "decided"
        elif all(within(ms[leader], ms[c], opts.rel_tol) for c in others):
            promoted, stop, ties = leader, "tied", others
        elif all(len(samples[c]) >= opts.max_samples for c in alive):
            promoted, stop, ties = leader, "budget", others
    return Proposal(ready, frozenset(alive), failed, disagreed, frozenset(eliminated), promoted, stop, ties)


def test_propose_gives_the_reference_rules_proposal_on_random_observations():
    # propose makes one pass over the configs and reuses the last round's frozensets (the resolver's cost per
    # decision round); on random compiles, failures, checks, disagreements and samples (a few NaN) of keys of
    # 1-6 configs, every proposal is the reference rule's, through ties, budget stops and eliminations.
    import random

    rng = random.Random(11)
    stops: set[str] = set()
    eliminations = 0
    for _ in range(300):
        cfgs = [Config({"BLOCK": 2**i}) for i in range(rng.randint(1, 6))]
        opts = IncrementalOptions(min_samples=rng.choice([3, 8]), max_samples=rng.choice([8, 32]),
                                  rel_tol=rng.choice([1e-9, 0.02, 0.2]))  # fmt: skip
        st = KeyState(cfgs, rng.choice(cfgs), opts)
        mean = [rng.choice([1.0, 1.01, 1.1, 2.0]) for _ in cfgs]
        spread = rng.choice([0.01, 0.05, 0.3])
        for _ in range(rng.randint(1, 200)):
            r, i = rng.random(), rng.randrange(len(cfgs))
            if r < 0.08:
                st.compiled(cfgs[i], None if rng.random() < 0.8 else "no")
            elif r < 0.16:
                st.checked(cfgs[i], None if rng.random() < 0.85 else "differs", rng.choice([None, mean[i]]))
            elif r < 0.85:
                st.sample(cfgs[i], mean[i] * (1 + spread * rng.random()) if rng.random() < 0.99 else float("nan"))
            else:
                want, got = reference_propose(st), st.propose()
                assert got == want
                stops.add(got.stop)
                eliminations += bool(got.eliminated)
                st.apply(got)
    assert stops == {"", "decided", "tied", "budget"} and eliminations > 0


def test_a_config_declared_twice_is_one_candidate():
    st = KeyState([A, B, Config({"BLOCK": 1}), C], A, IncrementalOptions())
    assert st.configs == [A, B, C] and st.check_order == [A, B, C]


@pytest.mark.parametrize("wait_leader", [True, False])
def test_a_waiting_key_with_full_windows_serves_its_leader_untimed(wait_leader):
    """Two racers with full windows while C still waits for its check: the leader (B, the smaller window
    median) and its recent median; nothing while a window is short, nothing once nothing waits, nothing
    with ``wait_leader=False``."""
    opts = IncrementalOptions(min_samples=4, max_samples=8, wait_leader=wait_leader)
    st = KeyState([A, B, C], A, opts)
    st.compiled(B)
    st.checked(B, None)
    st.apply(st.propose())
    feed(st, A, 1.0, 8)
    feed(st, B, 0.5, 7)
    assert st.waiting_leader() is None  # B's window is one short
    feed(st, B, 0.5, 1)
    got = st.waiting_leader()
    if not wait_leader:
        assert got is None
        return
    assert got is not None and got[0] == B and got[1] == pytest.approx(0.5, rel=0.01)
    st.compiled(C)
    st.checked(C, None)
    st.apply(st.propose())
    st.calls += 10  # the cached leader is looked at again after a round of calls
    assert st.waiting_leader() is None  # nothing waits for a check any more: the race decides


def test_prune_spares_the_protected_configs():
    """A config that won at some tuned key is never pruned by a neighbour's timings (H200: the GEMM's
    winner at M = 1152 ran 1.56-1.69x the best at M = 1024, 0.17 away, and was pruned there)."""
    from tritune.serving.state import prune

    timings = {A: [1.0], B: [1.7], C: [1.05]}
    assert set(prune(timings, [A, B, C], 1.3, A, 0.17)) == {B}
    assert prune(timings, [A, B, C], 1.3, A, 0.17, protect=frozenset({B})) == {}


def test_a_tuning_keys_leader_is_protected_from_pruning_like_a_winner():
    """H200: M = 96's best config was pruned by M = 128's promotion while M = 64 still raced with it
    in the lead; M = 64 then won with it, and M = 96 was promoted 1.19x off (a pruned config is never restored)."""
    from tritune.serving.incremental import Incremental

    inc = Incremental(IncrementalOptions(min_samples=3), thread=False)
    racing = KeyState([A, B, C], A, inc.options)
    for c in (B, C):
        racing.compiled(c)
        racing.checked(c, None)
    racing.apply(racing.propose())
    assert racing.leader() is None  # nobody has min_samples samples yet
    feed(racing, A, 1.0, 3)
    feed(racing, B, 0.8, 3)
    feed(racing, C, 0.9, 2)
    assert racing.leader() == B
    inc.states[(64,)] = racing
    assert inc._protected({(32,): C}) == frozenset({B, C})


def test_checks_are_scheduled_against_a_share_of_the_bound():
    # A check is corrected to its measured cost only when its events resolve: the H200's RMSNorm stream ended at
    # 10.1% of a 10% bound when keys scheduled against all of it. Buckets earn CHECK_SHARE of the fraction.
    from tritune.serving.state import CHECK_SHARE

    opts = IncrementalOptions(gpu_fraction=0.1)
    assert 0.9 <= CHECK_SHARE < 1.0
    assert opts.spend_fraction == pytest.approx(0.1 * CHECK_SHARE)
    st = KeyState([A, B], A, opts)
    st.budget.earn(1.0)
    assert st.budget.tokens_ms == pytest.approx(0.1 * CHECK_SHARE)
    assert st.budget.tokens_ms < 0.1


@pytest.mark.parametrize("round_samples, racers, every", [(1, 1, 1), (1, 3, 3), (4, 2, 4), (4, 6, 6), (8, 3, 8)])
def test_a_decision_falls_due_every_max_round_samples_racers_samples(round_samples, racers, every):
    cfgs = [Config({"BLOCK": b}) for b in range(1, racers + 1)]
    st = KeyState(cfgs, cfgs[0], IncrementalOptions(round_samples=round_samples))
    for c in cfgs[1:]:
        st.compiled(c)
        st.checked(c, None)
    st.apply(st.propose())
    assert len(st.applied.racing) == racers
    due = [i for i in range(1, 4 * every + 1) if st.sample(cfgs[i % racers], 1.0 + 0.01 * (i % racers))]
    assert due == [every, 2 * every, 3 * every, 4 * every]


def test_round_samples_below_one_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="round_samples=0: expected 1"):
        IncrementalOptions(round_samples=0)


def test_the_provisional_config_is_ready_before_any_decision():
    st = KeyState([A, B], A, IncrementalOptions())
    assert st.applied.ready == {A} and st.applied.racing == {A}


def _noisy(st: KeyState, cfg: Config, ms: float, n: int, sd: float, seed: int) -> None:
    import random

    rng = random.Random(seed)
    for _ in range(n):
        st.sample(cfg, ms * (1 + rng.gauss(0.0, sd)))


def _two(decision: str, **kw: object) -> KeyState:
    st = KeyState([A, B], A, IncrementalOptions(min_samples=8, decision=decision, **kw))  # type: ignore[arg-type]
    st.compiled(B)
    st.checked(B, None)
    return st


def test_the_difference_rule_calls_a_tie_where_each_racers_own_interval_cannot():
    # Two configs 0.5% apart, 2% noise, 16 samples each: each median's 99% interval is ~+-1.6%, so the two
    # intervals cannot show the leader within 2% (they would need 32 samples); the difference's can.
    stops = {}
    for decision in ("intervals", "difference"):
        st = _two(decision)
        _noisy(st, A, 1.0, 16, 0.02, 1)
        _noisy(st, B, 1.005, 16, 0.02, 2)
        stops[decision] = st.propose().stop
    assert stops == {"intervals": "", "difference": "tied"}


def test_the_difference_rule_eliminates_a_slower_config_sooner():
    # 4% slower, 2% noise, 8 samples each: the two medians' own intervals (min to max at n = 8) still overlap,
    # the difference's interval (~+-3%) does not reach zero.
    out = {}
    for decision in ("intervals", "difference"):
        st = _two(decision)
        _noisy(st, A, 1.0, 8, 0.02, 1)
        _noisy(st, B, 1.04, 8, 0.02, 2)
        p = st.propose()
        out[decision] = (B in p.eliminated, A in p.eliminated)
    assert out == {"intervals": (False, False), "difference": (True, False)}


def test_the_indifference_rule_drops_a_config_that_cannot_be_rel_tol_faster():
    st = KeyState([A, B, C], A, IncrementalOptions(min_samples=8, decision="indifference"))
    for c in (B, C):
        st.compiled(c)
        st.checked(c, None)
    _noisy(st, A, 1.0, 24, 0.01, 1)
    _noisy(st, B, 1.003, 24, 0.01, 2)  # tied with A: one of the two is dropped (it cannot be 2% faster)
    _noisy(st, C, 0.99, 8, 0.2, 3)  # too noisy to say: kept
    p = st.propose()
    assert len(p.eliminated & {A, B}) == 1 and C not in p.eliminated and p.promoted is None
    st2 = KeyState([A, B, C], A, IncrementalOptions(min_samples=8, decision="difference"))
    st2.obs = st.obs  # the same samples: the difference rule alone keeps both
    assert not st2.propose().eliminated & {A, B}


def test_a_window_of_equal_samples_has_the_spread_floor_not_zero():
    st2 = _two("difference")
    for _ in range(8):
        st2.sample(A, 1.0)
        st2.sample(B, 1.001)
    p = st2.propose()  # 0.1% apart, each window constant: a tie, not an elimination
    assert p.stop == "tied" and not p.eliminated


def test_an_unknown_decision_rule_is_refused_with_the_choices():
    with pytest.raises(ValueError, match=r"decision=.median.*intervals, difference, indifference"):
        IncrementalOptions(decision="median")
