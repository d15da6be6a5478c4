"""Triton's compiler key, hashed in a background thread while tuning sets up (issue 16).

The first compile or cache lookup of a process calls ``triton.runtime.cache.triton_key()`` (Triton 3.6 and
3.9: the same name and place, ``functools.lru_cache``'d): sha256 of Triton's compiler, backend and language
sources and of ``libtriton.so``, 0.63 s on this project's CPU, paid on the critical path of a new key's first
batch in a fresh ``tritune tune``. :func:`prewarm` starts that call in a daemon thread (hashlib and file reads
release the GIL), so it overlaps with loading the workload, the oracle, the screen and the search's start.
Where Triton or ``triton_key`` is missing, or Triton's interpreter runs (nothing compiles), it does nothing.

**Fork safety.** The hashing thread imports Triton's subpackages (``pkgutil.walk_packages``) and holds hash
objects' locks; a ``fork`` in the middle would leave the child with a module lock owned by a thread it does
not have. So every ``os.fork`` of the process first :func:`wait`\\ s for the thread (``os.register_at_fork``;
the worker service's :func:`tritune.workers.service._fork` also calls it by name): no fork happens while it
runs, and the forked compile workers inherit the computed key instead of hashing it again each.
(``subprocess`` children exec at once from C and run no Python before: they need no wait.) :func:`wait` is
also what a caller about to need the key calls (:meth:`tritune.screen.specialize.Specialization.cache_hash`),
so it does not hash it a second time alongside the thread (``lru_cache`` makes no concurrent caller wait).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_thread: threading.Thread | None = None


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() not in ("", "0", "false", "off")


def _run(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:  # the first compile computes it, and raises what it raises, as without this thread
        pass


def prewarm() -> threading.Thread | None:
    """Start hashing Triton's key in a daemon thread, once per process; the thread, or None where there is
    nothing to do (no Triton, no ``triton_key``, the interpreter). Cheap to call again."""
    global _thread
    if _interpreted():
        return None
    with _lock:
        if _thread is not None:
            return _thread
        try:
            from triton.runtime import cache
        except Exception:
            return None
        fn = getattr(cache, "triton_key", None)
        if not callable(fn):
            return None
        t = threading.Thread(target=_run, args=(fn,), name="tritune-triton-key", daemon=True)
        if hasattr(os, "register_at_fork"):  # any os.fork of this process (the user's too) waits for it
            os.register_at_fork(before=wait)
        t.start()
        _thread = t
        return t


#: The longest :func:`wait` waits: a hash that takes longer (a slow network filesystem) lets the caller go on
#: and compute the key itself, as without the thread, rather than hang on it.
WAIT_S = 60.0


def wait(timeout: float | None = WAIT_S) -> None:
    """Wait for :func:`prewarm`'s thread, if one was started (module docstring: before a fork, before using
    the key), at most ``timeout`` s. Returns at once when none was, or from the thread itself."""
    t = _thread
    if t is not None and t is not threading.current_thread():
        t.join(timeout)
