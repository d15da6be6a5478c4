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
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        cores = os.cpu_count() or 1
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
                 timeout: float | None = None) -> None:  # fmt: skip
        self.name = name
        self.failed = failed
        self.pending = pending
        self.timed_out: set[Config] = set()
        self.timeout = timeout
        self._pool = pool
        self._token = token
        self._started: dict[Config, float] = {}  # when a worker (probably) took it
        self._seen: dict[Config, float] = {}  # when the pool first marked it running (queued)
        self._stuck: list[Future[str | None]] = []  # given-up compiles whose workers are still busy

    def wait(self, max_pending: int = 0) -> list[Config]:
        """Block until at most ``max_pending`` compiles are left; the configs that finished without failing."""
        done: list[Config] = []
        while len(self.pending) > max_pending:
            poll = None if self.timeout is None else 0.25
            finished, _ = wait(list(self.pending.values()), timeout=poll, return_when=FIRST_COMPLETED)
            now = time.monotonic()
            if self.timeout is not None:
                self._expire(finished, now)
            for cfg, fut in list(self.pending.items()):
                if fut not in finished:
                    continue
                del self.pending[cfg]
                try:
                    why = fut.result()
                except Exception:  # a worker died: the in-process compile at first launch reports it
                    why = None
                if why is None:
                    done.append(cfg)
                else:
                    self.failed[cfg] = f"{self.name} does not compile with {cfg.id}: {why}"
        if not self.pending:
            self.close()
        return done

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
        workers = getattr(self._pool, "_max_workers", None) or len(self.pending)
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
    first launch in this process: they are neither pending nor failed.
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
    if len(todo) < 2 or jobs < 2:
        return Compiling(jit.__name__, failed, {})  # the JIT compiles what is left on first use, here
    from tritune.screen.run import compile_cost

    todo.sort(key=lambda item: -compile_cost(item[0]))  # the slowest compile starts first, not last
    tgt = (target.backend, target.arch, target.warp_size)
    workers = min(jobs, len(todo))
    if _fork_ok():
        with _FORK_LOCK:
            token = next(_TOKENS)
            _FORKED[token] = jit
            gc.freeze()  # inherited objects stay out of the workers' collections
            try:
                with warnings.catch_warnings():  # 3.12 warns on fork() in a process with threads
                    warnings.simplefilter("ignore", DeprecationWarning)
                    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"))
                    futs = {cfg: pool.submit(_compile_forked, token, spec.signature, spec.constexprs, spec.attrs,
                                             dict(spec.options.__dict__), tgt) for cfg, spec in todo}
            finally:
                gc.unfreeze()
        return Compiling(jit.__name__, failed, futs, pool, token, timeout)
    where = _locate(jit)
    if where is None:
        return Compiling(jit.__name__, failed, {})
    module, qualname = where
    # Spawned workers must import triton with the interpreter off (its jitted helpers are built at
    # import time), and they take the environment they start with.
    saved = os.environ.pop("TRITON_INTERPRET", None)
    try:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
        futs = {cfg: pool.submit(_compile_task, module, qualname, list(sys.path), spec.signature, spec.constexprs,
                                 spec.attrs, dict(spec.options.__dict__), tgt) for cfg, spec in todo}
    finally:
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved
    return Compiling(jit.__name__, failed, futs, pool, None, timeout)


def precompile(jit: Any, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any], target: Any,
               jobs: int | None = None, timeout: float | None = None) -> dict[Config, str]:
    """Fill Triton's cache with every config's binary; returns the configs that failed, with the reason."""
    c = start_precompile(jit, configs, args, kwargs, target, jobs, timeout)
    try:
        c.wait(0)
    finally:
        c.close()
    return c.failed
