"""What tritune needs to know about a ``@triton.jit`` kernel, read without a GPU."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

from tritune.errors import WorkloadError


def unwrap_jit(kernel: Any) -> Any:
    """The innermost ``JITFunction`` under any ``triton.autotune``/``heuristics``/tritune wrappers."""
    from triton.runtime.jit import JITFunction

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        InterpretedFunction = JITFunction  # type: ignore[assignment,misc]
    seen = 0
    fn = kernel
    while not isinstance(fn, (JITFunction, InterpretedFunction)):
        inner = getattr(fn, "fn", None)
        if inner is None or seen > 16:
            raise WorkloadError(
                f"{getattr(kernel, '__name__', kernel)!r} is not a @triton.jit kernel: decorate it with @triton.jit"
            )
        fn = inner
        seen += 1
    return fn


@dataclass(frozen=True)
class KernelInfo:
    """The kernel's name, argument names, which are ``tl.constexpr``, and a hash of its source.

    ``source_hash`` covers the kernel and every jitted function it calls (Triton's own
    dependency hash), so editing a helper also starts a fresh tuning.
    """

    name: str
    arg_names: tuple[str, ...]
    constexprs: frozenset[str]
    defaults: tuple[tuple[str, Any], ...]
    source_hash: str

    @classmethod
    def of(cls, kernel: Any) -> KernelInfo:
        fn = as_jit(kernel)
        params = fn.params
        constexprs = frozenset(p.name for p in params if p.is_constexpr)
        defaults = tuple((p.name, p.default) for p in params if p.has_default)
        try:
            src_hash = str(fn.cache_key)
        except Exception:  # dependency resolution can fail on exotic globals; fall back to the source text
            src_hash = hashlib.sha256(fn.src.encode()).hexdigest()
        return cls(
            name=getattr(fn, "__name__", "kernel"),
            arg_names=tuple(fn.arg_names),
            constexprs=constexprs,
            defaults=defaults,
            source_hash=src_hash,
        )

    @property
    def runtime_args(self) -> tuple[str, ...]:
        return tuple(a for a in self.arg_names if a not in self.constexprs)


# Keyed by id() and holding the original too, so that a freed function's id, once reused, cannot hit.
_JIT_MEMO: dict[int, tuple[Any, Any]] = {}
_INTERP_MEMO: dict[int, tuple[Any, Any]] = {}
_WRAP_MEMO: dict[int, tuple[Any, Any]] = {}


def _rebind(fn: Any, convert: Any, memo: dict[int, tuple[Any, Any]], make: Any) -> Any:
    """A copy of the Python function ``fn`` whose referenced jitted globals are converted by ``convert``."""
    import types

    hit = memo.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    new_globals = dict(fn.__globals__)
    for name in fn.__code__.co_names:
        val = new_globals.get(name)
        if val is not None and hasattr(val, "fn") and callable(getattr(val, "fn", None)):
            conv = convert(val)
            if conv is not None:
                new_globals[name] = conv
    clone = types.FunctionType(fn.__code__, new_globals, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__annotations__ = dict(getattr(fn, "__annotations__", {}))
    clone.__qualname__ = fn.__qualname__
    clone.__module__ = fn.__module__
    clone.__doc__ = fn.__doc__
    clone.__dict__.update(fn.__dict__)
    out = make(clone)
    memo[id(fn)] = (fn, out)
    return out


def as_jit(kernel: Any) -> Any:
    """A real ``JITFunction`` for ``kernel``, even when it was made under ``TRITON_INTERPRET=1``.

    The compiler needs JITFunctions all the way down; the interpreter needs InterpretedFunctions.
    A kernel defined in interpreter mode is rebuilt from its Python source with its jitted callees
    converted too, so one workload file can be both compiled for a target and run on the CPU.
    """
    from triton.runtime.jit import JITFunction

    if isinstance(kernel, JITFunction):
        return kernel
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        InterpretedFunction = ()  # type: ignore[assignment,misc]
    if isinstance(kernel, InterpretedFunction):
        opts = {k: v for k, v in getattr(kernel, "kwargs", {}).items() if v is not None}

        def convert(v: Any) -> Any:
            if isinstance(v, (InterpretedFunction, JITFunction)):
                return as_jit(v)
            return None

        return _rebind(kernel.fn, convert, _JIT_MEMO, lambda f: JITFunction(f, **opts))
    return as_jit(unwrap_jit(kernel))


@functools.cache
def interpreted_kernel_class() -> type:
    """``InterpretedFunction`` whose launches run with triton.language's own helpers interpreted too.

    Triton picks JITFunction or InterpretedFunction when ``@triton.jit`` runs, so when ``TRITON_INTERPRET``
    is set after triton is imported (as the CLI does), ``tl.cdiv``, ``tl.sum``... stay JITFunctions,
    which refuse to be called from an interpreted kernel. ``run`` (what ``kernel[grid](...)`` calls)
    launches inside :func:`tritune.screen.langguard.interpreter_language`, which swaps them for
    interpreted copies for the launch only; device calls (``__call__``) are left as Triton made them.
    """
    from triton.runtime.interpreter import InterpretedFunction

    class InterpretedKernel(InterpretedFunction):
        def run(self, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
            from tritune.screen.langguard import interpreter_language

            with interpreter_language():
                return super().run(*args, grid=grid, warmup=warmup, **kwargs)

    InterpretedKernel.__qualname__ = "InterpretedKernel"
    return InterpretedKernel


def as_interpreted(kernel: Any) -> Any:
    """An ``InterpretedFunction`` for ``kernel`` (the inverse of :func:`as_jit`), to run on the CPU.

    It is an :func:`interpreted_kernel_class`, so it runs whether or not triton was imported under
    ``TRITON_INTERPRET=1``.
    """
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    cls = interpreted_kernel_class()
    if not isinstance(kernel, (JITFunction, InterpretedFunction)):
        kernel = unwrap_jit(kernel)
    if isinstance(kernel, cls):
        return kernel
    if isinstance(kernel, InterpretedFunction):
        hit = _WRAP_MEMO.get(id(kernel))
        if hit is not None and hit[0] is kernel:
            return hit[1]
        wrapped = cls(kernel.fn, **kernel.kwargs)
        wrapped.pre_run_hooks = kernel.pre_run_hooks  # shared: hooks added to either one apply to both
        _WRAP_MEMO[id(kernel)] = (kernel, wrapped)
        return wrapped

    def convert(v: Any) -> Any:
        if isinstance(v, JITFunction):
            return as_interpreted(v)
        return None  # an InterpretedFunction callee is already what the interpreter calls

    opts: dict[str, Any] = {}
    for name in ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline"):
        val = getattr(kernel, name, None)
        if val:
            opts[name] = val
    return _rebind(kernel.fn, convert, _INTERP_MEMO, lambda f: cls(f, **opts))
