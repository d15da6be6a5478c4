"""How long verify will take in Triton's CPU interpreter, said up front, with a smaller key to pick.

The interpreter runs every program of the grid in Python over numpy, so a candidate's time grows with the
elements its tensors hold: about 5 µs per element on a small x86 server core (measured on the layer norm
example at three sizes, 3-5 µs). A GPU-size key (tens of millions of elements) then takes minutes per
candidate and hours per workload; this estimate lets the command say so before it starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.workload import Workload

#: Seconds per tensor element per candidate in the interpreter (a deliberately round, rough figure).
SECONDS_PER_ELEMENT = 5e-6
#: An estimate above this many seconds is announced before the work starts.
ANNOUNCE_ABOVE_S = 120.0


@dataclass(frozen=True)
class KeyEstimate:
    """The interpreter's rough cost of one workload at one key."""

    workload: str
    key: Mapping[str, Any]
    elements: int
    candidates: int

    @property
    def seconds(self) -> float:
        return self.elements * self.candidates * SECONDS_PER_ELEMENT


def tensor_elements(args: Sequence[Any]) -> int:
    import torch

    return sum(a.numel() for a in args if isinstance(a, torch.Tensor))


def estimate(workload: Workload, keys: Sequence[Mapping[str, Any]]) -> list[KeyEstimate]:
    """One estimate per key, from the elements ``args(key, "cpu")`` makes (built once, then freed)."""
    n = len(workload.candidates())
    out = []
    for key in keys:
        args = workload.make_args(key, "cpu")
        out.append(KeyEstimate(workload.name, dict(key), tensor_elements(args), n))
        del args
    return out


def _duration(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} minutes"
    return f"{s / 3600:.1f} hours"


def announcement(est: KeyEstimate, smaller: Sequence[str]) -> str:
    """One line: the rough duration, and how to check a smaller key instead."""
    key = ",".join(f"{k}={v}" for k, v in est.key.items())
    names = ",".join(f"{k}=<smaller>" for k in est.key)
    hint = f"--workload {smaller[0]}" if smaller else f"--key {names}"
    return (
        f"{est.workload} at {key}: {est.candidates} candidates on {est.elements:,} tensor elements in Triton's "
        f"CPU interpreter will take roughly {_duration(est.seconds)} (~{SECONDS_PER_ELEMENT * 1e6:.0f} µs per "
        f"element per candidate); for a quick check pick a smaller key: {hint}"
    )


def announcements(workloads: Sequence[Workload], keys: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """A line for each workload and key whose estimate exceeds :data:`ANNOUNCE_ABOVE_S`."""
    ests = {w.name: estimate(w, list(keys) if keys is not None else list(w.keys)) for w in workloads}
    slowest = {name: max((e.seconds for e in es), default=0.0) for name, es in ests.items()}
    lines = []
    for w in workloads:
        for e in ests[w.name]:
            if e.seconds <= ANNOUNCE_ABOVE_S:
                continue
            smaller = [
                x.name for x in workloads
                if x.name != w.name and x.kernel is w.kernel and slowest[x.name] <= ANNOUNCE_ABOVE_S
            ]
            lines.append(announcement(e, smaller))
    return lines
