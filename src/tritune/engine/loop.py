"""The batch loop under every tuning: propose a batch, compile it, load and check it, race it with the survivors
of the earlier batches, tell the outcomes back. One race decides across batches.

A key raced whole is one batch (:class:`EveryConfig`); a searched key's batches come from a
:class:`~tritune.search.SearchDriver`. Where the batches run is a :class:`Field`: this process
(:class:`LocalField`) or the ranks of a group (:class:`tritune.ranks.field.RanksField`, which splits each batch
over the ranks' compile pools and tells rank 0's strategy every rank's outcomes). Each round:

1. the field proposes a batch (a searched key: as wide as the compile pools, never a config proposed before, never
   one the static checks rejected; the stored finalists of an earlier, smaller search join the first batch so they
   race again against the new configs, untold to the strategy, which knows them);
2. the batch compiles in the engine's workers and its binaries are loaded and checked (``illegal`` for shared memory
   or registers the GPU refuses, ``compile_failed``, ``incorrect``) as they finish
   (:func:`~tritune.engine.pipeline.compile_and_race`);
3. it races **with the survivors of every earlier batch** (``race(..., prior=)``): they keep their samples,
   eliminated configs keep their outcome, and the winner comes from the race's statistics over the finalists of
   all batches, never from one noisy sample;
4. every outcome (a Measurement with its interval, or a failure) goes back to the strategy.

In one process, once half the workers are idle on a batch's last compiles, the next batch is proposed and starts
compiling while this one races (``LocalField(overlap=True)``). A strategy that wants finals (``surrogate:probe=1``)
gets a reserve of the budget held back by the driver, spent on its probes like any batch. After the batches, the
field finishes: in one process the check race after an unconfirmed opening and the final race
(:mod:`tritune.engine.finals`); over ranks, rank 0 re-times the ranks' finalists.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tritune.bench.timer import ConfigMeasure
from tritune.config import Config
from tritune.engine.finals import (
    CHECK_WINNERS_WITHIN,
    FINAL_LIMIT,
    FINAL_WITHIN,
    final_race,
    opening_options,
    rerace,
)
from tritune.engine.pipeline import Compiles, Prepared, compile_and_race
from tritune.engine.race import RaceOptions, RaceResult
from tritune.engine.sticky import StickyGuard
from tritune.outcome import Status

#: Starts compiling a list of configs (:class:`tritune.engine.precompile.Precompiler`).
Compiler = Callable[[Sequence[Config]], Compiles]


class Batches(Protocol):
    """What proposes the batches and hears their outcomes: a :class:`~tritune.search.SearchDriver`, or
    :class:`EveryConfig` for a key raced whole."""

    @property
    def confirm(self) -> bool: ...
    @property
    def done(self) -> bool: ...
    def next_batch(self) -> list[Config]: ...
    def record(self, config: Config, outcome: Any) -> Any: ...
    def check_field(self, limit: int, within: float, confirming_within: float | None = None) -> list[Config]: ...
    def recheck(self, outcomes: Mapping[Config, Any]) -> bool: ...


class EveryConfig:
    """Every candidate in one batch: a key raced whole, not searched."""

    confirm = False

    def __init__(self, configs: Sequence[Config]) -> None:
        self._configs = list(configs)
        self._asked = False

    @property
    def done(self) -> bool:
        return self._asked

    def next_batch(self) -> list[Config]:
        if self._asked:
            return []
        self._asked = True
        return list(self._configs)

    def record(self, config: Config, outcome: Any) -> None:
        return None

    def check_field(self, limit: int, within: float, confirming_within: float | None = None) -> list[Config]:
        return []

    def recheck(self, outcomes: Mapping[Config, Any]) -> bool:
        return False


@dataclass(frozen=True)
class Batch:
    """One proposed batch: ``configs`` compile and race; the first ``proposed`` of them are told back to the
    strategy (the rest are stored finalists racing again). ``opening``: a transfer's first batch, raced on a
    share of the budget (:func:`~tritune.engine.finals.opening_options`)."""

    configs: list[Config]
    proposed: int
    opening: bool = False


@dataclass(frozen=True)
class Parts:
    """The parts of a key's tuning that a field runs: load-and-check, time, compile (None: the JIT compiles at
    the first load), and how candidates are raced (``"race"``, or ``"sweep"``: every one timed to completion)."""

    prepare: Callable[[Config], Prepared]
    measure: ConfigMeasure
    options: RaceOptions
    compiler: Compiler | None = None
    method: str = "race"


class Field(Protocol):
    """Where a key's batches run (module docstring). ``overlap``: the next batch may be proposed while this one's
    last compiles finish; ``rechecks``: every config is timed on this process's GPU, so a check race may run.
    ``rank``: 0 in one process; over ranks, only rank 0 reads and writes the store. A searched key's driver is
    built by :meth:`start_driver` (``make(width)``: the width of every compile pool of the field together)."""

    overlap: bool
    rechecks: bool

    @property
    def rank(self) -> int: ...
    def start_driver(self, make: Callable[[int], tuple[Any, dict[str, Any]]]) -> tuple[Any, dict[str, Any]]: ...
    def stored_winner(self, winner: Any, key: Any) -> Any: ...
    def share_summary(self, driver: Any) -> dict[str, Any]: ...

    def propose(self, batches: Batches, extra: list[Config], first: bool, final: int) -> Batch: ...
    def race(self, batch: Batch, prior: RaceResult | None, parts: Parts, stats: dict[str, Any],
             on_tail: Callable[[], Any] | None, compiling: Compiles | None = None,
             ) -> tuple[RaceResult | None, list[tuple[Config, Any]]]: ...  # fmt: skip
    def tell(self, batches: Batches, told: Sequence[tuple[Config, Any]]) -> None: ...
    def finish(self, result: RaceResult | None, tried: Sequence[Config], parts: Parts, *, final: int,
               decided: bool, stats: dict[str, Any]) -> RaceResult | None: ...  # fmt: skip


def told_outcome(result: RaceResult, config: Config) -> Any:
    """What the strategy hears of ``config`` after a race: its Measurement, or its failure status."""
    o = result.outcome(config)
    if o.status is Status.MEASURED and o.measurement is not None:
        return o.measurement
    return Status.LAUNCH_FAILED if o.status is Status.MEASURED else o.status


class Place(Protocol):
    """Where keys are tuned when not in this process alone: the ranks of a group (``tritune.ranks.Farm``).
    :meth:`field` is collective: every rank calls it with the same label and candidates."""

    def field(self, label: str, candidates: Sequence[Config], width: int, *, retime_finalists: bool = True,
              ) -> Field: ...  # fmt: skip


class LocalField:
    """Every batch compiles, loads and races in this process, on compile pools ``width`` wide in all."""

    rechecks = True
    rank = 0

    def __init__(self, overlap: bool = True, width: int = 1) -> None:
        self.overlap = overlap
        self.width = width

    def start_driver(self, make: Callable[[int], tuple[Any, dict[str, Any]]]) -> tuple[Any, dict[str, Any]]:
        return make(self.width)

    def stored_winner(self, winner: Any, key: Any) -> Any:
        return winner

    def share_summary(self, driver: Any) -> dict[str, Any]:
        return dict(driver.summary())

    def propose(self, batches: Batches, extra: list[Config], first: bool, final: int) -> Batch:
        batch = batches.next_batch()
        return Batch(batch + [c for c in extra if c not in batch], len(batch), first and batches.confirm and final > 1)

    def race(self, batch: Batch, prior: RaceResult | None, parts: Parts, stats: dict[str, Any],
             on_tail: Callable[[], Any] | None, compiling: Compiles | None = None,
             ) -> tuple[RaceResult | None, list[tuple[Config, Any]]]:  # fmt: skip
        if compiling is None and parts.compiler is not None:
            compiling = parts.compiler(batch.configs)
        opts = opening_options(parts.options) if batch.opening else parts.options
        result = compile_and_race(batch.configs, prepare=parts.prepare, measure=parts.measure, options=opts,
                                  compiling=compiling, method=parts.method, stats=stats, prior=prior,
                                  on_tail=on_tail)  # fmt: skip
        return result, [(c, told_outcome(result, c)) for c in batch.configs[: batch.proposed]]

    def tell(self, batches: Batches, told: Sequence[tuple[Config, Any]]) -> None:
        for c, outcome in told:
            batches.record(c, outcome)

    def finish(self, result: RaceResult | None, tried: Sequence[Config], parts: Parts, *, final: int,
               decided: bool, stats: dict[str, Any]) -> RaceResult | None:  # fmt: skip
        if result is None or final <= 1 or decided:
            return result
        t0 = time.perf_counter()
        result, picked = final_race(result, parts.measure, parts.options, limit=final)
        if picked:
            stats["final_race"] = {"configs": [c.id for c in picked], "winner": None if result.winner is None
                                   else result.winner.id, "s": round(time.perf_counter() - t0, 3)}  # fmt: skip
        return result


def run_batches(
    batches: Batches,
    parts: Parts,
    *,
    field: Field | None = None,
    finalists: Sequence[Config] = (),
    final: int = FINAL_LIMIT,
    stats: dict[str, Any] | None = None,
    recover: Callable[[], ConfigMeasure] | None = None,
    probe: Callable[[], str | None] | None = None,
    on_batch: Callable[[list[Config], RaceResult], Any] | None = None,
) -> RaceResult | None:
    """Run ``batches`` on ``field`` (default: this process) until they stop; the race over every config tried
    (None if none was).

    ``finalists`` (a stored winner and ties) join the first batch. ``final``: how many configs the final race takes
    (0 or 1: none). ``recover`` and ``probe``: a sticky CUDA error costs its config only
    (:class:`~tritune.engine.sticky.StickyGuard`). ``on_batch(configs, race_so_far)`` hears each finished batch.
    ``stats`` receives ``batches`` (each batch's size and phases), ``compiled_s`` (the batches' compile phases
    summed), ``ask_s`` (the proposals' time), ``check_race`` and ``final_race``; a key raced whole
    (:class:`EveryConfig`) reports its one batch's phases at the top level instead (``first_race``,
    ``compiled_s``, ``loaded_s``, ``prepare_s``, ``raced_s``).
    """
    field = field if field is not None else LocalField()
    stats = stats if stats is not None else {}
    guard = StickyGuard(parts.prepare, parts.measure, recover, probe)
    parts = Parts(guard.prepare, guard.measure, parts.options, parts.compiler, parts.method)
    result: RaceResult | None = None
    extra = list(dict.fromkeys(finalists))
    phases: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    tried: list[Config] = []
    asked = 0.0
    decided = False  # whether the last race was of the final field (a check race that confirmed)
    ahead: tuple[Batch, Compiles | None] | None = None  # the next batch, its compiles already started

    def propose(first: bool) -> Batch:
        nonlocal asked
        t = time.perf_counter()
        try:
            return field.propose(batches, extra, first, final)
        finally:
            asked += time.perf_counter() - t

    def start_next() -> None:
        nonlocal ahead
        if field.overlap and ahead is None and not batches.done:
            nxt = propose(False)
            if nxt.configs:
                ahead = (nxt, parts.compiler(nxt.configs) if parts.compiler is not None else None)

    try:
        while True:
            first = result is None and not tried
            if ahead is not None:
                (batch, compiling), ahead = ahead, None
            else:
                batch, compiling = propose(first), None
            extra = []
            if not batch.configs:
                break
            t0 = time.perf_counter()  # starting the compiles (specializing, the cache check) is the batch's too
            phase: dict[str, Any] = {}
            result, told = field.race(batch, result, parts, phase, start_next, compiling)
            field.tell(batches, told)
            tried.extend(batch.configs)
            phases.append(phase)
            rows.append({"configs": len(batch.configs), "s": round(time.perf_counter() - t0, 3),
                         "compiled_s": phase.get("compiled_s"), "prepare_s": phase.get("prepare_s"),
                         "raced_s": phase.get("raced_s"),
                         "leader": None if result is None or result.winner is None else result.winner.id,
                         **({"budget_per_candidate_s": opening_options(parts.options).budget_per_candidate_s}
                            if batch.opening else {}),
                         **({"here": phase["here"]} if "here" in phase else {})})  # fmt: skip
            if on_batch is not None and result is not None:
                on_batch(batch.configs, result)
            decided = False
            if field.rechecks and final > 1 and result is not None and (
                    check := batches.check_field(final, FINAL_WITHIN, CHECK_WINNERS_WITHIN)):
                t0 = time.perf_counter()
                first_look, result = result, rerace(result, parts.measure, parts.options, check)
                if result is not first_look:  # else every config of the field failed this time: the first look stands
                    decided = batches.recheck({c: o.measurement for c in check if (o := result.outcome(c)).status
                                               is Status.MEASURED and o.measurement is not None})  # fmt: skip
                stats["check_race"] = {"configs": [c.id for c in check], "winner": None if result.winner is None
                                       else result.winner.id, "confirmed": decided,
                                       "s": round(time.perf_counter() - t0, 3)}  # fmt: skip
    finally:
        if ahead is not None and ahead[1] is not None:
            ahead[1].close()
    result = field.finish(result, tried, parts, final=final, decided=decided, stats=stats)
    if isinstance(batches, EveryConfig) and len(phases) == 1:
        stats.update(phases[0])
    else:
        stats["batches"] = rows
        stats["compiled_s"] = round(sum(float(p.get("compiled_s") or 0.0) for p in phases), 3)
        stats["ask_s"] = round(asked, 3)
    return result
