"""Writing distributed results to a store once: by rank 0, after the ranks' results are gathered.

In a job, :func:`record_on_rank0` stores a :func:`~tritune.dist.race.distributed_race` result: the
ranks already hold identical results, so only rank 0 writes and no exchange is needed. Offline,
each rank measures its :func:`~tritune.dist.split.farm_split` share and :func:`gather_records`
brings every rank's records to rank 0, which picks each key's winner by the same rule as the race
(:func:`~tritune.dist.race.pick_winner`) and writes all keys in one atomic ``record_many``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tritune.bench.stats import Measurement
from tritune.bench.timer import Failure
from tritune.config import Config, as_config
from tritune.dist.group import TuningGroup, rank_and_world, resolve_group
from tritune.dist.race import DistributedRaceResult, pick_winner
from tritune.outcome import Status
from tritune.store.base import Store
from tritune.store.keys import TuningKey
from tritune.store.records import CandidateRecord, WinnerRecord, Write, thaw_json
from tritune.engine.race import RaceResult


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


def measurement_record(
    config: Any, measured: Measurement | Failure, provenance: Mapping[str, Any] | None = None
) -> CandidateRecord:
    """The CandidateRecord of one farm measurement: the median and measurement JSON, or the failure."""
    cfg = as_config(config)
    if isinstance(measured, Failure):
        return CandidateRecord(cfg, measured.status, None, measured.reason, None, dict(provenance or {}))
    return CandidateRecord(
        cfg, Status.MEASURED, measured.median_ms, None, measured.to_json(), dict(provenance or {})
    )


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


def _measurement(rec: CandidateRecord) -> Measurement | None:
    if rec.status is not Status.MEASURED or rec.time_ms is None:
        return None
    if rec.measurement is not None:
        try:
            return Measurement.from_json(thaw_json(rec.measurement))
        except ValueError:
            pass
    return Measurement.from_samples([rec.time_ms])


def farm_writes(
    records: Iterable[tuple[TuningKey, CandidateRecord]], provenance: Mapping[str, Any] | None = None
) -> list[Write]:
    """One Write per key from every rank's records: the winner and ties by the race's rule, or none
    when no candidate of the key was measured. Keys are ordered by kernel then digest."""
    by_key: dict[TuningKey, dict[Config, CandidateRecord]] = {}
    for key, rec in records:
        by_key.setdefault(key, {})[rec.config] = rec
    writes = []
    for key in sorted(by_key, key=lambda k: (k.kernel, k.digest)):
        recs = by_key[key]
        pairs = [(c, m) for c, r in recs.items() if (m := _measurement(r)) is not None]
        winner, ties = pick_winner(pairs)
        cands = tuple(recs[c] for c in sorted(recs))
        writes.append(Write(key, cands, winner, ties, dict(provenance or {})))
    return writes


def _record_from_json(d: Mapping[str, Any]) -> CandidateRecord:
    return CandidateRecord(
        Config.from_json(d["config"]), Status(d["status"]), d["time_ms"], d["reason"], d["measurement"],
        d["provenance"] or {}, d["recorded_at"],
    )  # fmt: skip


def gather_records(
    records: Sequence[tuple[TuningKey, CandidateRecord]],
    *,
    group: TuningGroup | Any | None = None,
    timeout_s: float | None = None,
    store: Store | None = None,
    label: str = "offline tuning",
    provenance: Mapping[str, Any] | None = None,
) -> list[Write] | None:
    """Collective: bring every rank's ``(key, record)`` pairs to rank 0 and merge them (:func:`farm_writes`).

    On rank 0 returns the merged writes, and writes them to ``store`` in one atomic ``record_many``
    when a store is given; other ranks return None and never touch a store. ``timeout_s`` bounds the
    wait for the slowest rank to finish its share.
    """
    tg = resolve_group(group, timeout_s)
    # records hold read-only mappings, which do not pickle: they travel as their JSON
    mine = [(k.to_json(), r.to_json()) for k, r in records]
    everyone = tg.all_gather(mine, label, "gather the measurements", timeout_s)
    if tg.rank != 0:
        return None
    merged = [(TuningKey.from_json(k), _record_from_json(r)) for part in everyone for k, r in part]
    writes = farm_writes(merged, provenance)
    if store is not None:
        store.record_many(writes)
    return writes
