"""Triton's CPU interpreter in a process that also compiles: interpreted kernels, and ``triton.language`` kept right
for whichever of Triton's compiler and interpreter runs now.

One process may both interpret kernels and compile them for a GPU target, and ``triton.language``
holds state for only one of the two:

- Its own jitted helpers (``tl.cdiv``, ``tl.sum``...) are made when triton is imported: interpreter
  functions under ``TRITON_INTERPRET=1``, JITFunctions otherwise.
- The interpreter patches the language while it runs, and calls of jitted helpers leave their patches
  behind.

:func:`compiler_language` puts the pristine language back, with real JIT helpers, for the duration
of a compile. :func:`interpreter_language` swaps in interpreted helpers for the duration of an
interpreted launch when triton was imported before ``TRITON_INTERPRET`` was set (the CLI sets it
after ``import tritune``). Each restores the state it found on exit; they share one lock, so a
compile in another thread waits for an interpreted launch instead of pulling its helpers away.

Why in-process, not one interpreter decision per process: ``@tritune.autotune`` on a
machine without a GPU runs the kernel in the caller's process, on the caller's tensors, and that
process usually imported triton without ``TRITON_INTERPRET``; no worker process can write those
tensors, so the language must be switched where the call is. For the CLI, re-executing under
``TRITON_INTERPRET=1`` would cost a fresh ``import torch, triton, tritune`` (4.4-6.5 s measured on the
2-core dev machine) per run, against about 4 ms per interpreted launch for the swap (7.9 ms against
3.6 ms for a one-block kernel). Compiles for a GPU target already run per process where it matters
(screen workers drop ``TRITON_INTERPRET``); :func:`compiler_language` serves the in-process front end.
:func:`as_interpreted` gives an ``InterpretedFunction`` of a kernel whose launches run inside
:func:`interpreter_language`. Nothing here holds a kernel: the memos are weak.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from tritune.adapters.kernel import _LOCK as _MEMO_LOCK
from tritune.adapters.kernel import _rebind, as_jit, unwrap_jit

_INTERP_MEMO: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_WRAP_MEMO: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_LOCK = threading.RLock()
_PRISTINE: dict[int, tuple[Any, dict[str, Any]]] = {}


def _targets() -> list[Any]:
    import triton.language as tl

    modules = sys.modules.copy()  # another thread may be importing
    objs: list[Any] = [m for n, m in modules.items() if n.startswith("triton.language") and m is not None]
    objs += [tl.tensor, tl.core.tensor, tl.dtype]
    # the interpreter patches these classes too (dtype.to_ir, condition.__bool__)
    for name in ("tensor_descriptor_base", "condition"):
        cls = getattr(tl.core, name, None)
        if cls is not None:
            objs.append(cls)
    seen: dict[int, Any] = {}
    for o in objs:
        seen.setdefault(id(o), o)
    return list(seen.values())


def _is_interpreter_patch(v: Any) -> bool:
    return getattr(v, "__module__", "") == "triton.runtime.interpreter" and callable(v)


def snapshot() -> None:
    """Record the language as it is now, unless the interpreter has already patched it."""
    with _LOCK:
        for obj in _targets():
            if id(obj) in _PRISTINE:
                continue
            d = dict(vars(obj))
            if any(_is_interpreter_patch(v) for v in d.values()):
                continue
            _PRISTINE[id(obj)] = (obj, d)


@contextlib.contextmanager
def compiler_language() -> Iterator[None]:
    """Within this block ``triton.language`` is the compiler's, not the interpreter's."""
    from tritune.device import interpreter_on

    if not interpreter_on() and not _any_patched():
        with _LOCK:  # an interpreted launch in another thread waits rather than swap helpers in mid-compile
            yield
        return

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        yield
        return
    with _LOCK:
        snapshot()
        found = [(obj, dict(vars(obj))) for obj in _targets()]
        try:
            _put_back(list(_PRISTINE.values()))  # the language as it was before any interpreter run
            for obj in _targets():
                if isinstance(obj, type):
                    continue
                for name, value in list(vars(obj).items()):
                    if isinstance(value, InterpretedFunction):
                        setattr(obj, name, as_jit(value))
            yield
        finally:
            _put_back(found)


def _any_patched() -> bool:
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        InterpretedFunction = ()  # type: ignore[assignment,misc]
    return any(
        _is_interpreter_patch(v) or isinstance(v, InterpretedFunction)
        for obj, _ in list(_PRISTINE.values())
        for v in list(vars(obj).values())
    )


@contextlib.contextmanager
def interpreter_language() -> Iterator[None]:
    """Within this block ``triton.language``'s jitted helpers are interpreter functions.

    A no-op, lock released, when they already are (triton imported under ``TRITON_INTERPRET=1``).
    Otherwise it holds the lock throughout (Triton's interpreter keeps global state, so interpreted
    launches cannot overlap anyway), and on exit puts back every attribute the block changed: the
    helpers, and the patches the interpreter leaves behind when a kernel calls a jitted helper.
    """
    _LOCK.acquire()
    try:
        helpers = _jit_helpers()
    except BaseException:
        _LOCK.release()
        raise
    if not helpers:
        _LOCK.release()
        yield
        return

    found: list[tuple[Any, dict[str, Any]]] = []
    try:
        snapshot()  # the pristine language, for compiler_language, before anything is swapped
        # every copy is made before the first swap, so none copies a module half swapped
        swaps = [(obj, name, as_interpreted(fn)) for obj, name, fn in helpers]
        found = [(obj, dict(vars(obj))) for obj in _targets()]
        for obj, name, interp in swaps:
            setattr(obj, name, _method(interp) if isinstance(obj, type) else interp)
        yield
    finally:
        try:
            _put_back(found)
        finally:
            _LOCK.release()


def _jit_helpers() -> list[tuple[Any, str, Any]]:
    from triton.runtime.jit import JITFunction

    return [
        (obj, name, value)
        for obj in _targets()
        for name, value in list(vars(obj).items())
        if isinstance(value, JITFunction)
    ]


def _method(fn: Any) -> Any:
    """A plain function calling ``fn``, so that ``x.sum()`` binds ``x`` (an InterpretedFunction is no descriptor)."""

    def method(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    method.__name__ = method.__qualname__ = fn.__name__
    return method


def _put_back(saved: Any) -> None:
    """Give every object in ``saved`` (``(obj, vars)`` pairs) back the attributes it had then."""
    import types

    missing = object()
    for obj, before in saved:
        now = dict(vars(obj))
        for name, value in before.items():
            if now.get(name, missing) is not value:
                setattr(obj, name, value)
        for name, value in now.items():
            # a submodule imported meanwhile stays: its parent's attribute is how it is reached
            if name not in before and not isinstance(value, types.ModuleType):
                delattr(obj, name)


@functools.cache
def interpreted_kernel_class() -> type:
    """``InterpretedFunction`` whose launches run with triton.language's own helpers interpreted too.

    Triton picks JITFunction or InterpretedFunction when ``@triton.jit`` runs, so when ``TRITON_INTERPRET``
    is set after triton is imported (as the CLI does), ``tl.cdiv``, ``tl.sum``... stay JITFunctions,
    which refuse to be called from an interpreted kernel. ``run`` (what ``kernel[grid](...)`` calls)
    launches inside :func:`interpreter_language`, which swaps them for
    interpreted copies for the launch only; device calls (``__call__``) are left as Triton made them.
    """
    from triton.runtime.interpreter import InterpretedFunction

    class InterpretedKernel(InterpretedFunction):
        def run(self, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
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
        with _MEMO_LOCK:
            hit = _WRAP_MEMO.get(kernel)
            if hit is not None:
                return hit
            wrapped = cls(kernel.fn, **kernel.kwargs)
            wrapped.pre_run_hooks = kernel.pre_run_hooks  # shared: hooks added to either one apply to both
            _WRAP_MEMO[kernel] = wrapped
            return wrapped
    opts: dict[str, Any] = {}
    for name in ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline"):
        val = getattr(kernel, name, None)
        if val:
            opts[name] = val
    return _rebind(kernel.fn, _to_interpreted, _INTERP_MEMO, lambda f: cls(f, **opts))


def _to_interpreted(value: Any) -> Any:
    """A callee as the interpreter needs it; an InterpretedFunction callee already is (None)."""
    from triton.runtime.jit import JITFunction

    return as_interpreted(value) if isinstance(value, JITFunction) else None
