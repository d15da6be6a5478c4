"""The offline farm's plumbing for ``tritune tune`` under ``torchrun``: the job's group and rank info.

``tritune tune`` splits each key's statically legal candidates over the ranks once, with
:func:`~tritune.dist.split.split_configs` (inside :func:`~tritune.dist.race.distributed_race`): each rank
compiles its share in its own workers, then loads, verifies and races it as the compiles finish
(:func:`tritune.engine.pipeline.compile_and_race`), with no wait for the other ranks until the shares'
outcomes are merged. A config is compiled, loaded and timed on one rank only.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tritune.engine.job import TuningJob
from tritune.engine.race import RaceResult

from tritune.dist.group import DEFAULT_TIMEOUT_S, TuningGroup, default_tuning_group, rank_and_world
from tritune.dist.race import distributed_race


def job_group(group: Any = "auto", timeout_s: float = DEFAULT_TIMEOUT_S) -> TuningGroup | None:
    """The tuning group to farm over: ``group`` itself when it is one; for ``"auto"`` the whole job's
    when torch.distributed is initialized with more than one rank (None otherwise, and for None)."""
    if isinstance(group, TuningGroup):
        return group
    if group is None:
        return None
    if group != "auto":
        from tritune.dist.group import resolve_group

        return resolve_group(group, timeout_s)
    if rank_and_world()[1] < 2:
        return None
    return default_tuning_group(timeout_s)


@dataclass(frozen=True)
class Farm:
    """Spreads a :class:`~tritune.engine.job.TuningJob` over the ranks of ``group`` (a TuningGroup, a torch
    process group, or None for the whole job): each rank compiles and races its share, the shares' outcomes
    are merged on every rank (:func:`tritune.dist.distributed_race`). Collective."""

    group: TuningGroup | Any | None = None

    def race(self, job: TuningJob) -> RaceResult:
        return distributed_race(job.candidates, job.measure, label=job.label, group=self.group, options=job.race,
                                method=job.method, run_share=job.run_share,
                                retime_finalists=job.retime_finalists)  # fmt: skip


def rank_info(tg: TuningGroup, label: str, info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Collective: every rank's ``info`` (timings, winners) plus its host and LOCAL_RANK, in rank order."""
    mine = {"rank": tg.rank, "host": socket.gethostname(), "local_rank": os.environ.get("LOCAL_RANK"), **info}
    return list(tg.all_gather(mine, label, "gather the per-rank summary"))
