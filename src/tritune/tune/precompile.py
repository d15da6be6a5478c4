"""Compile a decorated kernel's candidates in parallel worker processes before any timing.

Compiling is most of a cold tuning (Triton compiles one config at a time). Each candidate's exact JIT
specialization is built here from the real arguments (:func:`tritune.screen.specialize`), candidates
whose binary is already in Triton's on-disk cache are skipped, and the rest go to spawned workers that
re-import the kernel's module by name and run ``triton.compile`` into that same cache. The JIT's first
launch then only loads the binary. Kernels defined in ``__main__`` (a script) cannot be re-imported
without re-running the script, so they compile in this process, one at a time.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from tritune.config import Config


def _cached(spec: Any) -> bool:
    from triton.runtime.cache import get_cache_manager

    h = spec.cache_hash()
    name = spec.jit.__name__[:150]
    return get_cache_manager(h).get_group(f"{name}.json") is not None


def _compile_task(module: str, qualname: str, path: list[str], sig: dict[str, str], constexprs: dict[Any, Any],
                  attrs: dict[Any, Any], options: dict[str, Any], target: tuple[str, Any, int]) -> str | None:
    """Worker side: rebuild the kernel from its module and compile one specialization into Triton's cache."""
    import importlib

    for p in reversed(path):
        if p not in sys.path:
            sys.path.insert(0, p)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tritune.kernel import as_jit

    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    jit = as_jit(obj)
    try:
        triton.compile(ASTSource(jit, sig, constexprs, attrs), target=GPUTarget(*target), options=options)
    except Exception as e:
        return f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"
    return None


def _locate(jit: Any) -> tuple[str, str] | None:
    fn = jit.fn
    module = getattr(fn, "__module__", "__main__")
    if module == "__main__" or module not in sys.modules or "<locals>" in fn.__qualname__:
        return None
    # The module attribute may be the decorated object (an Autotuned wrapping the JITFunction).
    mod = sys.modules[module]
    for name, val in vars(mod).items():
        inner = val
        for _ in range(4):
            if inner is jit or inner is fn:  # the same Python function compiles identically
                return module, name
            inner = getattr(inner, "fn", None)
            if inner is None:
                break
    return None


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def precompile(jit: Any, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any], target: Any,
               jobs: int | None = None) -> dict[Config, str]:
    """Fill Triton's cache with every config's binary; returns the configs that failed, with the reason."""
    from tritune.errors import KernelSpecError
    from tritune.screen.specialize import specialize

    jobs = default_jobs() if jobs is None else jobs
    todo = []
    failed: dict[Config, str] = {}
    for cfg in configs:
        try:
            spec = specialize(jit, args, cfg, target, kwargs)
        except KernelSpecError as e:
            failed[cfg] = str(e)
            continue
        if not _cached(spec):
            todo.append((cfg, spec))
    where = _locate(jit)
    if len(todo) < 2 or jobs < 2 or where is None:
        return failed  # the JIT compiles what is left on first use, in this process
    module, qualname = where
    tgt = (target.backend, target.arch, target.warp_size)
    ctx = mp.get_context("spawn")
    # Workers must import triton with the interpreter off (its jitted helpers are built at import time),
    # and spawned processes take the environment they start with.
    saved = os.environ.pop("TRITON_INTERPRET", None)
    try:
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx)
        futs = {
            cfg: pool.submit(_compile_task, module, qualname, list(sys.path), spec.signature, spec.constexprs,
                             spec.attrs, dict(spec.options.__dict__), tgt)
            for cfg, spec in todo
        }
    finally:
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved
    with pool:
        for cfg, fut in futs.items():
            try:
                why = fut.result()
            except Exception as e:  # a worker died: let the in-process compile report it
                why = None
                del e
            if why is not None:
                failed[cfg] = f"{jit.__name__} does not compile with {cfg.id}: {why}"
    return failed
