"""Fast dispatch of a cached winner: launch the compiled kernel directly.

Triton's launch path binds every argument, recomputes its specialization and cache key, and looks the
binary up on every call; ``triton.autotune`` adds its own binding on top. For a cached key tritune
already knows the binary, so a :class:`FastLauncher` keeps it and, per call, only re-checks the facts
the binary was specialized on (16-byte alignment of each pointer; for each int: equal to 1, divisible
by 16, fits in 32 bits). A call that differs in any of them goes through Triton's own path, which
compiles the right variant; that variant then gets its own launcher.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


# sha256 of the source of ``CudaLauncher.__call__`` (Triton's NVIDIA driver) whose per-call work is known to be,
# for a kernel without global or profile scratch (and, in 3.9, without GSan): pass its own fixed values with
# the arguments to ``self.launch``. Launching through ``self.launch`` directly skips that Python frame (its
# nested scratch allocators, called to return None): ~1.5 us of a cached call on the H200 (profiled:
# 3 us of own time a call under cProfile). Any other source, or scratch, keeps the launcher's own path.
_KNOWN_LAUNCHERS = {
    "ead77febd3d441d4": "3.6",  # triton 3.6.0
    "4c93e15e00f89b49": "3.9",  # triton 3.9.0
}
_layouts: dict[type, str | None] = {}


def launcher_layout(run: Any) -> str | None:
    """``"3.6"`` or ``"3.9"`` where ``run`` (a compiled kernel's launcher) can be bypassed for ``run.launch``
    exactly as its ``__call__`` would call it, else None."""
    cls = type(run)
    if cls not in _layouts:
        import hashlib
        import inspect
        import textwrap

        try:
            src = textwrap.dedent(inspect.getsource(cls.__call__))  # type: ignore[operator]
            _layouts[cls] = _KNOWN_LAUNCHERS.get(hashlib.sha256(src.encode()).hexdigest()[:16])
        except (OSError, TypeError, AttributeError):
            _layouts[cls] = None
    layout = _layouts[cls]
    if layout is None:
        return None
    try:
        if run.global_scratch_size or run.profile_scratch_size or getattr(run, "gsan_enabled", False):
            return None
        run.launch, run.launch_cooperative_grid, run.launch_pdl  # noqa: B018
        if layout == "3.9":
            run.arg_annotations, run.kernel_signature  # noqa: B018
    except AttributeError:
        return None
    return layout


class FastLauncher:
    """One compiled (kernel, config, specialization), launchable with positional runtime arguments."""

    __slots__ = ("_device", "_knobs", "_stream", "arg_names", "function", "kernel", "launch", "n_pos", "packed", "run",
                 "tail")

    def __init__(self, jit: Any, cfg: Config, args: Sequence[Any], defaults: dict[str, Any],
                 consts: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        from triton import knobs
        from triton.runtime import driver

        names = list(jit.arg_names)
        self.n_pos = len(args)
        consts = consts or {}
        meta = {**cfg.kwargs, **consts}
        tail = []
        for name in names[self.n_pos :]:
            if name in meta:
                tail.append(meta[name])
            elif name in defaults:
                tail.append(defaults[name])
            else:
                raise TypeError(f"{jit.__name__}: parameter {name} is neither passed, in the config, nor defaulted")
        self.tail = tuple(tail)
        self.arg_names = names
        kernel = jit.run(*args, grid=(1,), warmup=True, **meta, **cfg.launch_options())
        if hasattr(kernel, "result"):
            kernel = kernel.result()
        kernel._init_handles()
        self.kernel = kernel
        self.run = kernel.run
        self.function = kernel.function
        self.packed = kernel.packed_metadata
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
        layout = launcher_layout(self.run)
        hooks = "lm, enter, leave"
        grid3 = "grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1"
        if layout == "3.6":  # CudaLauncher.__call__ of 3.6.0, for a kernel without scratch
            env.update(raw_launch=self.run.launch, coop=self.run.launch_cooperative_grid, pdl=self.run.launch_pdl)
            call = f"raw_launch({grid3}, stream, function, coop, pdl, None, None, packed, {hooks}, {full})"
        elif layout == "3.9":  # CudaLauncher.__call__ of 3.9.0, for a kernel without scratch or GSan
            env.update(raw_launch=self.run.launch, coop=self.run.launch_cooperative_grid, pdl=self.run.launch_pdl,
                       ann=self.run.arg_annotations, sig=self.run.kernel_signature)
            kernel_args = f"({full}{',' if full else ''})"
            call = f"raw_launch({grid3}, stream, function, coop, pdl, packed, {hooks}, None, None, ann, sig, {kernel_args})"
        else:
            call = f"run({grid3}, stream, function, packed, {hooks}, {full})"
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
            f"    {call}\n"
            "    return kernel\n"
        )
        exec(compile(src, f"<tritune launch {self.kernel.name if hasattr(self.kernel, 'name') else ''}>", "exec"), env)
        fn: Callable[[Sequence[Any], Any], Any] = env["launch"]
        return fn


def make_fast(jit: Any, cfg: Config, args: Sequence[Any], defaults: dict[str, Any],
              consts: Mapping[str, Any] | None = None) -> FastLauncher | None:  # fmt: skip
    """A FastLauncher (``consts``: parameters after the positional ones held as constants), or None where this
    call shape cannot use one (it then takes Triton's path)."""
    if cfg.pre_hook is not None:
        return None
    try:
        return FastLauncher(jit, cfg, args, defaults, consts)
    except TypeError:
        return None


Launch = Callable[[Sequence[Any], Any], Any]


def make_fast_const(jit: Any, cfg: Config, args: Sequence[Any], consts: Mapping[str, Any],
                    defaults: dict[str, Any]) -> Launch | None:  # fmt: skip
    """A positional launcher for calls whose keyword arguments are constants of the launcher: the values
    ``@triton.heuristics`` adds under the decorator, which the caller keys its launchers by. No keyword dict is
    built or read per call (the launch of a :class:`FastLauncher` with the constants in its tail); None where a
    constant is not a parameter after the positional ones (a launch option, a duplicate): Triton's path."""
    rest = list(jit.arg_names)[len(args) :]
    if any(k not in rest for k in consts):
        return None
    fl = make_fast(jit, cfg, args, defaults, consts)
    return fl.launch if fl is not None else None


KwLaunch = Callable[[Sequence[Any], Mapping[str, Any], Any], Any]


def make_fast_kw(jit: Any, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any],
                 defaults: dict[str, Any]) -> KwLaunch | None:  # fmt: skip
    """A launcher for calls with keyword arguments (a meta-parameter such as ``ACTIVATION=`` or ``GROUP_M=``,
    the values ``@triton.heuristics`` adds over the decorator), or None where this call cannot use one.

    Every parameter after the positional ones is filled, in the kernel's order, from the call's keywords, the
    config, or the default; generated code passes them positionally to a :class:`FastLauncher` built for
    that full argument list. The caller's key says which keyword names and kinds this launcher serves.
    """
    if cfg.pre_hook is not None:
        return None
    return _make_fast_kw(jit, cfg, args, kwargs, defaults)


def _make_fast_kw(jit: Any, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any],
                  defaults: dict[str, Any]) -> KwLaunch | None:  # fmt: skip
    names = list(jit.arg_names)
    p = len(args)
    rest = names[p:]
    if any(k not in rest for k in kwargs):  # a launch option, a duplicate or an unknown name: Triton's path
        return None
    full: list[Any] = list(args)
    parts = [f"a{i}" for i in range(p)]
    env: dict[str, Any] = {}
    for j, name in enumerate(rest):
        if name in kwargs:
            full.append(kwargs[name])
            parts.append(f"kwargs[{name!r}]")
            continue
        if name in cfg.kwargs:
            value = cfg.kwargs[name]
        elif name in defaults:
            value = defaults[name]
        else:
            return None
        full.append(value)
        env[f"c{j}"] = value
        parts.append(f"c{j}")
    options_only = Config({}, num_warps=cfg.num_warps, num_stages=cfg.num_stages, num_ctas=cfg.num_ctas,
                          maxnreg=cfg.maxnreg)  # fmt: skip
    try:
        fl = FastLauncher(jit, options_only, full, defaults)
    except TypeError:
        return None
    env["launch"] = fl.launch
    unpack = "".join(f"a{i}, " for i in range(p))
    src = (
        "def launch_kw(args, kwargs, grid):\n"
        + (f"    {unpack}= args\n" if p else "")
        + f"    return launch(({''.join(x + ', ' for x in parts)}), grid)\n"
    )
    exec(compile(src, "<tritune launch_kw>", "exec"), env)
    fn: KwLaunch = env["launch_kw"]
    return fn


def is_descriptor(a: Any) -> bool:
    """A host ``TensorDescriptor`` (Triton's ``triton.tools.tensor_descriptor``, or one shaped like it)."""
    return hasattr(a, "block_shape") and getattr(getattr(a, "base", None), "data_ptr", None) is not None


def descriptor_fact(a: Any) -> tuple[Any, ...]:
    """What selects Triton's binary for a host ``TensorDescriptor``: its base's dtype, block shape, padding
    and tf32 rounding (Triton specializes ``tensordesc<dtype[block]>``; shape and strides are runtime values)."""
    return (type(a), a.base.dtype, tuple(a.block_shape), getattr(a, "padding", None),
            bool(getattr(a, "round_f32_to_tf32", False)))  # fmt: skip


def make_fast_hooked(jit: Any, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any], defaults: dict[str, Any],
                     slow: KwLaunch) -> KwLaunch | None:  # fmt: skip
    """A launcher for a config with a ``pre_hook`` (Liger's SwiGLU MLP and Triton's tutorial 06 set host
    descriptors' block shapes there): per call, as ``triton.autotune`` does before the real launch, the hook
    gets the full argument dict (``{**args, **kwargs, **config kwargs, **launch options}``), then the binary
    launches with the caller's (possibly hook-changed) objects.

    The binary is built for the arguments as the hook leaves them, on copies (the caller's descriptors are
    not touched while building: :func:`tritune.engine.precompile.hooked_arguments`). After each call's hook
    the descriptors' facts are checked against the binary's; a call whose hook left other facts launches
    through ``slow(args, kwargs, grid)`` (Triton's path, hook already run), so the hook runs once per call.
    None where no fast launcher can be built.
    """
    from tritune.engine.precompile import hooked_arguments

    names = list(jit.arg_names)
    try:
        cargs, ckwargs = hooked_arguments(names, cfg, args, kwargs)
    except Exception:  # the hook raised on copies: Triton's path raises it on the real launch
        return None
    inner = _make_fast_kw(jit, cfg, cargs, ckwargs, defaults)
    if inner is None:
        return None
    checks = [(i, descriptor_fact(a)) for i, a in enumerate(cargs) if is_descriptor(a)]
    kw_checks = [(n, descriptor_fact(a)) for n, a in ckwargs.items() if is_descriptor(a)]
    hook, extra = cfg.pre_hook, {**cfg.kwargs, **cfg.launch_options()}
    assert hook is not None

    def launch_hooked(args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Any:
        full = dict(zip(names, args))
        if kwargs:
            full.update(kwargs)
        full.update(extra)
        hook(full)
        for i, fact in checks:
            if descriptor_fact(args[i]) != fact:
                return slow(args, kwargs, grid)
        for n, fact in kw_checks:
            if descriptor_fact(kwargs[n]) != fact:
                return slow(args, kwargs, grid)
        return inner(args, kwargs, grid)

    return launch_hooked
