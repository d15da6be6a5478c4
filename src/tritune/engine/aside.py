"""A key's GPU-bound setup on a helper thread, beside the Python-bound setup of the caller's thread.

A key's arguments and its oracle are mostly device work that torch runs with the interpreter's lock released
(allocations, the first cuBLAS call and its handle, kernels queued), while the static screen and the search's
start (store reads, the strategy's model) are Python. On the H200 host each side took 0.1-0.25 s of a new
key's ~1 s transfer (session 11, ``search_tune.py``): run one beside the other. :func:`aside` starts ``fn`` on
a helper thread with the caller's CUDA device and autograd mode (both are per thread in torch: a user's oracle
that makes a tensor on ``"cuda"`` or relies on grad mode sees what it would in the caller's thread);
:meth:`Aside.result` waits and returns its value or raises its exception. ``inline=True`` runs ``fn`` at once
in the caller's thread (the CPU interpreter's tests, where nothing would overlap).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


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
        self._thread = threading.Thread(target=self._run, args=(fn, (device, grad)), name=name, daemon=True)
        self._thread.start()

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

    def result(self) -> T:
        if self._thread is not None:
            t = time.perf_counter()
            self._thread.join()
            self.waited_s = time.perf_counter() - t
            self._thread = None
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[no-any-return]


def _caller_state() -> tuple[int | None, bool]:
    """The caller thread's current CUDA device (None without CUDA) and autograd mode."""
    import torch

    device = torch.cuda.current_device() if torch.cuda.is_available() else None
    return device, torch.is_grad_enabled()


def aside(fn: Callable[[], T], *, inline: bool = False) -> Aside[T]:
    """Start ``fn`` beside the caller (module docstring)."""
    return Aside(fn, inline=inline)
