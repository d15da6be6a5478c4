"""Compile a decorated kernel's candidates in parallel worker processes before any timing.

Compiling is most of a cold tuning (Triton compiles one config at a time). Each candidate's exact JIT
specialization is built here from the real arguments (:func:`tritune.screen.specialize`), candidates
whose binary is already in Triton's on-disk cache are skipped, and the rest go to worker processes that
run ``triton.compile`` into that same cache. The JIT's first launch then only loads the binary.

Workers are **forked** where the platform allows and this process does not run Triton's interpreter:
they start at once with everything already imported (a spawned worker spends seconds importing torch
and Triton), and they compile the very kernel object of this process, so kernels defined in a script or
inside a function work too. The garbage collector is frozen across the fork so that no worker ever
finalizes an object (a CUDA tensor, say) it inherited; workers never touch the GPU. Elsewhere workers
are spawned and re-import the kernel's module by name; a kernel that cannot be found that way
(defined in ``__main__`` or a function) then compiles in this process, one config at a time.
Candidates go longest compile first (big tiles on few warps), so the slowest compile starts at once
instead of last, and the pool is not waited on to exit.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing as mp
import os
import sys
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
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


#: Kernels handed to forked workers by token: a forked worker inherits this dict as it was at the fork.
_FORKED: dict[int, Any] = {}
_FORK_LOCK = threading.Lock()
_TOKENS = itertools.count()


def _compile_forked(token: int, sig: dict[str, str], constexprs: dict[Any, Any], attrs: dict[Any, Any],
                    options: dict[str, Any], target: tuple[str, Any, int]) -> str | None:
    """Worker side, forked: compile one specialization of the inherited kernel into Triton's cache."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    try:
        triton.compile(ASTSource(_FORKED[token], sig, constexprs, attrs), target=GPUTarget(*target), options=options)
    except Exception as e:
        return f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"
    return None


def _fork_ok() -> bool:
    interp = os.environ.get("TRITON_INTERPRET", "0").strip().lower() not in ("", "0", "false", "off")
    return not interp and "fork" in mp.get_all_start_methods()


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
    """Compile workers: this process's cores, shared with the other ranks of a torchrun job on this node."""
    from tritune.screen.run import default_jobs as cores_here

    cores = cores_here()
    try:
        local_world = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        local_world = 1
    return max(1, cores // local_world)


class Compiling:
    """Compiles in flight (from :func:`start_precompile`): ``failed`` so far, ``pending`` futures, longest first.

    :meth:`wait` collects finished compiles until at most ``max_pending`` remain, so a caller can load and
    race the configs compiled first while the slowest ones finish. A compile still running ``timeout``
    seconds after a worker took it (some configs keep ptxas busy for minutes) is given up: it lands in
    ``failed`` and ``timed_out``, and :meth:`close` kills its worker and the worker's ptxas. :meth:`close`
    otherwise ends the pool without waiting for its workers to exit.
    """

    def __init__(self, name: str, failed: dict[Config, str], pending: dict[Config, Future[str | None]],
                 pool: ProcessPoolExecutor | None = None, token: int | None = None,
                 timeout: float | None = None, tasks: dict[Config, tuple[Any, ...]] | None = None,
                 new_pool: Any = None) -> None:  # fmt: skip
        self.name = name
        self.failed = failed
        self.pending = pending
        self.timed_out: set[Config] = set()
        self.timeout = timeout
        #: Worker processes compiling (0: none started; every compile is left to the JIT here).
        self.workers = int(getattr(pool, "_max_workers", 0) or 0)
        self._pool = pool
        self._token = token
        self._tasks = tasks or {}  # cfg -> (fn, *args), to compile again after a worker died
        self._new_pool = new_pool  # workers -> a fresh pool like the first one
        self._retry: list[Config] = []  # configs whose pool broke under them, to compile one per worker
        self._isolated: dict[Config, ProcessPoolExecutor] = {}  # a one-worker pool per retried config
        self._started: dict[Config, float] = {}  # when a worker (probably) took it
        self._seen: dict[Config, float] = {}  # when the pool first marked it running (queued)
        self._stuck: list[Future[str | None]] = []  # given-up compiles whose workers are still busy

    def wait(self, max_pending: int = 0) -> list[Config]:
        """Block until at most ``max_pending`` compiles are left; the configs that finished without failing."""
        done: list[Config] = []
        while len(self.pending) + len(self._retry) > max_pending:
            self._top_up()
            poll = None if self.timeout is None else 0.25
            finished, _ = wait(list(self.pending.values()), timeout=poll, return_when=FIRST_COMPLETED)
            now = time.monotonic()
            if self.timeout is not None:
                self._expire(finished, now)
            for cfg, fut in list(self.pending.items()):
                if fut not in finished:
                    continue
                del self.pending[cfg]
                alone = self._isolated.pop(cfg, None)
                if alone is not None:
                    alone.shutdown(wait=False)
                try:
                    why = fut.result()
                except BrokenProcessPool:
                    if alone is None and cfg in self._tasks:  # which compile killed the worker is unknown:
                        self._retry.append(cfg)  # compile each again in a worker of its own
                        continue
                    why = ("its compile worker died (the compiler crashed, e.g. an LLVM fatal error or a "
                           "segfault in ptxas)")  # fmt: skip
                except Exception as e:
                    why = f"{type(e).__name__}: {e}"
                if why is None:
                    done.append(cfg)
                else:
                    self.failed[cfg] = f"{self.name} does not compile with {cfg.id}: {why}"
        if not self.pending and not self._retry:
            self.close()
        return done

    def _top_up(self) -> None:
        """Start retried compiles, each in a one-worker pool, at most ``workers`` at a time."""
        while self._retry and len(self._isolated) < max(1, self.workers) and self._new_pool is not None:
            cfg = self._retry.pop(0)
            pool = self._new_pool(1)
            fn, *args = self._tasks[cfg]
            self.pending[cfg] = pool.submit(fn, *args)
            self._isolated[cfg] = pool

    def _expire(self, finished: set[Future[str | None]], now: float) -> None:
        """Give up the compiles running past the timeout.

        The pool marks a task running when it queues it for a worker, one task ahead of the workers, and a
        given-up compile keeps its worker busy until :meth:`close` kills it. So the clock of a task starts
        only once it is among the earliest queued that fit the workers not stuck in a given-up compile.
        """
        assert self.timeout is not None
        for cfg, fut in self.pending.items():
            if fut not in finished and fut.running():
                self._seen.setdefault(cfg, now)
        workers = self.workers or len(self.pending)
        free = workers - sum(1 for f in self._stuck if not f.done())
        queued = sorted((t, i, c) for i, (c, t) in enumerate(self._seen.items()) if c in self.pending)
        for _, _, cfg in queued[: max(0, free)]:
            started = self._started.setdefault(cfg, now)
            if self.pending[cfg] not in finished and now - started > self.timeout:
                self._stuck.append(self.pending.pop(cfg))
                self.timed_out.add(cfg)
                self.failed[cfg] = (f"{self.name} {cfg.id}: compile_timeout: still compiling after "
                                    f"{self.timeout:g} s (raise the tuner's compile_timeout to wait longer)")

    def close(self) -> None:
        for cfg, alone in list(self._isolated.items()):  # retried compiles still running: given up
            procs = list(getattr(alone, "_processes", {}).values())
            alone.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                _kill_tree(proc.pid)
            del self._isolated[cfg]
        self._retry.clear()
        if self._pool is not None:
            procs = list(getattr(self._pool, "_processes", {}).values()) if self.timed_out else []
            self._pool.shutdown(wait=False, cancel_futures=True)  # results are in; workers exit on their own
            for proc in procs:  # a worker still in a given-up compile: stop it and its ptxas
                _kill_tree(proc.pid)
            self._pool = None
        if self._token is not None:
            with _FORK_LOCK:
                _FORKED.pop(self._token, None)
            self._token = None


def _kill_tree(pid: int) -> None:
    """SIGKILL a worker and the processes it started (Linux lists them in /proc), children first."""
    import signal
    from pathlib import Path

    kids: list[int] = []
    for f in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            kids += [int(x) for x in f.read_text().split()]
        except (OSError, ValueError):
            pass
    for p in (*kids, pid):
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def start_precompile(jit: Any, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
                     target: Any, jobs: int | None = None, timeout: float | None = None) -> Compiling:  # fmt: skip
    """Start compiling every config's binary into Triton's cache in worker processes; returns at once.

    Configs already in the cache, and (where no worker can take it) everything, are left to the JIT's
    first launch in this process: they are neither pending nor failed. Even one uncached config goes to a
    worker: there it has a timeout, and a compiler crash kills the worker, not this process.
    """
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
    if not todo:
        return Compiling(jit.__name__, failed, {})
    from tritune.screen.run import compile_cost

    todo.sort(key=lambda item: -compile_cost(item[0]))  # the slowest compile starts first, not last
    tgt = (target.backend, target.arch, target.warp_size)
    workers = max(1, min(jobs, len(todo)))
    tasks: dict[Config, tuple[Any, ...]] = {}
    if _fork_ok():
        token = next(_TOKENS)
        with _FORK_LOCK:
            _FORKED[token] = jit
        for cfg, spec in todo:
            tasks[cfg] = (_compile_forked, token, spec.signature, spec.constexprs, spec.attrs,
                          dict(spec.options.__dict__), tgt)  # fmt: skip

        def new_pool(n: int) -> ProcessPoolExecutor:
            return _ForkedPool(n)

        return _submit_all(jit.__name__, failed, tasks, new_pool, workers, token, timeout)
    where = _locate(jit)
    if where is None:
        return Compiling(jit.__name__, failed, {})
    module, qualname = where
    for cfg, spec in todo:
        tasks[cfg] = (_compile_task, module, qualname, list(sys.path), spec.signature, spec.constexprs, spec.attrs,
                      dict(spec.options.__dict__), tgt)  # fmt: skip
    return _submit_all(jit.__name__, failed, tasks, _SpawnedPool, workers, None, timeout)


class _ForkedPool(ProcessPoolExecutor):
    """Forked workers, each forking as it is started (at submit): the garbage collector is frozen across the
    fork so that no worker ever finalizes an object it inherited, and 3.12's warning about forking a
    process with threads is silenced (workers never touch the GPU or those threads)."""

    def __init__(self, workers: int) -> None:
        super().__init__(max_workers=workers, mp_context=mp.get_context("fork"))

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        with _FORK_LOCK:
            gc.freeze()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    return super().submit(fn, *args, **kwargs)
            finally:
                gc.unfreeze()


class _SpawnedPool(ProcessPoolExecutor):
    """Spawned workers: they must import triton with the interpreter off (its jitted helpers are built at
    import time), and they take the environment they start with, at submit."""

    def __init__(self, workers: int) -> None:
        super().__init__(max_workers=workers, mp_context=mp.get_context("spawn"))

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        saved = os.environ.pop("TRITON_INTERPRET", None)
        try:
            return super().submit(fn, *args, **kwargs)
        finally:
            if saved is not None:
                os.environ["TRITON_INTERPRET"] = saved


def _submit_all(name: str, failed: dict[Config, str], tasks: dict[Config, tuple[Any, ...]], new_pool: Any,
                workers: int, token: int | None, timeout: float | None) -> Compiling:  # fmt: skip
    pool = new_pool(workers)
    futs = {cfg: pool.submit(fn, *args) for cfg, (fn, *args) in tasks.items()}
    return Compiling(name, failed, futs, pool, token, timeout, tasks, new_pool)


def precompile(jit: Any, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any], target: Any,
               jobs: int | None = None, timeout: float | None = None) -> dict[Config, str]:
    """Fill Triton's cache with every config's binary; returns the configs that failed, with the reason."""
    c = start_precompile(jit, configs, args, kwargs, target, jobs, timeout)
    try:
        c.wait(0)
    finally:
        c.close()
    return c.failed
