"""Triton's own words from a compile error: the message a reason quotes, without the source excerpt.

``str(CompilationError)`` is the offending source, a caret line under the column, and the message last;
but when the error was raised inside a ``tl`` function (``tl.zeros``, ``tl.arange``...) the outer error, the
one the caller catches, holds only the kernel's line and its caret, and Triton's message ("Shape element 0
must be a power of 2", "numel (2097152) exceeds triton maximum tensor numel (1048576)") is in the chained
errors (``__cause__``). The last line of ``str(e)`` is then a caret.
"""

from __future__ import annotations

__all__ = ["compile_error_words"]


def compile_error_words(exc: BaseException) -> str:
    """The message Triton gave for ``exc``: walks ``exc`` and its causes (``__cause__``, else ``__context__``)
    and returns the first message that is not source: a ``CompilationError``'s ``error_message``, or the last
    line of any other error that is not a caret line. Falls back to the last non-caret line of ``str(exc)``,
    then to the type's name, so a reason is never empty."""
    for err in _chain(exc):
        words = _own_words(err)
        if words:
            return words
    lines = _text_lines(str(exc))
    return lines[-1] if lines else type(exc).__name__


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the errors it was raised from, outermost first, each once."""
    seen: list[BaseException] = []
    err: BaseException | None = exc
    while err is not None and not any(err is s for s in seen):
        seen.append(err)
        err = err.__cause__ or err.__context__
    return seen


def _own_words(err: BaseException) -> str:
    """The message ``err`` itself carries, without source; empty for a compile error that holds only a caret."""
    if _is_compilation_error(err):
        message = getattr(err, "error_message", None)
        return "; ".join(_text_lines(str(message))) if message else ""
    lines = _text_lines(str(err))
    return lines[-1] if lines else ""


def _is_compilation_error(err: BaseException) -> bool:
    try:
        from triton.compiler.errors import CompilationError
    except ImportError:  # pragma: no cover - Triton is a dependency
        return False
    return isinstance(err, CompilationError)


def _text_lines(text: str) -> list[str]:
    """The non-empty lines of ``text``, without caret lines (only spaces and ``^``)."""
    return [ln.strip() for ln in text.strip().splitlines() if ln.strip() and set(ln.strip()) != {"^"}]
