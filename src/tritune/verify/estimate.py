"""How long a check in Triton's CPU interpreter will take: a run that would take minutes or hours stops before it
starts, in one line naming what to run instead; a run that turns out slower than estimated stops early.

The interpreter runs every program of the grid in Python over numpy, so a run's time grows with the elements
its tensors hold: about 5 µs per element on a small x86 server core (measured on the layer norm example at
three sizes, 3-5 µs). It ignores launch options, so configs that differ only in ``num_warps``, ``num_stages``,
``num_ctas`` or ``maxnreg`` share one run (:func:`tritune.verify.run.interpreted_alike`); every candidate still
gets its own legality check (the static rules and the compiler's front end, :data:`SECONDS_PER_CANDIDATE`). A
GPU-size key (tens of millions of elements) takes minutes per run and hours per workload.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.errors import TrituneError
from tritune.verify.run import interpreted_alike
from tritune.workload import Workload, output_tensor

#: Seconds per tensor element per run in the interpreter (a deliberately round, rough figure).
SECONDS_PER_ELEMENT = 5e-6
#: Seconds of each candidate besides its run's elements: its legality check (the static rules and the front end
#: for sm_90) took 0.033 s per candidate on a loaded 2-core x86 machine (the layer norm and matmul examples'
#: small workloads, 180 and 216 candidates); rounded up for the launch and the comparison.
SECONDS_PER_CANDIDATE = 0.05
#: A run estimated (before it starts) or projected (while it runs) to take longer than this stops, unless
#: the caller allows slow runs (``--allow-slow``).
LIMIT_S = 60.0
#: A run is projected from its own pace only after this many seconds, when the first, slower candidates
#: (imports, the first compile of the front end) weigh less.
PROJECT_AFTER_S = 10.0
#: A run stops when its own pace projects it past this many times :data:`LIMIT_S`: a run estimated near the
#: limit on a busy machine goes on; one the estimate got badly wrong stops within seconds.
STOP_FACTOR = 2.0


class TooSlowError(TrituneError, RuntimeError):
    """A check in Triton's CPU interpreter would take longer than :data:`LIMIT_S`; the message says what to run."""


@dataclass(frozen=True)
class KeyEstimate:
    """The interpreter's rough cost of one workload at one key."""

    workload: str
    key: Mapping[str, Any]
    elements: int
    candidates: int
    #: Distinct runs: candidates the interpreter runs alike count once.
    runs: int

    @property
    def seconds(self) -> float:
        return self.runs * self.elements * SECONDS_PER_ELEMENT + self.candidates * SECONDS_PER_CANDIDATE


def tensor_elements(args: Sequence[Any]) -> int:
    """The elements of the tensors among ``args``, a tensor descriptor's ``base`` included."""
    import torch

    return sum(t.numel() for t in (output_tensor(a) for a in args) if isinstance(t, torch.Tensor))


def estimate(workload: Workload, keys: Sequence[Mapping[str, Any]]) -> list[KeyEstimate]:
    """One estimate per key, from the elements ``args(key, "cpu")`` makes (built once, then freed)."""
    cands = workload.candidates()
    out = []
    for key in keys:
        args = workload.make_args(key, "cpu")
        elements = tensor_elements(args)
        del args
        groups = [interpreted_alike(workload, c, key) for c in cands]
        runs = len({g for g in groups if g is not None}) + sum(g is None for g in groups)
        out.append(KeyEstimate(workload.name, dict(key), elements, len(cands), runs))
    return out


def _duration(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} minutes"
    return f"{s / 3600:.1f} hours"


def _key_text(key: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in key.items())


def announcement(est: KeyEstimate, hint: str) -> str:
    """One line: the rough duration, and what to run instead."""
    return (
        f"{est.workload} at {_key_text(est.key)}: {est.candidates} candidates on {est.elements:,} tensor elements "
        f"in Triton's CPU interpreter will take roughly {_duration(est.seconds)} (~{SECONDS_PER_ELEMENT * 1e6:.0f} "
        f"µs per element per run); for a quick check {hint}"
    )


def _estimates(
    workloads: Sequence[Workload], keys: Sequence[Mapping[str, Any]] | None
) -> dict[str, list[KeyEstimate]]:
    return {w.name: estimate(w, list(keys) if keys is not None else list(w.keys)) for w in workloads}


def _hint(w: Workload, est: KeyEstimate, workloads: Sequence[Workload], ests: dict[str, list[KeyEstimate]],
          own_keys: bool) -> str:  # fmt: skip
    """What to run instead of ``w`` at ``est.key``: a quick workload of the same kernel, a quick key of ``w``'s
    own, a smaller key; or, when even a tiny key has too many candidates, a GPU or ``tritune screen``."""
    for x in workloads:
        xs = ests[x.name]
        if x.name != w.name and x.kernel is w.kernel and xs and all(e.seconds <= LIMIT_S for e in xs):
            return f"use --workload {x.name} (about {_duration(sum(e.seconds for e in xs))})"
    quick = [e for e in ests[w.name] if e.seconds <= LIMIT_S]
    if own_keys and quick:
        return f"use its key --key {_key_text(quick[0].key)} (about {_duration(quick[0].seconds)})"
    if est.candidates * SECONDS_PER_CANDIDATE > LIMIT_S / 2:
        return (f"check its {est.candidates} candidates on a GPU, or only their legality with tritune screen "
                "(no key is small enough for this many)")  # fmt: skip
    return "pick a smaller key: --key " + ",".join(f"{k}=<smaller>" for k in est.key)


def too_slow(workloads: Sequence[Workload], keys: Sequence[Mapping[str, Any]] | None) -> str | None:
    """``None`` when every workload at every key is estimated within :data:`LIMIT_S` in the interpreter; else one
    line naming the slowest, its rough duration and what to run instead."""
    ests = _estimates(workloads, keys)
    slow = [(w, e) for w in workloads for e in ests[w.name] if e.seconds > LIMIT_S]
    if not slow:
        return None
    w, worst = max(slow, key=lambda we: we[1].seconds)
    more = f" (and {len(slow) - 1} more keys of these workloads over {LIMIT_S:g} s)" if len(slow) > 1 else ""
    return (
        f"{worst.workload} at {_key_text(worst.key)}: {worst.candidates} candidates on {worst.elements:,} tensor "
        f"elements would take roughly {_duration(worst.seconds)} in Triton's CPU interpreter{more}; "
        f"{_hint(w, worst, workloads, ests, keys is None)}, or pass --allow-slow to run it anyway"
    )


def announcements(workloads: Sequence[Workload], keys: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """A line for each workload and key whose estimate exceeds :data:`LIMIT_S` (said before an allowed slow run)."""
    ests = _estimates(workloads, keys)
    return [
        announcement(e, _hint(w, e, workloads, ests, keys is None))
        for w in workloads
        for e in ests[w.name]
        if e.seconds > LIMIT_S
    ]


class RunClock:
    """Stops a check in the interpreter whose own pace projects it past ``limit_s``: after each candidate
    (:meth:`step`), once :data:`PROJECT_AFTER_S` have passed, the time so far plus the current key's remaining
    candidates at that key's pace so far; over the limit, :class:`TooSlowError` with one line. ``limit_s``:
    by default :data:`STOP_FACTOR` times :data:`LIMIT_S`."""

    def __init__(self, limit_s: float | None = None) -> None:
        self.limit_s = STOP_FACTOR * LIMIT_S if limit_s is None else limit_s
        self.t0 = time.monotonic()
        self._key_t0 = self.t0
        self._what = ""
        self._total = 0

    def start(self, workload: str, key: Mapping[str, Any], total: int) -> None:
        """A workload's key begins: ``total`` candidates."""
        self._key_t0 = time.monotonic()
        self._what = f"{workload} at {_key_text(key)}"
        self._total = total

    def step(self, done: int) -> None:
        """``done`` candidates of the current key are checked."""
        now = time.monotonic()
        spent = now - self.t0
        if spent < PROJECT_AFTER_S or done <= 0:
            return
        projected = spent + (now - self._key_t0) / done * max(0, self._total - done)
        if projected > self.limit_s:
            raise TooSlowError(
                f"{self._what}: stopped after {spent:.0f} s of {done} of {self._total} candidates, at a pace that "
                f"would take roughly {_duration(projected)} in Triton's CPU interpreter (over {self.limit_s:g} s); "
                "pick a smaller --key, or pass --allow-slow to run it anyway"
            )
