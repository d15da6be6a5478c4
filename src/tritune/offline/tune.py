"""``tritune tune`` over workload files: every key of every workload through the engine's one key pipeline.

Stage by stage, each candidate ends with an explicit outcome: ``illegal`` (static rules, or a binary
the GPU refuses to load for its shared memory or registers), ``compile_failed``/``compile_timeout``,
``incorrect`` (wrong against the oracle, checked before any timing), ``launch_failed``, or ``measured``.
Compiling happens in forked worker processes, longest compile first, and the timing overlaps it: the
configs compiled first are loaded, verified and raced while the last ones compile, and the race goes on
with those (:func:`tritune.engine.key.tune_key`, the decorator's path too). Timing is a race
(:mod:`tritune.engine.race`) on CUDA events. Registers, spills and shared memory come from the loaded
binaries, as the driver reports them.

**Farmed over ranks** (``torchrun ... -m tritune tune``, or any initialized process group of 2+ ranks):
every rank builds the same candidate list (static rules only), and a :class:`tritune.ranks.Farm` gives each rank
its share of every batch to compile, load, verify and race on its own GPU; the shares' outcomes are merged, and
rank 0 re-races the finalists on its own GPU (medians from two GPUs are not comparable: two H200s of one host ran
the same matmul 5% apart). Every rank ends with the same winner and the same result of every candidate; only rank 0
writes the store. A searched key (:mod:`tritune.engine.plan`) is searched once for all ranks.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.adapters.interpreter import as_interpreted
from tritune.adapters.kernel import as_jit
from tritune.bench import EventTimer, Failure
from tritune.bench.provenance import measure_ceilings, provenance
from tritune.bench.timer import ConfigMeasure
from tritune.config import Config
from tritune.device import current_target, gpu_unavailable_reason
from tritune.engine import key as engine_key
from tritune.engine.aside import Later, aside
from tritune.engine.imports import import_ahead
from tritune.engine.isolate import IsolatedBench
from tritune.engine.key import KeyJob
from tritune.engine.options import TuneOptions
from tritune.engine.pipeline import Prepared, after_compiles, load_binary
from tritune.engine.precompile import Precompiler
from tritune.engine.race import RaceResult
from tritune.engine.sticky import cuda_context_error
from tritune.engine.timing import timer_measure
from tritune.errors import WorkloadError
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.progress import Laps
from tritune.ranks.farm import Farm, job_group, rank_info
from tritune.ranks.race import WINNER_RULE
from tritune.results import CandidateResult, RunResult, WorkloadResult
from tritune.screen.run import locate
from tritune.screen.targets import get_target
from tritune.space import check_static_all
from tritune.store import dtypes_of, make_key
from tritune.verify.compare import compare_warmed, warm_compare, warm_compare_dtypes
from tritune.verify.run import check_candidate, clone_arg
from tritune.workers import freeze_more, objects_frozen, service
from tritune.workload import Workload

#: The CPU interpreter's tunes run the screen and the oracle on the caller's thread (nothing would overlap);
#: tests set this False to run them aside, as on a GPU.
_INLINE_ON_CPU = True

_PREPARE_FAILURES = (Status.ILLEGAL, Status.LAUNCH_FAILED, Status.INCORRECT, Status.COMPILE_FAILED,
                     Status.COMPILE_TIMEOUT)


def tune_key(
    workload: Workload,
    key: Mapping[str, Any],
    *,
    options: TuneOptions,
    verify: bool = True,
    store: Any = None,
    progress: Any = None,
    timer: Any = None,
    farm: Farm | None = None,
    device: str = "cuda",
    target: Any = "auto",
    screens: dict[Any, Screened] | None = None,
) -> tuple[WorkloadResult, RaceResult | None]:
    """Tune one key of ``workload``: its candidates, arguments, oracle check and timed call, handed to the
    engine's one key pipeline (:func:`tritune.engine.key.tune_key`); returns the key's result for reports.

    ``verify``: check every candidate against the workload's oracle before it is timed. ``farm`` spreads the
    work over the ranks of a group (collective: every rank calls this with the same workload and key): each rank
    compiles, loads, verifies and races only its share. ``target``: what the workers compile for ("auto": this GPU; a name such as "sm90" or a
    GPUTarget; None: nothing is compiled ahead, the JIT compiles at first load). ``device="cpu"``
    launches through Triton's interpreter: for tests only (its timings mean nothing). ``screens``: the static
    screens of earlier keys (:func:`screen_static`; ``tune`` keeps one for all the keys it tunes).
    ``phases`` in the result's extra has ``setup`` (seconds of the arguments, the oracle, the static screen
    and, searched, the search's start: store reads, neighbours, the strategy) and ``after_s`` (the results
    and the store's write): what a key costs outside its batches and races. On a GPU the arguments are made
    beside the static screen and the comparison's float64 warm-up, and the oracle, the outputs' comparison
    warm-up run beside the search's start and the first batch's compiles, and the timer's setup (its flush buffer,
    the clocks' warm-up) beside the compiles once their workers are forked (:mod:`tritune.engine.aside`,
    :func:`~tritune.engine.pipeline.after_compiles`); the first check joins the oracle and the warm-ups, the
    first timing the timer: ``screen_s``/``oracle_s``/``compare_warm0_s``/``compare_warm_s``/``timer_s`` are
    their own seconds on the helper thread, the ``*_wait_s`` what this thread waited for them.
    """
    import torch

    setup: dict[str, Any] = {}
    gc_key = _GcPauses.start("key")
    joined = import_ahead() if device != "cpu" else (lambda: 0.0)  # beside the arguments and the oracle
    jit = as_interpreted(workload.kernel) if device == "cpu" else as_jit(workload.kernel)
    compile_jit = as_jit(workload.kernel)
    kname = workload.info.name
    inline = device == "cpu" and _INLINE_ON_CPU  # on a GPU the screen, then the oracle, run aside (aside.py)
    kw = workload.caller_kwargs(key)
    screening = aside(lambda: screen_static(workload, kw, screens), inline=inline)  # beside the arguments
    oracle_fn = workload.oracle if verify else None
    verifying = oracle_fn is not None
    # The comparison's float64 kernels load beside the arguments when this process has compared nothing on the
    # device yet (warm_compare_dtypes); the outputs' own warm-up below then has only their casts left.
    early_warm = None
    if verifying and device != "cpu" and not compare_warmed(torch.device("cuda", torch.cuda.current_device())):
        early_warm = aside(lambda: warm_compare_dtypes([(torch.float32, "cuda")], atol=workload.atol,
                                                       rtol=workload.rtol), name="tritune-compare-warm0")  # fmt: skip
    t = time.perf_counter()
    torch.manual_seed(0)
    args = workload.make_args(key, device)  # on this thread: it may set per-thread state (triton.set_allocator)
    pristine = [clone_arg(a) for a in args]
    setup["args_s"] = _lap(t)
    screened = screening.result()
    verdict, legal, every = screened.verdict, list(screened.legal), screened.candidates
    setup["screen_s"], setup["screen_wait_s"] = round(screening.seconds, 4), round(screening.waited_s, 4)
    # The comparison's device code loads beside the setup, not in the first candidate's check (warm_compare).
    outs = workload.output_tensors(args)
    warming = None if not verifying or device == "cpu" else aside(
        lambda: warm_compare(outs, atol=workload.atol, rtol=workload.rtol), name="tritune-compare-warm")
    oracle = None if oracle_fn is None else aside(
        lambda: list(oracle_fn([clone_arg(a) for a in pristine])), inline=inline)
    expected: list[Any] | None = None

    def oracle_ready() -> None:
        """The oracle's outputs and the comparison's warm-ups, joined by the first check (``prepare``): they ran
        beside the setup, the search's start and the first batch's compiles."""
        nonlocal expected
        if oracle is not None and expected is None:
            expected = oracle.result()
            setup["oracle_s"], setup["oracle_wait_s"] = round(oracle.seconds, 4), round(oracle.waited_s, 4)
        if warming is not None and "compare_warm_s" not in setup:
            for name, w in (("compare_warm0", early_warm), ("compare_warm", warming)):
                if w is None:
                    continue
                try:
                    w.result()
                except Exception:  # a warm-up only: the checks compare (and report) as before
                    pass
                setup[f"{name}_s"], setup[f"{name}_wait_s"] = round(w.seconds, 4), round(w.waited_s, 4)

    def make_fn(cfg: Config) -> Callable[[], object]:
        grid = workload.grid_for(cfg, key)
        cargs, ckw = workload.hooked(cfg, args, kw)  # once per config: its own descriptors, if it has a hook
        opts = {**ckw, **cfg.kwargs, **cfg.launch_options()}
        launcher = jit[grid]

        def call() -> None:
            launcher(*cargs, **opts)

        return call

    policy = options.policy(workload.name)
    measuring = timer_measure(timer, make_fn, options.race.rel_tol, lambda: EventTimer.for_policy(policy))

    setup["imports_wait_s"] = round(joined(), 4)  # before anything compiles or loads here
    setup["refrozen"] = freeze_more()  # the imports and the arguments: out of the collector's full walks

    # Summed over the key's configs (the phases' ``prepare``); the check's steps too (check_candidate's parts).
    prepared = {"load_s": 0.0, "check_s": 0.0, "check_restore_s": 0.0, "check_run_s": 0.0, "check_compare_s": 0.0}

    def prepare(cfg: Config) -> Prepared:
        """Load ``cfg`` and check it against the oracle: the Failure to record, or the binary's facts."""
        grid = workload.grid_for(cfg, key)
        facts: dict[str, Any] = {}
        t0 = time.perf_counter()
        if device != "cpu":
            try:
                h_args, h_kw = workload.hooked(cfg, args, kw)
            except WorkloadError as e:  # the workload's pre_hook refused this config: it cannot be launched
                return Failure(Status.LAUNCH_FAILED, str(e))
            got = load_binary(jit, kname, cfg, h_args, h_kw, grid)
            prepared["load_s"] += time.perf_counter() - t0
            if isinstance(got, Failure):
                return got
            facts = got
        if verifying and expected is None:
            oracle_ready()  # the first check: the oracle and the comparison's warm-up ran beside the setup
        if expected is not None:
            t0 = time.perf_counter()
            checked = check_candidate(workload, key, cfg, args, pristine, kw, expected, jit, device == "cpu",
                                      parts=prepared)  # fmt: skip
            prepared["check_s"] += time.perf_counter() - t0
            if checked.status is Status.ERROR:
                return Failure(Status.LAUNCH_FAILED, checked.reason or f"{kname} {cfg.id}: the launch failed")
            if checked.status is not Status.CORRECT:
                return Failure(checked.status, checked.reason or f"{kname} {cfg.id}: incorrect")
        if numerics is not None:  # numerics="exact": the reference's bits, on the key's arguments and perturbed copies
            bad = numerics.check(cfg)
            if bad is not None:
                return Failure(*bad)
        return facts

    numerics = None
    if options.numerics == "exact" and len(legal) > 1:
        from tritune.verify.reference import OutputCheck

        def launch_on(cfg: Config, scratch: list[Any]) -> None:
            cargs, ckw = workload.hooked(cfg, scratch, kw)
            jit[workload.grid_for(cfg, key)](*cargs, **ckw, **cfg.kwargs, **cfg.launch_options())

        numerics = OutputCheck(kname, launch_on, pristine, workload.info.arg_names, exact=True, references=legal)

    gpu_target = _gpu_target(target)
    compiler: Callable[[Sequence[Config]], Any] | None = None
    if gpu_target is not None:
        compiler = Precompiler(compile_jit, args, kw, gpu_target, options.jobs or None, options.compile_timeout,
                               pre_hook=workload.pre_hook)  # fmt: skip
    # numerics="exact": the check's perturbed inputs and comparison, on a helper thread (OutputCheck.prepare)
    prep = Later(numerics.prepare, name="tritune-check-prep") if numerics is not None else None
    if device != "cpu" and legal:  # the timer's flush buffer and the clocks' warm-up, and the check's preparation,
        compiler = after_compiles(compiler, measuring.start, *([prep.start] if prep else []))  # beside the compiles
    benches: list[IsolatedBench] = []
    path = locate(workload) if device != "cpu" else None

    def recover() -> ConfigMeasure:
        """After a sticky CUDA error: the other candidates are checked and timed in a fresh process."""
        assert path is not None
        benches.append(IsolatedBench(timeout_s=120.0))
        return benches[-1].measure_for(path, workload.name, dict(key), verify=verifying, measure=policy.value,
                                       rel_tol=options.race.rel_tol)  # fmt: skip

    tkey = make_key(workload.info, dict(key), dtypes=dtypes_of(args), measure=policy.value,
                    numerics=options.numerics or "any")
    job = KeyJob(f"{workload.name} {dict(key)}", tkey, tuple(legal), prepare, measuring, compiler,
                 rejected={c: v.reason or "illegal" for c, v in verdict.items()},
                 recover=recover if path is not None else None,
                 probe=cuda_context_error if device != "cpu" else None)  # fmt: skip
    stats: dict[str, Any] = {"setup": setup, "prepare": prepared}
    if legal and progress is not None:  # the same list on every rank: static rules only
        progress.stage(f"tuning {workload.name} {dict(key)}", len(legal))
    try:
        tuned = engine_key.tune_key(job, options, store=store, farm=farm, stats=stats)
    finally:
        for bench in benches:
            bench.close()
    result, plan = tuned.race, tuned.plan
    for name in ("search_start_s",):  # the search's start belongs to the key's setup
        if name in stats:
            setup[name] = stats.pop(name)
    t_after = time.perf_counter() - float(stats.get("record_s", 0.0))  # the store's write, in the engine, is after too
    after: dict[str, float] = {"store_s": float(stats.get("record_s", 0.0))}
    lap = Laps(after)
    gc_after = _GcPauses.start("after")
    threads_after = threading.active_count()
    nbytes, nflops = workload.bytes_for(key), workload.flops_for(key)
    cands: list[CandidateResult] = []
    tried = {o.config for o in result.outcomes} if result is not None else set()
    untried = (f"not tried by this run's search ({plan.strategy}; earlier runs' records are in the store)"
               if plan is not None else "")  # fmt: skip
    for cfg in every:
        if cfg in verdict:
            v = verdict[cfg]
            cands.append(CandidateResult(cfg, v.status, v.reason, {**v.extra, "measurement": None}))
            continue
        assert result is not None
        if plan is not None and cfg not in tried:
            cands.append(CandidateResult(cfg, Status.NOT_TIMED, untried, {"measurement": None, "searched": False}))
            continue
        o = result.outcome(cfg)
        extra: dict[str, Any] = dict(o.facts or {})
        if o.measurement is None and not o.timings and o.status in _PREPARE_FAILURES:  # failed before timing
            cands.append(CandidateResult(cfg, o.status, o.reason, {**extra, "measurement": None}))
            if progress is not None:
                progress.step(f"{kname} {cfg.id}", o.status.value)
            continue
        m = o.measurement
        extra["measurement"] = m.to_json() if m is not None else None
        if m is not None and o.status is Status.MEASURED:
            extra["gbps"] = nbytes / (m.median_ms * 1e-3) / 1e9 if nbytes else None
            extra["tflops"] = nflops / (m.median_ms * 1e-3) / 1e12 if nflops else None
        extra.update(eliminated_round=o.eliminated_round, timings=o.timings, full=o.full)
        cands.append(CandidateResult(cfg, o.status, o.reason, extra))
        if progress is not None:
            progress.step(f"{kname} {cfg.id}", o.status.value, f"{m.median_ms:.4f} ms" if m is not None else "")
    lap("results_s")
    tie = tuned.tie
    wextra: dict[str, Any] = {
        "winner": tie.picked.to_json() if tie else None,  # the tie rule's pick among configs within resolution
        "ties": [c.to_json() for c in tie.tied if c != tie.picked] if tie else [],
        "measure": policy.value,
        "tie": tie.to_json() if tie else None,
        "bytes": nbytes,
        "flops": nflops,
        "race": {k: v for k, v in result.to_json().items() if k != "candidates"} if result else None,
        "phases": stats,
    }
    if tuned.search is not None:
        wextra["search"] = tuned.search
    if prep is not None:  # (what fails there is the check's to say: OutputCheck.broken)
        prep.join()
    if numerics is not None:
        wextra["numerics"] = numerics.summary()
    wr = WorkloadResult(workload.name, dict(key), cands, wextra)
    lap("report_s")
    after["gc_s"] = gc_after.stop()  # inside the steps above: the collector's pauses among them
    stats["after_s"] = _lap(t_after)
    stats["after_parts"] = {k: round(v, 4) for k, v in after.items()}  # where after_s goes
    stats["after_parts"]["threads"] = threads_after  # alive at its start (helpers that may hold the interpreter)
    if measuring.seconds:  # built ahead (LazyMeasure.start): its seconds and the first timing's wait for them
        setup["timer_s"], setup["timer_wait_s"] = round(measuring.seconds, 4), round(measuring.waited_s, 4)
    stats["gc_s"] = gc_key.stop()  # the collector's pauses during the whole key
    stats["prepare"] = {k: round(v, 4) for k, v in prepared.items()}
    return wr, result


@contextlib.contextmanager
def old_objects_frozen() -> Iterator[None]:
    """Within: the objects alive on entry sit in the cyclic GC's permanent generation (``gc.freeze``), so its
    full collections walk only what was allocated since. A key allocates enough (6,912 candidates screened,
    ~4,900 store records) for one or two full collections, and each walked the whole process (torch, Triton):
    0.13 s apiece on this project's CPU, in the middle of a key's setup or its store write. Garbage among the
    frozen objects waits for the exit, then goes back to the GC; nothing frozen before entry (by the caller) is
    thawed here (one ``gc.get_freeze_count()`` a key, which walks the frozen objects). The interpreter's own
    frozen objects (``workers.service.STARTUP_FROZEN``: Python 3.12 starts with some) are no one's freeze: taken
    for one, they leave every key on Python 3.12 unfrozen (on the H200 host a new key's results then spent
    0.09-0.11 s in one full collection)."""
    if gc.get_freeze_count() > service.STARTUP_FROZEN:  # someone froze already: theirs to thaw
        yield
        return
    with objects_frozen():
        yield


def _lap(t0: float) -> float:
    return round(time.perf_counter() - t0, 4)


class _GcPauses:
    """The cyclic collector's pauses, summed in seconds from :meth:`start` to :meth:`stop` (``gc.callbacks``;
    any thread's collections, as they stop every thread). One left registered by a step that raised is removed
    by the next :meth:`start` of its ``tag``."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.s = 0.0
        self._t = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t = time.perf_counter()
        elif self._t:
            self.s += time.perf_counter() - self._t
            self._t = 0.0

    @classmethod
    def start(cls, tag: str) -> _GcPauses:
        gc.callbacks[:] = [c for c in gc.callbacks if not (isinstance(c, cls) and c.tag == tag)]
        me = cls(tag)
        gc.callbacks.append(me)
        return me

    def stop(self) -> float:
        if self in gc.callbacks:
            gc.callbacks.remove(self)
        return round(self.s, 4)


@dataclass(frozen=True)
class Screened:
    """A workload's candidates after the static rules: the rejected ones' results, and the legal ones in order."""

    candidates: tuple[Config, ...]
    verdict: Mapping[Config, CandidateResult]
    legal: tuple[Config, ...]


def screen_static(workload: Workload, kw: Mapping[str, Any], cache: dict[Any, Screened] | None = None) -> Screened:
    """The static screen of every candidate of ``workload`` for the caller's keyword arguments ``kw``.

    The rules see the config and ``kw`` only, not the key's sizes, so ``cache`` (kept by :func:`tune` across
    the keys it tunes) answers a later key with the same ``kw`` without screening the space again: 6,912
    candidates of the search benchmark's matmul took ~0.2 s per key (0.25 s on the H200 host; 0.08-0.10 s on this
    project's CPU since :func:`tritune.space.check_static_all` and the once-checked candidates, from 0.13-0.19 s).
    Unhashable ``kw`` values are screened every time."""
    try:
        ident: Any = (id(workload), tuple(sorted(kw.items())))
        hash(ident)
    except TypeError:
        ident = None
    if cache is not None and ident is not None and ident in cache:
        return cache[ident]
    every = tuple(workload.candidates())
    verdict: dict[Config, CandidateResult] = {}
    legal: list[Config] = []
    for cfg, rej in zip(every, check_static_all(every, workload.info, kw, workload.space)):
        if rej is not None:
            verdict[cfg] = CandidateResult(cfg, Status.ILLEGAL, rej.reason)
        else:
            legal.append(cfg)
    out = Screened(every, verdict, tuple(legal))
    if cache is not None and ident is not None:
        cache[ident] = out
    return out


def _gpu_target(target: Any) -> Any:
    """The GPUTarget compile workers build for: "auto" is this GPU's (None without one), names resolve."""
    if target is None:
        return None
    if target == "auto":
        return current_target() if gpu_unavailable_reason() is None else None
    if isinstance(target, str):
        return get_target(target).gpu_target()
    return target


def tune(
    workloads: Sequence[Workload],
    *,
    keys: Sequence[Mapping[str, Any]] | None = None,
    options: TuneOptions | None = None,
    verify: bool = True,
    ceilings: bool = True,
    store: Any = None,
    progress: Any = None,
    group: Any = "auto",
    timer: Any = None,
    target: str = "auto",
    device: str = "cuda",
) -> RunResult:
    """Tune every key of every workload on this machine's GPU and return the ``tune`` RunResult.

    ``verify``: check every candidate against its workload's oracle before timing it. ``ceilings``: measure the
    GPU's memory bandwidth and matmul throughput once, for the report's roofline.

    ``group="auto"`` farms the work over the job's ranks when torch.distributed is initialized with
    2+ ranks (a :class:`tritune.ranks.TuningGroup` or torch group picks other ranks; None never farms).
    Farmed, every rank must call this with the same arguments; only rank 0 writes ``store`` and every
    rank returns the same candidates and winners, with ``world_size`` and per-rank timings in the
    provenance. ``timer``/``target``/``device="cpu"`` exist for tests on machines without a GPU.
    """
    options = options or TuneOptions()
    tg = job_group(group)
    rank, world = (tg.rank, tg.world_size) if tg is not None else (0, 1)
    farm = Farm(tg) if tg is not None else None
    policy = options.policy()
    timer = timer or EventTimer.for_policy(policy)
    # Before any candidate runs: a sticky CUDA error in one would leave no device to describe afterwards.
    prov = provenance(timer=timer.to_json(), race=options.race.to_json(), jobs=options.jobs)
    entries: list[WorkloadResult] = []
    compile_s = 0.0
    t0 = time.perf_counter()
    screens: dict[Any, Screened] = {}  # the static screen of each workload, once for all its keys
    for w in workloads:
        for key in list(keys) if keys is not None else list(w.keys):
            t2 = time.perf_counter()
            with old_objects_frozen():
                wr, _ = tune_key(w, key, options=options, verify=verify, store=store if rank == 0 else None,
                                 progress=progress, timer=timer, farm=farm, device=device, target=target,
                                 screens=screens)  # fmt: skip
            wr.extra["wall_s"] = round(time.perf_counter() - t2, 3)
            compile_s += float(wr.extra["phases"].get("compiled_s", 0.0))
            entries.append(wr)
    wall = time.perf_counter() - t0
    extra: dict[str, Any] = {"wall_s": round(wall, 3), "compile_s": round(compile_s, 3)}
    prov_extra: dict[str, Any] = {}
    if tg is not None:
        winners = [[w.name, w.key, w.extra.get("winner")] for w in entries]
        ranks = rank_info(tg, "tune summary", {"wall_s": round(wall, 3), "compile_s": round(compile_s, 3),
                                              "winners": winners})  # fmt: skip
        extra["winners_identical_across_ranks"] = all(r["winners"] == ranks[0]["winners"] for r in ranks)
        extra["ranks"] = [{k: v for k, v in r.items() if k != "winners"} for r in ranks]
        prov_extra = {"world_size": world, "rank": rank, "winner_rule": WINNER_RULE,
                      "rank_wall_s": [r["wall_s"] for r in ranks],
                      "rank_compile_s": [r["compile_s"] for r in ranks]}  # fmt: skip
    if ceilings and rank == 0 and device != "cpu" and any(w.bytes or w.flops for w in workloads):
        lost = cuda_context_error()  # a sticky CUDA error of a candidate leaves nothing to measure with
        extra["ceilings"] = measure_ceilings() if lost is None else {"unavailable": lost.splitlines()[0]}
    timing = (
        f"timed on {getattr(timer, 'device_name', '?')} with CUDA events, "
        + (f"L2 flushed between runs ({getattr(timer, 'flush_bytes', 0) >> 20} MiB)" if policy.flush_l2
           else f"measure policy {policy.value}")
        + ", medians with 95% order-statistic intervals; "
        + ("every legal candidate timed to completion" if options.sweep else "racing (slow candidates dropped early)")
        + ("; large spaces searched (see each key's search)" if any("search" in w.extra for w in entries) else "")
        + (f"; farmed over {world} ranks, each candidate timed on one rank's GPU" if tg is not None else "")
    )
    prov.update(prov_extra)
    return RunResult("tune", timing, entries, provenance=prov, extra=extra)


def landscapes(result: RunResult) -> list[Any]:
    """One ``tritune.landscape/1`` per key of a tune result (median times; failures keep their status)."""
    out = []
    dev = str(result.provenance.get("gpu", ""))
    for w in result.workloads:
        pts = []
        for c in w.candidates:
            m = c.extra.get("measurement")
            if c.status is Status.MEASURED and m is not None:
                pts.append(LandscapePoint(c.config, Status.MEASURED, float(m["median_ms"]), None))
            else:
                pts.append(LandscapePoint(c.config, c.status, None, c.reason))
        ls = Landscape(w.name, dev, dict(w.key), pts, dict(result.provenance), w.extra.get("measure", "cold"))
        out.append(ls)
    return out
