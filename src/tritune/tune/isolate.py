"""Crash isolation: benchmark in a worker process, so a candidate that hangs or kills its process costs
only itself.

An illegal memory access poisons the whole CUDA context: every later launch in that process fails. So
the timing runs in a worker subprocess (``spawn``: CUDA cannot survive ``fork``). A candidate whose
worker hangs past ``timeout_s``, dies, or raises is recorded as ``launch_failed`` with the reason; the
worker is killed and replaced, and the next candidate goes on in a fresh one.

Work travels as a picklable description, :class:`BenchTask` (workload file, workload name, key,
config JSON, budget, options), never as a closure. The worker runs a *runner* named by a string,
``"package.module:function"`` or ``"/path/to/file.py:function"``, called as ``runner(task) ->
Measurement | Failure``; the default, :func:`gpu_runner`, launches the workload's kernel with the
config and times it with the CUDA event timer.
"""

from __future__ import annotations

import importlib
import importlib.util
import multiprocessing as mp
import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from tritune.bench.stats import Measurement
from tritune.bench.timer import ConfigMeasure, Failure
from tritune.config import Config, as_config
from tritune.errors import TimingUnavailableError
from tritune.outcome import Status

DEFAULT_RUNNER = "tritune.tune.isolate:gpu_runner"


@dataclass(frozen=True)
class BenchTask:
    """One timing job for a worker: plain data only, so it pickles and can be logged as JSON."""

    workload_path: str
    workload_name: str
    key: Mapping[str, Any]
    config: Mapping[str, Any]
    budget_s: float = 0.05
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, workload_path: str | Path, workload_name: str, key: Mapping[str, Any], config: Any,
        budget_s: float = 0.05, **options: Any,
    ) -> BenchTask:  # fmt: skip
        return cls(
            str(workload_path), workload_name, dict(key), as_config(config).to_json(), budget_s, options
        )

    @property
    def config_obj(self) -> Config:
        return Config.from_json(self.config)


def resolve_runner(spec: str) -> Callable[[BenchTask], Measurement | Failure]:
    """``"pkg.mod:fn"`` or ``"/path/file.py:fn"`` to the function it names."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise ValueError(f"runner {spec!r} must look like 'package.module:function' or 'file.py:function'")
    if where.endswith(".py"):
        path = Path(where)
        modspec = importlib.util.spec_from_file_location(f"tritune_runner_{path.stem}", path)
        if modspec is None or modspec.loader is None:
            raise ValueError(f"runner {spec!r}: {path} is not a Python file")
        module = importlib.util.module_from_spec(modspec)
        modspec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"runner {spec!r}: {where} has no function {name!r}")
    return fn  # type: ignore[no-any-return]


def _worker_main(conn: Connection, runner_spec: str, env: Mapping[str, str]) -> None:
    os.environ.update(env)
    try:
        runner = resolve_runner(runner_spec)
    except BaseException as e:
        conn.send(("startup_error", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ready", os.getpid()))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            conn.send(("ok", runner(task)))
        except BaseException as e:
            tb = traceback.format_exc(limit=4)
            conn.send(("error", (type(e).__name__, f"{type(e).__name__}: {e}", tb)))


class IsolatedBench:
    """Runs :class:`BenchTask` s in a worker process, replacing the worker after any crash, hang or error.

    ``run(task)`` returns the runner's Measurement or Failure, or ``Failure(LAUNCH_FAILED, reason)``
    when the worker hung past ``timeout_s`` (killed), died (exit code in the reason) or raised (the
    worker is replaced too, since a CUDA error leaves its context unusable). ``restarts`` counts the
    replacements. A runner raising TimingUnavailableError, or a worker that cannot start, raises
    TimingUnavailableError here: no candidate could be timed.
    """

    def __init__(
        self,
        runner: str = DEFAULT_RUNNER,
        *,
        timeout_s: float = 30.0,
        start_timeout_s: float = 300.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if runner != DEFAULT_RUNNER:
            resolve_runner(runner)  # a bad spec fails here, not in every worker
        self.runner = runner
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.env = dict(env or {})
        self.restarts = 0
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Connection | None = None
        self.worker_pid: int | None = None

    # -- worker lifecycle ----------------------------------------------------------------------------
    def _start(self) -> Connection:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_worker_main, args=(child, self.runner, self.env), daemon=True)
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        if not parent.poll(self.start_timeout_s):
            self._kill()
            raise TimingUnavailableError(
                f"the benchmark worker did not start within {self.start_timeout_s} s"
            )
        try:
            kind, payload = parent.recv()
        except EOFError:
            code = proc.exitcode
            self._kill()
            raise TimingUnavailableError(
                f"the benchmark worker died while starting (exit code {code})"
            ) from None
        if kind != "ready":
            self._kill()
            raise TimingUnavailableError(f"the benchmark worker could not start: {payload}")
        self.worker_pid = int(payload)
        return parent

    def _kill(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(timeout=10)
        self._proc = self._conn = None
        self.worker_pid = None

    def _replace(self) -> None:
        self._kill()
        self.restarts += 1

    def close(self) -> None:
        """Stop the worker (politely, then by force)."""
        if self._conn is not None and self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(timeout=5)
            except (OSError, BrokenPipeError):
                pass
        self._kill()

    def __enter__(self) -> IsolatedBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- work ----------------------------------------------------------------------------------------
    def run(self, task: BenchTask, *, timeout_s: float | None = None) -> Measurement | Failure:
        """Run one task in the worker; see the class docstring for what a crash or hang gives."""
        conn = self._conn if self._conn is not None else self._start()
        cid = task.config_obj.id
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            conn.send(task)
        except (OSError, BrokenPipeError):
            self._replace()
            return Failure(
                Status.LAUNCH_FAILED, f"{cid}: the benchmark worker was gone before the task was sent"
            )
        if not conn.poll(limit):
            self._replace()
            return Failure(
                Status.LAUNCH_FAILED,
                f"{cid}: no result after {limit:g} s (the kernel hung or ran far too long); "
                "its worker was killed and replaced",
            )
        try:
            kind, payload = conn.recv()
        except EOFError:
            proc = self._proc
            if proc is not None:
                proc.join(timeout=10)
            code = None if proc is None else proc.exitcode
            self._replace()
            return Failure(
                Status.LAUNCH_FAILED,
                f"{cid}: the benchmark worker died (exit code {code}), as after an illegal memory access "
                "or a crash in the driver; it was replaced",
            )
        if kind == "ok":
            if not isinstance(payload, (Measurement, Failure)):
                raise TypeError(
                    f"runner {self.runner} returned {type(payload).__name__}, not Measurement/Failure"
                )
            return payload
        type_name, message, _tb = payload
        self._replace()
        if type_name == "TimingUnavailableError":
            raise TimingUnavailableError(message)
        return Failure(Status.LAUNCH_FAILED, f"{cid}: {message} (its worker was replaced)")

    def measure_for(
        self, workload_path: str | Path, workload_name: str, key: Mapping[str, Any], **options: Any
    ) -> ConfigMeasure:
        """A :class:`~tritune.bench.timer.ConfigMeasure` for the race: each call is one isolated task."""

        def measure(config: Config, budget_s: float) -> Measurement | Failure:
            return self.run(BenchTask.of(workload_path, workload_name, key, config, budget_s, **options))

        return measure


# -- the default runner (runs inside the worker) ------------------------------------------------------
_CACHE: dict[Any, Any] = {}




def gpu_runner(task: BenchTask) -> Measurement | Failure:
    """Launch ``task``'s workload kernel with its config on the GPU and time it with the event timer.

    Options (``task.options``): ``rel_tol`` (0.01), ``min_samples`` (5), ``warmup_s`` for a config's
    first timing (0.005), ``rewarm_s`` for later ones (0.001), ``flush_l2`` (True), ``graph`` (False),
    ``seed`` (0, for the inputs). Workload, inputs per key, launches and timers are kept between tasks.
    """
    import torch
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources

    from tritune.bench.event import EventTimer
    from tritune.device import gpu_unavailable_reason
    from tritune.kernel import as_jit
    from tritune.workload import load_workloads

    reason = gpu_unavailable_reason()
    if reason is not None:
        raise TimingUnavailableError(f"the benchmark worker cannot time on a GPU: {reason}")
    opts = dict(task.options)
    wkey = ("workload", task.workload_path, task.workload_name)
    if wkey not in _CACHE:
        _CACHE[wkey] = load_workloads(task.workload_path, task.workload_name)[0]
    w = _CACHE[wkey]
    key = dict(task.key)
    akey = (*wkey, repr(sorted(key.items())))
    if akey not in _CACHE:
        torch.manual_seed(int(opts.get("seed", 0)))
        _CACHE[akey] = w.make_args(key, "cuda")
    args = _CACHE[akey]
    cfg = task.config_obj
    fkey = (*akey, cfg)
    first = fkey not in _CACHE
    if first:
        kernel = as_jit(w.kernel)
        grid = w.grid_for(cfg, key)
        kw = {**w.caller_kwargs(key), **cfg.kwargs, **cfg.launch_options()}

        def launch() -> None:
            kernel[grid](*args, **kw)

        _CACHE[fkey] = launch
    tkey = ("timer", bool(opts.get("flush_l2", True)), bool(opts.get("graph", False)))
    if tkey not in _CACHE:
        _CACHE[tkey] = EventTimer(flush_l2=tkey[1], graph=tkey[2])
    try:
        return _CACHE[tkey].measure(  # type: ignore[no-any-return]
            _CACHE[fkey],
            budget_s=task.budget_s,
            rel_tol=float(opts.get("rel_tol", 0.01)),
            min_samples=int(opts.get("min_samples", 5)),
            warmup_s=float(opts.get("warmup_s", 0.005) if first else opts.get("rewarm_s", 0.001)),
        )
    except OutOfResources as e:
        return Failure(Status.ILLEGAL, f"{cfg.id}: {e}")
    except CompilationError as e:
        return Failure(Status.COMPILE_FAILED, f"{cfg.id}: {str(e).strip().splitlines()[-1]}")
