"""One race spread over the ranks of a tuning group, with one winner every rank adopts.

Every rank races its share of the candidates on its own GPU (:mod:`tritune.ranks.field` runs the batches), so
each candidate is measured on exactly one rank. The shares' outcomes are gathered and every rank applies the same
rule to the same data (:func:`finish_race`):

**The winner rule.** The finalists are each rank's local winner and local ties (a config its race
eliminated was clearly slower than that rank's own winner, so it cannot be the fastest overall). The
winner is the finalist with the smallest median; equal medians go to the smaller config id. Its ties
are the other finalists whose 95% interval overlaps the winner's, sorted by (median, id).

With ``retime_finalists=True`` (medians from two GPUs are not comparable, even of one model) rank 0 races
the finalists again on its own device and every rank adopts that race's winner and ties; the
finalists' outcomes then carry rank 0's measurements, so the winner is recorded with the time it won
with. A failure on any rank (an exception from ``measure``) is exchanged too, so every rank
raises :class:`~tritune.errors.DistributedError` together instead of some waiting forever.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tritune.bench.stats import Measurement
from tritune.bench.timer import ConfigMeasure
from tritune.config import Config, as_config
from tritune.engine.race import CandidateOutcome, RaceOptions, RaceResult, RaceStop, race
from tritune.errors import DistributedError
from tritune.ranks.group import TuningGroup, resolve_group

WINNER_RULE = (
    "finalists = each rank's local winner and ties; winner = smallest median, then smallest config id; "
    "ties = other finalists whose 95% interval overlaps the winner's"
)


@dataclass(frozen=True)
class RankShare:
    """What one rank reports after timing its share: the race over its configs, or the error it hit."""

    rank: int
    result: RaceResult | None
    wall_s: float
    error: str | None = None


@dataclass(frozen=True)
class DistributedRaceResult(RaceResult):
    """A :class:`RaceResult` over all ranks' candidates, plus where each was measured.

    ``measurements``, ``full_measurements`` and ``device_s`` are summed over the ranks; ``rounds`` is
    the most any rank ran. ``measured_on`` maps each config id to the group rank that timed it;
    ``retimed`` is rank 0's race over the ``finalists`` when they were re-timed (None otherwise).
    """

    world_size: int = 1
    rank: int = 0
    measured_on: tuple[tuple[str, int], ...] = ()
    finalists: tuple[Config, ...] = ()
    retimed: RaceResult | None = None
    label: str = ""
    rank_wall_s: tuple[float, ...] = ()
    rule: str = WINNER_RULE

    def to_json(self) -> dict[str, Any]:
        d = super().to_json()
        d["distributed"] = {
            "label": self.label,
            "world_size": self.world_size,
            "rank": self.rank,
            "rule": self.rule,
            "measured_on": dict(self.measured_on),
            "finalists": [c.to_json() for c in self.finalists],
            "retimed": None if self.retimed is None else self.retimed.to_json(),
            "rank_wall_s": list(self.rank_wall_s),
        }
        return d


def pick_winner(finalists: Iterable[tuple[Config, Measurement]]) -> tuple[Config | None, tuple[Config, ...]]:
    """The winner rule (module docstring) over ``(config, measurement)`` pairs: ``(winner, ties)``."""
    pairs = sorted(finalists, key=lambda p: (p[1].median_ms, p[0].id))
    if not pairs:
        return None, ()
    win, wm = pairs[0]
    ties = tuple(c for c, m in pairs[1:] if m.ci_low_ms <= wm.ci_high_ms)
    return win, ties


def local_finalists(share: RaceResult) -> list[Config]:
    """A rank's finalists: its race's winner and ties."""
    return [] if share.winner is None else [share.winner, *share.ties]


def _cap(finalists: list[tuple[Config, Measurement]], winners: set[Config], cap: int | None) -> list[Config]:
    """At most ``cap`` finalists (every local winner kept), fastest first, then sorted by id."""
    ordered = sorted(finalists, key=lambda p: (p[0] not in winners, p[1].median_ms, p[0].id))
    chosen = ordered if cap is None else ordered[: max(cap, len(winners))]
    return sorted((c for c, _ in chosen), key=lambda c: c.id)


def merge_shares(
    candidates: Sequence[Config],
    shares: Sequence[RankShare],
    options: RaceOptions,
    *,
    max_finalists: int | None = None,
) -> tuple[RaceResult, list[Config], dict[str, int]]:
    """Combine the ranks' races into one RaceResult (winner rule above), the finalists, and who measured what.

    Pure: every rank calls it on the same gathered shares and gets the same answer.
    """
    by_config: dict[Config, CandidateOutcome] = {}
    measured_on: dict[str, int] = {}
    finalists: list[tuple[Config, Measurement]] = []
    winners: set[Config] = set()
    stops: list[RaceStop] = []
    for sh in shares:
        if sh.result is None:
            continue
        stops.append(sh.result.stop)
        for o in sh.result.outcomes:
            if o.config in by_config:
                raise DistributedError(
                    f"{o.config.id} was measured on rank {measured_on[o.config.id]} and on rank {sh.rank}"
                )
            by_config[o.config] = o
            measured_on[o.config.id] = sh.rank
        for c in local_finalists(sh.result):
            m = sh.result.outcome(c).measurement
            if m is not None:
                finalists.append((c, m))
        if sh.result.winner is not None:
            winners.add(sh.result.winner)
    missing = [c.id for c in candidates if c not in by_config]
    if missing:
        raise DistributedError(f"no rank reported a result for {', '.join(missing[:5])}")
    winner, ties = pick_winner(finalists)
    stop: RaceStop
    if winner is None:
        stop = "none_measured"
    elif ties:
        stop = "tied"
    else:
        stop = "budget" if "budget" in stops else "decided"
    results = [sh.result for sh in shares if sh.result is not None]
    merged = RaceResult(
        winner=winner,
        ties=ties,
        outcomes=tuple(by_config[c] for c in candidates),
        stop=stop,
        rounds=max((r.rounds for r in results), default=0),
        measurements=sum(r.measurements for r in results),
        full_measurements=sum(r.full_measurements for r in results),
        device_s=sum(r.device_s for r in results),
        options=options,
    )
    return merged, _cap(finalists, winners, max_finalists), measured_on


def run_local(fn: Callable[[], RaceResult | None], rank: int, what: str) -> tuple[RankShare, BaseException | None]:
    t0 = time.perf_counter()
    try:
        return RankShare(rank, fn(), time.perf_counter() - t0), None
    except Exception as e:
        msg = f"{what} failed on rank {rank}: {type(e).__name__}: {e}"
        return RankShare(rank, None, time.perf_counter() - t0, msg), e


def raise_errors(label: str, shares: Sequence[RankShare], own: BaseException | None) -> None:
    errors = [sh for sh in shares if sh.error is not None]
    if errors:
        raise DistributedError(
            f"{label}: "
            + "; ".join(str(sh.error) for sh in errors)
            + ". Every rank stops tuning this together."
        ) from own


def finish_race(
    tg: TuningGroup,
    label: str,
    cands: Sequence[Config],
    mine: RankShare,
    err: BaseException | None,
    measure: ConfigMeasure,
    opts: RaceOptions,
    *,
    retime_finalists: bool,
    max_finalists: int | None,
    timeout_s: float | None,
) -> DistributedRaceResult:
    """Collective: gather every rank's share of ``cands`` (``mine``: this rank's race, or its error), merge
    them by the winner rule and, with ``retime_finalists``, let rank 0 re-race the finalists. Shared by
    :func:`distributed_race` and the shared search (:mod:`tritune.ranks.search`)."""
    shares: list[RankShare] = tg.all_gather(mine, label, "gather the timings", timeout_s)
    raise_errors(label, shares, err)
    merged, finalists, measured_on = merge_shares(cands, shares, opts, max_finalists=max_finalists)
    retimed: RaceResult | None = None
    winner, ties, stop = merged.winner, merged.ties, merged.stop
    if retime_finalists and tg.world_size > 1 and len(finalists) > 1:
        if tg.rank == 0:
            mine, err = run_local(lambda: race(finalists, measure, opts), 0, "re-timing the finalists")
        else:
            mine, err = RankShare(tg.rank, None, 0.0), None
        got: list[RankShare] = tg.all_gather(mine, label, "share the re-timed finalists", timeout_s)
        raise_errors(label, got, err)
        retimed = got[0].result
        if retimed is not None and retimed.winner is not None:
            winner, ties, stop = retimed.winner, retimed.ties, retimed.stop
    outcomes = merged.outcomes
    if retimed is not None:  # the finalists' times come from rank 0's GPU, like the choice made on them
        again = {o.config: o.measurement for o in retimed.outcomes if o.measurement is not None}
        outcomes = tuple(replace(o, measurement=again[o.config]) if o.config in again else o for o in outcomes)
    return DistributedRaceResult(
        winner=winner,
        ties=ties,
        outcomes=outcomes,
        stop=stop,
        rounds=merged.rounds,
        measurements=merged.measurements + (retimed.measurements if retimed else 0),
        full_measurements=merged.full_measurements,
        device_s=merged.device_s + (retimed.device_s if retimed else 0.0),
        options=opts,
        world_size=tg.world_size,
        rank=tg.rank,
        measured_on=tuple(sorted(measured_on.items())),
        finalists=tuple(finalists),
        retimed=retimed,
        decided_by=tuple(c for c in finalists if c in again) if retimed is not None and retimed.winner is not None
        else (),
        label=label,
        rank_wall_s=tuple(sh.wall_s for sh in shares),
    )


def agree_on_cached(
    label: str,
    local: Config | None,
    *,
    group: TuningGroup | Any | None = None,
    timeout_s: float | None = None,
) -> Config | None:
    """Collective lookup: every rank passes the config its own cache/store has for ``label`` (or None).

    Returns the config of the lowest rank that has one, on every rank, so that one rank's hit is
    everyone's hit and no rank tunes alone (nodes with different stores still agree). None means every
    rank missed: call :func:`distributed_race` next, on every rank. Ranks passing different labels (a
    different kernel or key) raise DistributedError naming them.
    """
    tg = resolve_group(group, timeout_s)
    mine = (label, None if local is None else as_config(local).to_json())
    everyone = tg.all_gather(mine, label, "look up the cached winner", timeout_s)
    bad = [r for r, (lab, _) in enumerate(everyone) if lab != everyone[0][0]]
    if bad:
        raise DistributedError(
            f"{label}: the ranks are not at the same tuning: "
            + "; ".join(f"{tg.describe(r)} is at {everyone[r][0]!r}" for r in [0, *bad])
            + ". Tuning is collective: every rank must reach the same kernel and key, in the same order."
        )
    for _, cfg in everyone:
        if cfg is not None:
            return Config.from_json(cfg)
    return None
