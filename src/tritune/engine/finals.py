"""The races after the batches: the opening's budget, the check race and the final race.

**The final race.** When a search stops, the configs whose medians are within :data:`FINAL_WITHIN` (3%) of the
smallest median of the search, eliminated or not, at most :data:`FINAL_LIMIT`, with the race's winner always among
them, race once more from fresh samples, round-robin, and that race names the winner. The race of the batches
compares samples taken seconds apart: a config eliminated in its batch's first rounds keeps the samples of a cool
GPU while the survivors go on heating it (on an H200 at 6144^3 the race's pick of a transfer was 5% slower,
re-measured interleaved, than a config it had dropped with a smaller median). It costs a race of a few configs,
about 0.1 s of device time.

**The opening's budget.** A transfer's opening (a ``confirm`` driver's first batch, when a final race or a re-timing
of the finalists follows) races on :data:`OPENING_BUDGET` (60%) of the race's budget per candidate: its configs are
the tuned keys' winners and the configs they measured fastest, near-ties that a race of a heavy kernel times to the
end of its budget, and its answer is only whether a winner ties with the best and which configs lie within 3%; the
final race (or the check race) times those again from fresh samples and picks. On an H100 at 6144^3, 16 transfers
each way in the same runs: the opening's batch took 0.20-0.27 s instead of 0.22-0.40 s and the transfer's median
wall 0.52-0.58 s instead of 0.61-0.65 s, qualities 1.000-1.017 against 1.000-1.015. Replayed
(``benchmarks/search_eval.py``, SYNTHETIC: 7 recorded landscapes scaled to a 0.6 ms best, 200 seeds, with drift),
the final race's pick was as good (true time over the field's best: mean 1.0018 against 1.0016).

**The check race.** A transfer's opening that puts a neighbour's winner more than 1% behind its best does not
confirm it, and the search would go on with a batch of compiles. On H100s at 6144^3 that happened to 8 of 24
transfers, where about ten configs lie within 2% and one look of a 0.2 s race moves them by about that much (the
GPU's clocks settle under load: :data:`CHECK_WINNERS_WITHIN`). So the best, the winners within 15% of it and the
other configs within 3% (at most :data:`FINAL_LIMIT`, the winners first:
:meth:`~tritune.search.SearchDriver.check_field`) race once more from fresh samples, and the strategy decides again
on that race alone (:meth:`~tritune.search.SearchDriver.recheck`). When that confirms, the check race was the
search's final race.

``tritune simulate`` replays both races on recorded landscapes (:func:`replay_final_race`,
:func:`replay_check_race`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tritune.bench.replay import ReplayTimer
from tritune.bench.timer import ConfigMeasure
from tritune.config import Config
from tritune.engine.race import RaceOptions, RaceResult, race
from tritune.landscape import Landscape
from tritune.outcome import Status
from tritune.search import SearchDriver

#: The final race takes the configs within this share of the search's smallest median ...
FINAL_WITHIN = 0.03
#: ... at most this many (the race's winner always among them).
FINAL_LIMIT = 4
#: The check race takes a transfer's tuned winners read up to this much (15%) behind the opening's best. On an
#: H100 at 6144^3 (``benchmarks/search_tune.py``) every config's looks read up to 13% faster in the first ~250 ms of
#: load after the GPU idled than later (its clocks settle under the power limit), and by 3-8% more or less from one
#: round of looks to the next, all configs together: a config the race drops in its first rounds keeps one moment's
#: reading.
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
