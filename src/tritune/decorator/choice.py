"""What a key dispatches to (:class:`Choice`) and the decorator's warnings."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tritune.config import Config
from tritune.errors import ConfigError

ON_NO_GPU = ("warn", "error")


class UntunedWarning(UserWarning):
    """A kernel ran a config that was not timed, because no GPU can time it here."""


class PretunedIgnoredWarning(UserWarning):
    """A pretuned winner was not served because this call's pruned, legal candidates do not include it."""


@dataclass(frozen=True)
class Choice:
    """The config a key dispatches to, and how it was chosen:

    * ``timed``: raced on the GPU by tritune's engine; ``store``, ``pretuned``: a winner tritune timed before;
    * ``benched``: timed by the kernel's own benchmark, Triton's loop (a ``do_bench`` given to the decorator, or a
      replaced ``Autotuner._bench``: once per config, the smallest time wins);
    * ``autotune-file``: read from Triton's ``*.autotune.json`` (``cache_results=True``);
    * ``untuned``: no GPU, the first config that passed the checks made before launch, nothing measured;
      ``replayed``: recorded timings replayed by a test timer, not a measurement;
    * ``user``: an entry of ``kernel.cache`` (set by the caller, or left there by an earlier choice);
    * ``library``: picked by a library's own loop over ``_bench`` (FlagGems' ``LibTuner``), each config timed and
      checked by tritune, the pick read from ``kernel.cache``;
    * ``only``: the kernel has one config; ``pruned``: ``prune_configs_by`` left one. As under Triton, neither is
      timed;
    * ``pinned``: a pinned run's rule for a key its table does not hold (the first legal config); ``sensitivity``:
      drawn by sensitivity mode's seed.
    """

    config: Config
    source: str
    detail: str = ""
    #: How the choice was made, when it was timed: seconds spent per phase (precompile, load, race) and
    #: the race's summary (stop, rounds, measurements, device seconds). Not part of equality.
    stats: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    #: Milliseconds of every config this choice measured: the median, then the 20th and 80th percentiles (the
    #: quantiles Triton's autotuner asks of ``do_bench``). Not part of equality.
    timings: Mapping[Config, list[float]] | None = field(default=None, compare=False, repr=False)
    #: The config object the caller sees (``best_config``, the value in ``kernel.cache``): the one given in
    #: ``configs``, returned by a pruner, or put in ``kernel.cache``; None where the kernel has none for it yet.
    original: Any = field(default=None, compare=False, repr=False)

    @property
    def tuned(self) -> bool:
        return self.source in ("timed", "store", "pretuned", "benched", "library", "autotune-file")


def resolve_on_no_gpu(value: str | None) -> str:
    v = (value or os.environ.get("TRITUNE_ON_NO_GPU") or "warn").lower()
    if v not in ON_NO_GPU:
        raise ConfigError(f"on_no_gpu={v!r}: expected one of {', '.join(ON_NO_GPU)} (or TRITUNE_ON_NO_GPU)")
    return v
