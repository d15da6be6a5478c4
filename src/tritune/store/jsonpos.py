"""A JSON reader that remembers where each value starts, so a schema error can name its line.

``json.loads`` checks the syntax first (its errors already carry line and column); this reader then
walks the same text and records, for every value, its path (``("entries", 3, "status")``) and
offset. Non-finite numbers (``NaN``, ``Infinity``) are rejected: tritune never writes them.
"""

from __future__ import annotations

import json
import re
from typing import Any

scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]

Path = tuple["str | int", ...]

#: The deepest nesting read; a store export needs about six levels.
MAX_DEPTH = 64

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")


class JSONSyntaxError(ValueError):
    """Text that is not JSON; ``line`` and ``column`` are 1-based."""

    def __init__(self, msg: str, line: int, column: int) -> None:
        super().__init__(f"line {line} column {column}: {msg}")
        self.msg, self.line, self.column = msg, line, column


class Located:
    """Parsed JSON ``value`` plus the offset of every value by path; :meth:`line` maps a path to a line."""

    def __init__(self, text: str) -> None:
        def _no_constant(name: str) -> Any:
            raise ValueError(f"{name} is not a JSON number")

        try:
            json.loads(text, parse_constant=_no_constant)
        except json.JSONDecodeError as e:
            raise JSONSyntaxError(e.msg, e.lineno, e.colno) from None
        except RecursionError:
            raise JSONSyntaxError(f"nested deeper than {MAX_DEPTH} levels", 1, 1) from None
        except ValueError as e:  # parse_constant; find where it is for the message
            m = re.search(r"-?(NaN|Infinity)", text)
            off = m.start() if m else 0
            raise JSONSyntaxError(str(e), self._line_of(text, off), off - text.rfind("\n", 0, off)) from None
        self.text = text
        self.offsets: dict[Path, int] = {}
        self.value, _ = self._value(_WS.match(text, 0).end(), ())  # type: ignore[union-attr]

    @staticmethod
    def _line_of(text: str, offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    def line(self, path: Path) -> int:
        """The line where the value at ``path`` starts, or its nearest existing ancestor's."""
        p = tuple(path)
        while p and p not in self.offsets:
            p = p[:-1]
        return self._line_of(self.text, self.offsets.get(p, 0))

    def _skip(self, i: int) -> int:
        return _WS.match(self.text, i).end()  # type: ignore[union-attr]

    def _value(self, i: int, path: Path) -> tuple[Any, int]:
        self.offsets[path] = i
        text = self.text
        c = text[i]
        if len(path) >= MAX_DEPTH and c in "[{":
            raise JSONSyntaxError(
                f"nested deeper than {MAX_DEPTH} levels", self._line_of(text, i), i - text.rfind("\n", 0, i)
            )
        if c == "{":
            obj: dict[str, Any] = {}
            i = self._skip(i + 1)
            if text[i] == "}":
                return obj, i + 1
            while True:
                key, i = scanstring(text, i + 1)
                i = self._skip(self._skip(i) + 1)  # past ':'
                obj[key], i = self._value(i, (*path, key))
                i = self._skip(i)
                if text[i] == "}":
                    return obj, i + 1
                i = self._skip(i + 1)  # past ','
        if c == "[":
            arr: list[Any] = []
            i = self._skip(i + 1)
            if text[i] == "]":
                return arr, i + 1
            while True:
                v, i = self._value(i, (*path, len(arr)))
                arr.append(v)
                i = self._skip(i)
                if text[i] == "]":
                    return arr, i + 1
                i = self._skip(i + 1)
        if c == '"':
            return scanstring(text, i + 1)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, i):
                return val, i + len(word)
        m = _NUMBER.match(text, i)
        assert m is not None, "json.loads accepted the text, so this is a number"
        num: Any = float(m.group(0)) if (m.group(1) or m.group(2)) else int(m.group(0))
        return num, m.end()


def path_text(path: Path) -> str:
    """``entries[3].candidates[0].status``: a path as a user reads it."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out or "(top level)"
