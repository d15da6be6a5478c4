"""Compile real Triton code in a process that also runs Triton's CPU interpreter.

Under ``TRITON_INTERPRET=1`` two things break ``triton.compile`` in the same process:
``triton.language``'s own jitted helpers (``tl.sum``, ``tl.cdiv``...) are built as interpreter
functions, and the interpreter patches ``triton.language`` while it runs (calls of jitted helpers
leave their patches behind). :func:`compiler_language` puts the pristine language back, with
real JIT helpers, for the duration of a compile, and restores the interpreter's state after.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

_LOCK = threading.RLock()
_PRISTINE: dict[int, tuple[Any, dict[str, Any]]] = {}


def _targets() -> list[Any]:
    import triton.language as tl

    objs: list[Any] = [m for n, m in sys.modules.items() if n.startswith("triton.language") and m is not None]
    objs += [tl.tensor, tl.core.tensor]
    base = getattr(tl.core, "tensor_descriptor_base", None)
    if base is not None:
        objs.append(base)
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
        yield
        return
    from tritune.kernel import as_jit

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        yield
        return
    with _LOCK:
        snapshot()
        undo: list[tuple[Any, str, Any]] = []
        missing = object()
        for obj, orig in _PRISTINE.values():
            current = dict(vars(obj))
            for name, value in orig.items():
                if current.get(name, missing) is not value:
                    undo.append((obj, name, current.get(name, missing)))
                    setattr(obj, name, value)
            for name in current:
                if name not in orig:
                    undo.append((obj, name, current[name]))
                    delattr(obj, name)
        for obj in _targets():
            if isinstance(obj, type):
                continue
            for name, value in list(vars(obj).items()):
                if isinstance(value, InterpretedFunction):
                    undo.append((obj, name, value))
                    setattr(obj, name, as_jit(value))
        try:
            yield
        finally:
            for obj, name, value in reversed(undo):
                if value is missing:
                    delattr(obj, name)
                else:
                    setattr(obj, name, value)


def _any_patched() -> bool:
    return any(
        _is_interpreter_patch(v) for obj, _ in _PRISTINE.values() for v in list(vars(obj).values())
    )
