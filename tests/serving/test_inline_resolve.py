"""``IncrementalOptions(resolve="inline")``: the callers resolve the event pairs the device has passed, in
order, never waiting for it; the resolver thread takes over only what they leave. FAKE clocks throughout
(a handle "resolves" when the test says the device passed it): the logic, never a real timing."""

from __future__ import annotations

import time

import pytest
from incremental_fakes import FakeClock, serve_one_key

from tritune.serving.runtime import Resolver
from tritune.serving.state import IncrementalOptions


class DeviceClock:
    """FAKE clock: handle ``i`` is "passed" once ``passed > i``; ``elapsed_ms`` (the blocking wait) counts its
    calls and makes the device pass the handle, as a real wait would."""

    def __init__(self) -> None:
        self.passed = 0
        self.waits = 0

    def poll_ms(self, handle: int) -> float | None:
        return float(handle) if handle < self.passed else None

    def elapsed_ms(self, handle: int) -> float:
        self.waits += 1
        self.passed = max(self.passed, handle + 1)
        return float(handle)


def test_drain_ready_resolves_in_order_up_to_the_first_handle_not_passed_and_never_waits():
    clock = DeviceClock()
    got: list[float] = []
    afters: list[int] = []
    res = Resolver(clock, thread=False, inline=True, after=lambda: afters.append(len(got)))
    for i in range(6):
        res.submit(i, got.append)
    assert res.backlog() == 6 and res.drain_ready() == 0 and got == []  # nothing passed yet: nothing waits
    clock.passed = 4
    assert res.drain_ready() == 4 and got == [0.0, 1.0, 2.0, 3.0] and afters == [4]
    assert clock.waits == 0 and res.backlog() == 2 and res.inline_resolved == 4
    assert res.poll() == 2 and got == [float(i) for i in range(6)] and clock.waits == 2  # poll waits for each (tests)
    assert afters == [4, 6] and not res.errors


def test_a_drain_in_progress_on_another_thread_is_skipped_not_waited_for():
    clock = DeviceClock()
    clock.passed = 10
    res = Resolver(clock, thread=False, inline=True)
    res.submit(0, lambda ms: None)
    with res._drain_lock:  # another thread drains
        assert res.drain_ready() == 0
    assert res.drain_ready() == 1


def test_the_thread_takes_over_only_what_the_callers_leave():
    clock = DeviceClock()
    got: list[float] = []
    res = Resolver(clock, inline=True, linger_s=0.002)
    try:
        for i in range(3):
            res.submit(i, got.append)
        deadline = time.monotonic() + 5
        while len(got) < 3 and time.monotonic() < deadline:  # no caller drains: the thread resolves them
            time.sleep(0.001)
        assert got == [0.0, 1.0, 2.0] and res.wakes >= 1 and res.inline_resolved == 0
    finally:
        res.close()


def test_close_resolves_what_is_still_pending():
    clock = DeviceClock()
    got: list[float] = []
    res = Resolver(clock, inline=True, linger_s=10.0)  # the timer never fires before close
    res.submit(0, got.append)
    res.submit(1, got.append)
    res.close()
    assert got == [0.0, 1.0] and not res.errors


def test_a_callbacks_exception_is_kept_and_the_rest_resolve():
    clock = DeviceClock()
    clock.passed = 3
    got: list[float] = []
    res = Resolver(clock, thread=False, inline=True)

    def boom(ms: float) -> None:
        raise RuntimeError("FAKE callback failure")

    res.submit(0, got.append)
    res.submit(1, boom)
    res.submit(2, got.append)
    assert res.drain_ready() == 3 and got == [0.0, 2.0] and len(res.errors) == 1


@pytest.mark.parametrize("resolve", ["thread", "inline"])
def test_a_key_promotes_with_pairs_resolved_by_its_own_calls(resolve):
    """With ``inline`` the FAKE resolver is never polled (poll_every beyond the stream): the key's own calls
    resolve its pairs and promote it; with ``thread`` (no thread in this test) nothing resolves."""
    clock = FakeClock({64: 0.010, 128: 0.008, 256: 0.012}, noise=0.01, seed=1)
    opts = IncrementalOptions(resolve=resolve)
    inc, at = serve_one_key(clock, (64, 128, 256), 600, opts, poll_every=10**9)
    if resolve == "inline":
        assert at is not None and inc.promoted
        (choice,) = inc.promoted.values()
        assert choice.config.kwargs["BLOCK"] == 128 and inc._resolver.inline_resolved > 0
    else:
        assert at is None and not inc.promoted


def test_resolve_must_name_a_mode():
    with pytest.raises(ValueError, match="resolve="):
        IncrementalOptions(resolve="both")



def test_a_call_never_waits_for_the_kernels_lock_to_promote_another_key():
    """Another thread holds the kernel's lock (as a new key's first call does while its provisional config
    compiles): an inline drain that would promote leaves the decision for a later batch instead of blocking the
    call; once the lock is free, a later call promotes. FAKE clock, compiles and launch."""
    import threading

    import torch
    import triton
    from incremental_fakes import FakeCompiles

    import tritune
    from kernels import scale_kernel
    from tritune.serving.incremental import Incremental
    from tritune.store import MemoryStore

    clock = FakeClock({64: 0.010, 128: 0.008}, noise=0.01, seed=3)
    comp = FakeCompiles()
    inc = Incremental(IncrementalOptions(), clock=clock, compiler=comp, thread=False)
    configs = [triton.Config({"BLOCK": b}) for b in (64, 128)]
    k = tritune.autotune(configs=configs, key=["n"], store=MemoryStore(), incremental=inc)(scale_kernel)
    k.launch = lambda *a, **kw: None
    x, out = torch.zeros(64), torch.zeros(64)
    k[(1,)](x, out, 64)
    comp.finish()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with k._lock:
            held.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(5)
    try:
        for _ in range(400):
            k[(1,)](x, out, 64)  # returns at once: never blocks on the held lock
        assert not inc.promoted and inc._due  # due, waiting for the lock
    finally:
        release.set()
        t.join(5)
    for _ in range(50):
        k[(1,)](x, out, 64)
        if inc.promoted:
            break
    assert inc.promoted
    (choice,) = inc.promoted.values()
    assert choice.config.kwargs["BLOCK"] == 128
