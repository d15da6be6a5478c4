"""The call after a promotion (on an H200 it once took 135.7 ms, the caller waiting on the store write).

The key's state said "promoted" before its choice was published; the caller then took the normal path,
found no choice, and looked the key up in the store under the kernel's lock while the resolver held the
store's lock writing the promotion. These tests pin the fix: the choice (and the winner's fast launcher) is
published before the state says "promoted", and the store is written afterwards on its own thread.
Timings come from a FAKE clock, compiles from a FAKE compile service, and the store is an instrumented FAKE
(a MemoryStore whose writes wait on a gate and whose lookups are counted)."""

from __future__ import annotations

import threading
import time

import pytest
import torch
import triton
from incremental_fakes import FakeClock, FakeCompiles

import tritune
import tritune.decorator.autotuned as autotune_mod
from kernels import scale_kernel
from tritune.bench import ReplayTimer
from tritune.landscape import Landscape, LandscapePoint
from tritune.measure import MeasurePolicy
from tritune.outcome import Status
from tritune.serving.incremental import Incremental
from tritune.serving.state import IncrementalOptions
from tritune.store import MemoryStore

CONFIGS = [triton.Config({"BLOCK": b}) for b in (128, 256, 512, 1024)]
GRID = lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
TIMES = {128: 1.0, 256: 0.8, 512: 0.5, 1024: 0.9}


class GatedStore(MemoryStore):
    """FAKE (instrumented) store: ``record_many`` blocks until ``gate`` is set, holding the store's lock as a
    slow disk commit does; ``lookups`` counts winner lookups; ``writer`` names the thread that wrote."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.writing = threading.Event()
        self.lookups = 0
        self.writer: str | None = None

    def record_many(self, writes):  # type: ignore[no-untyped-def]
        with self._lock:
            self.writing.set()
            self.writer = threading.current_thread().name
            assert self.gate.wait(10), "the test never opened the gate"
            super().record_many(writes)

    def lookup_winner(self, key):  # type: ignore[no-untyped-def]
        if threading.current_thread().name != "tritune-store":  # record() reads the winner back itself
            self.lookups += 1
        return super().lookup_winner(key)


def make(store_thread: bool = True):
    clock, comp, store = FakeClock(TIMES), FakeCompiles(), GatedStore()
    inc = Incremental(IncrementalOptions(), clock=clock, compiler=comp, thread=False, store_thread=store_thread)
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=store, incremental=inc)(scale_kernel)
    return k, inc, clock, comp, store


def first_call():
    """``make(store_thread=False)`` with its store open, after one call: also the one key and its state."""
    k, inc, clock, comp, store = make(store_thread=False)
    store.gate.set()
    call(k)
    inc.resolver().poll()
    (key,) = inc.states
    return k, inc, clock, comp, store, key, inc.states[key]


def call(k, n=1000):
    x = torch.randn(n)
    out = torch.full((n,), -1.0)
    k[GRID](x, out, n)
    return x, out


def run_until_promoted(k, inc, comp):
    call(k)
    inc.resolver().poll()
    comp.finish()
    for _ in range(400):
        call(k)
        inc.resolver().poll()  # the resolver's work (here on the test's thread): the promotion happens in here
        if inc.promoted:
            return
    raise AssertionError(f"never promoted: {k.choices()}")


def test_the_call_after_a_promotion_never_waits_on_the_store_write(monkeypatch):
    k, inc, _clock, comp, store = make()
    run_until_promoted(k, inc, comp)

    def no_choose(*a, **kw):  # INSTRUMENTED: the normal path's tuning (store lookup, then tuning) is never reached
        raise AssertionError("the call after the promotion reached the normal path's tuning")

    monkeypatch.setattr(k, "_decide", no_choose)
    assert store.writing.wait(5)  # the write has started, on its own thread, and holds the store's lock
    assert store.writer == "tritune-store"
    lookups = store.lookups
    done = threading.Event()
    result = {}

    def caller():
        result["xo"] = call(k)
        done.set()

    t = threading.Thread(target=caller)
    t.start()
    served = done.wait(5)  # before the gate opens: the store write is still under way
    store.gate.set()
    t.join(10)
    assert served, "the call after the promotion waited on the store write"
    x, out = result["xo"]
    assert torch.equal(out, x * 2)
    assert store.lookups == lookups  # it never looked the key up in the store (the normal path's tuning)
    assert k._last.source == "incremental" and k._last.config.kwargs["BLOCK"] == 512
    inc.flush()
    (internal,) = inc.promoted
    stored = store.lookup_winner(k.tuner.tuning_key(k, internal, interpreter=True, measure=MeasurePolicy.SERVED))
    assert stored is not None and stored.config.kwargs["BLOCK"] == 512  # written, after the call was served
    assert inc.store_errors == []


def test_times_taken_on_real_calls_are_stored_as_served_never_as_a_timers() -> None:
    """A promotion's records go under the ``served`` policy: a later tuning under a timer's policy (cold) finds no
    record of the key, so it measures every candidate itself instead of reading the real calls' times as its own;
    a later serving process finds the promoted winner and serves it without tuning again. FAKE clock, compiles."""
    k, inc, _clock, comp, store = make(store_thread=False)
    store.gate.set()
    run_until_promoted(k, inc, comp)
    inc.flush()
    (internal,) = inc.promoted
    cold = k.tuner.tuning_key(k, internal, interpreter=True)
    served = k.tuner.tuning_key(k, internal, interpreter=True, measure=MeasurePolicy.SERVED)
    assert cold.measure is MeasurePolicy.COLD and store.lookup_winner(cold) is None
    assert store.missing(cold, k.candidates) == k.candidates  # nothing a cold tuning would take for its own
    assert store.lookup_winner(served).config.kwargs["BLOCK"] == 512
    assert all(r.provenance.get("how", "").startswith("incremental") for r in store.candidates(served)
               if r.status.value == "measured")  # fmt: skip

    clock2, comp2 = FakeClock(TIMES), FakeCompiles()
    inc2 = Incremental(IncrementalOptions(), clock=clock2, compiler=comp2, thread=False, store_thread=False)
    replay = ReplayTimer(Landscape.from_points("scale_kernel", "synthetic", {}, [  # SYNTHETIC: lets the store be read
        LandscapePoint(tritune.Config(c.kwargs), Status.MEASURED, TIMES[c.kwargs["BLOCK"]]) for c in CONFIGS]))
    k2 = tritune.autotune(configs=CONFIGS, key=["n"], store=store, incremental=inc2, timer=replay)(scale_kernel)
    x, out = call(k2)
    assert torch.equal(out, x * 2)
    assert k2.best_config.kwargs["BLOCK"] == 512 and k2._last.source == "store" and not inc2.states


def test_the_choice_is_published_before_the_state_says_promoted():
    """Instrumented: the key state's ``apply`` records, for the promoting proposal, whether the choice was
    already visible (a caller seeing "promoted" must find it, never reach the normal path's tuning)."""
    k, inc, _clock, comp, _store, key, st = first_call()
    seen = []
    real_apply = st.apply

    def apply(p):  # INSTRUMENTED: looks at the published choice, then applies for real
        if p.promoted is not None:
            seen.append((key in k._choices, k._choices.get(key)))
        real_apply(p)

    st.apply = apply  # type: ignore[method-assign]
    comp.finish()
    for _ in range(400):
        call(k)
        inc.resolver().poll()
        if inc.promoted:
            break
    assert len(seen) == 1 and seen[0][0], seen
    assert seen[0][1].source == "incremental" and seen[0][1].config.kwargs["BLOCK"] == 512


def test_promotion_hands_the_winners_fast_launcher_to_the_dispatch_table(monkeypatch):
    """The first cached call of the key must not build a launcher (Triton's binding, specialization and cache
    lookup on the caller's thread): the winner's launcher, built while it raced, is in the table already.
    FAKE fast launchers (the interpreter has none): counted wrappers of Triton's interpreted launch."""
    k, inc, clock, comp, store = make(store_thread=False)
    store.gate.set()
    launched = []

    def fake_fast(tuned, cfg, args, kwargs, key=None):  # FAKE: the shape of Incremental._fast_launcher
        ck = (tuned.key_spec.call_key(args), cfg)
        f = inc._fast.get(ck)
        if f is None:
            def f(a, g, cfg=cfg):
                launched.append(cfg.kwargs["BLOCK"])
                return tuned.launch(cfg, a, {}, g, False)

            inc._fast[ck] = f
            if key is not None:
                inc._shapes.setdefault(key, set()).add(ck[0])
        return f

    def no_make_fast(*a, **kw):
        raise AssertionError("the normal path built a fast launcher on the caller's thread after the promotion")

    monkeypatch.setattr(inc, "_fast_launcher", fake_fast)
    monkeypatch.setattr(k, "_fast_ok", True)
    monkeypatch.setattr(autotune_mod, "make_fast", no_make_fast)
    run_until_promoted(k, inc, comp)
    n_timed = len(clock.log)
    launched.clear()
    x, out = call(k)
    assert torch.equal(out, x * 2)
    assert launched == [512]  # the racing launcher of the winner served the first cached call
    assert len(clock.log) == n_timed  # untimed: the cached path
    assert k._last.source == "incremental"


def test_a_broken_store_write_is_kept_and_the_choice_still_serves():
    class BrokenStore(MemoryStore):  # FAKE: every write fails
        def record_many(self, writes):  # type: ignore[no-untyped-def]
            raise OSError("disk full (fake)")

    clock, comp = FakeClock(TIMES), FakeCompiles()
    inc = Incremental(IncrementalOptions(), clock=clock, compiler=comp, thread=False, store_thread=True)
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=BrokenStore(), incremental=inc)(scale_kernel)
    run_until_promoted(k, inc, comp)
    inc.flush()
    assert len(inc.store_errors) == 1 and "disk full" in str(inc.store_errors[0])
    x, out = call(k)
    assert torch.equal(out, x * 2) and k._last.config.kwargs["BLOCK"] == 512


class WallClock:
    """FAKE clock: a span "takes" the wall time between its marks (as an event pair on an idle device does)."""

    def start(self, cfg):  # type: ignore[no-untyped-def]
        return time.perf_counter()

    def stop(self, token):  # type: ignore[no-untyped-def]
        return (time.perf_counter() - token) * 1e3

    def elapsed_ms(self, handle):  # type: ignore[no-untyped-def]
        return float(handle)

    def capturing(self) -> bool:
        return False


def serve_with_a_resolver_thread(guard: bool) -> tuple[int, int]:
    """300 calls with the real resolver thread; FAKE launches sleep 0.3 ms (releasing the interpreter's lock,
    as Triton's launch does around cuLaunchKernel). Returns (callbacks run while a span was open, callbacks)."""
    # lone_every=1: the provisional races alone here (nothing compiles), and every call is to be timed.
    inc = Incremental(IncrementalOptions(lone_every=1, resolve="thread"), clock=WallClock(), compiler=FakeCompiles(), thread=True,
                      store_thread=True)  # fmt: skip
    inc.span_wait_s = 0.05  # generous on a loaded CI machine; the launch sleeps 0.3 ms
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=MemoryStore(), incremental=inc)(scale_kernel)
    k.launch = lambda *a, **kw: time.sleep(0.0003)  # FAKE launch
    res = inc.resolver()
    if not guard:
        res.quiet = None
    seen = []
    submit = res.submit

    def instrumented(handle, then):  # INSTRUMENTED: notes whether a span is open when the callback runs
        def run(ms):
            seen.append(bool(inc._in_span))
            then(ms)

        submit(handle, run)

    res.submit = instrumented  # type: ignore[method-assign]
    x, out = torch.zeros(64), torch.zeros(64)
    for _ in range(300):
        k[(1,)](x, out, 64)
    deadline = time.perf_counter() + 10
    while len(seen) < 300 and time.perf_counter() < deadline:
        time.sleep(0.01)
    assert not res.errors, res.errors
    return sum(seen), len(seen)


def test_the_resolver_waits_for_the_callers_timed_span_to_close():
    """A callback run between a span's marks is timed as the kernel's (or the check's) device time. Unguarded,
    nearly every callback ran inside a span (here 297 of 300); guarded, a few still can (the interpreter may
    switch threads between the resolver's look and its callback: 2 of 300 here)."""
    inside, n = serve_with_a_resolver_thread(guard=True)
    assert n == 300 and inside <= 15, inside
    inside_unguarded, n = serve_with_a_resolver_thread(guard=False)
    assert n == 300 and inside_unguarded >= 150, inside_unguarded


def test_a_compiled_candidates_launcher_is_built_off_the_callers_check_call(monkeypatch):
    """INSTRUMENTED: the launchers built, by whom: each compiled candidate's is built when the compile
    service delivers it (the background thread), before any check of it runs on the caller's thread."""
    k, inc, _clock, comp, store = make(store_thread=False)
    store.gate.set()
    built = []
    real = inc._fast_launcher

    def spy(tuned, cfg, args, kwargs, key=None):
        built.append((cfg.kwargs["BLOCK"], inc.last_phase))
        return real(tuned, cfg, args, kwargs, key)

    monkeypatch.setattr(inc, "_fast_launcher", spy)
    call(k)
    inc.resolver().poll()
    inc.last_phase = "delivery"
    comp.finish()
    delivered = [b for b, phase in built if phase == "delivery"]
    assert sorted(delivered) == [256, 512, 1024]


def test_a_state_promoted_before_its_choice_is_served_by_the_promoted_config_untimed(monkeypatch):
    """Belt and braces for the order above (and for a distributed agreement, applied on the caller's thread):
    a key whose state says promoted while no choice is visible is served its promoted config, untimed, and
    never reaches the normal path's tuning. The state is set by hand (INSTRUMENTED)."""
    from dataclasses import replace

    k, inc, clock, _comp, _store, _key, st = first_call()
    c512 = next(c for c in st.configs if c.kwargs["BLOCK"] == 512)
    st.applied = replace(st.applied, promoted=c512)

    def no_choose(*a, **kw):
        raise AssertionError("reached the normal path's tuning")

    monkeypatch.setattr(k, "_decide", no_choose)
    n_timed = len(clock.log)
    x, out = call(k)
    assert torch.equal(out, x * 2)
    assert inc.last_phase == "promoted" and k._last.config == c512 and len(clock.log) == n_timed


@pytest.mark.long  # 300 interpreted calls, about five seconds
def test_a_check_waits_until_its_outputs_comparison_is_ready():
    """A key's checks wait until the comparison of each of its GPU output dtypes is ready (the fused kernel
    loaded, or its preparation failed): no check loads device code on the caller's path. Here the FAKE key is
    given a GPU output dtype whose comparison is not ready: it races but checks nothing, then promotes once
    the dtype's preparation is reported failed (torch's comparison stands in)."""
    k, inc, _clock, comp, _store, key, _st = first_call()
    inc._cmp_dtypes[key] = ("torch.float16",)
    comp.finish()
    for _ in range(300):
        x, out = call(k)
        assert torch.equal(out, x * 2)
        inc.resolver().poll()
    waiting = inc.diagnose(k)[k.key_spec.public(key)]
    assert not inc.promoted and waiting["checks_ms"] == [] and waiting["comparison_ready"] is False
    inc._unfused.add("torch.float16")
    for _ in range(400):
        call(k)
        inc.resolver().poll()
        if inc.promoted:
            break
    assert inc.promoted, k.choices()
    assert key not in inc._cmp_dtypes


def test_a_comparison_stuck_in_preparation_gives_way_to_torchs_after_its_deadline(monkeypatch):
    import tritune.serving.incremental as inc_mod

    _k, inc, _clock, _comp, _store, key, _st = first_call()
    inc._cmp_dtypes[key] = ("torch.float16",)
    assert inc._comparable(key) is False  # no preparation started yet: its checks wait
    inc._prep_t["torch.float16"] = time.monotonic()
    assert inc._comparable(key) is False  # started, not ready, within the deadline
    monkeypatch.setattr(inc_mod, "COMPARE_PREP_S", 0.0)
    time.sleep(0.001)
    assert inc._comparable(key) is True and "torch.float16" in inc._unfused


def test_no_preparation_thread_means_torchs_comparison_not_a_wait(monkeypatch):
    import threading as th

    _k, inc, _clock, _comp, _store, _key, _st = first_call()

    def refuse(self):  # FAKE: the interpreter cannot start another thread
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(th.Thread, "start", refuse)
    inc._warm_comparison(["torch.bfloat16"], "cuda:0")
    assert "torch.bfloat16" in inc._unfused
