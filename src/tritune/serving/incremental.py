"""Tune while serving: ``@tritune.autotune(..., incremental=True)`` (or ``TRITUNE_INCREMENTAL=1``).

The first call of a new key never stalls on tuning. It runs at once on a *provisional* config: the pretuned
or stored winner (then the key is simply tuned), else the winner of the nearest tuned key of the same kernel,
else the first legal config. Nearest means: the same non-numeric key parts (dtypes, flags), and the
smallest sum over numeric parts of ``|log2(a) - log2(b)|`` (a batch of 96 is nearer 128 than 32); the
earliest-tuned key wins ties. Only that config compiles on the caller's path; the other candidates are
compiled (and loaded) by a background thread through the engine's compile workers.

Later calls of the key tune on the real work (:mod:`tritune.serving.state` holds the rules): every call
goes to one checked candidate in turn, launched through a fast launcher (as a cached key is, so the events
around it time the kernel, not Triton's argument binding) and timed by events recorded around the launch on
the caller's stream and resolved without ever synchronizing the caller: by the later calls of the kernel, each
resolving the pairs the device has passed (``IncrementalOptions.resolve``, ``"inline"``), and by a daemon thread for
pairs the calls leave (``"thread"``: by the daemon thread alone) (while the provisional config
races alone with a full window, only one call in ``IncrementalOptions.lone_every`` is timed; on an idle device a
span starts behind a short GPU spin, ``spin_idle``). A compiled candidate serves real calls
only after its check: on one call its run goes to scratch copies of the outputs, made before the real
launch by the provisional config, and must agree with it (bit-exact for integer and bool outputs, else
``|got - ref| <= atol + rtol * |ref|``; see :func:`default_tolerance`). The outputs are the ``outputs=``
names, else ``restore_value`` and ``reset_to_zero``, else every tensor argument. A check costs extra device
time (copies, scratch run and comparison, timed together by a second pair of events), bounded by a token
bucket per key (:class:`~tritune.serving.state.GpuBudget`, default 10% of the key's real calls'
device time). The comparison's device kernels are loaded once, in the background, before any check runs
on the caller's path. Candidates are checked fastest-first by the timings of the nearest tuned key. While a CUDA graph is being captured only the provisional or promoted config is
launched, untimed. The winner is promoted: its choice and its fast launchers are published
before the key's state says so (the next call takes the normal path's fast dispatch at once), then
``on_promote(key, choice)`` is called (from the call that resolved the deciding samples, or from the resolver
thread for a key whose calls stopped; see ``IncrementalOptions.resolve``), so a server can recapture, and the store is
written by a thread of its own (no caller waits on a commit).
"""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from threading import get_ident
from time import perf_counter
from typing import TYPE_CHECKING, Any

from tritune.adapters.triton_key import install_triton_key_memo
from tritune.config import Config
from tritune.decorator.autotuned import SERVING_MISS
from tritune.decorator.choice import Choice
from tritune.device import gpu_unavailable_reason
from tritune.errors import CaptureMissError, ConfigError
from tritune.progress import Laps
from tritune.serving.check import compare_outputs, default_tolerance, plan_comparison
from tritune.serving.runtime import (
    EXIT_WAIT_S,
    EXITING,
    CallClock,
    CompileService,
    CudaClock,
    Resolver,
    WorkerCompiles,
    cuda_clock,
    stop_at_exit,
)
from tritune.serving.state import (
    GpuBudget,
    IncrementalOptions,
    KeyState,
    Proposal,
    lower_median,
    merge,
    prune,
)

if TYPE_CHECKING:
    from tritune.decorator.autotuned import Autotuned

_TUNED = ("timed", "store", "pretuned", "incremental", "replayed")
#: Returned where the incremental path does not take the call.
MISS = SERVING_MISS

__all__ = ["MISS", "CallClock", "CompileService", "CudaClock", "Incremental", "Resolver", "WorkerCompiles",
           "compare_outputs", "default_tolerance", "make_incremental", "nearest_tuned"]  # fmt: skip


#: How long a key's checks wait for the fused comparison of an output dtype before torch's stands in (its
#: preparation compiles one small kernel in the engine's workers: well under a second from a warm cache).
COMPARE_PREP_S = 20.0

#: The steps of :attr:`Incremental.check_host` (a check call's host time): the scratch buffers, the copies' span,
#: the real call (the provisional config, timed), the candidate's launcher, the comparison's plan, the scratch
#: run's span, the comparison's span, the resolver's bookkeeping, and the whole call.
CHECK_STEPS = ("scratch", "copies", "real", "launcher", "plan", "run", "compare", "submit", "total")


class Incremental:
    """The incremental mode of one decorated kernel. ``clock``/``compiler`` default to CUDA events and the
    engine's workers; tests pass labelled fakes (and ``thread=False`` to resolve with :meth:`poll`)."""

    def __init__(self, options: IncrementalOptions | None = None, *, outputs: Iterable[str] | None = None,
                 atol: float | None = None, rtol: float | None = None,
                 on_promote: Callable[[tuple[Any, ...], Choice], None] | None = None,
                 clock: CallClock | None = None, compiler: CompileService | None = None, thread: bool = True,
                 distributed: bool = False, store_thread: bool | None = None) -> None:  # fmt: skip
        self.options = options or IncrementalOptions()
        self.outputs = list(outputs) if outputs is not None else None
        self.atol, self.rtol = atol, rtol
        self.on_promote = on_promote
        self.clock = clock
        self.compiler: CompileService = compiler if compiler is not None else WorkerCompiles()
        self.thread = thread
        self.distributed = distributed
        #: Every key's earnings and checks, summed (reports); each key spends from its own bucket.
        self.budget = GpuBudget(self.options.spend_fraction, self.options.burst_calls)
        self.states: dict[tuple[Any, ...], KeyState] = {}
        #: What the last call did on the caller's path: ``first`` (a new key), ``check``, ``race``,
        #: ``capture``; set to None before a call it then did not take (benchmarks attribute latency by it).
        self.last_phase: str | None = None
        #: With a list here, (perf_counter, thread, event, detail) tuples of the background work (compiles
        #: delivered, comparisons warmed, checks resolved, promotions) are appended, for attribution.
        self.trace: list[tuple[float, str, str, str]] | None = None
        self._fast: dict[tuple[Any, ...], Any] = {}
        self._call_key: Any = None
        self._warm: set[tuple[str, str]] = set()
        self._fused: set[str] = set()  # output dtypes the fused comparison kernel is loaded for
        self._unfused: set[str] = set()  # output dtypes it could not be prepared for (torch's comparison then)
        self._prep_t: dict[str, float] = {}  # when each dtype's preparation started (time.monotonic)
        #: Each tuning key's output dtypes on the GPU: its checks wait until each has its comparison ready.
        self._cmp_dtypes: dict[tuple[Any, ...], tuple[str, ...]] = {}
        self.promoted: dict[tuple[Any, ...], Choice] = {}
        self._resolver: Resolver | None = None
        self._shown: dict[Config, Choice] = {}
        self._lock = threading.Lock()
        #: Call shapes (compiled call keys) each key was launched with through a fast launcher: at promotion the
        #: normal path's dispatch table gets the winner's launcher for each, built before the choice is visible.
        self._shapes: dict[tuple[Any, ...], set[Any]] = {}
        #: Store writes of promotions run on their own thread (``store_thread``, default ``thread``), after the
        #: choice is published: a commit took 130 ms on the H200's disk, and no caller may wait on it.
        self._store_thread = thread if store_thread is None else store_thread
        self._writes: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._helpers: list[threading.Thread] = []  # one-shot threads (the fused comparison's preparation)
        self._exit_hooked = False
        self._writer: threading.Thread | None = None
        #: Exceptions raised by store writes (a broken store must not take the server down).
        self.store_errors: list[BaseException] = []
        #: Threads between the two events of a timed span. Triton's launch releases the interpreter's lock
        #: (around cuLaunchKernel): the resolver thread then took it and ran a batch of callbacks (hundreds of
        #: us) before the caller could record its stop event, so spans timed the resolver's Python, on an
        #: idle device. The resolver now waits (at most ``span_wait_s``) for open spans to close first.
        self._in_span: set[int] = set()
        self._check_calls = 3.0  # the checks' median cost in real calls (KeyState.check_calls)
        #: The host's time around a check's scratch copies (start to stop, smoothed): the idle spin in front of
        #: the next check's copies lasts 1.5x this (CudaClock.spin_next), so their span times the copies only.
        self._copies_us = 40.0
        #: Every key's checks, promoted keys' too (a key's state goes at its promotion): (copies, scratch run,
        #: comparison) ms of each check whose spans no other thread stretched.
        self.check_parts: list[tuple[float, float, float]] = []
        #: Each check call's host time on the caller's thread, ms by step (:data:`CHECK_STEPS`), for benchmarks:
        #: on an H200 a check call held the caller 0.5-0.9 ms against ~0.05 ms for a racing call.
        self.check_host: list[tuple[float, ...]] = []
        #: By the call's phase (``last_phase``): [calls, seconds in the call itself, seconds resolving the event
        #: pairs the device passed (with ``resolve="inline"``: their bookkeeping and the decisions they made due)].
        self.host_split: dict[str | None, list[float]] = {}
        #: Each key's first call on the caller's thread, ms by part (:meth:`_first_call`): ``screen`` (the legal
        #: configs), ``lookup`` (the store and pretuned table), ``state`` (the provisional, pruning, the key's
        #: state), ``compiles`` (queueing the background compiles), ``launch`` (the provisional's launch, its
        #: launcher built or Triton's path), ``total``.
        self.first_parts: list[dict[str, float]] = []
        self._check_ratios: list[float] = []
        #: The kernel's pool: every key's earnings beyond its bucket's cap and its unspent tokens at its
        #: promotion (lent to frequent keys' checks, see :meth:`_afford`).
        self.spare = GpuBudget(self.options.spend_fraction, self.options.burst_calls)
        #: The caller's clock around each event span: a span whose launches held the caller longer than
        #: ``options.stall_ms`` was stretched by another thread (``IncrementalOptions``). None: ``perf_counter``
        #: with CUDA events, and no such test with another clock (the dry run's host clock times the host
        #: itself); tests pass a FAKE. Read when the first call starts the resolver.
        self.host_clock: Callable[[], float] | None = None
        self._host: Callable[[], float] = _no_time
        #: [spans found stretched (real calls' and checks'), the checks' event milliseconds not charged]
        self.stretched: list[float] = [0, 0.0]
        self._calls = 0  # calls of keys while they tuned (the frequent keys' share, see _frequent)
        #: Keys with a round's worth of new samples since their last decision (the resolver's thread only).
        self._due: dict[tuple[Any, ...], tuple[Autotuned, KeyState]] = {}
        self.span_wait_s = 0.001
        #: Whether a span's handle is late (``CudaClock.late``: it holds host time); never with other clocks.
        self._late: Callable[[Any], bool] = _never_late
        #: [decisions, their seconds, promotions, their seconds] on whichever thread decided (for benchmarks:
        #: how much of a racing call's host time the decisions are)
        self.decided = [0, 0.0, 0, 0.0]
        self.late_spans = 0  # real calls' and scratch runs' spans found late (no sample)

    # -- the decorator's hook ---------------------------------------------------------------------------
    def active(self) -> bool:
        return self.clock is not None or gpu_unavailable_reason() is None

    def resolver(self) -> Resolver:
        if self._resolver is None:
            if self.clock is None:
                self.clock = cuda_clock(spin_idle=self.options.spin_idle, detect_late=self.options.drop_late,
                                        gate=self.options.gate)  # fmt: skip
            self._resolver = Resolver(self.clock, thread=self.thread, quiet=self._quiet, after=self._decide_due,
                                      inline=self.options.resolve == "inline")  # fmt: skip
            self._host = self.host_clock or (time.perf_counter if isinstance(self.clock, CudaClock) else _no_time)
            # A gated span the watch opened holds host time: never a sample, drop_late or not.
            gating = bool(getattr(self.clock, "_gate_ok", False))
            late_ok = self.options.drop_late or gating
            self._late = getattr(self.clock, "late", _never_late) if late_ok else _never_late
        return self._resolver

    def _quiet(self) -> None:
        """Called by the resolver thread before each callback: let open spans close (see ``_in_span``)."""
        spans = self._in_span
        if not spans:
            return
        end = time.perf_counter() + self.span_wait_s
        while spans and time.perf_counter() < end:
            time.sleep(0)  # gives the interpreter's lock back to the caller, which records its stop event

    def run(self, tuned: Autotuned, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
            grid: Any, ck: tuple[Any, ...] | None = None) -> Any:  # fmt: skip
        """Launch one call of a key that has no final choice yet; ``MISS`` where the normal path must take it.
        ``ck``: the call's call key where the caller computed it already (the decorator's generated call key). With
        ``resolve="inline"``, then the event pairs the device has passed (:meth:`Resolver.drain_ready`)."""
        t0 = perf_counter()
        out = self._run(tuned, key, args, kwargs, grid, ck)
        res = self._resolver
        t1 = perf_counter()
        if res is not None and res.pending:  # (always empty with resolve="thread")
            res.drain_ready()
        split = self.host_split.get(self.last_phase)
        if split is None:
            split = self.host_split[self.last_phase] = [0, 0.0, 0.0]
        split[0] += 1
        split[1] += t1 - t0
        split[2] += perf_counter() - t1
        return out

    def _run(self, tuned: Autotuned, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
             grid: Any, ck: tuple[Any, ...] | None = None) -> Any:  # fmt: skip
        res = self._resolver
        if res is None:  # the mode's first call (a started resolver means a clock: active)
            if not self.active():
                return MISS
            res = self.resolver()
        clock = self.clock
        assert clock is not None
        st = self.states.get(key)
        if st is None:
            with tuned.lock:
                st = self.states.get(key)
                if st is None and key in self.promoted:  # promoted since the caller looked: its choice is set
                    return MISS
                if st is None:
                    if clock.capturing():
                        raise CaptureMissError(
                            f"{tuned.info.name}: key {tuned.key_spec.as_dict(key)} was first called while a CUDA "
                            "graph was being captured; even its provisional config must be chosen and compiled "
                            "first. Call the kernel once with these arguments before capturing (warm up)."
                        )
                    return self._first_call(tuned, key, args, kwargs, grid, ck)
        promoted = st.applied.promoted
        if promoted is not None:  # promoted between the check and now: the choice is published first
            if tuned.choice_of(key) is not None:
                return MISS
            return self._serve_promoted(tuned, key, promoted, args, kwargs, grid)
        if clock.capturing():  # a graph records only the provisional config, untimed
            self.last_phase = "capture"
            tuned.serve(Choice(st.provisional, "provisional", "recorded while capturing"))
            return tuned.launch(st.provisional, args, kwargs, grid, False)
        st.calls += 1
        calls = st.calls
        self._calls += 1
        distributed = self.distributed
        if distributed and calls % self.options.sync_every == 0:
            self._agree(tuned, key, st)
            if st.promoted is not None:
                return MISS
        if calls > 1:
            # The budget is looked at first: it refuses most calls, and next_check walks every candidate (no
            # call at all once nothing waits for a check: _may_afford's first test, on every racing call).
            if (distributed or st.needs_checks()) and self._may_afford(st) and (distributed or self._comparable(key)):
                check = st.next_check(distributed)
                if check is not None and self._afford(st):
                    self.last_phase = "check"
                    return self._checked_call(tuned, key, st, check, args, kwargs, grid, res, ck)
            self.last_phase = "race"
        if calls % self.options.lone_every and not distributed:
            lead = st.waiting_leader()
            if lead is not None:  # waiting for checks, every window full: the leader, untimed
                self.last_phase = "leader"
                tuned.serve(self._shown.get(lead[0]) or self._shown.setdefault(lead[0], Choice(lead[0], "provisional")))
                st.earn(lead[1])
                return self._untimed(tuned, key, lead[0], args, kwargs, grid, ck)
        cfg = st.next_racer()
        shown = self._shown.get(cfg)
        tuned.serve(shown if shown is not None else self._shown.setdefault(cfg, Choice(cfg, "provisional")))
        if calls % self.options.lone_every:
            lone = st.lone_ms()
            if lone is not None:  # one config alone, its window full: untimed, earning its recent median
                self.last_phase = "lone"
                st.earn(lone)
                return self._untimed(tuned, key, cfg, args, kwargs, grid, ck)
        return self._timed(tuned, key, st, cfg, args, kwargs, grid, res, ck)

    def _first_call(self, tuned: Autotuned, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
                    grid: Any, ck: tuple[Any, ...] | None) -> Any:  # fmt: skip
        """A new key's first call (under the kernel's lock): its state (:meth:`_begin`), then its first launch as
        :meth:`run` makes any other; each part's host time goes to :attr:`first_parts` (on an H200 a key's first
        call cost 2.3-3.5 ms p50 against ~0.02 ms for a cached call: this says where)."""
        t0 = time.perf_counter()
        parts: dict[str, float] = {}
        st = self._begin(tuned, key, args, kwargs, grid, parts)
        if st is None:
            return MISS  # a stored or pretuned winner: now the normal path's choice
        lap = Laps(parts, scale=1e3)
        # The provisional config's launcher for this shape (Triton's binding, the launcher's code; the binary
        # loaded if no other key loaded it), timed apart from the launch that then uses it.
        self._racing_launcher(tuned, st.provisional, args, kwargs, key, ck)
        lap("launcher")
        out = self._run(tuned, key, args, kwargs, grid, ck)  # the key has its state now: an ordinary call
        lap("launch")
        self.last_phase = "first"
        parts["total"] = (time.perf_counter() - t0) * 1e3
        self.first_parts.append(parts)
        return out

    def _untimed(self, tuned: Autotuned, key: tuple[Any, ...], cfg: Config, args: Sequence[Any],
                 kwargs: Mapping[str, Any], grid: Any, ck: tuple[Any, ...] | None = None) -> Any:  # fmt: skip
        """``cfg`` launched through this mode's fast launcher (Triton's path where there is none), no events."""
        fast = self._racing_launcher(tuned, cfg, args, kwargs, key, ck)
        return fast(args, grid) if fast is not None else tuned.launch(cfg, args, kwargs, grid, False)

    def _serve_promoted(self, tuned: Autotuned, key: tuple[Any, ...], cfg: Config, args: Sequence[Any],
                        kwargs: Mapping[str, Any], grid: Any) -> Any:  # fmt: skip
        """The promoted config, untimed, through this mode's own launcher (never the normal path's tuning or its
        store lookup): only in the instant a promotion is applied and its choice not yet visible."""
        self.last_phase = "promoted"
        tuned.serve(self.promoted.get(key) or Choice(cfg, "incremental", "being promoted"))
        return self._untimed(tuned, key, cfg, args, kwargs, grid)

    def _may_afford(self, st: KeyState) -> bool:
        """Whether a check could be afforded now (a lock-free look; :meth:`_afford` decides and spends)."""
        if self.distributed:
            return st.applied.stop == "check"
        if not st.needs_checks():
            return False
        est = st.check_estimate_ms()
        if est is None or est <= 0:
            return False
        tokens = st.budget.tokens_ms
        if tokens >= est:  # its own calls earned it: every token is spent once, so the bound holds
            return True
        if st.calls < st.borrow_after:
            return False
        if not self._frequent(st):  # the kernel's pool only (see _afford)
            return self._may_borrow_pool(st, est) and self.spare.tokens_ms >= est - tokens
        # a cheap necessary condition: the other keys cannot lend more than all of them saved
        return self.budget.unspent_ms >= est - tokens

    def _frequent(self, st: KeyState) -> bool:
        """A key with at least an even share of the tuning keys' calls: its checks may also spend what the
        other keys earned and did not spend (a promotion there saves the most; rare keys earn for it)."""
        return st.calls >= 16 and st.calls * len(self.states) >= self._calls

    def _may_borrow_pool(self, st: KeyState, est: float) -> bool:
        """Whether a key below the even share may borrow from the kernel's pool for a check of ``est`` ms: once
        it has ``burst_calls`` calls, and while all keys keep another check's estimate unspent (:meth:`_afford`)."""
        return st.calls >= self.options.burst_calls and self.budget.unspent_ms >= 2 * est

    def _afford(self, st: KeyState) -> bool:
        """Spend the next check's estimate: from the key's own bucket, else (a frequent key) with tokens lent
        by the other keys' buckets and by promoted keys' savings (:meth:`GpuBudget.lend`: a lent token leaves
        its bucket, so no token is spent twice and all checks together stay within the fraction). A key below
        an even share, once it has ``burst_calls`` calls, may borrow from the kernel's pool only (promoted keys'
        savings and earnings beyond the buckets' caps, which no key's own calls are owed): on the H200 (60,000
        calls) three RMSNorm keys of 520-660 calls, each below the even share of 24 keys, were never
        promoted, each waiting for one or two checks while the pool held 0.37 ms, six checks' worth (a CPU
        replay of the serving race, 60,000 calls, check spans 4/6/8, 8 seeds: 189/170/148 of 192 hot buckets
        converged against 188/166/142, no promotion further off), and only while all keys together keep
        another check's estimate unspent: a check can cost more than its estimate, and the H200's 6,000-call
        GEMM stream ended at 10.1% with the pool lent freely. A rule that lets a frequent key spend the kernel's
        unspent total refuses every key's check while that total is short: keys that have earned their check
        wait for the ones that spent it."""
        est = st.check_estimate_ms()
        if self.distributed:  # scheduled at the last agreement step, the same on every rank
            if st.applied.stop != "check":
                return False
            st.apply(replace(st.applied, stop=""))
            st.budget.force_spend(est or 0.0)
            return True
        if est is None or est <= 0:
            return False
        if st.budget.try_spend(est):
            return True
        need = est - st.budget.tokens_ms
        if self._frequent(st):
            lenders = [self.spare, *(o.budget for o in list(self.states.values()) if o is not st)]
        elif self._may_borrow_pool(st, est):
            lenders = [self.spare]
        else:
            return False
        if sum(max(0.0, b.tokens_ms) for b in lenders) < need:
            st.borrow_after = st.calls + 8  # not enough saved anywhere: look again in a few calls
            return False
        got = 0.0
        for b in lenders:
            got += b.lend(need - got)
            if got >= need:
                break
        st.budget.receive(got)
        return st.budget.try_spend(est)

    def _timed(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, cfg: Config, args: Sequence[Any],
               kwargs: Mapping[str, Any], grid: Any, res: Resolver, ck: tuple[Any, ...] | None = None) -> Any:  # fmt: skip
        clock = self.clock
        assert clock is not None
        fast = self._racing_launcher(tuned, cfg, args, kwargs, key, ck)
        tid = get_ident()
        spans = self._in_span
        spans.add(tid)
        host = self._host
        try:
            h0 = host()
            t = clock.start(cfg)
            out = fast(args, grid) if fast is not None else tuned.launch(cfg, args, kwargs, grid, False)
            h = clock.stop(t)
            stretched = (host() - h0) * 1e3 > self.options.stall_ms
        finally:
            spans.discard(tid)
        if stretched:
            then = partial(self._stretched_call, st)
        elif self._late is not _never_late:
            then = partial(self._sample_or_late, tuned, key, st, cfg, h)
        else:
            then = partial(self._sample, tuned, key, st, cfg)
        res.submit(h, then)
        return out

    # The resolver's callbacks of a real call's span (see _timed): bound with functools.partial, which builds
    # no function object per call (a closure over seven names did) and calls with no Python frame of its own.
    def _stretched_call(self, st: KeyState, ms: float) -> None:
        """The events timed another thread's hold on the interpreter: no sample, no extra device time."""
        self._stretched(st, 0.0)

    def _sample_or_late(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, cfg: Config, h: Any,
                        ms: float) -> None:  # fmt: skip
        if self._late(h):  # the device waited for the launch inside the span: no sample
            self.late_spans += 1
            est = st.recent_ms(cfg)  # the call's device time without the host's: earned as the others
            if est is not None:
                st.earn(min(ms, est))
            return
        self._sample(tuned, key, st, cfg, ms)

    def _sample(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, cfg: Config, ms: float) -> None:
        due = st.observe(cfg, ms)  # st.sample, then st.earn
        if due and not self.distributed:
            self._due[key] = (tuned, st)  # decided once the resolver's batch is done (_decide_due)

    def _checked_call(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, cand: Config, args: Sequence[Any],
                      kwargs: Mapping[str, Any], grid: Any, res: Resolver,
                      ck: tuple[Any, ...] | None = None) -> Any:  # fmt: skip
        """The real call on the provisional config; ``cand`` runs on scratch copies of the outputs. The
        check's device time (the copies, the scratch run and the comparison, each timed by its own pair of
        events) is charged to the key's bucket when they resolve. Each span holds launches only: the scratch
        buffers, the candidate's launcher and the comparison's buffers and kernel are all prepared before
        its span opens. On a host-bound stream the device is idle, so an event pair times the host's work
        between its marks as well; on the H200 spans around Triton's binding of the comparison and torch's
        allocations charged a check 0.5-1 ms, 20-50 calls' worth of a 20 us kernel."""
        assert self.clock is not None
        c0 = time.perf_counter()
        names = self._output_names(tuned, args, kwargs)
        named = tuned.named_args(args, kwargs)
        est_ms = st.check_estimate_ms() or 0.0  # what _afford spent
        st.checking.add(cand)
        scratch = {n: _empty_like(named[n]) for n in names}
        c1 = time.perf_counter()
        tid = threading.get_ident()
        host = self._host
        stall_s = self.options.stall_ms / 1e3
        spin_next = getattr(self.clock, "spin_next", None)
        if spin_next is not None:
            spin_next(1.5 * self._copies_us)
        self._in_span.add(tid)
        try:
            h0 = host()
            t_copies = self.clock.start(None)
            for n in names:
                scratch[n].copy_(named[n])
            copies = self.clock.stop(t_copies)
            h1 = host()
        finally:
            self._in_span.discard(tid)
        if h1 - h0 <= stall_s:  # a stretched span (another thread held the interpreter) says nothing of the copies
            self._copies_us = 0.8 * self._copies_us + 0.2 * (h1 - h0) * 1e6
        c2 = time.perf_counter()
        out = self._timed(tuned, key, st, st.provisional, args, kwargs, grid, res, ck)
        c3 = time.perf_counter()
        s_args = [scratch.get(n, a) for n, a in zip(tuned.arg_names, args)]
        s_kwargs = {k: scratch.get(k, v) for k, v in kwargs.items()}
        fast = self._fast_launcher(tuned, cand, s_args, s_kwargs, key)
        c4 = time.perf_counter()
        try:
            launch, verdict = plan_comparison({n: named[n] for n in names}, scratch, self.atol, self.rtol,
                                              self._fused)  # fmt: skip
        except Exception as e:  # the call is served; the candidate cannot be compared, so it is out
            st.checked(cand, f"comparison failed: {type(e).__name__}: {e}")
            res.submit(copies, lambda ms: st.budget.correct(est_ms, ms))
            return out
        self._in_span.add(tid)
        try:
            h2 = host()
            p2 = time.perf_counter()
            t = self.clock.start(cand)
            try:  # the scratch run goes through the same launcher as a real call: its time is a fair sample
                fast(s_args, grid) if fast is not None else tuned.launch(cand, s_args, s_kwargs, grid, False)
            except Exception as e:  # a candidate that cannot launch is out, and the call is already served
                self.clock.stop(t)
                st.checked(cand, f"launch failed: {type(e).__name__}: {e}")
                res.submit(copies, lambda ms: st.budget.correct(est_ms, ms))
                return out
            h = self.clock.stop(t)
            h3 = host()
            p3 = time.perf_counter()
            t_rest = self.clock.start(None)
            launch()
            rest = self.clock.stop(t_rest)
            h4 = host()
            p4 = time.perf_counter()
        finally:
            self._in_span.discard(tid)
        # Which spans another thread stretched (see IncrementalOptions.stall_ms): copies, run, comparison.
        bad = (h1 - h0 > stall_s, h3 - h2 > stall_s, h4 - h3 > stall_s)
        got: list[float] = []  # the scratch run's time, then the copies' (the resolver keeps this order)

        def then(rest_ms: float) -> None:
            run_ms, copies_ms = got
            actual = copies_ms + run_ms + rest_ms
            if any(bad):
                # Charged the estimate spent up front, or the unstretched spans where they cost more; the
                # stretched spans' event time (the device idle while the host waited) is reported, not charged,
                # nor taken as the next check's estimate (every key's next check would wait for it).
                clean = sum(x for x, b in zip((copies_ms, run_ms, rest_ms), bad) if not b)
                charged = max(est_ms, clean)
                st.budget.correct(est_ms, charged)
                self._stretched(st, actual - charged)
            else:
                st.budget.correct(est_ms, actual)
                st.check_cost.append(actual)
                st.check_parts.append((copies_ms, run_ms, rest_ms))
                self.check_parts.append((copies_ms, run_ms, rest_ms))
                self._learn_check_calls(st, actual)
            why = verdict()
            late = self._late(h)
            if late:
                self.late_spans += 1
            st.checked(cand, why, run_ms if why is None and not bad[1] and not late else None)
            self._note("checked", f"{cand.id}: {why or 'agrees'}; check {actual:.4f} ms "
                                  f"(copies {copies_ms:.4f}, run {run_ms:.4f}, compare {rest_ms:.4f})"
                                  f"{'; stretched ' + str(bad) if any(bad) else ''}")  # fmt: skip
            if not self.distributed:
                self._due[key] = (tuned, st)  # decided once the resolver's batch is done (_decide_due)

        res.submit(h, got.append)
        res.submit(copies, got.append)
        res.submit(rest, then)
        c5 = time.perf_counter()
        self.check_host.append(tuple(round((b - a) * 1e3, 4) for a, b in
                                     ((c0, c1), (c1, c2), (c2, c3), (c3, c4), (c4, p2), (p2, p3), (p3, p4), (p4, c5),
                                      (c0, c5))))  # fmt: skip
        return out

    def _learn_check_calls(self, st: KeyState, actual_ms: float) -> None:
        """The median cost of the checks so far, in real calls of their key's provisional config, becomes every
        key's first estimate (``KeyState.check_calls``): a new key's first check costs what the others' did,
        relative to a call (the median: one outlier set every key's estimate when it was the last check's)."""
        call = st.recent_ms(st.provisional)
        if not call or call <= 0:
            return
        self._check_ratios.append(max(1.0, actual_ms / call))
        ratio = lower_median(self._check_ratios[-64:])
        self._check_calls = ratio
        for other in list(self.states.values()):
            other.check_calls = ratio

    def _stretched(self, st: KeyState, ms: float) -> None:
        """A span another thread stretched (see ``IncrementalOptions.stall_ms``): counted, not used."""
        with self._lock:
            self.stretched[0] += 1
            self.stretched[1] += max(0.0, ms)
        st.stretched += 1

    def _racing_launcher(self, tuned: Autotuned, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any],
                         key: tuple[Any, ...], ck: tuple[Any, ...] | None) -> Any:  # fmt: skip
        """:meth:`_fast_launcher`, first looked up with ``ck``, the call key the normal path computed for this
        positional call (every generated call key returns exactly ``KeySpec.call_key``'s values): the table
        holds every launcher built, so a racing call computes no second call key (~0.6 us on the CPU)."""
        if ck is not None and tuned.fast_dispatch:
            fast = self._fast.get((ck, cfg), MISS)
            if fast is not MISS:
                return fast
        return self._fast_launcher(tuned, cfg, args, kwargs, key)

    def _fast_launcher(self, tuned: Autotuned, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any],
                       key: tuple[Any, ...] | None = None) -> Any:  # fmt: skip
        """The launch of ``cfg`` for this call's shape without Triton's binding (as the cached path does),
        built once per (call shape, config) from the binary the background thread loaded; None where
        only Triton's path can take the call (keywords, hooks, heuristics, no GPU)."""
        if kwargs or not tuned.fast_dispatch or cfg.pre_hook is not None:
            return None
        if self._call_key is None:
            self._call_key = tuned.key_spec.compiled_call_key(args)
            # The same values as call_key, generated for these argument kinds: the normal path's lookup of the
            # dispatch table, which every call of a tuning key misses first, costs a third as much.
            tuned.adopt_call_key(self._call_key)
        try:
            ck = (self._call_key(args), cfg)
        except TypeError:
            return None
        fast = self._fast.get(ck, MISS)
        if fast is MISS:
            from tritune.decorator.dispatch import make_fast

            try:
                fl = make_fast(tuned.launcher(), cfg, args, dict(tuned.info.defaults))
            except Exception:  # Triton's own path then compiles, launches and reports any error
                fl = None
            fast = self._fast[ck] = fl.launch if fl is not None else None
            if key is not None:
                self._shapes.setdefault(key, set()).add(ck[0])
        return fast

    def start_trace(self) -> list[tuple[float, str, str, str]]:
        """Record the background work from now on (see :attr:`trace`); returns the list it goes to."""
        self.trace = []
        if isinstance(self.compiler, WorkerCompiles):
            self.compiler.note = self._note
        return self.trace

    def _note(self, event: str, detail: str) -> None:
        if self.trace is not None:
            self.trace.append((time.perf_counter(), threading.current_thread().name, event, detail))

    def _output_names(self, tuned: Autotuned, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[str]:
        named = tuned.named_args(args, kwargs)
        if self.outputs is not None:
            return [n for n in self.outputs if hasattr(named.get(n), "clone")]
        given = list(dict.fromkeys([*tuned.restore_value, *tuned.reset_to_zero]))
        if given:
            return [n for n in given if hasattr(named.get(n), "clone")]
        return [n for n, v in named.items() if hasattr(v, "clone") and hasattr(v, "dtype")]

    # -- starting a key ---------------------------------------------------------------------------------
    def _begin(self, tuned: Autotuned, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
               grid: Any, parts: dict[str, float] | None = None) -> KeyState | None:  # fmt: skip
        """The key's state, its provisional config and its background compiles queued; None where the normal
        path serves the key. ``parts``: each step's host ms goes there (see :attr:`first_parts`)."""
        lap = Laps(parts, scale=1e3)
        install_triton_key_memo()  # the key's provisional compile or lookup needs Triton's key
        if self.outputs is not None:
            missing = [n for n in self.outputs if n not in tuned.arg_names]
            if missing:
                raise ConfigError(f"{tuned.info.name}: outputs= names {missing}, which are not parameters of the "
                                  f"kernel; its parameters are {', '.join(tuned.arg_names)}. Name the arguments "
                                  "the kernel writes.")  # fmt: skip
        if hasattr(tuned.cache, "get") and tuned.cache.get(tuned.key_spec.public(key)) is not None:
            return None  # set by the caller through kernel.cache[key] = config: the normal path serves it
        legal, _ = tuned.legal_configs(args, kwargs)
        lap("screen")
        if len(legal) <= 1 or tuned.tuner.lookup(tuned, key, args, kwargs, allowed=legal) is not None:
            return (
                None  # nothing to tune, or a stored/pretuned winner: the normal path serves (and reports) it
            )
        lap("lookup")
        known = {k: c.config for k, c in tuned.tuned_keys().items() if c.source in _TUNED}
        near = nearest_key(key, known, legal)
        provisional = known[near] if near is not None else legal[0]
        near_t = tuned.tuned_keys()[near].timings if near is not None else None
        order = _fastest_first(near_t, legal)
        st = KeyState(legal, provisional, self.options, check_order=order,
                      budget=GpuBudget(self.options.spend_fraction, self.options.burst_calls, parent=self.budget,
                                       spill=self.spare),
                      pruned=None if self.distributed or not self._may_prune(key, near)
                      else prune(near_t, legal, self.options.prune_ratio, provisional,
                                 key_distance(key, near) if near is not None else 0.0,
                                 protect=self._protected(known)))  # fmt: skip
        st.check_calls = self._check_calls
        self.states[key] = st
        if st.pruned:
            self._note("pruned", ", ".join(f"{c.id}: {why}" for c, why in st.pruned.items()))
        rest = [c for c in order if c != provisional and c not in st.pruned]  # the likeliest winners compile (and are checked) first
        names = self._output_names(tuned, args, kwargs)
        dtypes = sorted({str(v.dtype) for n, v in tuned.named_args(args, kwargs).items() if n in names})
        device = next((getattr(v, "device", None) for v in args if getattr(getattr(v, "device", None), "type", "") == "cuda"),
                      None)  # fmt: skip
        self._cmp_dtypes[key] = tuple(dtypes) if device is not None else ()
        deliver = lambda cfg, why: self._compiled(tuned, key, st, cfg, why, dtypes, device, args, kwargs)  # noqa: E731
        lap("state")
        if isinstance(self.compiler, WorkerCompiles):  # the hottest key's compiles first
            self.compiler.start(tuned, rest, args, kwargs, grid, deliver, calls=lambda: st.calls)
        else:
            self.compiler.start(tuned, rest, args, kwargs, grid, deliver)
        lap("compiles")
        return st

    def _compiled(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, cfg: Config, why: str | None,
                  dtypes: Sequence[str] = (), device: Any = None, args: Sequence[Any] | None = None,
                  kwargs: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        self._warm_comparison(dtypes, device)  # before the first check of these dtypes can be scheduled
        if why is None and args is not None:
            # The candidate's fast launcher for the key's first call shape (its check's scratch run and its
            # racing calls have that shape as a rule), built here and not on the caller's check call:
            # Triton's binding and the launcher's code generation cost ~1 ms of the caller's thread.
            try:
                self._fast_launcher(tuned, cfg, args, kwargs or {}, key)
            except Exception as e:  # the caller's path builds it (or takes Triton's) and reports any error
                self._note("launcher failed", f"{cfg.id}: {type(e).__name__}: {e}")
        self._note("compiled", f"{cfg.id}: {why or 'loaded'}")
        st.compiled(cfg, why)
        if not self.distributed:
            self._decide(tuned, key, st)

    # -- decisions --------------------------------------------------------------------------------------
    def _decide_due(self) -> None:
        """After each batch of the resolver: decide every key that got a round's worth of samples in it, once
        (a batch holds 1 ms of calls, often several rounds of a key: deciding at each round cost the resolver
        thread, which shares the interpreter's lock with the callers, ~100 us per round of 8 racers)."""
        due = self._due
        while due:
            key, (tuned, st) = due.popitem()
            if self._held_elsewhere(tuned):
                due[key] = (tuned, st)  # decided at the next batch
                return
            self._decide(tuned, key, st)

    def _held_elsewhere(self, tuned: Autotuned) -> bool:
        """On a caller's thread (``resolve="inline"``): whether another thread holds the kernel's lock (a new
        key's first call, which may compile its provisional config), which a promotion takes: the decision then
        waits for a later batch rather than stall this call. Always False on the resolver's thread, which may
        wait. A probe (taken and given back at once), so the locks are still taken in one order."""
        r = self._resolver
        if r is None or not r.inline or threading.current_thread() is r._thread:
            return False
        if tuned.lock.acquire(blocking=False):
            tuned.lock.release()
            return False
        return True

    def _decide(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState) -> None:
        t0 = time.perf_counter()
        with self._lock:
            if st.promoted is not None:
                return
            p = st.propose()
            if p.promoted is None:
                st.apply(p)
                d = self.decided
                d[0] += 1
                d[1] += time.perf_counter() - t0
                return
            choice = self._publish(tuned, key, st, p)
        self._after_promotion(tuned, key, st, p, choice)
        d = self.decided
        d[2] += 1
        d[3] += time.perf_counter() - t0

    def _agree(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState) -> None:
        """The agreement step of ``distributed=True``, reached by every rank at the same call of the key."""
        import torch.distributed as dist

        mine = st.propose()
        est = st.check_estimate_ms()
        b = st.budget
        can_check = est is not None and b.tokens_ms >= est > 0
        mine = replace(mine, stop=mine.stop or ("check" if can_check else ""))
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, mine)
        agreed = merge(gathered, st.configs)
        if agreed.promoted is None and all(p.stop == "check" for p in gathered):
            agreed = replace(agreed, stop="check")
        with self._lock:
            if agreed.promoted is None:
                st.apply(agreed)
                return
            choice = self._publish(tuned, key, st, agreed)
        self._after_promotion(tuned, key, st, agreed, choice)

    def _publish(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, p: Proposal) -> Choice:
        """Make ``p``'s winner the key's choice (under ``self._lock``), in this order: the normal path's dispatch
        table gets the winner's fast launchers (built by this mode for the shapes it served: the next call
        binds nothing and compiles nothing), then the choice, and only then the key's state says "promoted".
        A caller that sees the state finds the choice; none ever reaches the normal path's tuning or its store
        lookup. No I/O here: the store is written afterwards, on its own thread (:meth:`_after_promotion`)."""
        assert p.promoted is not None
        timings = {}
        for c in st.configs:
            m = st.measurement(c)
            if m is not None:
                timings[c] = m.triton_quantiles()
        stats = {**st.summary(applied=p), "stop": p.stop, "ties": [c.id for c in p.ties],
                 "extra_gpu_fraction": round(st.budget.extra_fraction, 4)}  # fmt: skip
        med = timings.get(p.promoted, [math.nan])[0]
        choice = Choice(p.promoted, "incremental", f"{p.stop} after {st.calls} calls: {med:.4f} ms median",
                        stats=stats, timings=timings)  # fmt: skip
        warm = self._warm_dispatch(tuned, key, p.promoted, choice)
        tuned.publish(key, choice, warm)
        self.promoted[key] = choice
        st.apply(p)
        self.states.pop(key, None)
        self._cmp_dtypes.pop(key, None)
        self.spare.receive(st.budget.lend(math.inf))  # its savings: frequent keys' checks may borrow them
        self._note("promoted", f"{tuned.key_spec.public(key)}: {p.promoted.id} ({p.stop}, {st.calls} calls; "
                               f"{len(warm)} fast launchers handed over)")  # fmt: skip
        if not self.distributed:
            self._prune_others(tuned, key, choice)
        return choice

    def _warm_dispatch(self, tuned: Autotuned, key: tuple[Any, ...], cfg: Config, choice: Choice) -> dict[Any, Any]:
        """Entries of the normal path's dispatch table (call shape -> (choice, launcher)) for every shape of
        ``key`` this mode built a fast launcher of ``cfg`` for: the binary it already loaded, so the first
        cached call neither goes through Triton's binding nor builds a launcher."""
        if not tuned.fast_dispatch:
            return {}
        out = {}
        for shape in self._shapes.get(key, ()):
            fast = self._fast.get((shape, cfg))
            if fast is not None and fast is not MISS:
                out[shape] = (choice, fast)
        if out and self._call_key is not None:
            tuned.adopt_call_key(self._call_key)  # the same values as call_key (generated for these argument kinds)
        return out

    def _after_promotion(self, tuned: Autotuned, key: tuple[Any, ...], st: KeyState, p: Proposal,
                         choice: Choice) -> None:  # fmt: skip
        """After the choice is published, outside every lock a caller could take: the store write (queued to
        the writer thread) and ``on_promote``."""
        from tritune.serving.record import record_promotion

        def write() -> None:
            t0 = time.perf_counter()
            record_promotion(tuned, key, st, p)
            self._note("stored", f"{tuned.key_spec.public(key)} in {(time.perf_counter() - t0) * 1e3:.1f} ms")

        self._write(write)
        if self.on_promote is not None:
            self.on_promote(tuned.key_spec.public(key), choice)

    def _write(self, job: Callable[[], None]) -> None:
        if not self._store_thread:
            self._run_write(job)
            return
        if self._writer is None:
            with self._lock:
                if self._writer is None:
                    self._writer = threading.Thread(target=self._write_loop, name="tritune-store", daemon=True)
                    self._writer.start()
                    self._hook_exit()
        self._writes.put(job)

    def _hook_exit(self) -> None:
        if not self._exit_hooked:
            self._exit_hooked = True
            stop_at_exit(self.close)

    def close(self, timeout_s: float = EXIT_WAIT_S) -> None:
        """Finish the queued store writes (a promotion queued at exit is still written), stop the writer and
        wait for the other helper threads, up to ``timeout_s`` in all: at the interpreter's exit
        (:func:`~tritune.serving.runtime.stop_at_exit`: a daemon thread inside a CUDA call at finalization
        aborts the process)."""
        deadline = time.monotonic() + timeout_s
        if self._writer is not None and self._writer.is_alive():
            self._writes.put(None)
            self._writer.join(max(0.0, deadline - time.monotonic()))
        for t in list(self._helpers):
            t.join(max(0.0, deadline - time.monotonic()))

    def _run_write(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception as e:  # the choice is served already; the store just misses this key
            self.store_errors.append(e)
            self._note("store failed", f"{type(e).__name__}: {e}")

    def _write_loop(self) -> None:
        while True:
            job = self._writes.get()
            try:
                if job is None:  # close()
                    return
                self._run_write(job)
            finally:
                self._writes.task_done()

    def flush(self) -> None:
        """Wait until every queued store write is done (tests, and a server before it exits)."""
        if self._writer is not None:
            self._writes.join()

    def _may_prune(self, key: tuple[Any, ...], near: tuple[Any, ...] | None) -> bool:
        """Whether ``near``'s timings may prune ``key``'s candidates: only within ``prune_distance``."""
        return near is not None and key_distance(key, near) <= self.options.prune_distance

    def _prune_others(self, tuned: Autotuned, key: tuple[Any, ...], choice: Choice) -> None:
        """Keys still tuning whose nearest tuned key is now ``key`` leave out the candidates it timed beyond
        ``prune_ratio`` of its best and that they have not checked yet (keys of a stream start long before
        any is promoted: without this only keys started later would profit). Not with ``distributed=True``:
        timings differ by rank, and ranks must keep the same candidates."""
        if self.options.prune_ratio == 0 or not choice.timings:
            return
        known = {k: c.config for k, c in tuned.tuned_keys().items() if c.source in _TUNED}
        protect: frozenset[Config] | None = None  # found once, for the first key pruned (pruning moves no racer)
        for other, st in list(self.states.items()):
            if nearest_key(other, known, st.configs) != key:
                continue
            if not self._may_prune(other, key):
                continue
            if protect is None:
                protect = self._protected(known)
            out = st.prune_more(prune(choice.timings, st.configs, self.options.prune_ratio, st.provisional,
                                      key_distance(other, key), protect=protect))  # fmt: skip
            if out:
                self._note("pruned", f"{tuned.key_spec.public(other)}: {', '.join(c.id for c in out)} "
                                     f"(by {tuned.key_spec.public(key)})")  # fmt: skip

    def _protected(self, known: Mapping[tuple[Any, ...], Config]) -> frozenset[Config]:
        """Configs no neighbour prunes: every tuned key's winner and every tuning key's current leader. A
        pruned config is never restored, and keys are promoted in the order their calls come: on an H200 (6,000
        calls), without this protection, the GEMM's best config at M = 96 was pruned there by M = 128's promotion
        (1.34x its best, 0.42 away) while M = 64 was still racing with it in the lead; M = 64 then won with it, and
        M = 96 was promoted 1.19x off."""
        leaders = {c for st in list(self.states.values()) if (c := st.leader()) is not None}
        return frozenset(known.values()) | frozenset(leaders)

    def _comparable(self, key: tuple[Any, ...]) -> bool:
        """Whether every GPU output dtype of ``key`` has its comparison ready (the fused kernel loaded, or its
        preparation failed and torch's comparison stands in): a check waits for that, never loads device code."""
        fused, unfused = self._fused, self._unfused
        ready = True
        for d in self._cmp_dtypes.get(key, ()):
            if d in fused or d in unfused:
                continue
            t = self._prep_t.get(d)
            if t is not None and time.monotonic() - t > COMPARE_PREP_S:  # stuck: torch's comparison stands in
                unfused.add(d)
                self._note("fused comparison", f"{d}: not ready after {COMPARE_PREP_S:.0f} s; torch's comparison")
                continue
            ready = False
        return ready

    def _warm_comparison(self, dtypes: Sequence[str], device: Any) -> None:
        """Have the fused comparison kernel compiled and loaded for these output dtypes by a thread of its own,
        before any check of them runs (:meth:`_comparable`): the device code a check launches is loaded off the
        caller's path. Torch's comparison is not run here to load its kernels, except with ``distributed``: run
        once on small tensors, that load (~80 ms in all on an H200, PyTorch loading each kernel's module at its
        first launch) ran beside the stream's first calls and held them up: their launches waited 8-29 ms (a
        stack sampler put the compile thread inside torch.isclose in 83 of 134 samples of slow first calls).
        With ``distributed`` the checks come at agreement steps, whatever is ready: torch's comparison is loaded
        here."""
        todo = [d for d in dtypes if (d, str(device)) not in self._warm]
        if device is None or not todo:
            return
        for d in todo:
            self._warm.add((d, str(device)))
            self._prep_t.setdefault(d, time.monotonic())
            if self.distributed:  # its checks are scheduled by agreement, not by readiness: torch's is loaded
                from tritune.serving.check import warm_comparison

                try:
                    warm_comparison(d, device, self.atol, self.rtol)
                except Exception as e:  # the check itself will say what is wrong; compiles go on
                    self._note("warm failed", f"{d}: {type(e).__name__}: {e}")
        try:
            prep = threading.Thread(target=self._prepare_fused, args=(todo, device), name="tritune-compare-prep",
                                    daemon=True)  # fmt: skip
            self._hook_exit()
            prep.start()
            self._helpers.append(prep)  # (only a started thread: close() joins each)
        except Exception as e:  # no thread: torch's comparison for these dtypes, and the checks go on
            self._unfused.update(todo)
            self._note("fused comparison", f"{', '.join(todo)}: no preparation thread ({type(e).__name__}: {e})")

    def _prepare_fused(self, dtypes: Sequence[str], device: Any) -> None:
        from tritune.serving.check import prepare_fused, warm_comparison

        for d in dtypes:
            if EXITING.is_set():
                return
            t0 = time.perf_counter()
            try:
                import torch

                torch.cuda.set_device(device)
                why = prepare_fused(d, device)
                if why is None:
                    warm_comparison(d, device, self.atol, self.rtol, {d})
                    self._fused.add(d)
            except Exception as e:
                why = f"{type(e).__name__}: {e}"
            if why is not None:
                self._unfused.add(d)  # its checks compare with torch (loading its kernels then)
            self._note("fused comparison", f"{d}: {why or 'ready'} after {(time.perf_counter() - t0) * 1e3:.0f} ms")

    def diagnose(self, tuned: Autotuned) -> dict[tuple[Any, ...], dict[str, Any]]:
        """Keys still tuning -> why each is not promoted (:meth:`KeyState.diagnose`), with the kernel's pool
        (what every key earned and did not spend: a frequent key's checks may draw on it), whether the key
        counts as frequent, and the resolver's backlog (event pairs not resolved yet)."""
        pool = self.budget.unspent_ms
        r = self._resolver
        backlog = r.backlog() if r is not None else 0
        out = {}
        for k, st in list(self.states.items()):
            d = st.diagnose()
            d.update(pool_ms=round(pool, 5), frequent=self._frequent(st), resolver_backlog=backlog,
                     comparison_ready=self._comparable(k))
            out[tuned.key_spec.public(k)] = d
        return out

    def tuning(self, tuned: Autotuned) -> dict[tuple[Any, ...], Choice]:
        """Keys still tuning -> their provisional config, with the state in ``stats`` (for ``choices()``)."""
        return {tuned.key_spec.public(k): Choice(st.provisional, "provisional", "tuning on real calls",
                                                 stats=st.summary())
                for k, st in list(self.states.items())}  # fmt: skip


def _never_late(handle: Any) -> bool:
    """The late test of clocks without one (see ``CudaClock.late``)."""
    return False


def _no_time() -> float:
    """The host clock where spans are not tested for stalls (see ``Incremental.host_clock``)."""
    return 0.0


def _empty_like(t: Any) -> Any:
    """A scratch buffer for ``t`` (allocated outside any timed span; filled by ``copy_`` inside one)."""
    import torch

    return torch.empty_like(t)


def nearest_tuned(key: tuple[Any, ...], tuned_keys: Mapping[tuple[Any, ...], Config],
                  allowed: Sequence[Config]) -> Config | None:  # fmt: skip
    """The config of the nearest tuned key (see the module docstring), if it is among ``allowed``."""
    near = nearest_key(key, tuned_keys, allowed)
    return tuned_keys[near] if near is not None else None


def _fastest_first(timings: Mapping[Config, Sequence[float]] | None, legal: Sequence[Config]) -> list[Config]:
    """``legal`` with the configs timed at a neighbour first, fastest (median) first; the rest as declared."""
    if not timings:
        return list(legal)
    timed = sorted((c for c in legal if timings.get(c)), key=lambda c: timings[c][0])
    return timed + [c for c in legal if c not in timed]


def key_distance(a: tuple[Any, ...], b: tuple[Any, ...]) -> float:
    """The sum over numeric parts of ``|log2(x) - log2(y)|``; infinite where other parts differ."""
    if len(a) != len(b):
        return math.inf
    d = 0.0
    for x, y in zip(a, b):
        if _positive_number(x) and _positive_number(y):
            d += abs(math.log2(x) - math.log2(y))
        elif x != y:
            return math.inf
    return d


def nearest_key(key: tuple[Any, ...], tuned_keys: Mapping[tuple[Any, ...], Config],
                allowed: Sequence[Config]) -> tuple[Any, ...] | None:  # fmt: skip
    """The nearest tuned key whose config is among ``allowed`` (see the module docstring), or None."""
    best: tuple[float, tuple[Any, ...]] | None = None
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
            best = (d, k)
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
