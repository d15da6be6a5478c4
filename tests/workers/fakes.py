"""FAKE task handlers for the worker service tests: they sleep, crash, raise or start ``sleep`` children.

Nothing here compiles or touches a GPU; each stands in for what a compile or a timing can do.
"""

from __future__ import annotations

import faulthandler
import os
import subprocess
import threading
import time


def abort_quietly() -> None:
    """Die of SIGABRT as a crashing compiler does, without the stack dump pytest's faulthandler (inherited by a
    forked worker) would print: a passing test run shows no "Fatal Python error"."""
    faulthandler.disable()
    os.abort()


#: A lock another thread holds across a worker's fork (test_service.py): what a worker inherits of it.
HELD = threading.Lock()
#: Set by a FAKE module while its import holds HELD (test_service.py).
IMPORTING = threading.Event()


def fake_handler(payload: object) -> object:
    mode, value = payload  # type: ignore[misc]
    if mode == "lock":  # a compile that needs a lock the parent's helper thread held (LLVM's, an import's)
        return (HELD.acquire(timeout=float(value)), os.getpid())
    if mode == "echo":
        return (value, os.getpid())
    if mode == "sleep":  # a compile that outlasts its timeout
        time.sleep(float(value))
        return ("slept", os.getpid())
    if mode == "grandchild":  # a worker whose ptxas (here: sleep) runs on
        subprocess.Popen(["sleep", "60"])
        time.sleep(60)
    if mode == "abort":  # a compiler crash taking the worker down
        abort_quietly()
    if mode == "raise":
        raise RuntimeError(f"CUDA error: an illegal memory access was encountered ({value})")
    raise ValueError(mode)


def make_fake_handler(init: object) -> object:
    """FAKE factory for spawned workers; ``init == "fail"`` stands in for a workload that cannot load."""
    if init == "fail":
        from tritune.errors import WorkloadLoadError

        raise WorkloadLoadError("fake.py: the workload could not be loaded")
    return fake_handler
