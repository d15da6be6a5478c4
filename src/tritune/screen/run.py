"""``screen()``: compile every candidate of a workload for a target GPU, on a machine without one.

For each key, the workload's arguments are made on the CPU and every candidate is specialized the way
the JIT would specialize it on the GPU. Candidates that Triton would file under the same cache hash
(two keys whose arguments specialize alike) are compiled once. Statically illegal candidates are never
compiled; the rest go to :func:`tritune.screen.candidate.screen_spec` on the worker service: one forked
worker (``jobs=1``, or a workload object that no file defines) or a :class:`tritune.screen.pool.CompilePool`
of spawned ones. Either way a compile past the timeout is killed with its ptxas.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tritune.config import Config
from tritune.errors import WorkloadError
from tritune.outcome import Status
from tritune.results import CandidateResult, RunResult, WorkloadResult
from tritune.screen.candidate import FIELDS, quiet_triton, screen_spec
from tritune.screen.pool import CompilePool, Task, pool_result
from tritune.screen.specialize import Specialization, specialize
from tritune.screen.targets import Target, get_target
from tritune.space import check_static
from tritune.workers import Forked, WorkerService
from tritune.workload import Workload, load_workloads

Progress = Callable[[int, int, CandidateResult], None]


def default_jobs() -> int:
    """One worker per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def locate(workload: Workload) -> Path | None:
    """The file a Workload object was defined in (so workers can import it again), or None."""
    for mod in list(sys.modules.values()):
        file = getattr(mod, "__file__", None)
        if not file or not file.endswith(".py"):
            continue
        try:
            found = any(v is workload for v in vars(mod).values())
        except TypeError:  # pragma: no cover - exotic module objects
            continue
        if found:
            return Path(file)
    return None


def screen(
    workload: Workload | str | Path,
    target: str | Target = "sm90",
    *,
    name: str | None = None,
    jobs: int | None = None,
    compile_timeout: float | None = 60.0,
    keys: Sequence[Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
    gate: bool = True,
    configs: Sequence[Config] | None = None,
) -> RunResult:
    """Screen every candidate of ``workload`` (an object, or a file path and optional ``name``) for ``target``.

    ``jobs`` worker processes compile in parallel (default: one per core); ``jobs=1`` compiles in one forked
    worker. ``compile_timeout`` bounds each candidate's compile (None for no bound). ``keys`` replaces
    the workload's own keys. ``configs`` screens only
    those candidates instead of the whole space. ``gate=False`` runs ptxas even for
    configs already known not to launch (same verdicts, more time; their binaries land in the cache). Returns a ``RunResult`` with command ``screen`` whose candidates have the
    status fits, illegal, compile_failed or compile_timeout and the resource fields in ``extra``.
    """
    tgt = get_target(target)
    jobs = default_jobs() if jobs is None else int(jobs)
    if jobs < 1:
        raise WorkloadError(f"jobs must be at least 1, got {jobs}")
    if isinstance(workload, Workload):
        pairs: list[tuple[Workload, Path | None]] = [(workload, locate(workload) if jobs > 1 else None)]
        if jobs > 1 and pairs[0][1] is None:
            raise WorkloadError(
                f"workload {workload.name!r} was not defined in a file, so worker processes cannot rebuild it; "
                "pass its file path, or jobs=1 to compile in one forked worker"
            )
    else:
        path = Path(workload)
        with quiet_triton():
            pairs = [(w, path) for w in load_workloads(path, name)]
    t0 = time.perf_counter()
    results = [
        _screen_workload(w, where, tgt, jobs, compile_timeout, keys, progress, gate, configs) for w, where in pairs
    ]
    wall = time.perf_counter() - t0
    flat = [wr for per in results for wr in per]
    compiled = sum(
        1 for wr in flat for c in wr.candidates if c.extra.get("compile_s") and not c.extra.get("reused")
    )
    compile_sum = sum(float(wr.extra.get("compile_s_total", 0.0)) for wr in flat)
    return RunResult(
        command="screen",
        timing=(
            f"compile time only, no kernel was run: {compiled} compiles for {tgt.sm} took {wall:.1f} s of wall time "
            f"({compile_sum:.1f} s summed over candidates) with {jobs} job(s)"
        ),
        workloads=flat,
        provenance=_provenance(tgt, jobs, compile_timeout),
        extra={"target": tgt.to_json(), "wall_s": round(wall, 3), "jobs": jobs},
    )


def compile_cost(config: Config) -> float:
    """A rough, relative compile-time estimate: code size grows with the tile (the product of the integer
    meta-parameters) and the pipeline depth, and each thread's share grows as the warps shrink."""
    tile = 1.0
    for v in config.kwargs.values():
        if isinstance(v, int) and not isinstance(v, bool) and v > 1:
            tile *= v
    return tile * max(1, config.num_stages) / max(1, config.num_warps)


def _screen_workload(
    w: Workload,
    path: Path | None,
    tgt: Target,
    jobs: int,
    timeout: float | None,
    keys: Sequence[Mapping[str, Any]] | None,
    progress: Progress | None,
    gate: bool = True,
    only: Sequence[Config] | None = None,
) -> list[WorkloadResult]:
    key_list = [dict(k) for k in (keys if keys is not None else w.keys)]
    if not key_list:
        raise WorkloadError(f"workload {w.name!r} has no keys: give it keys=[...] or pass keys to screen")
    configs = list(only) if only is not None else w.candidates()
    # Plan: static verdicts now; one compile per distinct Triton cache hash.
    static: dict[tuple[int, int], CandidateResult] = {}
    slot_hash: dict[tuple[int, int], str] = {}
    unique: dict[str, tuple[int, Config, Specialization]] = {}
    gpu_target = tgt.gpu_target()
    for ki, key in enumerate(key_list):
        args = w.make_args(key, "cpu")
        caller = w.caller_kwargs(key)
        for ci, config in enumerate(configs):
            rej = check_static(config, w.info, caller, w.space)
            if rej is not None:
                static[ki, ci] = _static_result(config, rej.rule, rej.reason, tgt)
                continue
            h_args, h_kw = w.hooked(config, args, caller)
            with quiet_triton():
                spec = specialize(w.kernel, h_args, config, gpu_target, h_kw)
                h = spec.cache_hash()
            slot_hash[ki, ci] = h
            unique.setdefault(h, (ki, config, spec))
        del args
    total = len(static) + len(unique)
    done = 0
    by_hash: dict[str, CandidateResult] = {}

    def note(result: CandidateResult) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, result)

    for r in static.values():
        note(r)
    t0 = time.perf_counter()
    hashes = list(unique)
    if jobs == 1 or path is None:
        # One forked worker: it inherits the workload object (no file needed) and, like the pool's workers,
        # is killed with its ptxas when a compile runs past the timeout.
        by_hash = _screen_forked(unique, tgt, timeout, gate, note)
    else:
        # Longest first: the pool's wall time is bounded by its slowest compiles (ptxas on big tiles with
        # few warps), so start those first instead of finding them last with the other workers idle.
        hashes.sort(key=lambda h: -compile_cost(unique[h][1]))
        tasks = [Task(i, key_list[unique[h][0]], unique[h][1]) for i, h in enumerate(hashes)]
        pool = CompilePool(str(path), w.name, tgt, min(jobs, max(1, len(tasks))), gate)
        got = pool.run(tasks, timeout, lambda task, result: note(result))
        by_hash = {hashes[t.id]: got[t.id] for t in tasks}
    wall = time.perf_counter() - t0
    out: list[WorkloadResult] = []
    for ki, key in enumerate(key_list):
        cands: list[CandidateResult] = []
        for ci, config in enumerate(configs):
            if (ki, ci) in static:
                cands.append(static[ki, ci])
                continue
            h = slot_hash[ki, ci]
            r = by_hash[h]
            if unique[h][0] != ki or unique[h][1] != config:  # same binary as a candidate compiled earlier
                r = CandidateResult(config, r.status, r.reason, {**r.extra, "reused": True})
            cands.append(r)
        compile_total = sum(
            float(c.extra.get("compile_s") or 0.0) for c in cands if not c.extra.get("reused")
        )
        wr = WorkloadResult(w.name, key, cands, {"target": tgt.name, "kernel": w.info.name})
        wr.extra["counts"] = wr.counts()
        wr.extra["compile_s_total"] = round(compile_total, 3)
        wr.extra["wall_s"] = round(wall, 3)
        out.append(wr)
    return out


def _screen_forked(unique: Mapping[str, tuple[int, Config, Specialization]], tgt: Target, timeout: float | None,
                   gate: bool, note: Callable[[CandidateResult], None]) -> dict[str, CandidateResult]:  # fmt: skip
    def screen_one(h: object) -> object:
        _, config, spec = unique[str(h)]
        return screen_spec(spec, config, tgt, gate).to_json()

    out: dict[str, CandidateResult] = {}
    with WorkerService(Forked(screen_one), 1, timeout=timeout, name="compile worker") as svc:
        for end in svc.run((h, h) for h in unique):
            h = str(end.id)
            out[h] = pool_result(Task(0, {}, unique[h][1]), end, timeout)
            note(out[h])
    return out


def _static_result(config: Config, rule: str, reason: str, tgt: Target) -> CandidateResult:
    extra: dict[str, Any] = dict.fromkeys(FIELDS)
    extra.update(warnings=[], threads=config.num_warps * tgt.warp_size, rule=f"static:{rule}", stage="static")
    return CandidateResult(config, Status.ILLEGAL, reason, extra)


def _provenance(tgt: Target, jobs: int, timeout: float | None) -> dict[str, Any]:
    import triton

    from tritune._version import __version__

    return {
        "tritune": __version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "target": tgt.name,
        "target_source": tgt.source,
        "jobs": jobs,
        "compile_timeout_s": timeout,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def summary_counts(result: RunResult) -> dict[str, Any]:
    """Counts over every workload and key: per status, and illegal ones per broken rule."""
    status: dict[str, int] = {}
    rules: dict[str, int] = {}
    for wr in result.workloads:
        for c in wr.candidates:
            status[c.status.value] = status.get(c.status.value, 0) + 1
            if c.status is Status.ILLEGAL:
                rule = str(c.extra.get("rule") or "other")
                rules[rule] = rules.get(rule, 0) + 1
    return {"status": status, "illegal_by_rule": rules}
