"""tritune.engine.aside: a key's GPU-bound setup on a helper thread, with the caller's autograd mode."""

from __future__ import annotations

import sys
import threading

import pytest
import torch

from tritune.engine.aside import SWITCH_INTERVAL_S, Later, aside


def test_the_value_comes_back_from_another_thread():
    caller = threading.get_ident()
    job = aside(lambda: (threading.get_ident(), 41 + 1))
    ident, value = job.result()
    assert value == 42 and ident != caller
    assert job.seconds >= 0.0 and job.waited_s >= 0.0
    assert job.result() == (ident, 42)  # joined once; the value stays


def test_an_exception_is_raised_in_the_caller_when_it_asks():
    def broken() -> None:
        raise ValueError("the oracle failed")

    job = aside(broken)
    with pytest.raises(ValueError, match="the oracle failed"):
        job.result()


def test_later_runs_on_a_helper_once_started_and_in_place_when_never_started():
    caller = threading.get_ident()
    runs: list[int] = []

    def job() -> int:
        runs.append(threading.get_ident())
        return len(runs)

    started = Later(job, name="test-later")
    started.start()
    started.start()  # once
    assert started.result() == 1 and runs[0] != caller and started.seconds >= 0.0
    never = Later(job, name="test-later")
    never.join()  # nothing to wait for: it never started, and join does not run it
    assert len(runs) == 1
    assert never.result() == 2 and runs[1] == caller and never.waited_s == 0.0


def test_the_thread_runs_in_the_callers_grad_mode():
    with torch.no_grad():
        job = aside(torch.is_grad_enabled)
    assert job.result() is False
    assert aside(torch.is_grad_enabled).result() is True


def test_inline_runs_at_once_in_the_callers_thread():
    ran = []
    job = aside(lambda: ran.append(threading.get_ident()) or "done", inline=True)
    assert ran == [threading.get_ident()]
    assert job.result() == "done"


def test_the_thread_sees_the_callers_context_variables():
    # triton.set_allocator keeps the allocator of TMA descriptors in a context variable: an oracle that launches
    # such a kernel aside must find it (threads do not inherit context variables by themselves).
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("allocator", default="none")
    token = var.set("the caller's allocator")
    try:
        assert aside(var.get).result() == "the caller's allocator"
    finally:
        var.reset(token)
    assert threading.Thread is not None and var.get() == "none"


def test_switch_interval_is_fine_while_a_helper_runs_and_restored_after() -> None:
    before = sys.getswitchinterval()
    assert before > SWITCH_INTERVAL_S  # CPython's default, 5 ms
    release = threading.Event()
    seen: list[float] = []
    a = aside(lambda: (release.wait(5), seen.append(sys.getswitchinterval())))
    b = aside(lambda: seen.append(sys.getswitchinterval()))
    b.result()  # ended while ``a`` runs: the interval stays fine for it
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S, abs=2e-6)
    release.set()
    a.result()
    assert seen == [pytest.approx(SWITCH_INTERVAL_S, abs=2e-6)] * 2
    assert sys.getswitchinterval() == before  # the last helper out restored it


def test_a_finer_interval_the_caller_set_is_kept() -> None:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.0001)
    try:
        seen: list[float] = []
        aside(lambda: seen.append(sys.getswitchinterval())).result()
        assert seen == [pytest.approx(0.0001, abs=2e-6)]
        assert sys.getswitchinterval() == pytest.approx(0.0001, abs=2e-6)
    finally:
        sys.setswitchinterval(before)


def test_inline_runs_leave_the_interval_alone() -> None:
    before = sys.getswitchinterval()
    seen: list[float] = []
    aside(lambda: seen.append(sys.getswitchinterval()), inline=True).result()
    assert seen == [before] and sys.getswitchinterval() == before
