"""The offline farm's plumbing for ``tritune tune`` under ``torchrun``: the job's group, screen shares, rank info.

``tritune tune`` splits each workload's candidates over the ranks twice, with the same deterministic
rule: the screen (compiling, which dominates a cold run) compiles only the rank's
:func:`~tritune.dist.split.split_configs` share and :func:`merge_screens` gathers every rank's verdicts
so that all ranks build the same candidate list; then :func:`~tritune.dist.race.distributed_race`
loads, verifies and times each candidate on one rank. The two splits are over different lists (all
candidates, then the runnable ones), so a rank may time a config another rank compiled: on one node
Triton's file cache is shared and it is only loaded; on another node it is compiled again there.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from tritune.config import Config
from tritune.dist.group import DEFAULT_TIMEOUT_S, TuningGroup, default_tuning_group
from tritune.results import CandidateResult, WorkloadResult


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
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return None
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    return default_tuning_group(timeout_s)


def _key_id(key: Mapping[str, Any]) -> str:
    return repr(sorted(dict(key).items()))


def merge_screens(
    tg: TuningGroup,
    label: str,
    candidates: Sequence[Config],
    share: Sequence[Config],
    screened: Sequence[WorkloadResult],
) -> dict[str, WorkloadResult]:
    """Collective: every rank's screen verdicts for its ``share``, merged into one WorkloadResult per key.

    Each rank contributes only the verdicts of its own share (so a screen that compiled more is still
    merged correctly); every rank gets the same result, candidates in ``candidates`` order, keyed by
    the key's canonical repr.
    """
    mine_ids = {c.id for c in share}
    mine = [
        (wr.name, wr.key, dict(wr.extra), [c.to_json() for c in wr.candidates if c.config.id in mine_ids])
        for wr in screened
    ]
    everyone = tg.all_gather(mine, label, "gather the screen verdicts")
    merged: dict[str, tuple[str, dict[str, Any], dict[str, Any], dict[Config, CandidateResult]]] = {}
    for part in everyone:
        for name, key, extra, cands in part:
            slot = merged.setdefault(_key_id(key), (name, dict(key), extra, {}))
            for d in cands:
                c = CandidateResult.from_json(d)
                slot[3][c.config] = c
    out = {}
    for kid, (name, key, extra, by_cfg) in merged.items():
        out[kid] = WorkloadResult(name, key, [by_cfg[c] for c in candidates if c in by_cfg], extra)
    return out


def rank_info(tg: TuningGroup, label: str, info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Collective: every rank's ``info`` (timings, winners) plus its host and LOCAL_RANK, in rank order."""
    mine = {"rank": tg.rank, "host": socket.gethostname(), "local_rank": os.environ.get("LOCAL_RANK"), **info}
    return list(tg.all_gather(mine, label, "gather the per-rank summary"))
