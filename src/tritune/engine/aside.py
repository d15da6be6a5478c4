"""Part of a key's setup on a helper thread, beside the rest on the caller's thread.

A key's arguments and its oracle are mostly device work that torch runs with the interpreter's lock released
(allocations, the first cuBLAS call and its handle, kernels queued), while the static screen and the search's
start (store reads, the strategy's model) are Python. On the H200 host each side took 0.1-0.25 s of a new
key's ~1 s transfer (``benchmarks/search_tune.py``): run one beside the other. :func:`aside` starts ``fn`` on
a helper thread with the caller's CUDA device, autograd mode and context variables (all three are per thread:
a user's oracle that makes a tensor on ``"cuda"``, relies on grad mode, or launches a Triton kernel that needs
the allocator ``triton.set_allocator`` put in a context variable sees what it would in the caller's thread);
:meth:`Aside.result` waits and returns its value or raises its exception. ``inline=True`` runs ``fn`` at once
in the caller's thread (the CPU interpreter's tests, where nothing would overlap).

What runs aside must not leave per-thread state behind for the caller: the arguments stay on the caller's thread
(a workload's ``args`` may call ``triton.set_allocator``, as the TMA matmul's does, and a context variable set on
a helper thread never reaches the caller: arguments made aside failed every candidate's launch on the H200); the
static screen (tritune's rules) and the oracle (a pure function of the inputs) go aside.

**The interpreter's switch interval.** While a helper runs, the process's switch interval (``sys.setswitchinterval``)
is at most :data:`SWITCH_INTERVAL_S` (0.5 ms, from CPython's 5 ms), and back to what it was when the last helper
ends. Each torch call releases the interpreter's lock and takes it back on return; with a helper busy in Python
(the static screen, an import) the caller waits for the helper to give the lock up, up to the whole interval, at
every call. On this project's CPU, 90 small torch calls beside a thread spinning in Python took 0.136 s at 5 ms and
0.0002 s at 0.5 ms (alone: 0.0001 s); the arguments of a key are such calls. On an H100 host (16 new-key transfers
against 16 at 5 ms) a key's arguments took 0.02-0.17 s instead of 0.08-0.24 s, but the static screen beside
them took longer and the caller waited for it: the setup as a whole, bound by the one lock, moved by -0.03 to +0.01 s
(medians of warm and fresh processes). What a helper saves is the time the caller would wait on the device.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: The switch interval while a helper runs (module docstring).
SWITCH_INTERVAL_S = 0.0005
_switch_lock = threading.Lock()
_switch_users = 0
_switch_before = 0.0


def _switch_fine(on: bool) -> None:
    """Count a helper in (``on``) or out: the first in lowers the switch interval, the last out restores it."""
    global _switch_users, _switch_before
    with _switch_lock:
        if on:
            if _switch_users == 0:
                _switch_before = sys.getswitchinterval()
                sys.setswitchinterval(min(_switch_before, SWITCH_INTERVAL_S))
            _switch_users += 1
        else:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_before)


class Aside(Generic[T]):
    """``fn()`` running on a helper thread (or done already, ``inline``); :meth:`result` joins."""

    def __init__(self, fn: Callable[[], T], *, inline: bool = False, name: str = "tritune-aside") -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self.seconds = 0.0  # how long fn ran
        self.waited_s = 0.0  # how long result() waited for it
        if inline:
            self._thread = None
            self._run(fn, None)
            return
        device, grad = _caller_state()
        ctx = contextvars.copy_context()  # threads do not inherit context variables (Triton's allocator is one)
        self._thread = threading.Thread(target=ctx.run, args=(self._run, fn, (device, grad)), name=name, daemon=True)
        _switch_fine(True)
        try:
            self._thread.start()
        except BaseException:
            _switch_fine(False)
            raise

    def _run(self, fn: Callable[[], T], state: tuple[int | None, bool] | None) -> None:
        t = time.perf_counter()
        try:
            if state is None:
                self._value = fn()
            else:
                import torch

                device, grad = state
                with torch.set_grad_enabled(grad):
                    if device is None:
                        self._value = fn()
                    else:
                        with torch.cuda.device(device):
                            self._value = fn()
        except BaseException as e:  # re-raised in the caller's thread by result()
            self._error = e
        finally:
            self.seconds = time.perf_counter() - t
            if state is not None:  # a helper thread's run (module docstring: the switch interval)
                _switch_fine(False)

    def result(self) -> T:
        if self._thread is not None:
            t = time.perf_counter()
            self._thread.join()
            self.waited_s = time.perf_counter() - t
            self._thread = None
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[no-any-return]


class Later(Generic[T]):
    """``fn`` to run on a helper thread from the first call of :meth:`start` (later calls do nothing), as
    :func:`~tritune.engine.pipeline.after_compiles` starts work beside a key's compiles. :meth:`result` returns its
    value (waiting for the helper, or running ``fn`` in place when it never started) and raises its exception;
    :meth:`join` waits only for a started helper. ``seconds``/``waited_s``: how long ``fn`` ran on the helper and
    how long :meth:`result` waited for it (0 when run in place)."""

    def __init__(self, fn: Callable[[], T], *, name: str) -> None:
        self._fn, self._name = fn, name
        self._aside: Aside[T] | None = None
        self.seconds = 0.0
        self.waited_s = 0.0

    def start(self) -> None:
        if self._aside is None:
            self._aside = aside(self._fn, name=self._name)

    def result(self) -> T:
        if self._aside is None:
            return self._fn()
        value = self._aside.result()
        self.seconds, self.waited_s = self._aside.seconds, self._aside.waited_s
        return value

    def join(self) -> None:
        if self._aside is not None:
            self.result()


def _caller_state() -> tuple[int | None, bool]:
    """The caller thread's current CUDA device (None without CUDA) and autograd mode."""
    import torch

    device = torch.cuda.current_device() if torch.cuda.is_available() else None
    return device, torch.is_grad_enabled()


def aside(fn: Callable[[], T], *, inline: bool = False, name: str = "tritune-aside") -> Aside[T]:
    """Start ``fn`` beside the caller (module docstring), on a thread called ``name``."""
    return Aside(fn, inline=inline, name=name)
