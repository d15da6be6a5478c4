"""Triton's lazily imported compiler modules, imported on a thread while a key's setup waits on the GPU.

A process's first kernel compile or launch makes Triton import its code generator, and with it the whole
``triton.experimental.gluon`` package: 0.195 s profiled on the H200 host (triton 3.6), 0.13 s on this
project's CPU (triton 3.9), once per process, inside the key's first batch. A key's setup meanwhile builds
its arguments and runs the oracle (the process's first cuBLAS call, ~0.12 s on the H200), which wait with the
GIL released, so the import can run beside them instead of after them. :func:`import_ahead` starts it; the
caller joins before its first compile or load, so Triton's own imports never race this thread's.

``numpy.random`` goes with them: a searched key's strategy seeds its generator (``np.random.default_rng``) at
the search's start, which imports it on the caller's thread, once per process: 0.008-0.013 s on this project's
CPU (after torch, which does not import it, nor does Triton), 0.012 s of a fresh process's first search start
as profiled there.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from tritune.engine.aside import aside

#: What the first compile or launch imports (names a Triton version lacks are skipped), and what a search's
#: start imports (module docstring).
LAZY = ("triton.compiler.code_generator", "triton.experimental.gluon", "numpy.random")


def import_ahead(modules: tuple[str, ...] = LAZY) -> Callable[[], float]:
    """Start importing ``modules`` on a helper thread (:func:`tritune.engine.aside.aside`); returns ``join()``,
    which waits for it and returns the seconds it waited. Nothing is started (``join`` returns 0 at once) when
    all are imported already."""
    todo = [m for m in modules if m not in sys.modules]
    if not todo:
        return lambda: 0.0

    def run() -> None:
        for m in todo:
            try:
                importlib.import_module(m)
            except Exception:  # a Triton without it: the JIT imports what it needs itself, as before
                pass

    job = aside(run)

    def join() -> float:
        job.result()
        return job.waited_s

    return join
