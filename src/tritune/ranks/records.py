"""Writing distributed results to a store once: by rank 0.

:func:`record_on_rank0` stores a :func:`~tritune.ranks.race.distributed_race` result: the ranks already
hold identical results, so only rank 0 writes and no exchange is needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tritune.bench.stats import Measurement
from tritune.config import Config
from tritune.engine.race import RaceResult
from tritune.outcome import Status
from tritune.ranks.group import rank_and_world
from tritune.ranks.race import DistributedRaceResult
from tritune.store.base import Store
from tritune.store.keys import TuningKey
from tritune.store.records import CandidateRecord, WinnerRecord


def candidate_records(
    result: RaceResult, provenance: Mapping[str, Any] | None = None
) -> list[CandidateRecord]:
    """One CandidateRecord per outcome of ``result``: measured ones carry the median and the measurement.

    Re-timed finalists of a DistributedRaceResult carry rank 0's re-timing (the times the winner was
    chosen by); every record's provenance says which rank measured it.
    """
    retimed: dict[Config, Measurement] = {}
    measured_on: dict[str, int] = {}
    if isinstance(result, DistributedRaceResult):
        measured_on = dict(result.measured_on)
        if result.retimed is not None:
            retimed = {o.config: o.measurement for o in result.retimed.outcomes if o.measurement is not None}
    out = []
    for o in result.outcomes:
        prov = dict(provenance or {})
        if o.config.id in measured_on:
            prov["rank"] = measured_on[o.config.id]
        m = o.measurement
        if o.config in retimed:
            m = retimed[o.config]
            prov.update(rank=0, retimed=True)
        if o.status is Status.MEASURED and m is not None:
            prov.update(eliminated_round=o.eliminated_round, timings=o.timings, full=o.full)
            out.append(CandidateRecord(o.config, Status.MEASURED, m.median_ms, None, m.to_json(), prov))
        else:
            status = o.status if not o.status.ok else Status.NOT_TIMED
            out.append(CandidateRecord(o.config, status, None, o.reason, None, prov))
    return out


def record_on_rank0(
    store: Store,
    key: TuningKey,
    result: RaceResult,
    *,
    rank: int | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> WinnerRecord | None:
    """Write ``result`` (records, winner and ties) at ``key`` if this is rank 0; other ranks write nothing.

    ``rank`` defaults to the result's own rank (DistributedRaceResult) or else torch.distributed's
    global rank (0 when not initialized). Not a collective. Returns the stored winner on rank 0, None elsewhere.
    """
    if rank is None:
        rank = result.rank if isinstance(result, DistributedRaceResult) else rank_and_world()[0]
    if rank != 0:
        return None
    prov = dict(provenance or {})
    if isinstance(result, DistributedRaceResult):
        prov.setdefault("distributed", {"world_size": result.world_size, "rule": result.rule,
                                        "retimed": result.retimed is not None})  # fmt: skip
    records = candidate_records(result, prov)
    winner = result.winner
    return store.record(key, records, winner, ties=result.ties if winner is not None else (), provenance=prov)
