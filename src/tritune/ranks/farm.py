"""The ranks of a job as the place where keys are tuned: :class:`Farm`, the engine's
:class:`~tritune.engine.loop.Place` for a tuning group, and the job's group and per-rank summary.

``tritune tune`` under ``torchrun`` and ``@tritune.autotune(distributed=True)`` pass a Farm to
:func:`tritune.engine.key.tune_key`: each key's batches are split over the ranks' compile pools
(:class:`~tritune.ranks.field.RanksField`), each rank compiles its share in its own workers, then loads, checks and
races it as the compiles finish, with no wait for the other ranks until the batch's outcomes are gathered. A config
is compiled, loaded and timed on one rank only.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.config import Config
from tritune.ranks.field import RanksField
from tritune.ranks.group import (
    DEFAULT_TIMEOUT_S,
    TuningGroup,
    default_tuning_group,
    rank_and_world,
    resolve_group,
)


def job_group(group: Any = "auto", timeout_s: float = DEFAULT_TIMEOUT_S) -> TuningGroup | None:
    """The tuning group to farm over: ``group`` itself when it is one; for ``"auto"`` the whole job's
    when torch.distributed is initialized with more than one rank (None otherwise, and for None)."""
    if isinstance(group, TuningGroup):
        return group
    if group is None:
        return None
    if group != "auto":
        return resolve_group(group, timeout_s)
    if rank_and_world()[1] < 2:
        return None
    return default_tuning_group(timeout_s)


@dataclass(frozen=True)
class Farm:
    """Tune over the ranks of ``group`` (a TuningGroup, a torch process group, or None for the whole job)."""

    group: TuningGroup | Any | None = None
    timeout_s: float | None = None

    def field(self, label: str, candidates: Sequence[Config], width: int, *, retime_finalists: bool = True,
              ) -> RanksField:  # fmt: skip
        """Collective: the ranks agree on ``label`` and ``candidates`` and gather their compile pools' widths.
        ``retime_finalists``: rank 0 re-times the ranks' finalists on its own GPU and every rank adopts its answer."""
        return RanksField.start(self.group, label, candidates, width, retime_finalists=retime_finalists,
                                timeout_s=self.timeout_s)  # fmt: skip


def rank_info(tg: TuningGroup, label: str, info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Collective: every rank's ``info`` (timings, winners) plus its host and LOCAL_RANK, in rank order."""
    mine = {"rank": tg.rank, "host": socket.gethostname(), "local_rank": os.environ.get("LOCAL_RANK"), **info}
    return list(tg.all_gather(mine, label, "gather the per-rank summary"))
