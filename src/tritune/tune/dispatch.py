"""Fast dispatch of a cached winner: launch the compiled kernel directly.

Triton's launch path binds every argument, recomputes its specialization and cache key, and looks the
binary up on every call; ``triton.autotune`` adds its own binding on top. For a cached key tritune
already knows the binary, so a :class:`FastLauncher` keeps it and, per call, only re-checks the facts
the binary was specialized on (16-byte alignment of each pointer; for each int: equal to 1, divisible
by 16, fits in 32 bits). A call that differs in any of them goes through Triton's own path, which
compiles the right variant; that variant then gets its own launcher.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tritune.config import Config

_I32 = (-(2**31), 2**31)


def specialization(args: Sequence[Any]) -> tuple[Any, ...]:
    """The facts about ``args`` that select a Triton binary (beyond dtypes, which are part of the key)."""
    out: list[Any] = []
    for a in args:
        dp = getattr(a, "data_ptr", None)
        if dp is not None:
            out.append(dp() % 16 == 0)
        elif type(a) is int:
            out.append((a == 1, a % 16 == 0, _I32[0] <= a < _I32[1]))
        else:
            out.append(type(a))
    return tuple(out)




class FastLauncher:
    """One compiled (kernel, config, specialization), launchable with positional runtime arguments."""

    __slots__ = ("_device", "_knobs", "_stream", "arg_names", "function", "kernel", "meta", "n_pos", "packed", "run",
                 "tail")

    def __init__(self, jit: Any, cfg: Config, args: Sequence[Any], defaults: dict[str, Any]) -> None:
        from triton import knobs
        from triton.runtime import driver

        names = list(jit.arg_names)
        self.n_pos = len(args)
        tail = []
        for name in names[self.n_pos :]:
            if name in cfg.kwargs:
                tail.append(cfg.kwargs[name])
            elif name in defaults:
                tail.append(defaults[name])
            else:
                raise TypeError(f"{jit.__name__}: parameter {name} is neither passed, in the config, nor defaulted")
        self.tail = tuple(tail)
        self.arg_names = names
        kernel = jit.run(*args, grid=(1,), warmup=True, **cfg.kwargs, **cfg.launch_options())
        if hasattr(kernel, "result"):
            kernel = kernel.result()
        kernel._init_handles()
        self.kernel = kernel
        self.run = kernel.run
        self.function = kernel.function
        self.packed = kernel.packed_metadata
        self.meta = cfg.kwargs
        self._device = driver.active.get_current_device
        self._stream = driver.active.get_current_stream
        self._knobs = knobs.runtime

    def __call__(self, args: Sequence[Any], grid: Any) -> Any:
        full = (*args, *self.tail) if self.tail else tuple(args)
        if callable(grid):
            grid = grid(dict(zip(self.arg_names, full)))
        n = len(grid)
        stream = self._stream(self._device())
        enter = self._knobs.launch_enter_hook
        leave = self._knobs.launch_exit_hook
        # Triton >= 3.5 keeps hooks in a HookChain that is never None; an empty chain is no hook at all,
        # and skipping it also skips building the launch metadata that only hooks read.
        if enter is not None and getattr(enter, "calls", True):
            lm = self.kernel.launch_metadata(grid, stream, *full)
        else:
            enter, lm = None, None
        if leave is not None and not getattr(leave, "calls", True):
            leave = None
        self.run(grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1, stream, self.function, self.packed, lm,
                 enter, leave, *full)
        return self.kernel


def make_fast(jit: Any, cfg: Config, args: Sequence[Any], defaults: dict[str, Any]) -> FastLauncher | None:
    """A FastLauncher, or None where this call shape cannot use one (it then takes Triton's path)."""
    if cfg.pre_hook is not None:
        return None
    try:
        return FastLauncher(jit, cfg, args, defaults)
    except TypeError:
        return None


Launch = Callable[[Sequence[Any], Any], Any]
