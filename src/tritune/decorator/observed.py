"""What Triton's ``Autotuner.run`` lets a caller see of a new key, reproduced around tritune's tuning.

* :func:`bench_each`: Triton's benchmark loop, ``{config: self._bench(*args, config=config, **kwargs)}`` over the
  pruned configs in order, for a kernel that benchmarks itself: it was given a ``do_bench`` (which ``_bench`` calls
  once per config, as ``do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))``), or its ``_bench`` was replaced (a tool
  that wraps ``Autotuner._bench`` at class level sees every config, and what it returns is what the choice uses).
  The smallest value wins, the first of equal ones (``min`` over the dict, as Triton).
* :func:`print_trying` and :func:`print_summary`: the lines ``TRITON_PRINT_AUTOTUNING=1`` (``knobs.autotuning.print``)
  makes Triton print, word for word, on stdout; tritune adds one line of its own on stderr (how the config was
  chosen), so that output compared with Triton's is unchanged.
* :func:`notify_listener`: ``knobs.autotuning.listener`` (Triton 3.7 and later), called with Triton's keywords.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from triton import knobs

from tritune.adapters.kernel import unwrap_jit
from tritune.decorator.choice import Choice


def printing() -> bool:
    """Whether Triton prints its autotuning lines (``TRITON_PRINT_AUTOTUNING``, read on every access as Triton does)."""
    return bool(knobs.autotuning.print)


def print_trying(kernel_name: str, config: Any) -> None:
    """Triton's line for one config about to be benchmarked (``Autotuner._bench``)."""
    print(f"Autotuning kernel {kernel_name} with config {config}")


def print_summary(kernel_name: str, key: tuple[Any, ...], seconds: float, best: Any, choice: Choice) -> None:
    """Triton's summary of a new key (``Autotuner.run``), then tritune's line on stderr."""
    print(f"Triton autotuning for function {kernel_name},\nwith key as {key},\n"
          f"finished after {seconds:.2f}s,\nbest config selected: {best};")  # fmt: skip
    how = f"{choice.source}: {choice.detail}" if choice.detail else choice.source
    print(f"tritune: {kernel_name} key {key}: {choice.config.id} ({how})", file=sys.stderr)


def bench_each(tuned: Any, args: Sequence[Any], configs: Sequence[Any], meta: Mapping[str, Any]) -> dict[Any, Any]:
    """Triton's benchmark loop (module docstring): each config's ``tuned._bench`` result, keyed by the config."""
    return {config: tuned._bench(*args, config=config, **meta) for config in configs}


def fastest(timings: Mapping[Any, Any]) -> Any:
    """The config with the smallest timing, the first of equal ones (Triton's ``min(timings, key=timings.get)``)."""
    return builtins.min(timings, key=timings.get)  # type: ignore[arg-type]


def notify_listener(tuned: Any, key: tuple[Any, ...], best: Any, timings: Mapping[Any, Any], duration: float | None,
                    cache_hit: bool) -> None:  # fmt: skip
    """Call ``knobs.autotuning.listener`` as Triton does after a new key with two configs or more: ``fn`` the
    kernel's own jitted function, ``key`` Triton's key, ``best_config`` the chosen config object,
    ``configs_timings`` config -> timing, ``duration`` the tuning's seconds (None on a cache hit)."""
    listener = getattr(knobs.autotuning, "listener", None)
    if listener is None:
        return
    listener(fn=unwrap_jit(tuned.fn), key=key, best_config=best, configs_timings=timings, duration=duration,
             cache_hit=cache_hit)  # fmt: skip
