"""How a key is tuned: :class:`TuneOptions`, the one options object that the decorator, ``tritune tune``, the ranks
of a group and serving pass to the engine, each field with one name and one meaning all the way down."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tritune.engine.plan import SearchPlan, plan
from tritune.engine.race import RaceOptions
from tritune.errors import ConfigError
from tritune.measure import MeasurePolicy, resolve_policy


@dataclass(frozen=True)
class TuneOptions:
    """How to tune a key. Every field is checked when the options are made, so a bad value fails at decoration
    (or on the command line), not at a kernel's first call.

    * ``search``: ``None`` or ``"auto"`` races every legal config of a space of at most 512 and searches a larger
      one; ``"exhaustive"`` always races every legal config; a strategy name (``"surrogate"``, ``"random"``, ...,
      with options as ``"surrogate:probe=1"``) always searches. ``$TRITUNE_SEARCH`` decides when ``None``.
    * ``budget``: a searched key's budget: a share of the legal configs (``"5%"``, ``0.05``), a count (``200``),
      seconds (``"90s"``) or both (``"5%+2m"``); what the store holds for the key counts. ``None``: 5% of the legal
      configs, at least 64, at most 256 (a quarter of that when tuned neighbouring keys seed the search).
    * ``measure``: how candidates are timed, ``"cold"`` (L2 flushed before every launch), ``"warm"`` or
      ``"graph"``; part of the store key. ``None``: ``$TRITUNE_MEASURE``, else cold.
    * ``jobs``: compile worker processes (``None``: this machine's cores, shared among a torchrun job's local
      ranks). ``compile_timeout``: seconds a worker may spend on one config (``None``: no limit).
    * ``race``: the race's budgets and stopping rule (:class:`~tritune.engine.race.RaceOptions`).
    * ``sweep``: time every legal candidate to completion instead of racing (no search).
    * ``retime_finalists``: over ranks, rank 0 re-times the ranks' finalists on its own GPU (two GPUs of one model
      time the same kernel a few percent apart).
    * ``precompile``: compile the candidates in worker processes ahead of their first load (``False``: the JIT
      compiles each at its load, in this process).
    * ``numerics``: ``"any"`` lets the fastest config win; ``"exact"`` lets only the configs that compute the
      reference config's bits (the first legal config's, on the call's inputs and perturbed copies of them) win,
      so tuning never changes a result. ``None``: ``$TRITUNE_NUMERICS``, else ``"any"``. Part of the store key.
    """

    search: str | None = None
    budget: Any = None
    measure: str | None = None
    jobs: int | None = None
    compile_timeout: float | None = 60.0
    race: RaceOptions = field(default_factory=RaceOptions)
    sweep: bool = False
    retime_finalists: bool = True
    precompile: bool = True
    numerics: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "numerics", resolve_numerics(self.numerics))
        if self.jobs is not None and (isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1):
            raise ConfigError(f"jobs={self.jobs!r} must be a positive number of compile worker processes")
        t = self.compile_timeout
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0):
            raise ConfigError(f"compile_timeout={t!r} must be a positive, finite number of seconds (or None)")
        if not isinstance(self.race, RaceOptions):
            raise ConfigError(f"race={self.race!r} must be a tritune.RaceOptions")
        if self.sweep and (self.search not in (None, "auto", "exhaustive") or self.budget is not None):
            raise ConfigError("sweep=True times every legal config to completion; it takes no search or budget")
        if self.measure is not None and not MeasurePolicy.parse(self.measure, where="measure").timed:
            raise ConfigError(f"measure={self.measure!r} is not a way to time candidates; use 'cold', 'warm' or 'graph'")
        plan(self.search, self.budget, 0)  # a bad strategy name or budget fails here

    def policy(self, kernel_name: str = "kernel") -> MeasurePolicy:
        """The measurement policy in force for ``kernel_name``: ``measure``, else ``$TRITUNE_MEASURE``, else cold."""
        return resolve_policy(kernel=self.measure, kernel_name=kernel_name)

    def plan(self, n_legal: int, *, where: str = "", widened: bool = False) -> SearchPlan | None:
        """How to search ``n_legal`` legal configs, or None to race (or sweep) every one (:func:`plan`)."""
        return None if self.sweep else plan(self.search, self.budget, n_legal, where=where, widened=widened)


#: The environment variable that sets ``numerics`` when the kernel or run does not.
NUMERICS_ENV = "TRITUNE_NUMERICS"


def resolve_numerics(value: str | None) -> str:
    """``value``, else ``$TRITUNE_NUMERICS``, else ``"any"``; a ConfigError names the choices."""
    import os

    from tritune.store.keys import NUMERICS

    v = value if value is not None else (os.environ.get(NUMERICS_ENV, "").strip().lower() or "any")
    if v not in NUMERICS:
        where = "numerics" if value is not None else f"${NUMERICS_ENV}"
        raise ConfigError(f"{where}={v!r}: use one of {', '.join(repr(n) for n in NUMERICS)}")
    return v
