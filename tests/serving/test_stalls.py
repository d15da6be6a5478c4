"""What the H200's serving stream showed and the replays missed: spans stretched by other threads, budgets,
and why a key is not promoted. Pure logic with labelled FAKES (no kernel runs, no GPU clock)."""

from __future__ import annotations

import pytest
from incremental_fakes import FakeCompiles, serve_one_key

from tritune.config import Config
from tritune.serving.incremental import Incremental
from tritune.serving.state import GpuBudget, IncrementalOptions, KeyState

A, B, C = (Config({"BLOCK": b}) for b in (1, 2, 3))
TIMES = {64: 0.050, 128: 0.030, 256: 0.060, 512: 0.040}


class StallingClock:
    """FAKE clock: a launch of a config "takes" ``TIMES[BLOCK]`` ms; a span started with ``start(None)`` (a
    check's copies or comparison) 0.005 ms. The spans numbered in ``stretch`` (counting every span from 0)
    are stretched by ``wait_ms``: the FAKE host clock ``host()`` advances by the same wait, as the caller's
    ``perf_counter`` would while another thread held the interpreter's lock."""

    def __init__(self, stretch: set[int], wait_ms: float = 5.0) -> None:
        self.stretch, self.wait_ms = stretch, wait_ms
        self.now = 0.0
        self.n = 0

    def host(self) -> float:
        return self.now

    def start(self, cfg: Config | None) -> Config | None:
        return cfg

    def stop(self, token: Config | None) -> float:
        ms = 0.005 if token is None else TIMES[token.kwargs["BLOCK"]]
        if self.n in self.stretch:
            ms += self.wait_ms
            self.now += self.wait_ms / 1e3
        self.n += 1
        return ms

    def elapsed_ms(self, handle: float) -> float:
        return handle

    def capturing(self) -> bool:
        return False


def serve(clock: StallingClock, calls: int) -> tuple[Incremental, int | None]:
    """One key, four configs; the call at which it promoted (None: still tuning after ``calls``)."""
    return serve_one_key(clock, list(TIMES), calls, host=clock.host)  # type: ignore[no-any-return]


def first_check_span(calls: int = 200) -> int:
    """The number of the first check's copies span in an unstretched run (the spans are deterministic)."""
    clock = StallingClock(set())
    seen: list[int] = []
    stop = clock.stop

    def spy(token: Config | None) -> float:
        if token is None and not seen:
            seen.append(clock.n)
        return stop(token)

    clock.stop = spy  # type: ignore[method-assign]
    serve(clock, calls)
    return seen[0]


def test_a_check_stretched_by_another_thread_neither_sets_the_estimate_nor_stalls_the_key():
    # Unstretched, this key promotes within ~100 calls. Its first check's copies span stretched by 5 ms
    # (the H200: a 0.21 ms copies span, a 15 ms call): charged at face value, the key owed 5 ms at 5 us of
    # earnings a call, and its next check was estimated at 5 ms: no promotion in 1,500 calls.
    _, clean = serve(StallingClock(set()), 1500)
    assert clean is not None and clean < 200
    inc, at = serve(StallingClock({first_check_span()}), 1500)
    assert at is not None and at < 300, at
    assert inc.stretched[0] == 1 and inc.stretched[1] > 4.0  # seen, and its wait not charged
    assert inc.budget.extra_fraction <= 0.10 + 1e-9


def test_a_stretched_real_call_is_no_sample():
    clock = StallingClock({3})  # the fourth span: a racing call of the provisional config
    inc, _ = serve(clock, 5)
    (st,) = inc.states.values()
    assert all(ms < 1.0 for xs in st.obs.samples.values() for ms in xs)  # the 5 ms wait is not a sample
    assert inc.stretched[0] == 1 and st.stretched == 1


def test_the_estimate_of_a_check_is_the_median_not_the_last():
    st = KeyState([A, B, C], A, IncrementalOptions())
    st.check_cost += [0.1, 0.1, 5.0]
    assert st.check_estimate_ms() == pytest.approx(0.1)
    st.check_cost = [0.1, 5.0]
    assert st.check_estimate_ms() == pytest.approx(0.1)


def fake_key(inc: Incremental, name: int, calls: int) -> KeyState:
    """A key's state registered with ``inc`` as the decorator would (no kernel: FAKE bookkeeping)."""
    st = KeyState([A, B, C], A, inc.options,
                  budget=GpuBudget(0.1, 50, parent=inc.budget, spill=inc.spare))  # fmt: skip
    st.calls = calls
    inc.states[(name,)] = st
    inc._calls += calls
    return st


def test_a_key_that_earned_its_check_gets_it_though_a_frequent_key_borrowed():
    # The earlier rule refused every check while the kernel's unspent total was below the check's estimate:
    # a key whose own calls had earned its check waited for the keys that spent the total.
    inc = Incremental(IncrementalOptions(), clock=StallingClock(set()), compiler=FakeCompiles(), thread=False)
    own = fake_key(inc, 1, 20)
    hot = fake_key(inc, 2, 200)
    own.budget.earn(2.0)  # 0.2 ms of its own tokens
    own.check_cost.append(0.1)
    hot.budget.force_spend(0.15)  # the frequent key spent from the pool
    assert inc.budget.fraction * inc.budget.earned_from_ms - inc.budget.spent_ms < 0.1
    assert inc._may_afford(own) and inc._afford(own)
    assert own.budget.tokens_ms == pytest.approx(0.1)


def test_a_frequent_key_borrows_tokens_that_then_leave_the_lender():
    inc = Incremental(IncrementalOptions(), clock=StallingClock(set()), compiler=FakeCompiles(), thread=False)
    rare = fake_key(inc, 1, 20)
    hot = fake_key(inc, 2, 400)
    rare.budget.earn(2.0)  # 0.2 ms saved by the rare key
    hot.check_cost.append(0.15)
    assert inc._may_afford(hot) and inc._afford(hot)
    assert rare.budget.tokens_ms == pytest.approx(0.05)  # lent 0.15: it cannot spend it again
    rare.check_cost.append(0.1)
    assert not inc._afford(rare)
    assert inc.budget.spent_ms <= inc.budget.fraction * inc.budget.earned_from_ms + 1e-12


def test_earnings_beyond_a_buckets_cap_go_to_the_kernels_pool():
    pool = GpuBudget(0.1, 50)
    b = GpuBudget(0.1, burst_calls=5, spill=pool)
    for _ in range(100):
        b.earn(1.0)
    assert b.tokens_ms == pytest.approx(0.5) and pool.tokens_ms == pytest.approx(10.0 - 0.5)


def test_diagnose_says_what_holds_the_promotion_back():
    st = KeyState([A, B, C], A, IncrementalOptions(min_samples=4))
    d = st.diagnose()
    assert "compiling" in d["blocked"] and d["candidates"][B.id]["phase"] == "compiling"
    st.compiled(B)
    st.compiled(C)
    st.apply(st.propose())
    d = st.diagnose()
    assert "waiting for a check" in d["blocked"] and d["candidates"][C.id]["phase"] == "unchecked"
    assert [ev for _, ev in d["timeline"]] == [f"compiled {B.id}", f"compiled {C.id}"]
    for c in (B, C):
        st.checked(c, None)
    for i in range(8):  # B and C within noise of each other, A clearly slower
        st.sample(A, 2.0)
        st.sample(B, 1.0 + 0.2 * (i % 2))
        st.sample(C, 1.05 + 0.2 * (i % 2))
    d = st.diagnose()
    assert d["blocked"].startswith("race open") and C.id in d["blocked"], d["blocked"]
    assert d["candidates"][A.id]["phase"] == "eliminated"
    assert d["candidates"][B.id]["samples"] == 8 and d["candidates"][B.id]["median_ms"] > 0


class CountingList(list):
    """FAKE sample window that counts how often it is copied (iterated whole)."""

    copies = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        CountingList.copies += 1
        return super().__iter__()


def test_a_decision_copies_no_window_the_statistics_will_not_read():
    # The serving benchmark's host-cost key never promotes (min_samples=10**9): every round copied every
    # racer's whole window (thousands of samples), ~30 us of the resolver's hold on the interpreter per call.
    opts = IncrementalOptions(min_samples=10**6, max_samples=10**6)
    st = KeyState([A, B, C], A, opts)
    for c in (B, C):
        st.compiled(c)
        st.checked(c, None)
    st.apply(st.propose())
    for c in (A, B, C):
        st.obs.samples[c] = CountingList([1.0] * 1000)
    CountingList.copies = 0
    p = st.propose()
    assert p.promoted is None and p.racing == {A, B, C}
    assert CountingList.copies == 0


def test_the_compile_thread_takes_the_hottest_key_first():
    # A stream's keys all arrive in its first calls; first come, first compiled left a hot key seen 13th
    # waiting for twelve keys' compiles. FAKE jobs (record their key; nothing compiles), queued while the
    # thread is not running: the key with the most calls so far goes first.
    from tritune.serving.runtime import WorkerCompiles

    w = WorkerCompiles()
    ran: list[str] = []
    calls = {"rare": 2, "hot": 40, "warm": 9}
    for name in calls:  # queued in this order (as first seen)
        w._jobs.append((lambda n=name: calls[n], lambda n=name: ran.append(n)))
    while w._jobs:
        w.next_job()()
    assert ran == ["hot", "warm", "rare"]
    calls.update(a=5, b=5)  # equals keep their order
    for name in ("a", "b"):
        w._jobs.append((lambda n=name: calls[n], lambda n=name: ran.append(n)))
    w.next_job()()
    assert ran[-1] == "a"

class BlindClock:
    """FAKE clock: a launch of a config "takes" ``TIMES[BLOCK]`` ms, and every third span of a launch (counting
    from 0, whatever its config: the work before a span decides) is late, measuring ``late_ms`` of host time
    more; a check's other spans take 0.005 ms. No late test (the late spans' times look like any other)."""

    def __init__(self, late_ms: float = 0.5) -> None:
        self.late_ms = late_ms
        self.n = 0

    def start(self, cfg: Config | None) -> Config | None:
        return cfg

    def stop(self, token: Config | None) -> tuple[float, bool]:
        if token is None:
            return (0.005, False)
        late = self.n % 3 == 0
        self.n += 1
        return (TIMES[token.kwargs["BLOCK"]] + (self.late_ms if late else 0.0), late)

    def elapsed_ms(self, handle: tuple[float, bool]) -> float:
        return handle[0]

    def capturing(self) -> bool:
        return False


class LateClock(BlindClock):
    """FAKE: :class:`BlindClock` with ``CudaClock``'s late test."""

    @staticmethod
    def late(handle: tuple[float, bool]) -> bool:
        return handle[1]


@pytest.mark.parametrize(("tell", "drop"), [(True, True), (True, False), (False, True)])
def test_late_spans_are_no_samples_with_drop_late(tell, drop):
    # BLOCK=128 is the fastest (0.030 ms); a third of all spans hold 0.5 ms of host time. Only a clock with the
    # late test and IncrementalOptions(drop_late=True) keeps them out of the samples (off by default
    # until measured on the H200).
    opts = IncrementalOptions(drop_late=drop)
    inc, at = serve_one_key(LateClock() if tell else BlindClock(), (64, 128, 256, 512), 600, options=opts)
    assert at is not None
    (ch,) = inc.promoted.values()
    assert ch.config.kwargs["BLOCK"] == 128
    q3 = max(t[2] for t in (ch.timings or {}).values())
    if tell and drop:
        assert inc.late_spans >= at // 8, (inc.late_spans, at)  # a third of the timed calls (lone calls untimed)
        assert q3 < 0.1  # not one late span became a sample (a third of them would set the third quartile)
    else:
        assert inc.late_spans == 0 and q3 > 0.5


class TallyClock(LateClock):
    """FAKE: :class:`LateClock` that also sums the kernel's own time (no host time) of the real calls' spans."""

    def __init__(self) -> None:
        super().__init__()
        self.true_ms = 0.0

    def stop(self, token: Config | None) -> tuple[float, bool]:
        if token is not None:
            self.true_ms += TIMES[token.kwargs["BLOCK"]]
        return super().stop(token)


def test_late_spans_still_earn_the_budget_at_the_configs_median():
    """A late span is no sample, but its call ran on the device as any other: it earns at the config's recent
    median, not at its inflated time and not nothing (earning nothing for 8% of spans, on an H200,
    starved RMSNorm's checks). Every call timed (lone_every=1), so every earning passes through the clock."""
    clock = TallyClock()
    inc, _ = serve_one_key(clock, (64, 128, 256, 512), 600, options=IncrementalOptions(drop_late=True, lone_every=1))
    assert inc.late_spans > 0
    # earning nothing would give ~2/3 of the kernel time; earning the spans' times ~5x (0.5 ms of host time)
    assert 0.85 * clock.true_ms <= inc.budget.earned_from_ms <= 1.05 * clock.true_ms, (inc.budget.earned_from_ms,
                                                                                        clock.true_ms)


def test_a_key_below_the_even_share_borrows_from_the_kernels_pool_only():
    # H200: keys below an even share of the calls waited for their last checks while the pool
    # (promoted keys' savings) held six checks' worth. They may borrow from the pool, never from another
    # key's own bucket, and only once they have burst_calls calls.
    inc = Incremental(IncrementalOptions(), clock=StallingClock(set()), compiler=FakeCompiles(), thread=False)
    low = fake_key(inc, 1, 30)
    other = fake_key(inc, 2, 900)
    other.budget.earn(2.2)  # 0.22 ms in another key's bucket: not lent to a key below the even share
    low.check_cost.append(0.1)  # (all keys keep 0.097 x 2.2 = 0.213 ms unspent: >= 2 checks, so it may borrow)
    assert not inc._frequent(low)
    assert not (inc._may_afford(low) and inc._afford(low))
    inc.spare.receive(0.12)  # a promoted key's savings
    assert not (inc._may_afford(low) and inc._afford(low))  # 30 calls < burst_calls (50)
    low.calls = 60
    assert inc._may_afford(low) and inc._afford(low)
    assert inc.spare.tokens_ms == pytest.approx(0.02)  # lent 0.1: it left the pool
    assert other.budget.tokens_ms == pytest.approx(0.22)  # the other key's bucket untouched
    assert low.budget.tokens_ms == pytest.approx(0.0)
