"""Compile a decorated kernel's candidates in parallel worker processes before any timing.

Compiling is most of a cold tuning (Triton compiles one config at a time). Each candidate's exact JIT
specialization is built here from the real arguments (:func:`tritune.screen.specialize`), candidates
whose binary is already in Triton's on-disk cache are skipped, and the rest go to worker processes that
run ``triton.compile`` into that same cache. The JIT's first launch then only loads the binary.

Workers (:mod:`tritune.workers`) are **forked** where the platform allows and this process does not run Triton's interpreter:
they start at once with everything already imported (a spawned worker spends seconds importing torch
and Triton), and they compile the very kernel object of this process, so kernels defined in a script or
inside a function work too. The garbage collector is frozen across the fork so that no worker ever
finalizes an object (a CUDA tensor, say) it inherited; workers never touch the GPU. Elsewhere workers
are spawned and re-import the kernel's module by name; a kernel that cannot be found that way
(defined in ``__main__`` or a function) is then left to the JIT. Candidates go longest compile first
(big tiles on few warps), so the slowest compile starts at once instead of last, and workers are not
waited on to exit.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.adapters.triton_key import install_triton_key_memo
from tritune.config import Config, hooked_arguments
from tritune.screen.compile_errors import compile_error_words
from tritune.workers import Done, Forked, Spawned, WorkerService


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

    from tritune.adapters.kernel import as_jit

    install_triton_key_memo()  # a spawned worker: Triton's key read back from the memo, not hashed again

    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    jit = as_jit(obj)
    try:
        triton.compile(ASTSource(jit, sig, constexprs, attrs), target=GPUTarget(*target), options=options)
    except Exception as e:
        return f"{type(e).__name__}: {compile_error_words(e)}"
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
        return f"{type(e).__name__}: {compile_error_words(e)}"
    return None


def as_jit_names(jit: Any) -> list[str]:
    """The kernel's parameter names, in order (what a ``pre_hook``'s dict is keyed by)."""
    from tritune.adapters.kernel import as_jit

    return list(as_jit(jit).arg_names)


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


def _forked_handler(payload: object) -> object:
    """Worker side, forked: ``_compile_forked`` looked up at call time (a test may stand a fake in for it)."""
    return _compile_forked(*payload)  # type: ignore[misc]


def _spawned_handler(path: list[str]) -> Callable[[object], object]:
    """Worker side, spawned: the caller's ``sys.path``, then ``_compile_task`` for each task."""
    for p in reversed(path):
        if p not in sys.path:
            sys.path.insert(0, p)
    return lambda payload: _compile_task(*payload)  # type: ignore[misc]


class Compiling:
    """Compiles in flight on the worker service (from :func:`start_precompile`), longest first.

    :meth:`wait` collects finished compiles until at most ``max_pending`` remain, so a caller can load and
    race the configs compiled first while the slowest ones finish. A compile still running ``timeout``
    seconds after a worker took it (some configs keep ptxas busy for minutes) is given up: its worker is
    killed with its ptxas, and it lands in ``failed`` and ``timed_out``. A compiler crash kills only its
    worker: that config is compiled once more in a fresh worker, and fails only if it crashes again.
    :meth:`close` ends the service: idle workers exit on their own, busy ones are killed.
    """

    def __init__(self, name: str, failed: dict[Config, str], service: WorkerService | None = None,
                 configs: Sequence[Config] = (), on_close: Callable[[], None] | None = None) -> None:  # fmt: skip
        self.name = name
        self.failed = failed
        self.pending: dict[Config, None] = dict.fromkeys(configs)
        self.timed_out: set[Config] = set()
        #: Worker processes compiling (0: none started; every compile is left to the JIT here).
        self.workers = service.jobs if service is not None else 0
        self._service = service
        self._on_close = on_close

    def wait(self, max_pending: int = 0) -> list[Config]:
        """Block until at most ``max_pending`` compiles are left; the configs that finished without failing."""
        done: list[Config] = []
        while len(self.pending) > max_pending and self._service is not None:
            if not self._service.busy:  # never expected: every submitted compile ends once; do not spin
                for lost in list(self.pending):
                    self.failed[lost] = f"{self.name} {lost.id}: its compile ended without a result"
                    del self.pending[lost]
                break
            for end in self._service.results():
                cfg = end.id
                assert isinstance(cfg, Config)
                self.pending.pop(cfg, None)
                if isinstance(end, Done) and end.result is None:
                    done.append(cfg)
                elif isinstance(end, Done):
                    self.failed[cfg] = f"{self.name} does not compile with {cfg.id}: {end.result}"
                elif end.why == "timeout":
                    self.timed_out.add(cfg)
                    self.failed[cfg] = (f"{self.name} {cfg.id}: compile_timeout: still compiling after "
                                        f"{self._service.timeout:g} s (raise the tuner's compile_timeout to "
                                        "wait longer)")  # fmt: skip
                elif end.why == "died":
                    self.failed[cfg] = (f"{self.name} does not compile with {cfg.id}: {end.reason}: the compiler "
                                        "crashed (an LLVM fatal error or a segfault in ptxas, say)")  # fmt: skip
                else:
                    self.failed[cfg] = f"{self.name} does not compile with {cfg.id}: {end.reason}"
        if not self.pending:
            self.close()
        return done

    def close(self) -> None:
        """End the workers (a compile still running is given up) and forget the kernel handed to them."""
        if self._service is not None:
            self._service.close()
            self._service = None
        if self._on_close is not None:
            self._on_close()
            self._on_close = None


def start_precompile(jit: Any, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
                     target: Any, jobs: int | None = None, timeout: float | None = None,
                     kwargs_for: Callable[[Config], Mapping[str, Any]] | None = None,
                     pre_hook: Callable[[dict[str, Any]], Any] | None = None) -> Compiling:  # fmt: skip
    """Start compiling every config's binary into Triton's cache in worker processes; returns at once.

    Configs already in the cache, and (where no worker can take it) everything, are left to the JIT's
    first launch in this process: they are neither pending nor failed. Even one uncached config goes to a
    worker: there it has a timeout, and a compiler crash kills the worker, not this process. A config with a
    ``pre_hook`` is specialized for the arguments as its hook leaves them (:func:`hooked_arguments`).
    ``kwargs_for(cfg)``: the keyword arguments of ``cfg``'s launch where they differ per config (the values
    of ``@triton.heuristics`` stacked under the decorator, computed here in the parent); a config whose
    ``kwargs_for`` raises is left to the JIT, which raises it as Triton does. ``pre_hook``: the hook of a config
    that has none of its own (a Workload's, :attr:`tritune.Workload.pre_hook`).
    """
    from tritune.errors import KernelSpecError
    from tritune.screen.specialize import specialize

    install_triton_key_memo()  # before any fork: forked workers inherit it, with the key once resolved
    jobs = default_jobs() if jobs is None else jobs
    todo = []
    failed: dict[Config, str] = {}
    names = list(as_jit_names(jit))
    for cfg in configs:
        try:
            cargs, ckwargs = hooked_arguments(names, cfg, args, kwargs if kwargs_for is None else kwargs_for(cfg),
                                              pre_hook)  # fmt: skip
            spec = specialize(jit, cargs, cfg, target, ckwargs)
        except KernelSpecError as e:
            failed[cfg] = str(e)
            continue
        except Exception:  # the pre_hook itself raised: left to the JIT's launch, which raises it as Triton does
            continue
        if not _cached(spec):
            todo.append((cfg, spec))
    if not todo:
        return Compiling(jit.__name__, failed)
    from tritune.screen.run import compile_cost

    todo.sort(key=lambda item: -compile_cost(item[0]))  # the slowest compile starts first, not last
    tgt = (target.backend, target.arch, target.warp_size)
    jobs = max(1, min(jobs, len(todo)))
    start: Forked | Spawned
    tasks: list[tuple[Config, tuple[object, ...]]]
    on_close = None
    if _fork_ok():
        token = next(_TOKENS)
        with _FORK_LOCK:
            _FORKED[token] = jit

        def forget() -> None:
            with _FORK_LOCK:
                _FORKED.pop(token, None)

        start, on_close = Forked(_forked_handler), forget
        tasks = [(cfg, (token, spec.signature, spec.constexprs, spec.attrs, dict(spec.options.__dict__), tgt))
                 for cfg, spec in todo]  # fmt: skip
    else:
        where = _locate(jit)
        if where is None:  # no worker could find this kernel: the JIT compiles it at its first launch
            return Compiling(jit.__name__, failed)
        module, qualname = where
        start = Spawned("tritune.engine.precompile:_spawned_handler", list(sys.path), {"TRITON_INTERPRET": None})
        tasks = [(cfg, (module, qualname, list(sys.path), spec.signature, spec.constexprs, spec.attrs,
                        dict(spec.options.__dict__), tgt)) for cfg, spec in todo]  # fmt: skip
    service = WorkerService(start, jobs, timeout=timeout, name="compile worker")
    for cfg, payload in tasks:
        service.submit(cfg, payload)
    return Compiling(jit.__name__, failed, service, [cfg for cfg, _ in tasks], on_close)


@dataclass(frozen=True)
class Precompiler:
    """A tuning job's compiler: :func:`start_precompile` of ``jit`` for ``target`` with these arguments."""

    jit: Any
    args: Sequence[Any]
    kwargs: Mapping[str, Any]
    target: Any
    jobs: int | None = None
    timeout: float | None = None
    #: Per-config keyword arguments (stacked ``@triton.heuristics``): see :func:`start_precompile`.
    kwargs_for: Callable[[Config], Mapping[str, Any]] | None = None
    #: The hook of configs without one of their own (a Workload's): see :func:`start_precompile`.
    pre_hook: Callable[[dict[str, Any]], Any] | None = None

    def __call__(self, configs: Sequence[Config]) -> Compiling:
        if self.kwargs_for is None and self.pre_hook is None:
            return start_precompile(self.jit, configs, self.args, self.kwargs, self.target, self.jobs, self.timeout)
        return start_precompile(self.jit, configs, self.args, self.kwargs, self.target, self.jobs, self.timeout,
                                kwargs_for=self.kwargs_for, pre_hook=self.pre_hook)  # fmt: skip


def precompile(jit: Any, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any], target: Any,
               jobs: int | None = None, timeout: float | None = None,
               kwargs_for: Callable[[Config], Mapping[str, Any]] | None = None) -> dict[Config, str]:  # fmt: skip
    """Fill Triton's cache with every config's binary; returns the configs that failed, with the reason."""
    c = start_precompile(jit, configs, args, kwargs, target, jobs, timeout, kwargs_for)
    try:
        c.wait(0)
    finally:
        c.close()
    return c.failed
