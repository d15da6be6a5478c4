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


def _current_device(triton_default: Callable[[], int]) -> Callable[[], int]:
    """torch's raw current-device query: ``torch.cuda.current_device`` (Triton's) also re-checks lazy CUDA
    initialization on every call, which a launcher built from a loaded binary no longer needs."""
    try:
        import torch

        raw = torch._C._cuda_getDevice
        return raw if callable(raw) else triton_default
    except (ImportError, AttributeError):  # pragma: no cover
        return triton_default


class FastLauncher:
    """One compiled (kernel, config, specialization), launchable with positional runtime arguments."""

    __slots__ = ("_device", "_knobs", "_stream", "arg_names", "function", "kernel", "launch", "meta", "n_pos", "packed",
                 "run", "tail")

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
        self._device = _current_device(driver.active.get_current_device)
        self._stream = driver.active.get_current_stream
        self._knobs = knobs.runtime
        self.launch = self._generate()

    def __call__(self, args: Sequence[Any], grid: Any) -> Any:
        return self.launch(args, grid)

    def _generate(self) -> Callable[[Sequence[Any], Any], Any]:
        """The per-call code, generated for this kernel's arity (as Triton generates its binder): the grid's
        meta dict as one literal, the launch's arguments spelled out, no loops or tuple building."""
        n = self.n_pos
        pos = [f"a{i}" for i in range(n)]
        tail = [f"t{i}" for i in range(len(self.tail))]
        full = ", ".join(pos + tail)
        meta = ", ".join(f"{name!r}: {v}" for name, v in zip(self.arg_names, pos + tail))
        env: dict[str, Any] = {f"t{i}": v for i, v in enumerate(self.tail)}
        env.update(kernel=self.kernel, run=self.run, function=self.function, packed=self.packed,
                   knobs=self._knobs, device=self._device, stream_of=self._stream)
        src = (
            "def launch(args, grid):\n"
            + (f"    {''.join(p + ', ' for p in pos)}= args\n" if n else "")
            + f"    if callable(grid):\n        grid = grid({{{meta}}})\n"
            "    n = len(grid)\n"
            "    stream = stream_of(device())\n"
            # Triton >= 3.5 keeps hooks in a HookChain that is never None; an empty chain is no hook at all,
            # and skipping it also skips building the launch metadata that only hooks read.
            "    enter = knobs.launch_enter_hook\n"
            "    if enter is not None and getattr(enter, 'calls', True):\n"
            f"        lm = kernel.launch_metadata(grid, stream, {full})\n"
            "    else:\n        enter = lm = None\n"
            "    leave = knobs.launch_exit_hook\n"
            "    if leave is not None and not getattr(leave, 'calls', True):\n        leave = None\n"
            "    run(grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1, stream, function, packed, lm, "
            f"enter, leave, {full})\n"
            "    return kernel\n"
        )
        exec(compile(src, f"<tritune launch {self.kernel.name if hasattr(self.kernel, 'name') else ''}>", "exec"), env)
        fn: Callable[[Sequence[Any], Any], Any] = env["launch"]
        return fn


def make_fast(jit: Any, cfg: Config, args: Sequence[Any], defaults: dict[str, Any]) -> FastLauncher | None:
    """A FastLauncher, or None where this call shape cannot use one (it then takes Triton's path)."""
    if cfg.pre_hook is not None:
        return None
    try:
        return FastLauncher(jit, cfg, args, defaults)
    except TypeError:
        return None
