"""Measurement policies: time a kernel the way it will run.

Below about 20 us, how a kernel is timed decides its winner: with L2 flushed before each
launch an RMSNorm takes ~5 us, back-to-back with its data still in L2 ~1.8 us, and the best config is
not the same. So the way of timing is a value the user chooses, and it is part of the tuning key:

* ``cold``: L2 flushed before every launch (what ``triton.testing.do_bench`` does). For kernels that
  run eagerly on data that was not just touched. **The default** (see :data:`DEFAULT_POLICY`); every
  key and landscape written before policies existed was measured this way and reads back as ``cold``.
* ``warm``: back-to-back launches, no flush: the inputs stay in L2 from one launch to the next.
* ``graph``: the kernel captured in a CUDA graph, as it will be replayed (decode steps in a server),
  warm L2, launch overhead excluded as the graph excludes it.

Resolution of short kernels is the timer's business, under every policy (see
:func:`launches_per_sample`): when the timer's own warm-up estimate of one launch is below
:data:`SHORT_KERNEL_MS`, one sample batches many launches in a CUDA graph, keeping the policy's cache
state (for ``cold``, each launch preceded by its flush, with a second graph of the flushes alone timed
and subtracted). The graph holds about ``graph_ms`` of kernel time, sized from the kernel's own GPU time
(the warm-up hides Python's launch cost behind a GPU spin), so the replay's fixed cost weighs the same on
every config.

A policy is chosen, most specific first: per run (``measure=`` of a call or ``tritune tune --measure``),
per kernel (``@tritune.autotune(measure=...)``), then the environment variable :data:`ENV_VAR`
(``TRITUNE_MEASURE=warm``), then :data:`DEFAULT_POLICY` (:func:`resolve_policy`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from enum import Enum

from tritune.errors import ConfigError

#: The environment variable that sets the policy when neither the run nor the kernel does.
ENV_VAR = "TRITUNE_MEASURE"

#: One launch shorter than this (the timer's warm-up estimate, ms) is batched: a CUDA event pair
#: resolves about 0.5 us and a sample jitters by about as much, which is 1% of 50 us.
SHORT_KERNEL_MS = 0.05

#: How much kernel time one batched sample aims to hold (ms): 100x the event resolution.
BATCH_SAMPLE_MS = 0.05

#: Most launches one sample may hold (bounds graph capture time and memory).
MAX_LAUNCHES_PER_SAMPLE = 1000


class MeasurePolicy(str, Enum):
    """How a kernel is timed; its ``value`` is what keys, results and landscapes record."""

    COLD = "cold"
    WARM = "warm"
    GRAPH = "graph"
    #: Not a way to time a candidate but where its times came from: the program's own calls while it served
    #: (``incremental=True``). Only the serving mode records and reads keys of this policy, so a later tuning
    #: under a timer's policy never takes those times for its own.
    SERVED = "served"

    @property
    def timed(self) -> bool:
        """Whether a timer can measure under this policy (every policy but ``served``)."""
        return self is not MeasurePolicy.SERVED

    @property
    def flush_l2(self) -> bool:
        """Whether L2 is flushed before each launch."""
        return self is MeasurePolicy.COLD

    @property
    def graph(self) -> bool:
        """Whether every sample is a CUDA graph replay, whatever the kernel's length."""
        return self is MeasurePolicy.GRAPH

    @property
    def describe(self) -> str:
        return _DESCRIPTIONS[self]

    @classmethod
    def parse(cls, value: MeasurePolicy | str, *, where: str = "measure") -> MeasurePolicy:
        """The policy named ``value`` (case-insensitive); a clear ConfigError naming ``where`` otherwise."""
        if isinstance(value, MeasurePolicy):
            return value
        if isinstance(value, str):
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        names = ", ".join(repr(p.value) for p in cls if p.timed)
        raise ConfigError(f"{where}={value!r} is not a measurement policy; use one of {names}")

    def __str__(self) -> str:
        return self.value


_DESCRIPTIONS: Mapping[MeasurePolicy, str] = {
    MeasurePolicy.COLD: "L2 flushed before each launch (eager, cold data)",
    MeasurePolicy.WARM: "back-to-back launches, L2 warm (eager, data just touched)",
    MeasurePolicy.GRAPH: "replayed from a CUDA graph, L2 warm (as in a captured decode step)",
    MeasurePolicy.SERVED: "timed on the program's own calls while it served (incremental mode)",
}

#: The policy when nothing chooses one, and the policy of every key and landscape that records none.
#: ``cold``, by measurement (``benchmarks/short_kernels.py`` on the H200, docs/policy.md): a cold winner run
#: warm or in a graph cost at most 1.07x, a warm or graph winner run cold up to 1.14x, so cold loses least
#: when the deployment is unknown; it is also what ``triton.autotune`` measures and what old keys were.
DEFAULT_POLICY = MeasurePolicy.COLD


def resolve_policy(
    run: MeasurePolicy | str | None = None,
    kernel: MeasurePolicy | str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    kernel_name: str = "kernel",
) -> MeasurePolicy:
    """The policy in force: the run's, else the kernel's, else ``$TRITUNE_MEASURE``, else the default.

    A bad name raises ConfigError naming the kernel, where the name came from and the valid names.
    """
    if run is not None:
        return MeasurePolicy.parse(run, where=f"{kernel_name}: measure (this run)")
    if kernel is not None:
        return MeasurePolicy.parse(kernel, where=f"{kernel_name}: @autotune(measure=...)")
    env = os.environ if environ is None else environ
    text = env.get(ENV_VAR, "").strip()
    if text:
        return MeasurePolicy.parse(text, where=f"{kernel_name}: ${ENV_VAR}")
    return DEFAULT_POLICY


def launches_per_sample(
    est_ms: float,
    *,
    short_ms: float = SHORT_KERNEL_MS,
    sample_ms: float = BATCH_SAMPLE_MS,
    max_launches: int = MAX_LAUNCHES_PER_SAMPLE,
) -> int:
    """How many launches one sample batches, from the timer's estimate of one launch (``est_ms``).

    1 for a kernel of at least ``short_ms``; otherwise enough launches to hold ``sample_ms`` of kernel
    time, at least 2 and at most ``max_launches``. A non-positive or non-finite estimate (a kernel too
    short for the warm-up loop to see) gets ``max_launches``.
    """
    if short_ms <= 0 or sample_ms <= 0 or max_launches < 1:
        raise ValueError("short_ms and sample_ms must be positive and max_launches >= 1")
    if not math.isfinite(est_ms) or est_ms <= 0:
        return max_launches
    if est_ms >= short_ms:
        return 1
    return max(min(2, max_launches), min(max_launches, math.ceil(sample_ms / est_ms)))
