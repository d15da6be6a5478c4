"""What tritune needs to know about a ``@triton.jit`` kernel, read without a GPU."""

from __future__ import annotations

import hashlib
import sys
import threading
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tritune.errors import WorkloadError
from tritune.livescope import LiveGlobals, global_names


def _jitted_types() -> tuple[type, ...]:
    """``JITFunction``, and ``InterpretedFunction`` where Triton's interpreter is imported: without it no object is
    one, and importing it (10 ms) at a library's first decoration is a cost Triton itself never pays."""
    from triton.runtime.jit import JITFunction

    interpreter = sys.modules.get("triton.runtime.interpreter")
    fn_type = getattr(interpreter, "InterpretedFunction", None)
    return (JITFunction,) if fn_type is None else (JITFunction, fn_type)


def unwrap_jit(kernel: Any) -> Any:
    """The innermost ``JITFunction`` (or interpreted function) under any ``triton.autotune``/``heuristics``/tritune
    wrappers."""
    jitted = _jitted_types()
    seen = 0
    fn = kernel
    while not isinstance(fn, jitted):
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
    dependency hash), so editing a helper also starts a fresh tuning. It is computed at its first
    read (a lookup in the store or a pretuned file), not when the kernel is decorated: the hash walks
    the kernel's and its callees' syntax trees, which cost more than the rest of a decoration (a
    library such as flash-linear-attention decorates some 200 kernels at import), and Triton itself
    computes it only at a kernel's first launch.
    """

    name: str
    arg_names: tuple[str, ...]
    constexprs: frozenset[str]
    defaults: tuple[tuple[str, Any], ...]
    #: The JITFunction the hash is read from (not part of the kernel's identity).
    jit: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, kernel: Any) -> KernelInfo:
        fn = as_jit(kernel)
        params = fn.params
        constexprs = frozenset(p.name for p in params if p.is_constexpr)
        defaults = tuple((p.name, p.default) for p in params if p.has_default)
        return cls(
            name=getattr(fn, "__name__", "kernel"),
            arg_names=tuple(fn.arg_names),
            constexprs=constexprs,
            defaults=defaults,
            jit=fn,
        )

    @cached_property
    def source_hash(self) -> str:
        """Triton's dependency hash of the kernel (``JITFunction.cache_key``), else a hash of its source text."""
        try:
            return str(self.jit.cache_key)
        except Exception:  # dependency resolution can fail on exotic globals; fall back to the source text
            return hashlib.sha256(self.jit.src.encode()).hexdigest()

    @property
    def runtime_args(self) -> tuple[str, ...]:
        return tuple(a for a in self.arg_names if a not in self.constexprs)


# Keyed weakly by the original Python function (or InterpretedFunction): a kernel made in a local
# scope is freed with its conversions, and a freed object's reused id() can never hit.
_JIT_MEMO: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_LOCK = threading.RLock()


def _rebind(fn: Any, convert: Callable[[Any], Any], memo: weakref.WeakKeyDictionary[Any, Any], make: Any) -> Any:
    """A copy of the Python function ``fn`` that sees its jitted globals converted by ``convert``.

    The copy reads ``fn``'s module globals live (:class:`~tritune.livescope.LiveGlobals`), as Triton
    does at launch, so a helper defined after the kernel is found; jitted functions reached through a
    module attribute are converted too. The memo entry is made before any callee is converted, so a
    helper that names itself (``def maximum(...): return tl.maximum(...)``) cannot recurse.
    """
    with _LOCK:
        hit = memo.get(fn)
        if hit is not None:
            return hit
        scope = LiveGlobals(fn.__globals__, convert, global_names(fn.__code__))
        closure = fn.__closure__
        if closure is not None:
            closure = tuple(_converted_cell(c, convert) for c in closure)
        clone = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, closure)
        clone.__kwdefaults__ = fn.__kwdefaults__
        clone.__annotations__ = dict(getattr(fn, "__annotations__", {}))
        clone.__qualname__ = fn.__qualname__
        clone.__module__ = fn.__module__
        clone.__doc__ = fn.__doc__
        clone.__dict__.update(fn.__dict__)
        out = make(clone)
        memo[fn] = out
        _forget_rewrite_with(fn, clone)
        return out


def _converted_cell(cell: Any, convert: Callable[[Any], Any]) -> Any:
    try:
        value = cell.cell_contents
    except ValueError:  # an empty cell (a name assigned later in the enclosing scope)
        return cell
    conv = convert(value)
    return cell if conv is None else types.CellType(conv)


def _forget_rewrite_with(fn: Any, clone: Any) -> None:
    """Drop Triton's interpreter rewrite of ``clone`` (a class-level dict keyed by function) once ``fn`` is freed."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        return
    cache = getattr(InterpretedFunction, "rewritten_fn", None)
    if isinstance(cache, dict):
        weakref.finalize(fn, cache.pop, clone, None)


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
        return _rebind(kernel.fn, _to_jit, _JIT_MEMO, lambda f: JITFunction(f, **opts))
    return as_jit(unwrap_jit(kernel))


def _to_jit(value: Any) -> Any:
    """A callee as the compiler needs it, or None where it already is."""
    from triton.runtime.jit import JITFunction

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        return None
    return as_jit(value) if isinstance(value, InterpretedFunction) and not isinstance(value, JITFunction) else None
