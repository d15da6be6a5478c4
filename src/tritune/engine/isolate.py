"""Crash isolation: benchmark in a worker process, so a candidate that hangs or kills its process costs
only itself.

An illegal memory access poisons the whole CUDA context: every later launch in that process fails. So
the timing runs in a spawned worker of the worker service (:mod:`tritune.workers`; CUDA cannot survive
``fork``). A candidate whose
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
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritune.bench.stats import Measurement
from tritune.bench.timer import ConfigMeasure, Failure
from tritune.config import Config, as_config
from tritune.errors import TimingUnavailableError
from tritune.outcome import Status
from tritune.screen.compile_errors import compile_error_words
from tritune.workers import Done, Spawned, WorkerService

DEFAULT_RUNNER = "tritune.engine.isolate:gpu_runner"


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


def _handler(runner_spec: str) -> Callable[[BenchTask], Measurement | Failure]:
    """Worker side: the runner the spec names, called for each task."""
    return resolve_runner(runner_spec)


class IsolatedBench:
    """Runs :class:`BenchTask` s in one worker of the worker service, replacing it after any crash, hang or error.

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
        self._service = WorkerService(Spawned("tritune.engine.isolate:_handler", runner, dict(env or {})), 1,
                                      timeout=timeout_s, retries=0, start_timeout=start_timeout_s,
                                      name="benchmark worker", start_error=TimingUnavailableError)  # fmt: skip
        self._ids = itertools.count()

    @property
    def restarts(self) -> int:
        return self._service.restarts

    def close(self) -> None:
        """Stop the worker."""
        self._service.close()

    def __enter__(self) -> IsolatedBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, task: BenchTask, *, timeout_s: float | None = None) -> Measurement | Failure:
        """Run one task in the worker; see the class docstring for what a crash or hang gives."""
        cid = task.config_obj.id
        limit = self.timeout_s if timeout_s is None else timeout_s
        self._service.submit(next(self._ids), task, timeout=limit)
        ends = list(self._service.run())
        (end,) = ends
        if isinstance(end, Done):
            if not isinstance(end.result, (Measurement, Failure)):
                raise TypeError(
                    f"runner {self.runner} returned {type(end.result).__name__}, not Measurement/Failure"
                )
            return end.result
        if end.why == "timeout":
            why = f"no result after {limit:g} s (the kernel hung or ran far too long); its worker was killed and replaced"
        elif end.why == "died":
            why = f"{end.reason}, as after an illegal memory access or a crash in the driver; it was replaced"
        elif isinstance(end.error, TimingUnavailableError):
            raise TimingUnavailableError(str(end.error))
        else:
            why = f"{end.reason} (its worker was replaced)"
        return Failure(Status.LAUNCH_FAILED, f"{cid}: {why}")

    def measure_for(
        self, workload_path: str | Path, workload_name: str, key: Mapping[str, Any], **options: Any
    ) -> ConfigMeasure:
        """A :class:`~tritune.bench.timer.ConfigMeasure` for the race: each call is one isolated task."""

        def measure(config: Config, budget_s: float) -> Measurement | Failure:
            return self.run(BenchTask.of(workload_path, workload_name, key, config, budget_s, **options))

        return measure


# -- the default runner (runs inside the worker) ------------------------------------------------------
_CACHE: dict[Any, Any] = {}




def _check(w: Any, key: dict[str, Any], akey: tuple[Any, ...], args: list[Any], cfg: Config) -> Failure | None:
    """Worker side: ``cfg``'s outputs against the oracle (verify's own check); the Failure, or None if correct."""
    from tritune.adapters.kernel import as_jit
    from tritune.verify.run import check_candidate, clone_arg

    okey = (*akey, "oracle")
    if okey not in _CACHE:
        pristine = [clone_arg(a) for a in args]
        expected = list(w.oracle([clone_arg(a) for a in pristine]))
        _CACHE[okey] = (pristine, expected)
    pristine, expected = _CACHE[okey]
    got = check_candidate(w, key, cfg, args, pristine, w.caller_kwargs(key), expected, as_jit(w.kernel), False)
    if got.status is Status.CORRECT:
        return None
    status = Status.LAUNCH_FAILED if got.status is Status.ERROR else got.status
    return Failure(status, got.reason or f"{cfg.id}: {got.status.value}")


def gpu_runner(task: BenchTask) -> Measurement | Failure:
    """Launch ``task``'s workload kernel with its config on the GPU and time it with the event timer.

    Options (``task.options``): ``rel_tol`` (0.01), ``min_samples`` (5), ``warmup_s`` for a config's
    first timing (0.005), ``rewarm_s`` for later ones (0.001), ``measure`` (the policy, ``"cold"``),
    ``seed`` (0, for the inputs), ``verify`` (False: True checks a config's outputs against the workload's
    oracle, as ``verify`` does, before its first timing). Workload, inputs per key, launches and timers are
    kept between tasks.
    """
    import torch
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources

    from tritune.adapters.kernel import as_jit
    from tritune.bench.event import EventTimer
    from tritune.device import gpu_unavailable_reason
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
    if first and opts.get("verify") and w.oracle is not None:
        wrong = _check(w, key, akey, args, cfg)
        if wrong is not None:
            return wrong
    if first:
        kernel = as_jit(w.kernel)
        grid = w.grid_for(cfg, key)
        h_args, h_kw = w.hooked(cfg, args, w.caller_kwargs(key))
        kw = {**h_kw, **cfg.kwargs, **cfg.launch_options()}

        def launch() -> None:
            kernel[grid](*h_args, **kw)

        _CACHE[fkey] = launch
    tkey = ("timer", str(opts.get("measure", "cold")))
    if tkey not in _CACHE:
        _CACHE[tkey] = EventTimer.for_policy(tkey[1])
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
        return Failure(Status.COMPILE_FAILED, f"{cfg.id}: {compile_error_words(e)}")
