"""Compile, load and race one list of candidates, the timing overlapping the last compiles.

The decorator and ``tritune tune`` (one process, or each rank of a farm for its share) all tune through
:func:`compile_and_race`:

1. the compiles were started on the worker service (:func:`tritune.engine.precompile.start_precompile`),
   longest compile first;
2. once at most ``tail`` compiles are left (half the workers idle: only stragglers remain), the configs
   compiled so far are loaded in this process (``prepare``: the GPU's own resource check, then the
   oracle check when there is one) and raced;
3. the stragglers are loaded as they finish and the race goes on with them (``race(..., prior=)``), so
   a late config still wins when it is the fastest.

Every config ends with an outcome in the returned race: compile failures (``compile_failed``,
``compile_timeout``) and the ``prepare`` failures (``illegal``, ``launch_failed``, ``incorrect``) too, with
their reasons. Binary facts from loading (registers, spills, shared memory) ride on the outcomes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from tritune.bench.timer import ConfigMeasure, Failure
from tritune.config import Config
from tritune.engine.aside import Later
from tritune.engine.race import CandidateOutcome, RaceOptions, RaceResult, race, sweep
from tritune.outcome import Status
from tritune.screen.compile_errors import compile_error_words


class Compiles(Protocol):
    """Compiles in flight, as :func:`compile_and_race` sees them (:class:`tritune.engine.precompile.Compiling`)."""

    @property
    def failed(self) -> Mapping[Config, str]: ...
    @property
    def timed_out(self) -> Collection[Config]: ...
    @property
    def pending(self) -> Collection[Config]: ...
    @property
    def workers(self) -> int: ...
    def wait(self, max_pending: int = 0) -> list[Config]: ...
    def close(self) -> None: ...


#: What ``prepare`` returns for one config: a Failure to record, or the loaded binary's facts (or None).
Prepared = Failure | Mapping[str, Any] | None


def load_binary(jit: Any, name: str, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any],
                grid: Any) -> Failure | dict[str, Any]:  # fmt: skip
    """Compile ``cfg`` (from Triton's cache after a precompile) and load it on the current GPU.

    Returns the Failure (``illegal``: the GPU refuses it, for shared memory or threads x registers;
    ``compile_failed``) or the binary's facts: ``registers`` per thread, ``spilled_bytes`` per thread and
    ``shared`` memory per block, as the driver reports them.
    """
    from triton.compiler.errors import CompilationError

    try:
        from triton.runtime.errors import OutOfResources
    except ImportError:  # pragma: no cover
        OutOfResources = RuntimeError  # type: ignore[assignment,misc]
    try:
        k = jit.run(*args, grid=grid, warmup=True, **kwargs, **cfg.kwargs, **cfg.launch_options())
        init = getattr(k, "_init_handles", None)
        if callable(init):
            init()  # loads the binary: raises OutOfResources for too much shared memory or registers
    except OutOfResources as e:
        return Failure(Status.ILLEGAL, f"{name} {cfg.id}: the GPU refused to load it: {e}")
    except CompilationError as e:
        return Failure(Status.COMPILE_FAILED, f"{name} does not compile with {cfg.id}: {compile_error_words(e)}")
    except Exception as e:  # the backend's own errors: MLIR pass failures, PTXASError, ...
        return Failure(Status.COMPILE_FAILED,
                       f"{name} does not compile with {cfg.id}: {type(e).__name__}: {_last_line(e)}")  # fmt: skip
    facts: dict[str, Any] = {}
    regs, spills = getattr(k, "n_regs", None), getattr(k, "n_spills", None)
    shared = getattr(getattr(k, "metadata", None), "shared", None)
    if isinstance(regs, int):
        facts["registers"] = regs
    if isinstance(spills, int):
        facts["spilled_bytes"] = 4 * spills  # Triton's n_spills is the local memory size / 4
    if isinstance(shared, int):
        facts["shared"] = shared
    return facts


def after_compiles(compiler: Callable[[Sequence[Config]], Any] | None,
                   *starts: Callable[[], None]) -> Callable[[Sequence[Config]], Any] | None:  # fmt: skip
    """``compiler``, which calls each of ``starts`` (each starts work on a helper thread, and does nothing when
    called again) once a call has started the compiles (their workers forked): that work then runs beside the
    compiles, and no fork waits for a thread inside a compiler (:mod:`tritune.workers.service`). What starts
    there: a timer's build (:meth:`LazyMeasure.start`), the output check's inputs and comparison
    (:meth:`tritune.verify.reference.OutputCheck.prepare`). Without a compiler they start now."""
    if compiler is None:
        for start in starts:
            start()
        return None
    inner = compiler

    def compile_then_start(configs: Sequence[Config]) -> Any:
        try:
            return inner(configs)
        finally:
            for start in starts:
                start()

    return compile_then_start


class LazyMeasure:
    """A ConfigMeasure built by ``make()`` at its first call: no timer is set up (nor the GPU warmed)
    for a tuning in which every candidate fails before timing.

    :meth:`start` builds it ahead instead, on a helper thread (:func:`~tritune.engine.aside.aside`) beside the
    caller's setup, and the first call waits for it. A GPU timer's setup is device work with the interpreter's
    lock mostly released: its L2 flush buffer (a first allocation of ~0.1 GB, ~0.04 s in a fresh process) and
    the clocks' 50 ms warm-up (``warm_if_idle``); built at the first timing, both sat between a key's first
    checks and its first timings. ``seconds``/``waited_s``: the helper's seconds and how long the
    first call waited for them (0 when built in place)."""

    def __init__(self, make: Callable[[], ConfigMeasure]) -> None:
        self._build = Later(make, name="tritune-timer")
        self._measure: ConfigMeasure | None = None

    @property
    def seconds(self) -> float:
        return self._build.seconds

    @property
    def waited_s(self) -> float:
        return self._build.waited_s

    def start(self) -> None:
        """Begin building the measure on a helper thread now (once; nothing if it is built already). Its device
        work runs torch ops that a library may send to Triton kernels of its own, compiled there, and a worker's
        fork waits while another thread compiles (:mod:`tritune.workers.service`): start it after a key's first
        compiles (:func:`after_compiles`)."""
        if self._measure is None:
            self._build.start()

    def __call__(self, config: Config, budget_s: float) -> Any:
        if self._measure is None:  # its exception (no GPU timer here) is raised here, ahead or in place
            self._measure = self._build.result()
        return self._measure(config, budget_s)


def _last_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[-1] if lines else type(e).__name__


def compile_and_race(
    configs: Sequence[Config],
    *,
    prepare: Callable[[Config], Prepared],
    measure: ConfigMeasure,
    options: RaceOptions,
    compiling: Compiles | None = None,
    method: str = "race",
    tail: int | None = None,
    stats: dict[str, Any] | None = None,
    prior: RaceResult | None = None,
    on_tail: Callable[[], Any] | None = None,
) -> RaceResult:
    """Race ``configs`` as their compiles finish (module docstring); every config gets an outcome.

    ``compiling``: the compiles (:class:`~tritune.engine.precompile.Compiling`) started on ``configs`` (None: the JIT
    compiles each at its first load, here). ``prepare(config)`` loads one compiled config and checks it:
    a Failure to record, or None/a mapping of facts to keep on its outcome. ``measure`` times a config
    (wrap it in :class:`LazyMeasure` to set the timer up only once something is timed).
    ``method="sweep"`` times every config to completion, after all compiles. ``tail``: race the compiled
    ones once at most this many compiles are left (default: half the workers ``compiling`` started).
    ``stats``, when given, receives the first race's size and time, when the last compile ended
    (``compiled_s``), when the last config was loaded and checked (``loaded_s``), the seconds spent inside
    ``prepare`` (``prepare_s``) and when the race ended (``raced_s``), all from the call's start.
    ``prior``: the race of earlier batches (a search, :mod:`tritune.engine.loop`): its survivors race on
    with these configs and its outcomes are kept, so one race decides within and across batches.
    ``on_tail()`` is called once, when at most ``tail`` compiles are left (or at once when nothing compiles
    here): half the workers are idle, and a search starts its next batch's compiles there.
    """
    clock = time.perf_counter()
    order = {c: i for i, c in enumerate(configs)}
    failures: dict[Config, Failure] = {}
    facts: dict[Config, Mapping[str, Any]] = {}
    def compile_failure(c: Config) -> Failure:
        assert compiling is not None
        timed_out = c in compiling.timed_out
        return Failure(Status.COMPILE_TIMEOUT if timed_out else Status.COMPILE_FAILED, compiling.failed[c])

    prepared_s = 0.0

    def load(cfgs: Sequence[Config]) -> list[Config]:
        nonlocal prepared_s
        ok = []
        for c in sorted(cfgs, key=order.__getitem__):
            if compiling is not None and c in compiling.failed:
                failures[c] = compile_failure(c)
                continue
            t = time.perf_counter()
            got = prepare(c)
            prepared_s += time.perf_counter() - t
            if isinstance(got, Failure):
                failures[c] = got
                continue
            if got:
                facts[c] = got
            ok.append(c)
        return ok

    first: RaceResult | None = None
    if tail is None:
        tail = max(1, (compiling.workers if compiling is not None else 0) // 2)
    compiled_at: float | None = None
    try:
        if compiling is not None and compiling.pending and method == "race":
            done = [c for c in configs if c not in compiling.pending] + compiling.wait(tail)
            if on_tail is not None:
                on_tail()
            early = load(done)
            if compiling.pending and (len(early) >= 2 or (prior is not None and early)):
                first = race(early, measure, options, prior=prior)
                if stats is not None:
                    stats["first_race"] = {"candidates": len(early), "s": round(time.perf_counter() - clock, 3),
                                           "left_compiling": len(compiling.pending)}  # fmt: skip
                early = []
            late = compiling.wait(0)
            compiled_at = time.perf_counter()
            runnable = early + load(late)
        else:
            if on_tail is not None:
                on_tail()
            if compiling is not None:
                compiling.wait(0)
            compiled_at = time.perf_counter()
            runnable = load(configs)
    finally:
        if compiling is not None:
            compiling.close()
    if compiling is not None:  # a compile that failed in a worker is recorded even if never loaded
        for c in configs:
            if c in compiling.failed and c not in failures:
                failures[c] = compile_failure(c)
        runnable = [c for c in runnable if c not in failures]
    if stats is not None:
        stats["compiled_s"] = round((compiled_at or time.perf_counter()) - clock, 3)
        stats["loaded_s"] = round(time.perf_counter() - clock, 3)
        stats["prepare_s"] = round(prepared_s, 3)  # inside ``prepare`` (loads and checks), summed
    if first is not None:
        result = race(runnable, measure, options, prior=first)
    elif prior is not None:
        result = race(runnable, measure, options, prior=prior)
    elif runnable:
        result = (race if method == "race" else sweep)(runnable, measure, options)
    else:
        result = RaceResult(None, (), (), "none_measured", 0, 0, 0, 0.0, options)
    if stats is not None:
        stats["raced_s"] = round(time.perf_counter() - clock, 3)  # the race's end, on the same clock
    # a config of this batch that failed replaces an earlier batch's outcome of it (a search may propose a finalist
    # raced in its first batch again): one outcome a config
    outcomes = [replace(o, facts=facts[o.config]) if o.config in facts else o for o in result.outcomes
                if o.config not in failures]  # fmt: skip
    outcomes += [CandidateOutcome(c, f.status, None, f.reason) for c, f in failures.items()]
    outcomes.sort(key=lambda o: order.get(o.config, len(order)))
    return replace(result, outcomes=tuple(outcomes))
