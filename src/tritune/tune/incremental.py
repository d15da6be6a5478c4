"""Tune while serving: ``@tritune.autotune(..., incremental=True)`` (or ``TRITUNE_INCREMENTAL=1``).

The first call of a new key never stalls on tuning. It runs at once on a *provisional* config: the pretuned
or stored winner (then the key is simply tuned), else the winner of the nearest tuned key of the same kernel,
else the first legal config. Nearest means: the same non-numeric key parts (dtypes, flags), and the
smallest sum over numeric parts of ``|log2(a) - log2(b)|`` (a batch of 96 is nearer 128 than 32); the
earliest-tuned key wins ties. Only that config compiles on the caller's path; the other candidates are
compiled (and loaded) by a background thread through the engine's compile workers.

Later calls of the key tune on the real work (:mod:`tritune.tune.serving_state` holds the rules): every call
goes to one checked candidate in turn, timed by events recorded around the launch on the caller's stream
and resolved by a daemon thread, never synchronizing the caller. A compiled candidate serves real calls
only after its check: on one call its run goes to scratch copies of the outputs, made before the real
launch by the provisional config, and must agree with it (bit-exact for integer and bool outputs, else
``|got - ref| <= atol + rtol * |ref|``; see :func:`default_tolerance`). The outputs are the ``outputs=``
names, else ``restore_value`` and ``reset_to_zero``, else every tensor argument. A check costs extra device
time, bounded by a token bucket (:class:`~tritune.tune.serving_state.GpuBudget`, default 10% of the real
calls' device time). While a CUDA graph is being captured only the provisional or promoted config is
launched, untimed. The winner is promoted (written to the store; later calls take the fast dispatch
path) and ``on_promote(key, choice)`` is called, from the resolver thread, so a server can recapture.
"""

from __future__ import annotations

import math
import os
import queue
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from tritune.config import Config
from tritune.device import gpu_unavailable_reason
from tritune.errors import CaptureMissError, ConfigError
from tritune.tune.choice import Choice
from tritune.tune.serving_state import GpuBudget, IncrementalOptions, KeyState, Proposal, merge

if TYPE_CHECKING:
    from tritune.tune.autotune import Autotuned

_TUNED = ("timed", "store", "pretuned", "incremental", "replayed")
MISS = object()  # returned where the incremental path does not take the call

Deliver = Callable[[Config, "str | None"], None]


class CallClock(Protocol):
    """Times launches without blocking: ``start(cfg)`` before a launch of ``cfg``, ``stop(token)`` after;
    ``elapsed_ms(handle)`` (called by the resolver thread) may block until the device reached the stop mark."""

    def start(self, cfg: Config) -> Any: ...
    def stop(self, token: Any) -> Any: ...
    def elapsed_ms(self, handle: Any) -> float: ...
    def capturing(self) -> bool: ...


class CompileService(Protocol):
    """Compiles and loads ``configs`` off the caller's thread, calling ``deliver(cfg, None | why_not)`` for each."""

    def start(self, tuned: Autotuned, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
              grid: Any, deliver: Deliver) -> None: ...  # fmt: skip


class CudaClock:
    """CUDA events recorded on the caller's current stream (pooled: an event is reused once resolved)."""

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self._free: list[Any] = []
        self._lock = threading.Lock()

    def _event(self) -> Any:
        with self._lock:
            if self._free:
                return self._free.pop()
        return self._torch.cuda.Event(enable_timing=True)

    def start(self, cfg: Config) -> Any:
        e = self._event()
        e.record()
        return e

    def stop(self, token: Any) -> Any:
        e = self._event()
        e.record()
        return (token, e)

    def elapsed_ms(self, handle: Any) -> float:
        a, b = handle
        b.synchronize()
        ms = float(a.elapsed_time(b))
        with self._lock:
            self._free.extend((a, b))
        return ms

    def capturing(self) -> bool:
        return bool(self._torch.cuda.is_current_stream_capturing())

    @staticmethod
    def prepare_thread() -> None:
        """Put the resolver's thread in *relaxed* stream-capture mode (the driver's per-thread
        ``cuThreadExchangeStreamCaptureMode``): waiting on an event is a "potentially unsafe" call that would
        otherwise invalidate a graph another thread is capturing in the default (global) mode."""
        import ctypes

        try:
            mode = ctypes.c_int(2)  # CU_STREAM_CAPTURE_MODE_RELAXED
            ctypes.CDLL("libcuda.so.1").cuThreadExchangeStreamCaptureMode(ctypes.byref(mode))
        except (OSError, AttributeError):  # no driver library by that name: capture in thread_local mode
            pass


class Resolver:
    """Resolves timing handles in order and runs their callbacks: on a daemon thread (``thread=True``),
    or when :meth:`poll` is called (tests with a fake clock). A callback's exception is kept in ``errors``."""

    def __init__(self, clock: CallClock, *, thread: bool = True) -> None:
        self.clock = clock
        self.errors: list[BaseException] = []
        self._q: queue.SimpleQueue[tuple[Any, Callable[[float], None]]] = queue.SimpleQueue()
        self._thread = (
            threading.Thread(target=self._loop, name="tritune-resolver", daemon=True) if thread else None
        )
        if self._thread is not None:
            self._thread.start()

    def submit(self, handle: Any, then: Callable[[float], None]) -> None:
        self._q.put((handle, then))

    def _one(self, handle: Any, then: Callable[[float], None]) -> None:
        try:
            then(self.clock.elapsed_ms(handle))
        except BaseException as e:
            self.errors.append(e)

    def _loop(self) -> None:
        prepare = getattr(self.clock, "prepare_thread", None)
        if prepare is not None:
            prepare()
        while True:
            self._one(*self._q.get())

    def poll(self) -> int:
        """Resolve everything queued now (only without a thread); the number resolved."""
        n = 0
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                return n
            self._one(*item)
            n += 1


class WorkerCompiles:
    """The engine's compile workers (:func:`tritune.tune.precompile.start_precompile`), driven by one
    background thread per kernel (keys queue up: a burst of new keys does not start a pool each), which then
    loads each compiled binary (:func:`tritune.tune.pipeline.load_binary`). The one place this module calls
    the engine: re-point here when the engine's worker service lands."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def start(self, tuned: Autotuned, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
              grid: Any, deliver: Deliver) -> None:  # fmt: skip
        device = _device_of(args)
        self._jobs.put(lambda: self._work(tuned, configs, args, kwargs, grid, deliver, device))
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name=f"tritune-compile-{tuned.info.name}", daemon=True
            )
            self._thread.start()

    def _loop(self) -> None:
        while True:
            self._jobs.get()()

    @staticmethod
    def _work(tuned: Autotuned, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
              grid: Any, deliver: Deliver, device: Any) -> None:  # fmt: skip
        from tritune.device import current_target
        from tritune.tune import pipeline
        from tritune.tune.precompile import start_precompile

        try:
            if device is not None:
                import torch

                torch.cuda.set_device(device)
            comp = None
            if not tuned.compiles_in_process(configs):
                comp = start_precompile(tuned._launcher(), configs, args, kwargs, current_target(),
                                        tuned.tuner.jobs, tuned.tuner.compile_timeout)  # fmt: skip
                while comp.pending:
                    comp.wait(max_pending=len(comp.pending) - 1)
            for cfg in configs:
                why = comp.failed.get(cfg) if comp is not None else None
                if why is None:
                    facts = pipeline.load_binary(tuned._launcher(), tuned.info.name, cfg, args, kwargs, grid)
                    why = None if isinstance(facts, dict) else facts.reason
                deliver(cfg, why)
        except BaseException as e:  # a broken compile service must not take the server down
            for cfg in configs:
                deliver(cfg, f"background compile failed: {type(e).__name__}: {e}")


def _device_of(args: Sequence[Any]) -> Any:
    for a in args:
        dev = getattr(a, "device", None)
        if getattr(dev, "type", None) == "cuda":
            return dev
    return None


def default_tolerance(dtype: Any) -> tuple[float, float]:
    """``(atol, rtol)`` for comparing a candidate's float output with the provisional config's: 8 units in
    the last place of the output dtype (2**-7 for float16, 2**-4 for bfloat16, 2**-3 for 8-bit floats),
    and 1e-4 for float32 and 1e-10 for float64. Configs of one kernel differ in the order of their sums
    (block sizes, split-K), which moves a result rounded to the output dtype by one or two ulps; eight
    leaves margin, while a wrong value (a missed block, a bad mask) is off by far more.
    ``benchmarks/serving.py`` records the largest difference seen between agreeing configs on the GPU."""
    name = str(dtype).replace("torch.", "")
    if name in ("float64",):
        return 1e-10, 1e-10
    if name in ("float32",):
        return 1e-4, 1e-4
    if name in ("float16",):
        return 2.0**-7, 2.0**-7
    if name in ("bfloat16",):
        return 2.0**-4, 2.0**-4
    if name.startswith("float8"):
        return 2.0**-3, 2.0**-3
    return 0.0, 0.0


def compare_outputs(ref: Mapping[str, Any], got: Mapping[str, Any], atol: float | None,
                    rtol: float | None) -> Callable[[], str | None]:  # fmt: skip
    """Queue the comparison on the device; the returned function (called after the device got there)
    says what differed, or None."""
    import torch

    pending: list[tuple[str, Any, Any, float, float]] = []
    for name, r in ref.items():
        g = got[name]
        if r.dtype.is_floating_point or r.dtype.is_complex:
            a0, r0 = default_tolerance(r.dtype)
            a, rt = (a0 if atol is None else atol), (r0 if rtol is None else rtol)
            bad = ~torch.isclose(g, r, rtol=rt, atol=a, equal_nan=True)
        else:
            a, rt = 0.0, 0.0
            bad = g != r
        diff = (g.double() - r.double()).abs().nan_to_num(nan=math.inf)
        pending.append((name, bad.sum(), diff.max() if diff.numel() else diff.sum(), a, rt))

    def result() -> str | None:
        for name, nbad, dmax, a, rt in pending:
            n = int(nbad.item())
            if n:
                return (f"output {name!r}: {n} elements differ from the provisional config's "
                        f"(max |diff| {float(dmax.item()):.3g}; atol={a:g}, rtol={rt:g})")  # fmt: skip
        return None

    return result


class Incremental:
    """The incremental mode of one decorated kernel. ``clock``/``compiler`` default to CUDA events and the
    engine's workers; tests pass labelled fakes (and ``thread=False`` to resolve with :meth:`poll`)."""

    def __init__(self, options: IncrementalOptions | None = None, *, outputs: Iterable[str] | None = None,
                 atol: float | None = None, rtol: float | None = None,
                 on_promote: Callable[[tuple[Any, ...], Choice], None] | None = None,
                 clock: CallClock | None = None, compiler: CompileService | None = None, thread: bool = True,
                 distributed: bool = False) -> None:  # fmt: skip
        self.options = options or IncrementalOptions()
        self.outputs = list(outputs) if outputs is not None else None
        self.atol, self.rtol = atol, rtol
        self.on_promote = on_promote
        self.clock = clock
        self.compiler: CompileService = compiler if compiler is not None else WorkerCompiles()
        self.thread = thread
        self.distributed = distributed
        self.budget = GpuBudget(self.options.gpu_fraction, self.options.burst_calls)
        self.states: dict[tuple[Any, ...], KeyState] = {}
        self.promoted: dict[tuple[Any, ...], Choice] = {}
        self._resolver: Resolver | None = None
        self._shown: dict[Config, Choice] = {}
        self._lock = threading.Lock()

    # -- the decorator's hook ---------------------------------------------------------------------------
    def active(self) -> bool:
        return self.clock is not None or gpu_unavailable_reason() is None

    def resolver(self) -> Resolver:
        if self._resolver is None:
            if self.clock is None:
                self.clock = CudaClock()
            self._resolver = Resolver(self.clock, thread=self.thread)
        return self._resolver

    def run(self, tuned: Autotuned, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
            grid: Any) -> Any:  # fmt: skip
        """Launch one call of a key that has no final choice yet; ``MISS`` where the normal path must take it."""
        if not self.active():
            return MISS
        res = self.resolver()
        assert self.clock is not None
        st = self.states.get(key)
        if st is None:
            with tuned._lock:
                st = self.states.get(key)
                if st is None and key in self.promoted:  # promoted since the caller looked: its choice is set
                    return MISS
                if st is None:
                    if self.clock.capturing():
                        raise CaptureMissError(
                            f"{tuned.info.name}: key {tuned.key_spec.as_dict(key)} was first called while a CUDA "
                            "graph was being captured; even its provisional config must be chosen and compiled "
                            "first. Call the kernel once with these arguments before capturing (warm up)."
                        )
                    st = self._begin(tuned, key, args, kwargs, grid)
                    if st is None:
                        return MISS  # a stored or pretuned winner: now the normal path's choice
        if st.promoted is not None:  # promoted between the check and now: the normal path has it
            return MISS
        if self.clock.capturing():  # a graph records only the provisional config, untimed
            tuned._last = Choice(st.provisional, "provisional", "recorded while capturing")
            return tuned._launch(st.provisional, args, kwargs, grid, False)
        st.calls += 1
        if self.distributed and st.calls % self.options.sync_every == 0:
            self._agree(tuned, key, st)
            if st.promoted is not None:
                return MISS
        check = st.next_check(self.distributed) if st.calls > 1 else None
        if check is not None and self._afford(st):
            return self._checked_call(tuned, key, st, check, args, kwargs, grid, res)
        cfg = st.next_racer()
        tuned._last = self._shown.get(cfg) or self._shown.setdefault(cfg, Choice(cfg, "provisional"))
        return self._timed(tuned, key, st, cfg, args, kwargs, grid, res)

    def _afford(self, st: KeyState) -> bool:
        est = st.recent_ms(st.provisional)
        if self.distributed:  # scheduled at the last agreement step, the same on every rank
            if st.applied.stop != "check":
                return False
            st.apply(replace(st.applied, stop=""))
            self.budget.force_spend(est or 0.0)
            return True
        return est is not None and self.budget.tokens_ms >= est and self.budget.try_spend(est)

    def _timed(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, cfg: Config, args: Sequence[Any],
               kwargs: Mapping[str, Any], grid: Any, res: Resolver) -> Any:  # fmt: skip
        assert self.clock is not None
        t = self.clock.start(cfg)
        out = tuned._launch(cfg, args, kwargs, grid, False)
        h = self.clock.stop(t)

        def then(ms: float) -> None:
            due = st.sample(cfg, ms)
            self.budget.earn(ms)
            if due and not self.distributed:
                self._decide(tuned, key, st)

        res.submit(h, then)
        return out

    def _checked_call(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, cand: Config, args: Sequence[Any],
                      kwargs: Mapping[str, Any], grid: Any, res: Resolver) -> Any:  # fmt: skip
        """The real call on the provisional config; ``cand`` runs on scratch copies of the outputs."""
        assert self.clock is not None
        names = self._output_names(tuned, args, kwargs)
        named = tuned._named(args, kwargs)
        scratch = {n: named[n].clone() for n in names}
        st.checking.add(cand)
        out = self._timed(tuned, key, st, st.provisional, args, kwargs, grid, res)
        s_args = [scratch.get(n, a) for n, a in zip(tuned.arg_names, args)]
        s_kwargs = {k: scratch.get(k, v) for k, v in kwargs.items()}
        est_ms = st.recent_ms(st.provisional) or 0.0  # what _afford spent
        t = self.clock.start(cand)
        try:
            tuned._launch(cand, s_args, s_kwargs, grid, False)
        except Exception as e:  # a candidate that cannot launch is out, and the call is already served
            self.clock.stop(t)
            st.checked(cand, f"launch failed: {type(e).__name__}: {e}")
            return out
        h = self.clock.stop(t)
        verdict = compare_outputs({n: named[n] for n in names}, scratch, self.atol, self.rtol)

        def then(ms: float) -> None:
            self.budget.correct(est_ms, ms)
            st.checked(cand, verdict())
            if not self.distributed:
                self._decide(tuned, key, st)

        res.submit(h, then)
        return out

    def _output_names(self, tuned: Autotuned, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[str]:
        named = tuned._named(args, kwargs)
        if self.outputs is not None:
            return [n for n in self.outputs if hasattr(named.get(n), "clone")]
        given = list(dict.fromkeys([*tuned.restore_value, *tuned.reset_to_zero]))
        if given:
            return [n for n in given if hasattr(named.get(n), "clone")]
        return [n for n, v in named.items() if hasattr(v, "clone") and hasattr(v, "dtype")]

    # -- starting a key ---------------------------------------------------------------------------------
    def _begin(self, tuned: Autotuned, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
               grid: Any) -> KeyState | None:  # fmt: skip
        if self.outputs is not None:
            missing = [n for n in self.outputs if n not in tuned.arg_names]
            if missing:
                raise ConfigError(f"{tuned.info.name}: outputs= names {missing}, which are not parameters of the "
                                  f"kernel; its parameters are {', '.join(tuned.arg_names)}. Name the arguments "
                                  "the kernel writes.")  # fmt: skip
        if hasattr(tuned.cache, "get") and tuned.cache.get(tuned.key_spec.public(key)) is not None:
            return None  # set by the caller through kernel.cache[key] = config: the normal path serves it
        legal, _ = tuned.legal_configs(args, kwargs)
        if len(legal) <= 1 or tuned.tuner.lookup(tuned, key, args, kwargs, allowed=legal) is not None:
            return (
                None  # nothing to tune, or a stored/pretuned winner: the normal path serves (and reports) it
            )
        known = {k: c.config for k, c in tuned._choices.items() if c.source in _TUNED}
        provisional = nearest_tuned(key, known, legal)
        if provisional is None:
            provisional = legal[0]
        st = KeyState(legal, provisional, self.options)
        self.states[key] = st
        rest = [c for c in legal if c != provisional]
        self.compiler.start(
            tuned, rest, args, kwargs, grid, lambda cfg, why: self._compiled(tuned, key, st, cfg, why)
        )
        return st

    def _compiled(
        self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, cfg: Config, why: str | None
    ) -> None:
        st.compiled(cfg, why)
        if not self.distributed:
            self._decide(tuned, key, st)

    # -- decisions --------------------------------------------------------------------------------------
    def _decide(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState) -> None:
        with self._lock:
            if st.promoted is not None:
                return
            p = st.propose()
            st.apply(p)
            if p.promoted is not None:
                self._promote(tuned, key, st, p)

    def _agree(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState) -> None:
        """The agreement step of ``distributed=True``, reached by every rank at the same call of the key."""
        import torch.distributed as dist

        mine = st.propose()
        est = st.recent_ms(st.provisional)
        can_check = est is not None and self.budget.tokens_ms >= est
        mine = replace(mine, stop=mine.stop or ("check" if can_check else ""))
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, mine)
        agreed = merge(gathered, st.configs)
        if agreed.promoted is None and all(p.stop == "check" for p in gathered):
            agreed = replace(agreed, stop="check")
        with self._lock:
            st.apply(agreed)
            if agreed.promoted is not None:
                self._promote(tuned, key, st, agreed)

    def _promote(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, p: Proposal) -> None:
        from tritune.tune.serving_store import record_promotion

        assert p.promoted is not None
        timings = {}
        for c in st.configs:
            m = st.measurement(c)
            if m is not None:
                timings[c] = [m.median_ms, m.q1_ms, m.q3_ms]
        stats = {**st.summary(), "stop": p.stop, "ties": [c.id for c in p.ties],
                 "extra_gpu_fraction": round(self.budget.extra_fraction, 4)}  # fmt: skip
        med = timings.get(p.promoted, [math.nan])[0]
        choice = Choice(p.promoted, "incremental", f"{p.stop} after {st.calls} calls: {med:.4f} ms median",
                        stats=stats, timings=timings)  # fmt: skip
        record_promotion(tuned, key, st, p)
        with tuned._lock:
            tuned._choices[key] = choice
            tuned._remember(key, choice)
        self.promoted[key] = choice
        self.states.pop(key, None)
        if self.on_promote is not None:
            self.on_promote(tuned.key_spec.public(key), choice)

    def tuning(self, tuned: Autotuned) -> dict[tuple[Any, ...], Choice]:
        """Keys still tuning -> their provisional config, with the state in ``stats`` (for ``choices()``)."""
        return {tuned.key_spec.public(k): Choice(st.provisional, "provisional", "tuning on real calls",
                                                 stats=st.summary())
                for k, st in list(self.states.items())}  # fmt: skip


def nearest_tuned(key: tuple[Any, ...], tuned_keys: Mapping[tuple[Any, ...], Config],
                  allowed: Sequence[Config]) -> Config | None:  # fmt: skip
    """The config of the nearest tuned key (see the module docstring), if it is among ``allowed``."""
    best: tuple[float, Config] | None = None
    ok = set(allowed)
    for k, cfg in tuned_keys.items():
        if len(k) != len(key) or cfg not in ok:
            continue
        d = 0.0
        for a, b in zip(key, k):
            if _positive_number(a) and _positive_number(b):
                d += abs(math.log2(a) - math.log2(b))
            elif a != b:
                d = math.inf
                break
        if d < math.inf and (best is None or d < best[0]):
            best = (d, cfg)
    return best[1] if best is not None else None


def _positive_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def make_incremental(value: Any, *, outputs: Iterable[str] | None = None, atol: float | None = None,
                     rtol: float | None = None, on_promote: Callable[..., None] | None = None,
                     distributed: bool = False) -> Incremental | None:  # fmt: skip
    """The decorator's ``incremental=``: True, an :class:`IncrementalOptions`, an :class:`Incremental`, or
    None/False (then ``TRITUNE_INCREMENTAL=1`` turns it on)."""
    if isinstance(value, Incremental):
        return value
    if value is None:
        value = os.environ.get("TRITUNE_INCREMENTAL", "").strip().lower() in ("1", "true", "yes", "on")
    if value is False:
        return None
    opts = value if isinstance(value, IncrementalOptions) else None
    return Incremental(
        opts, outputs=outputs, atol=atol, rtol=rtol, on_promote=on_promote, distributed=distributed
    )
