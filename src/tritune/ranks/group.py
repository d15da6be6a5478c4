"""The tuning group: a gloo process group that every tuning collective runs on, with a timeout.

Tuning exchanges small Python objects (configs, measurements), so it runs on gloo over the CPU, beside
whatever backend the job trains with (NCCL usually): the job's own collectives are never touched, and
gloo offers :func:`torch.distributed.monitored_barrier`, the one stable collective that takes its own
timeout and says which ranks did not arrive.

Every exchange is two steps: a monitored barrier (wait up to ``timeout_s`` for every rank; rank 0's
error names the ranks that did not arrive, and a rank that crashed breaks its connections, which fails
the barrier at once), then an ``all_gather_object`` among ranks known to be present. Any failure
becomes :class:`~tritune.errors.DistributedError` naming what was being tuned. After such an error the
group is unusable, like any process group whose collective failed: the job should stop.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tritune.errors import DistributedError

#: Default seconds a rank waits for the others at a tuning collective (torch's NCCL default is 600 s too).
DEFAULT_TIMEOUT_S = 600.0


def _dist() -> Any:
    try:
        import torch.distributed as dist
    except ImportError as e:  # pragma: no cover - torch is a dependency
        raise DistributedError(f"distributed tuning needs torch.distributed: {e}") from None
    if not dist.is_available():
        raise DistributedError("distributed tuning needs a torch build with torch.distributed available")
    return dist


def rank_and_world() -> tuple[int, int]:
    """This process's global rank and the job's world size: ``(0, 1)`` when torch.distributed is not
    initialized (one process tunes alone, as it should). The one place that asks; when the distributed state
    is broken (initialized, but the default group cannot answer) it raises rather than let a rank tune alone.
    """
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0, 1
    if not (dist.is_available() and dist.is_initialized()):
        return 0, 1
    try:
        return int(dist.get_rank()), int(dist.get_world_size())
    except Exception as e:
        raise DistributedError(
            f"torch.distributed is initialized but cannot say this process's rank ({type(e).__name__}: {e}); "
            "tuning alone would give this rank a different winner from the others: fix or destroy the "
            "process group before tuning"
        ) from None


def _check_timeout(timeout_s: float) -> float:
    if not timeout_s > 0:
        raise DistributedError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    return float(timeout_s)


@dataclass(frozen=True, eq=False)
class TuningGroup:
    """The ranks that tune together: a gloo process group, this process's place in it, and the timeout.

    ``rank``/``world_size`` are positions within the group; ``global_ranks[i]`` is the global rank of
    group rank ``i`` (for messages). Create one with :meth:`create` (collective: every member calls it)
    right after ``init_process_group``, or let :func:`default_tuning_group` create it on first use.
    """

    pg: Any
    rank: int
    world_size: int
    global_ranks: tuple[int, ...]
    timeout_s: float

    @classmethod
    def create(
        cls, timeout_s: float = DEFAULT_TIMEOUT_S, *, group: Any = None, ranks: Sequence[int] | None = None
    ) -> TuningGroup:
        """A tuning group over ``group``'s ranks (``ranks``, or the whole job when both are None).

        A gloo ``group`` is used as is. Otherwise a gloo twin over the same ranks is made with
        ``new_group(backend="gloo", timeout=timeout_s)``, which every member must call (all ranks of
        the job when the group is the whole world), in the same order as their other ``new_group`` calls.
        """
        timeout_s = _check_timeout(timeout_s)
        dist = _dist()
        if not dist.is_initialized():
            raise DistributedError(
                "distributed tuning needs an initialized process group: call "
                "torch.distributed.init_process_group() first (torchrun sets the environment it reads)"
            )
        if group is not None and ranks is not None:
            raise DistributedError("TuningGroup.create takes group or ranks, not both")
        if group is not None and dist.get_backend(group) == "gloo":
            pg = group
        elif group is not None or ranks is not None:
            members = sorted(dist.get_process_group_ranks(group) if group is not None else ranks or [])
            pg = dist.new_group(
                members, timeout=timedelta(seconds=timeout_s), backend="gloo", use_local_synchronization=True
            )
        else:
            pg = dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout_s))
        if pg is None or pg == dist.GroupMember.NON_GROUP_MEMBER:
            raise DistributedError(f"rank {dist.get_rank()} is not a member of the tuning group it asked for")
        return cls(
            pg,
            dist.get_rank(pg),
            dist.get_world_size(pg),
            tuple(dist.get_process_group_ranks(pg)),
            timeout_s,
        )

    def describe(self, rank: int) -> str:
        """``rank 3`` (with the global rank when it differs from the group rank)."""
        g = self.global_ranks[rank] if rank < len(self.global_ranks) else rank
        return f"rank {rank}" if g == rank else f"rank {rank} (global rank {g})"

    # -- collectives ---------------------------------------------------------------------------------
    def barrier(self, label: str, stage: str, timeout_s: float | None = None) -> None:
        """Wait until every rank reaches this point, at most ``timeout_s`` (default: the group's)."""
        dist = _dist()
        t = self.timeout_s if timeout_s is None else _check_timeout(timeout_s)
        if self.world_size == 1:
            return
        try:
            dist.monitored_barrier(group=self.pg, timeout=timedelta(seconds=t), wait_all_ranks=True)
        except RuntimeError as e:
            raise DistributedError(
                f"{label}: not every rank of the tuning group ({self.world_size} ranks) reached "
                f"'{stage}' within {t:g} s, or a rank crashed; this is {self.describe(self.rank)}. Tuning "
                "is collective: every rank must tune the same kernel at the same key with the same "
                f"candidates (see tritune.ranks). torch.distributed said: {_first_lines(e)}"
            ) from e

    def all_gather(self, obj: Any, label: str, stage: str, timeout_s: float | None = None) -> list[Any]:
        """Every rank's ``obj`` in group-rank order, after a monitored barrier (see the module docstring)."""
        self.barrier(label, stage, timeout_s)
        if self.world_size == 1:
            return [obj]
        out: list[Any] = [None] * self.world_size
        try:
            _dist().all_gather_object(out, obj, group=self.pg)
        except RuntimeError as e:
            raise DistributedError(
                f"{label}: exchanging '{stage}' between the {self.world_size} ranks failed on "
                f"{self.describe(self.rank)}: {_first_lines(e)}"
            ) from e
        return out

    def broadcast(self, obj: Any, label: str, stage: str, timeout_s: float | None = None) -> Any:
        """Group rank 0's ``obj`` on every rank (the others pass anything, None say), after a monitored
        barrier, so a rank that is missing or crashed fails the exchange instead of hanging it."""
        self.barrier(label, stage, timeout_s)
        if self.world_size == 1:
            return obj
        box = [obj if self.rank == 0 else None]
        try:
            _dist().broadcast_object_list(box, src=self.global_ranks[0], group=self.pg)
        except RuntimeError as e:
            raise DistributedError(
                f"{label}: broadcasting '{stage}' from rank 0 to the {self.world_size} ranks failed on "
                f"{self.describe(self.rank)}: {_first_lines(e)}"
            ) from e
        return box[0]


def _first_lines(e: BaseException, n: int = 3) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return " ".join(lines[:n]) or type(e).__name__


_DEFAULT: dict[float, tuple[Any, TuningGroup]] = {}
_LOCK = threading.Lock()


def default_tuning_group(timeout_s: float = DEFAULT_TIMEOUT_S) -> TuningGroup:
    """The whole job's tuning group for ``timeout_s``, created (collectively) on first use, then reused.

    Creating it is a collective of every rank of the job; a job whose ranks might not all reach their
    first tuning together should call ``TuningGroup.create`` (or this) at startup instead.
    """
    timeout_s = _check_timeout(timeout_s)
    dist = _dist()
    if not dist.is_initialized():
        TuningGroup.create(timeout_s)  # raises the clear error
    world = dist.group.WORLD
    with _LOCK:
        held = _DEFAULT.get(timeout_s)
        if held is None or held[0] is not world:  # a group of an earlier, destroyed world is never reused
            if held is not None:
                _DEFAULT.clear()
            held = (world, TuningGroup.create(timeout_s))
            _DEFAULT[timeout_s] = held
        return held[1]


def resolve_group(group: TuningGroup | Any | None, timeout_s: float | None) -> TuningGroup:
    """A TuningGroup from what a caller passed: a TuningGroup, a torch process group, or None (the job)."""
    if isinstance(group, TuningGroup):
        return group
    t = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    if group is None:
        return default_tuning_group(t)
    return TuningGroup.create(t, group=group)


def digest(obj: Any) -> str:
    """sha256 of ``obj``'s canonical JSON: what ranks compare to check they agree."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def check_agreement(
    label: str, ids: Sequence[str], group: TuningGroup | Any | None = None, *, timeout_s: float | None = None
) -> TuningGroup:
    """Collective: every rank must pass the same ``label`` and the same ``ids`` (in any order).

    Raises DistributedError on every rank, naming the ranks that differ from rank 0 and what differs,
    so that no rank goes on alone. Returns the resolved TuningGroup.
    """
    tg = resolve_group(group, timeout_s)
    mine = (label, digest(sorted(ids)), len(ids), sorted(ids)[:3])
    everyone = tg.all_gather(mine, label, "agree on what to tune", timeout_s)
    ref = everyone[0]
    bad = [r for r, x in enumerate(everyone) if x[:2] != ref[:2]]
    if bad:
        lines = [
            f"  {tg.describe(r)}: {x[0]!r}, {x[2]} candidates (first: {', '.join(x[3])}), digest {x[1][:12]}"
            for r, x in enumerate(everyone)
            if r == 0 or r in bad
        ]
        raise DistributedError(
            f"{label}: the ranks are not tuning the same thing; {', '.join(tg.describe(r) for r in bad)} "
            "differ from rank 0:\n" + "\n".join(lines) + "\nTuning is collective: give every rank the "
            "same kernel, key and candidate list, or tune this kernel without distributed=True."
        )
    return tg
