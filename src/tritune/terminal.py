"""Text that came from data (a store, an import file, a result JSON) made safe to print on a terminal.

A kernel name or a reason read from a file another user wrote could carry escape sequences that clear, recolour
or retitle the terminal, or move the cursor to hide a line. :func:`printable` shows every control character
(C0, DEL, C1, and the bidirectional overrides that reorder what is shown) as a visible Python-style escape,
and leaves all other text, accents and CJK included, as it is.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: object, *, lines: bool = False) -> str:
    """``str(text)`` with every control character shown as ``\\xNN`` / ``\\uNNNN`` (see the module docstring);
    ``lines=True`` keeps newlines (a message of several lines, made of escaped parts)."""
    s = str(text)
    pattern = _CONTROL_BUT_NEWLINE if lines else _CONTROL
    return pattern.sub(_escape, s) if pattern.search(s) else s
