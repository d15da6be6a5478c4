"""Triton's benchmark loop, for a kernel that times its own configs.

:func:`bench_each` is ``{config: self._bench(*args, config=config, **kwargs)}`` over the pruned configs in order, as
Triton's ``Autotuner.run`` runs it, for a kernel that benchmarks itself: it was given a ``do_bench`` (which ``_bench``
calls once per config, as ``do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))``), or its ``_bench`` was replaced (a
tool that wraps ``Autotuner._bench`` at class level sees every config, and what it returns is what the choice uses).
:func:`fastest` picks the smallest value, the first of equal ones (``min`` over the dict, as Triton).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any


def bench_each(tuned: Any, args: Sequence[Any], configs: Sequence[Any], meta: Mapping[str, Any]) -> dict[Any, Any]:
    """Triton's benchmark loop (module docstring): each config's ``tuned._bench`` result, keyed by the config."""
    return {config: tuned._bench(*args, config=config, **meta) for config in configs}


def fastest(timings: Mapping[Any, Any]) -> Any:
    """The config with the smallest timing, the first of equal ones (Triton's ``min(timings, key=timings.get)``)."""
    return builtins.min(timings, key=timings.get)  # type: ignore[arg-type]
