"""Multi-rank tuning over ``torch.distributed``: split the candidates, gather the timings, one winner.

In a running job (``torchrun``, any backend), ``@tritune.autotune(distributed=True)`` and ``tritune tune`` tune a
key over the ranks by passing a :class:`Farm` to :func:`tritune.engine.key.tune_key`, after making one rank's store
hit every rank's hit (:func:`agree_on_cached`), so no rank tunes alone. The parts serve other loops too::

    cfg = agree_on_cached(label, local_hit_or_None)          # one rank's hit is everyone's hit
    if cfg is None:
        result = distributed_race(candidates, measure, label=label)   # identical on every rank
        record_on_rank0(store, key, result)                  # the store records it once
        cfg = result.winner

**The rule for a miss (tuning is collective).** Every rank of the tuning group must reach the same
kernel at the same key, with the same candidates, in the same order as the others; that is what an
SPMD job does, and what keeps the ranks on one config (the same numerics everywhere). The ranks check
it: different labels or candidate lists raise :class:`~tritune.errors.DistributedError` on every rank,
naming the ranks that differ. A rank that does not arrive within ``timeout_s`` (it hit its own cache,
took another path, hangs) or that crashed makes the others raise DistributedError instead of waiting
forever; rank 0's message names the ranks that did not arrive. A kernel whose key differs between
ranks (sharded shapes) must not be tuned with ``distributed=True``: pretune it offline instead.

**The winner rule** (:data:`~tritune.ranks.race.WINNER_RULE`): the finalists are each rank's local race
winner and its ties; the winner is the finalist with the smallest median, equal medians going to the
smaller config id; ties are the finalists whose 95% interval overlaps the winner's. With
``retime_finalists=True`` (the default of the decorator and of ``tritune tune``) rank 0 re-races the
finalists on its own GPU and everyone adopts its answer: even two H200s of one host timed the same
matmul 5% apart, so medians from different GPUs decide nothing.

**A searched space** (more than 512 legal configs, or ``search=``/``budget=`` given) is searched once for
all ranks: one strategy on rank 0 gives every batch out in shares (:class:`~tritune.ranks.field.RanksField`), then the
ranks merge and re-time by the same winner rule.

**Collectives** run on a gloo *tuning group* (:class:`~tritune.ranks.group.TuningGroup`) beside the
job's own backend, with ``monitored_barrier`` timeouts; create it at startup with
``TuningGroup.create(timeout_s)`` on every rank, or let the first tuning create it.

**Across nodes: one writer, then export/import.** Only global rank 0 writes, to a SQLite store on its
own local disk; other nodes get the results with ``tritune cache export`` there and ``tritune cache
import`` on each node (or by shipping the file), and in a later job :func:`agree_on_cached` lets a
rank whose node has the entry answer for everyone. We recommend this over one store that every node
opens on a shared filesystem: SQLite relies on POSIX file locks, which NFS and many parallel
filesystems implement badly or not at all (the SQLite documentation warns that concurrent writers there
can corrupt the database), and its WAL mode, which tritune's store uses, needs shared memory on one
host, so it does not work across machines at all.
"""

from __future__ import annotations

from tritune.ranks.farm import Farm, job_group
from tritune.ranks.field import DriverView, RanksField, distributed_race
from tritune.ranks.group import (
    DEFAULT_TIMEOUT_S,
    TuningGroup,
    check_agreement,
    default_tuning_group,
    rank_and_world,
)
from tritune.ranks.race import WINNER_RULE, DistributedRaceResult, agree_on_cached, merge_shares, pick_winner
from tritune.ranks.records import candidate_records, record_on_rank0
from tritune.ranks.split import split_by_width, split_configs

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "WINNER_RULE",
    "DistributedRaceResult",
    "DriverView",
    "Farm",
    "RanksField",
    "TuningGroup",
    "agree_on_cached",
    "candidate_records",
    "check_agreement",
    "default_tuning_group",
    "distributed_race",
    "job_group",
    "merge_shares",
    "pick_winner",
    "rank_and_world",
    "record_on_rank0",
    "split_by_width",
    "split_configs",
]
