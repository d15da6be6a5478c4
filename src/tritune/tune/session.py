"""The tuning session: screen -> compile -> verify -> race -> store, for every key of a workload.

Stage by stage, each candidate ends with an explicit outcome: ``illegal`` (static rules, compile-time
limits, or a binary the GPU refuses to load), ``compile_failed``/``compile_timeout``, ``incorrect``
(wrong against the oracle, checked before any timing), ``launch_failed``, or ``measured``.
Compiling happens first, in parallel worker processes (the screen's pool), so the timing loop only
loads binaries from Triton's cache. Timing is a race (:mod:`tritune.tune.race`) on CUDA events.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tritune.config import Config
from tritune.outcome import Status
from tritune.results import CandidateResult, RunResult, WorkloadResult
from tritune.tune.race import RaceOptions, RaceResult, race, sweep
from tritune.workload import Workload


@dataclass
class TuneOptions:
    """How to tune: compile workers, the race's budgets, whether to verify first, exhaustive or racing."""

    jobs: int | None = None
    compile_timeout: float | None = 60.0
    verify: bool = True
    exhaustive: bool = False
    race: RaceOptions = field(default_factory=RaceOptions)
    graph: bool = False
    ceilings: bool = True


def _opts(cfg: Config) -> dict[str, Any]:
    o: dict[str, Any] = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    if cfg.num_ctas != 1:
        o["num_ctas"] = cfg.num_ctas
    if cfg.maxnreg is not None:
        o["maxnreg"] = cfg.maxnreg
    return o


def load_check(jit: Any, cfg: Config, args: Sequence[Any], kw: Mapping[str, Any], grid: Any) -> str | None:
    """Compile (from Triton's cache after the screen) and load ``cfg``; the reason if the GPU refuses it."""
    from triton.compiler.errors import CompilationError

    try:
        from triton.runtime.errors import OutOfResources
    except ImportError:  # pragma: no cover
        OutOfResources = RuntimeError  # type: ignore[assignment,misc]
    try:
        k = jit.run(*args, grid=grid, warmup=True, **kw, **cfg.kwargs, **_opts(cfg))
        init = getattr(k, "_init_handles", None)
        if callable(init):
            init()
    except OutOfResources as e:
        return f"{jit.__name__} {cfg.id}: the GPU refused to load it: {e}"
    except CompilationError as e:
        return f"{jit.__name__} does not compile with {cfg.id}: {str(e).strip().splitlines()[-1]}"
    return None


def tune_key(
    workload: Workload,
    key: Mapping[str, Any],
    *,
    options: TuneOptions,
    screened: WorkloadResult | None = None,
    store: Any = None,
    progress: Any = None,
    timer: Any = None,
) -> tuple[WorkloadResult, RaceResult | None]:
    """Tune one key on the GPU. ``screened`` carries the screen's verdicts (fits/illegal/...) per candidate."""
    import torch

    from tritune.bench import EventTimer, TimerMeasure
    from tritune.kernel import as_jit
    from tritune.space import check_static
    from tritune.verify.compare import compare, poison

    jit = as_jit(workload.kernel)
    kname = workload.info.name
    torch.manual_seed(0)
    args = workload.make_args(key, "cuda")
    kw = workload.caller_kwargs(key)
    pristine = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    expected = None
    if options.verify and workload.oracle is not None:
        expected = list(workload.oracle([a.clone() if isinstance(a, torch.Tensor) else a for a in pristine]))
    verdict: dict[Config, CandidateResult] = {}
    screen_extra: dict[Config, dict[str, Any]] = {}
    if screened is not None:
        for c in screened.candidates:
            screen_extra[c.config] = {k: v for k, v in c.extra.items() if k in ("shared", "registers", "spilled_bytes")}
            if c.status is not Status.FITS:
                verdict[c.config] = CandidateResult(c.config, c.status, c.reason, dict(screen_extra[c.config]))
    runnable: list[Config] = []
    for cfg in workload.candidates():
        if cfg in verdict:
            continue
        rej = check_static(cfg, workload.info, kw, workload.space)
        if rej is not None:
            verdict[cfg] = CandidateResult(cfg, Status.ILLEGAL, rej.reason)
            continue
        grid = workload.grid_for(cfg, key)
        why = load_check(jit, cfg, args, kw, grid)
        if why is not None:
            verdict[cfg] = CandidateResult(cfg, Status.ILLEGAL, why, screen_extra.get(cfg, {}))
            continue
        if expected is not None:
            for a, p in zip(args, pristine):
                if isinstance(a, torch.Tensor):
                    a.copy_(p)
            for i in workload.outputs:
                poison(args[i])
            try:
                jit[grid](*args, **kw, **cfg.kwargs, **_opts(cfg))
                torch.cuda.synchronize()
            except Exception as e:
                verdict[cfg] = CandidateResult(cfg, Status.LAUNCH_FAILED, f"{kname} {cfg.id}: {type(e).__name__}: {e}")
                continue
            bad = []
            for pos, i in enumerate(workload.outputs):
                cmp = compare(args[i], expected[pos], atol=workload.atol, rtol=workload.rtol, name=f"args[{i}]")
                if not cmp.ok:
                    bad.append(cmp.detail)
            if bad:
                verdict[cfg] = CandidateResult(cfg, Status.INCORRECT, f"{kname} {cfg.id}: " + "; ".join(bad))
                continue
        runnable.append(cfg)
        if progress is not None:
            progress.step(f"{kname} {cfg.id}", "fits")

    def make_fn(cfg: Config) -> Any:
        grid = workload.grid_for(cfg, key)
        opts = {**kw, **cfg.kwargs, **_opts(cfg)}
        launcher = jit[grid]

        def call() -> None:
            launcher(*args, **opts)

        return call

    timer = timer or EventTimer(graph=options.graph)
    timer.warm_device(0.05)
    measure = TimerMeasure(timer, make_fn, rel_tol=options.race.rel_tol, warmup_s=0.002)
    result: RaceResult | None = None
    if runnable:
        if progress is not None:
            progress.stage(f"timing {workload.name} {key}", len(runnable))
        result = (sweep if options.exhaustive else race)(runnable, measure, options.race)
    nbytes, nflops = workload.bytes_for(key), workload.flops_for(key)
    cands: list[CandidateResult] = []
    for cfg in workload.candidates():
        if cfg in verdict:
            v = verdict[cfg]
            cands.append(CandidateResult(cfg, v.status, v.reason, {**v.extra, "measurement": None}))
            continue
        assert result is not None
        o = result.outcome(cfg)
        extra: dict[str, Any] = dict(screen_extra.get(cfg, {}))
        m = o.measurement
        extra["measurement"] = m.to_json() if m is not None else None
        if m is not None and o.status is Status.MEASURED:
            extra["gbps"] = nbytes / (m.median_ms * 1e-3) / 1e9 if nbytes else None
            extra["tflops"] = nflops / (m.median_ms * 1e-3) / 1e12 if nflops else None
        extra.update(eliminated_round=o.eliminated_round, timings=o.timings, full=o.full)
        cands.append(CandidateResult(cfg, o.status, o.reason, extra))
        if progress is not None and m is not None:
            progress.step(f"{kname} {cfg.id}", o.status.value, f"{m.median_ms:.4f} ms")
    wextra: dict[str, Any] = {
        "winner": result.winner.to_json() if result and result.winner else None,
        "ties": [c.to_json() for c in result.ties] if result else [],
        "bytes": nbytes,
        "flops": nflops,
        "race": {k: v for k, v in result.to_json().items() if k != "candidates"} if result else None,
    }
    wr = WorkloadResult(workload.name, dict(key), cands, wextra)
    if store is not None:
        record(store, workload, key, args, wr, result)
    return wr, result


def record(store: Any, workload: Workload, key: Mapping[str, Any], args: Sequence[Any], wr: WorkloadResult,
           result: RaceResult | None) -> None:
    """Write every candidate's outcome and the winner to the store, in one transaction."""
    from tritune.store import CandidateRecord, dtypes_of, make_key

    tkey = make_key(workload.info, dict(key), dtypes=dtypes_of(args))
    recs = []
    for c in wr.candidates:
        m = c.extra.get("measurement")
        measured = c.status is Status.MEASURED and m is not None
        recs.append(CandidateRecord(c.config, c.status, m["median_ms"] if measured and m else None, c.reason,
                                    m if measured else None))
    winner = result.winner if result else None
    store.record(tkey, recs, winner, ties=result.ties if result else ())


def tune(
    workloads: Sequence[Workload],
    *,
    keys: Sequence[Mapping[str, Any]] | None = None,
    options: TuneOptions | None = None,
    store: Any = None,
    progress: Any = None,
) -> RunResult:
    """Tune every key of every workload on this machine's GPU and return the ``tune`` RunResult."""
    from tritune.bench import EventTimer
    from tritune.screen import screen
    from tritune.tune.provenance import measure_ceilings, provenance

    options = options or TuneOptions()
    timer = EventTimer(graph=options.graph)
    entries: list[WorkloadResult] = []
    compile_s = 0.0
    t0 = time.perf_counter()
    for w in workloads:
        wkeys = list(keys) if keys is not None else list(w.keys)
        t1 = time.perf_counter()
        if progress is not None:
            progress.stage(f"compiling {w.name}", len(w.candidates()) * len(wkeys))
        # One screen for all keys: keys that specialize alike share their binaries, compiled once.
        sres = screen(w, "auto", jobs=options.jobs, compile_timeout=options.compile_timeout, keys=wkeys)
        compile_s += time.perf_counter() - t1
        by_key = {repr(sorted(r.key.items())): r for r in sres.workloads}
        for key in wkeys:
            t2 = time.perf_counter()
            wr, _ = tune_key(w, key, options=options, screened=by_key.get(repr(sorted(dict(key).items()))),
                             store=store, progress=progress, timer=timer)
            wr.extra["wall_s"] = round(time.perf_counter() - t2, 3)
            entries.append(wr)
    wall = time.perf_counter() - t0
    extra: dict[str, Any] = {"wall_s": round(wall, 3), "compile_s": round(compile_s, 3)}
    if options.ceilings and any(w.bytes or w.flops for w in workloads):
        extra["ceilings"] = measure_ceilings()
    timing = (
        f"timed on {timer.device_name} with CUDA events, L2 flushed between runs "
        f"({timer.flush_bytes >> 20} MiB), medians with 95% order-statistic intervals; "
        + ("every legal candidate timed to completion" if options.exhaustive else "racing (slow candidates dropped early)")
    )
    prov = provenance(timer=timer.to_json(), race=options.race.to_json(), jobs=options.jobs)
    return RunResult("tune", timing, entries, provenance=prov, extra=extra)


def landscapes(result: RunResult) -> list[Any]:
    """One ``tritune.landscape/1`` per key of a tune result (median times; failures keep their status)."""
    from tritune.landscape import Landscape, LandscapePoint

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
        ls = Landscape(w.name, dev, dict(w.key), pts, dict(result.provenance))
        out.append(ls)
    return out
