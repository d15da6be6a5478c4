"""Search in the loop: a strategy picks batches, each is compiled and raced, and one race decides them all.

The decorator and ``tritune tune`` run :func:`search_and_race` instead of racing every legal config when
a space is searched (:mod:`tritune.tune.searching` decides when). Each round:

1. the :class:`~tritune.search.SearchDriver` proposes a batch as wide as the compile pool (never a config
   proposed before, never one the static checks rejected: those were left out of the strategy's space);
2. the batch compiles in the engine's workers and its binaries are loaded and checked (the binary screen:
   ``illegal`` for shared memory or registers the GPU refuses, ``compile_failed``, ``incorrect``), exactly
   as in :func:`~tritune.engine.pipeline.compile_and_race`;
3. it races **with the survivors of every earlier batch** (``race(..., prior=)``): they keep their samples,
   eliminated configs keep their outcome, and the winner comes from the race's statistics over the
   finalists of all batches, never from one noisy sample;
4. every outcome (a Measurement with its interval, or a failure) goes back to the strategy.

**The strategy's finals.** A strategy that wants them (``surrogate:probe=1``: untried neighbours of the configs
tied with the best) gets a reserve of the budget held back by the driver (15%, as ``tritune simulate``'s
finalists' race): once the rest is spent and every batch is back, the driver calls ``Strategy.finals``
and the next batches are its probes, proposed, compiled, screened, checked, raced and told like any
batch and counted in the search's ``evaluated`` (``SearchDriver``'s docstring). The final race below
then takes the best configs, probes included.

``finalists`` (the stored winner and ties of an earlier, smaller search of this key) join the first batch
so they race again against the new configs; they are not told to the strategy, which already knows them.

**The final race.** When the driver stops, the configs whose medians are within :data:`FINAL_WITHIN` (3%)
of the smallest median of the search, eliminated or not, at most :data:`FINAL_LIMIT`, with the race's
winner always among them, race once more from fresh samples, round-robin, and that race names the winner.
The race of the batches compares samples taken seconds apart: a config eliminated in its batch's first
rounds keeps the samples of a cool GPU while the survivors go on heating it (on the H200 at 6144^3 the
race's pick of a transfer was 5% slower, re-measured interleaved, than a config it had dropped with a
smaller median). The cost is a race of a few configs, about 0.1 s of device time.

**The opening's budget.** A transfer's opening (a ``confirm`` driver's first batch, when the search has nothing
to carry and a final race follows) races on :data:`OPENING_BUDGET` (60%) of the race's budget per candidate: its
configs are the tuned keys' winners and the configs they measured fastest, near-ties that a race of a heavy kernel
times to the end of its budget, and its answer is only whether a winner ties with the best and which configs lie
within 3%: the final race (or the check race) times those again from fresh samples and picks. On the H100 at 6144^3
(session 25) that race was 0.20-0.38 s of a confirmed transfer's 0.5-0.7 s; on 60% (session 26, 16 transfers against
16 in the same calls) the opening's batch took 0.20-0.27 s instead of 0.22-0.40 s and the transfer's median wall
0.52-0.58 s instead of 0.61-0.65 s, qualities 1.000-1.017 against 1.000-1.015. Replayed (``benchmarks/opening_budget.py``, SYNTHETIC: 7
recorded landscapes scaled to a 0.6 ms best, 200 seeds, the drift of ``race_drift.py``), the opening's 8 configs
on 0.015 s each instead of 0.025 s took 0.117 s of device time instead of 0.164 s, and the final race's pick was
as good (true time over the field's best: mean 1.0018 against 1.0016, share over 1.02 0.9% against 0.6%; at
0.012 s 0.6%). A search that goes on races its next batches on the whole field's budget, less what the opening
spent, as before. Over ranks (:mod:`tritune.dist.search`) every rank races its share of the opening so, when rank 0
re-times the finalists (``retime_finalists``, the default).

**The check race.** A transfer's opening (a ``confirm`` driver's first batch) that puts a neighbour's winner
more than 1% behind its best does not confirm it, and the search would go on with a batch of compiles. On the
H100s of session 24 that happened to 8 of 24 transfers at 6144^3, where ~10 configs lie within 2% and one look of
a 0.2 s race moves them by about that much (the GPU's clocks settle under load: :data:`CHECK_WINNERS_WITHIN`). So
the best, the winners within 15% of it and the other configs within 3% (at most :data:`FINAL_LIMIT`, the winners
first: :meth:`~tritune.search.SearchDriver.check_field`) race once more from fresh samples right then, and the
strategy decides again on that race alone (:meth:`~tritune.search.SearchDriver.recheck`: the first race's times,
taken as the GPU's clocks settled, are not pooled in). When that confirms,
the check race was the search's final race and the search stops; otherwise it goes on as before and the final
race runs at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tritune.bench.replay import ReplayTimer
from tritune.bench.timer import ConfigMeasure
from tritune.config import Config
from tritune.engine.job import Compiler
from tritune.engine.pipeline import Prepared, compile_and_race
from tritune.engine.race import RaceOptions, RaceResult, race
from tritune.engine.sticky import StickyGuard
from tritune.landscape import Landscape
from tritune.outcome import Status
from tritune.search import SearchDriver

#: The final race takes the configs within this share of the search's smallest median ...
FINAL_WITHIN = 0.03
#: ... at most this many (the race's winner always among them).
FINAL_LIMIT = 4
#: The check race (module docstring) takes a transfer's tuned winners read up to this much (15%) behind the opening's
#: best. On an H100 at 6144^3 (``benchmarks/first_looks.py``, session 25) every config's looks read up to 13% faster
#: in the first ~250 ms of load after the GPU idled than later (its clocks settle under the power limit), and by
#: 3-8% more or less from one round of looks to the next, all configs together: a config the race drops in its
#: first rounds keeps one moment's reading. Three openings of session 24-25 read both or all three tuned winners
#: 6-16% behind while the other openings of the same tuned keys confirmed them within 1%.
CHECK_WINNERS_WITHIN = 0.15
#: A transfer's opening race spends this share of the race's budget per candidate (module docstring).
OPENING_BUDGET = 0.6


def opening_options(options: RaceOptions) -> RaceOptions:
    """The race options of a transfer's opening (module docstring, "The opening's budget"): ``options`` with
    :data:`OPENING_BUDGET` of its budget per candidate; ``options`` itself when it has a total budget or none."""
    per = options.budget_per_candidate_s
    if per is None or options.total_budget_s is not None:
        return options
    return replace(options, budget_per_candidate_s=per * OPENING_BUDGET)


def search_and_race(
    driver: SearchDriver,
    *,
    prepare: Callable[[Config], Prepared],
    measure: ConfigMeasure,
    options: RaceOptions,
    compiler: Compiler | None = None,
    finalists: Sequence[Config] = (),
    stats: dict[str, Any] | None = None,
    on_batch: Callable[[list[Config], RaceResult], Any] | None = None,
    recover: Callable[[], ConfigMeasure] | None = None,
    probe: Callable[[], str | None] | None = None,
    overlap: bool = True,
    final: int = FINAL_LIMIT,
) -> RaceResult | None:
    """Drive ``driver`` until it stops; returns the race over every config tried (None if none was).

    ``compiler(configs)`` starts a batch's compiles (None: the JIT compiles each at its load). ``stats``
    receives ``batches`` (size and seconds of each) and ``compiled_s`` (the sum of the batches' compile
    phases). ``on_batch(batch, race_so_far)`` hears each finished batch (progress, tests). ``recover`` and
    ``probe``: as :class:`~tritune.engine.job.TuningJob`'s, a sticky CUDA error costs its config only.
    ``overlap``: once half the workers are idle on a batch's last compiles, the next batch is proposed (the
    strategy knows this one's configs as pending) and starts compiling while this one races; otherwise each
    batch waits for its slowest compile with half the pool idle. ``final``: how many configs the final race
    takes (module docstring; 0 or 1 turns it off). ``stats`` also receives ``ask_s`` (the time spent in
    the driver's proposals) and ``final_race`` (its configs, winner and seconds).
    """
    guard = StickyGuard(prepare, measure, recover, probe)
    prepare, measure = guard.prepare, guard.measure
    result: RaceResult | None = None
    extra = list(dict.fromkeys(finalists))
    batches: list[dict[str, Any]] = []
    compiled = 0.0
    ahead: tuple[list[Config], Any] | None = None  # the next batch, its compiles already started
    decided = False

    asked = 0.0

    def propose() -> list[Config]:
        nonlocal asked
        t = time.perf_counter()
        try:
            return driver.next_batch()
        finally:
            asked += time.perf_counter() - t

    def start_next() -> None:
        nonlocal ahead
        if overlap and ahead is None and not driver.done:
            nxt = propose()
            if nxt:
                ahead = (nxt, compiler(nxt) if compiler is not None else None)

    try:
        while True:
            if ahead is not None:
                (batch, compiling), ahead = ahead, None
            else:
                batch, compiling = propose(), None
            todo = batch + [c for c in extra if c not in batch]
            if not todo:
                break
            t0 = time.perf_counter()  # starting the compiles (specializing, the cache check) is the batch's too
            if compiling is None and compiler is not None:
                compiling = compiler(todo)
            extra = []
            phase: dict[str, Any] = {}
            # a transfer's first batch, with a final race to re-time its leaders (module docstring)
            opening = result is None and driver.confirm and final > 1
            opts = opening_options(options) if opening else options
            result = compile_and_race(todo, prepare=prepare, measure=measure, options=opts, compiling=compiling,
                                      stats=phase, prior=result, on_tail=start_next)  # fmt: skip
            for c in batch:
                o = result.outcome(c)
                ok = o.status is Status.MEASURED and o.measurement is not None
                driver.record(c, o.measurement if ok else (Status.LAUNCH_FAILED if o.status is Status.MEASURED
                                                           else o.status))  # fmt: skip
            compiled += float(phase.get("compiled_s", 0.0))
            batches.append({"configs": len(todo), "s": round(time.perf_counter() - t0, 3),
                            "compiled_s": phase.get("compiled_s"), "prepare_s": phase.get("prepare_s"),
                            "raced_s": phase.get("raced_s"), "leader": None if result.winner is None
                            else result.winner.id,
                            **({"budget_per_candidate_s": opts.budget_per_candidate_s} if opening else {})})  # fmt: skip
            if on_batch is not None:
                on_batch(todo, result)
            decided = False  # whether the last race was of the final field (the check race)
            if final > 1 and (field := driver.check_field(final, FINAL_WITHIN, CHECK_WINNERS_WITHIN)):
                t0 = time.perf_counter()
                first, result = result, rerace(result, measure, options, field)
                if result is not first:  # else every config of the field failed this time: the first look stands
                    decided = driver.recheck({c: o.measurement for c in field if (o := result.outcome(c)).status
                                              is Status.MEASURED and o.measurement is not None})  # fmt: skip
                if stats is not None:
                    stats["check_race"] = {"configs": [c.id for c in field], "winner": None if result.winner is None
                                           else result.winner.id, "confirmed": decided,
                                           "s": round(time.perf_counter() - t0, 3)}  # fmt: skip
    finally:
        if ahead is not None and ahead[1] is not None:
            ahead[1].close()
    if result is not None and final > 1 and not decided:
        t0 = time.perf_counter()
        result, picked = final_race(result, measure, options, limit=final)
        if stats is not None and picked:
            stats["final_race"] = {"configs": [c.id for c in picked], "winner": None if result.winner is None
                                   else result.winner.id, "s": round(time.perf_counter() - t0, 3)}  # fmt: skip
    if stats is not None:
        stats["batches"] = batches
        stats["compiled_s"] = round(compiled, 3)
        stats["ask_s"] = round(asked, 3)
    return result


def final_field(medians: Sequence[tuple[Config, float]], winner: Config, *, limit: int = FINAL_LIMIT,
                within: float = FINAL_WITHIN) -> list[Config]:  # fmt: skip
    """Who races in the final race: the configs whose median is within ``within`` of the smallest, fastest
    first (ties in order), at most ``limit``, with ``winner`` (the race's) always among them; [] when fewer
    than two. ``medians`` are ``(config, median_ms)`` of the measured configs of the search."""
    if len(medians) < 2:
        return []
    ok = sorted(((t, i, c) for i, (c, t) in enumerate(medians)), key=lambda t: (t[0], t[1]))
    bound = ok[0][0] * (1 + within)
    picked = [c for t, _, c in ok if t <= bound][: max(1, limit)]
    if winner not in picked:
        picked = [*picked[: max(1, limit) - 1], winner]
    return picked if len(picked) >= 2 else []


def replay_final_race(landscape: Landscape, observed: Sequence[tuple[Config, float]], *, noise: float, seed: int = 0,
                      options: RaceOptions | None = None, limit: int = FINAL_LIMIT,
                      within: float = FINAL_WITHIN) -> tuple[Config | None, list[Config]]:  # fmt: skip
    """The tuner's final race, replayed on a recorded landscape (``tritune simulate``'s model of tuning).

    ``observed``: ``(config, time_ms)`` of every config the search measured, as the search saw them (noisy).
    The field is :func:`final_field`'s, the search's fastest as the race's winner; it races with
    :func:`~tritune.engine.race.race` and ``options`` (the tuner's defaults) on a
    :class:`~tritune.bench.replay.ReplayTimer` whose every look is off by ``exp(N(0, noise))`` as a whole
    (``look_noise``) on top of ``noise`` per sample, so repeated looks, not more samples, are what
    averages the noise out, as on a GPU. Returns the race's winner (the fastest observed when the field
    has fewer than two configs; None when nothing was measured) and the field.
    """
    if not observed:
        return None, []
    lead = min(enumerate(observed), key=lambda t: (t[1][1], t[0]))[1][0]
    picked = final_field(observed, lead, limit=limit, within=within)
    if not picked:
        return lead, []
    fresh = _replay_race(landscape, picked, noise=noise, seed=seed, options=options)
    return (lead if fresh.winner is None else fresh.winner), picked


def _replay_race(landscape: Landscape, configs: Sequence[Config], *, noise: float, seed: int,
                 options: RaceOptions | None) -> RaceResult:  # fmt: skip
    """A fresh race of ``configs`` on the replay of ``landscape``, each sample and each look off by ``noise``."""
    timer = ReplayTimer(landscape, noise=noise, look_noise=noise, seed=seed)
    return race(configs, timer.measure_config, options or RaceOptions())


def replay_check_race(landscape: Landscape, driver: SearchDriver, *, noise: float, seed: int = 0,
                      options: RaceOptions | None = None, limit: int = FINAL_LIMIT,
                      within: float = FINAL_WITHIN) -> Config | None:  # fmt: skip
    """The tuner's check race (:meth:`~tritune.search.SearchDriver.check_field`), replayed on a recorded landscape
    as :func:`replay_final_race` replays the final race: call it after each batch is recorded. When it raced and
    the driver then stopped ``confirmed``, returns the race's winner, the tuner's pick (no final race follows);
    else None (nothing to check, or the search goes on and its final race picks)."""
    field = driver.check_field(limit, within, CHECK_WINNERS_WITHIN)
    if not field:
        return None
    fresh = _replay_race(landscape, field, noise=noise, seed=seed + 7919, options=options)
    confirmed = driver.recheck({o.config: o.measurement for o in fresh.outcomes
                                if o.status is Status.MEASURED and o.measurement is not None})  # fmt: skip
    return fresh.winner if fresh.winner is not None and confirmed else None


def final_race(result: RaceResult, measure: ConfigMeasure, options: RaceOptions, *, limit: int = FINAL_LIMIT,
               within: float = FINAL_WITHIN) -> tuple[RaceResult, list[Config]]:  # fmt: skip
    """Race the search's best configs again from fresh samples (module docstring: the final race).

    Returns the result with the finalists' outcomes replaced by the final race's (their binary facts kept)
    and its winner and ties, and the finalists (empty, and ``result`` unchanged, when fewer than two).
    """
    medians = [(o.config, o.measurement.median_ms) for o in result.outcomes
               if o.status is Status.MEASURED and o.measurement is not None]  # fmt: skip
    if result.winner is None:
        return result, []
    picked = final_field(medians, result.winner, limit=limit, within=within)
    return rerace(result, measure, options, picked), picked


def rerace(result: RaceResult, measure: ConfigMeasure, options: RaceOptions, picked: Sequence[Config]) -> RaceResult:
    """Race ``picked`` (configs of ``result``) again from fresh samples; the result with their outcomes replaced
    by the fresh race's (their binary facts kept) and its winner and ties (``result`` itself when fewer than two
    are picked, or when every one of them fails this time)."""
    if len(picked) < 2:
        return result
    fresh = race(picked, measure, options)
    if fresh.winner is None:  # every finalist failed this time: keep the batches' answer
        return result
    new = {o.config: o for o in fresh.outcomes}
    outcomes = tuple(replace(new[o.config], facts=o.facts) if o.config in new else o for o in result.outcomes)
    return replace(result, winner=fresh.winner, ties=fresh.ties, outcomes=outcomes, stop=fresh.stop,
                   measurements=result.measurements + fresh.measurements,
                   device_s=result.device_s + fresh.device_s, decided_by=tuple(picked))  # fmt: skip
