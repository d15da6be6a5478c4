"""Tune one key: the one place where a key goes from its legal candidates to a recorded winner.

The decorator's miss, ``tritune tune`` and every rank of a group call :func:`tune_key`; each describes the key as a
:class:`KeyJob` (its candidates, and how to load, check and time one config) and passes :class:`TuneOptions` and,
over ranks, a :class:`~tritune.engine.loop.Place` (``tritune.ranks.Farm``). The steps:

1. **plan**: race every legal config, search a large space, or search a widened list outward from its written
   configs (:mod:`tritune.engine.plan`, :mod:`tritune.search.rings`);
2. **start**: a search resumes from the store's records of the key and, with the kernel's other tuned keys, starts
   from their winners (a transfer); its stored winner and ties race again with the first batch;
3. **batches**: compile, load, check and race (:func:`~tritune.engine.loop.run_batches`), in this process or over
   the ranks;
4. **pick**: the tie rule's pick among the configs within the race's resolution (:mod:`tritune.bench.ties`); a
   pick nobody wrote (a widened or derived space's) is timed again with the L2 warm against the fastest written
   config, and serves only if no slower there (:mod:`tritune.engine.warm`, with ``KeyJob.measure_warm``);
5. **record**: every outcome, the winner and its ties in the store, once (rank 0), in one transaction.

A key raced whole records the statically rejected configs too (a later process serves the winner when every
candidate has a record); a searched key leaves them out (its search provenance tells a later lookup what was
searched). With ``reuse=True`` (the decorator) a key raced whole races only the configs the store has no record of
and keeps the stored winner when it is as fast (with no stored winner to keep, every legal config races), and a
searched key whose budget earlier runs already spent serves its stored winner without timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tritune.bench.ties import TieReport, race_tie_report
from tritune.bench.timer import ConfigMeasure
from tritune.config import Config
from tritune.engine import plan as searching
from tritune.engine.finals import FINAL_LIMIT
from tritune.engine.loop import Compiler, EveryConfig, Field, LocalField, Parts, Place, run_batches
from tritune.engine.options import TuneOptions
from tritune.engine.pipeline import Prepared
from tritune.engine.precompile import default_jobs
from tritune.engine.race import RaceResult
from tritune.engine.warm import warm_check
from tritune.outcome import Status
from tritune.store import CandidateRecord
from tritune.store.keys import TuningKey


@dataclass(frozen=True)
class KeyJob:
    """One key as a front-end hands it to the engine.

    ``legal``: the candidates that passed the static checks, in order; ``rejected``: the others, with their reasons
    (recorded for a key raced whole). ``prepare(config)`` loads one compiled config and checks it (a Failure, or
    the binary's facts); ``measure`` times it; ``compiler`` starts a list's compiles in the engine's workers (None:
    the JIT compiles each at its load). ``recover`` gives a measure in a fresh process after a sticky CUDA error;
    ``probe`` says whether this process's CUDA context is lost.
    """

    label: str
    key: TuningKey
    legal: tuple[Config, ...]
    prepare: Callable[[Config], Prepared]
    measure: ConfigMeasure
    compiler: Compiler | None = None
    rejected: Mapping[Config, str] = field(default_factory=dict)
    recover: Callable[[], ConfigMeasure] | None = None
    probe: Callable[[], str | None] | None = None
    #: Configs that race in a searched key's first batch whatever the strategy proposes (the list someone wrote,
    #: when the space was widened: the winner is then compared with them in the same race).
    include: tuple[Config, ...] = ()
    #: Times a config with the L2 warm: given with ``include``, a winner outside ``include`` serves only if it is
    #: also no slower than the fastest of them that way (:mod:`tritune.engine.warm`).
    measure_warm: ConfigMeasure | None = None
    #: A widened list's generated configs, each with the configs one step nearer the list: the key is then searched
    #: outward from ``include`` (:mod:`tritune.search.rings`) unless a search or a budget is named.
    origins: Mapping[Config, tuple[Config, ...]] = field(default_factory=dict)


@dataclass
class KeyResult:
    """What tuning one key gave.

    ``race``: the race over every config tried (None when nothing was); ``winner``: the tie rule's pick (or the
    stored winner, ``source="store"``), None when nothing could be timed; ``best_ms`` its median; ``ties`` the other
    configs within the race's resolution; ``failures``: every config that failed, statically or in the pipeline,
    with its reason; ``timings``: each measured config's ``[median, q1, q3]`` ms; ``search``: what a searched key
    searched (None when raced whole); ``stats``: the phases.
    """

    race: RaceResult | None
    winner: Config | None
    best_ms: float | None
    ties: tuple[Config, ...]
    tie: TieReport | None
    source: str
    failures: dict[Config, str]
    timings: dict[Config, list[float]]
    search: dict[str, Any] | None
    stats: dict[str, Any]
    plan: searching.SearchPlan | None = None


def tune_key(job: KeyJob, options: TuneOptions, *, store: Any = None, farm: Place | None = None,
             reuse: bool = False, stats: dict[str, Any] | None = None) -> KeyResult:  # fmt: skip
    """Tune ``job``'s key (module docstring) and record it in ``store`` (rank 0's, over ranks); collective when
    ``farm`` spreads it over ranks (every rank calls this with the same job). ``stats`` receives the phases."""
    stats = {} if stats is None else stats
    clock = time.perf_counter()
    legal = list(job.legal)
    p = options.plan(len(legal), where=job.label, widened=bool(job.origins))
    label = job.label if p is None else f"{job.label} (search: {p.strategy}, budget {p.budget or 'default'})"
    width = options.jobs or default_jobs()
    place: Field = LocalField(width=width) if farm is None else farm.field(label, legal, width, retime_finalists=options.retime_finalists)
    if place.rank != 0:
        store = None  # rank 0's store decides and records
    parts = Parts(job.prepare, job.measure, options.race, job.compiler, "sweep" if options.sweep else "race")
    old = store.lookup_winner(job.key) if store is not None else None
    summary: dict[str, Any] | None = None
    partial = False
    if p is None:
        todo = legal
        if reuse and store is not None and farm is None and old is not None:
            todo = store.missing(job.key, legal)  # adding a config to the list measures only it
            partial = len(todo) < len(legal)
        stats["setup_s"] = round(time.perf_counter() - clock, 3)
        result = run_batches(EveryConfig(todo), parts, field=place, final=0, stats=stats, recover=job.recover,
                             probe=job.probe)  # fmt: skip
    else:
        t = time.perf_counter()
        key_values = dict(job.key.key)

        def make(w: int) -> tuple[Any, dict[str, Any]]:
            return searching.start_driver(p, legal, store=store, tkey=job.key, key_values=key_values,
                                          where=job.label, width=w, origins=job.origins)  # fmt: skip

        driver, info = place.start_driver(make)
        old = place.stored_winner(old, job.key)
        stats["search_start_s"] = round(time.perf_counter() - t, 4)
        stats["setup_s"] = round(time.perf_counter() - clock, 3)
        if reuse and info.get("nothing_left") and old is not None and old.config in set(legal):
            summary = searching.summary(driver, info, old.config)
            stats["search"] = summary
            return KeyResult(None, old.config, old.time_ms, tuple(old.ties), None, "store", dict(job.rejected), {},
                             summary, stats, p)  # fmt: skip
        # (a widened list's search asks the written configs itself, first, and learns their times)
        include = () if p.strategy == searching.RINGS else job.include
        first = [*include, *searching.stored_finalists(store, job.key, legal)]
        result = run_batches(driver, parts, field=place, finalists=first,
                             final=FINAL_LIMIT, stats=stats, recover=job.recover, probe=job.probe)  # fmt: skip
        place.share_summary(driver)
    stats["total_s"] = round(time.perf_counter() - clock, 3)  # to the end of the races

    failures = dict(job.rejected)
    timings: dict[Config, list[float]] = {}
    records = [] if p is not None else [CandidateRecord(c, Status.ILLEGAL, None, r) for c, r in job.rejected.items()]
    if result is not None:
        stats["race"] = {"stop": result.stop, "rounds": result.rounds, "measurements": result.measurements,
                         "device_s": round(result.device_s, 3), "ties": [c.id for c in result.ties]}  # fmt: skip
        for o in result.outcomes:
            m = o.measurement if o.status is Status.MEASURED else None
            if m is None:
                failures[o.config] = o.reason or o.status.value
            else:
                timings[o.config] = [m.median_ms, m.q1_ms, m.q3_ms]
            records.append(CandidateRecord(o.config, o.status, None if m is None else m.median_ms, o.reason,
                                           None if m is None else m.to_json()))  # fmt: skip
    # a widened list: a config nobody wrote wins a tie with none of the written ones (the tie rule's first step)
    tie = race_tie_report(result, job.key.measure, written=set(job.include) if job.include else None)
    winner: Config | None = None
    best_ms: float | None = None
    ties: tuple[Config, ...] = ()
    if tie is not None:
        stats["tie"] = tie.to_json()
        winner = tie.picked
        picked = result.outcome(winner).measurement if result is not None else None
        best_ms = picked.median_ms if picked is not None else None
        ties = tuple(c for c in tie.tied if c != winner)
    # (over ranks the race's pick stands: each rank's own warm looks could decide differently)
    if winner is not None and job.measure_warm is not None and farm is None and winner not in job.include:
        written = [c for c in job.include if c in timings]
        if written:
            best = min(written, key=lambda c: timings[c][0])
            check = warm_check(job.measure_warm, winner, best)
            stats["warm_check"] = check
            if not check["kept"]:  # faster only with the L2 flushed: the written config serves
                winner, best_ms, ties = best, timings[best][0], ()
    source = "timed"
    stored_ok = old is not None and old.time_ms is not None and old.config in set(legal)
    if reuse and stored_ok and (winner is None or (partial and old.time_ms <= best_ms)):  # type: ignore[union-attr,operator]
        winner, best_ms, source = old.config, old.time_ms, "store"  # type: ignore[union-attr]
    if p is not None:
        summary = searching.summary(driver, info, winner)
        stats["search"] = summary
    if store is not None:
        t = time.perf_counter()
        store.record(job.key, records, winner, ties=[c for c in ties if c != winner],
                     provenance={"search": summary} if summary is not None else None)  # fmt: skip
        stats["record_s"] = round(time.perf_counter() - t, 4)
    return KeyResult(result, winner, best_ms, ties, tie, source, failures, timings, summary, stats, p)
