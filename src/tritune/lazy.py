"""Names a package loads at their first use (PEP 562): its ``__getattr__`` and ``__dir__``.

A package lists, per name, the module that defines it and the attribute to take from it ("" for the module itself);
the first access imports the module and keeps the value in the package's namespace, so later accesses are plain
lookups. ``import tritune`` and the packages it reaches use this for what a decorated kernel's cached call does not
need, so a library whose import decorates hundreds of kernels under the switch does not pay for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, namespace: dict[str, Any],
               names: Mapping[str, tuple[str, str]]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:  # fmt: skip
    """``(__getattr__, __dir__)`` for ``package``, whose module namespace is ``namespace``: ``names`` maps each lazy
    name to ``(module, attribute)``, the attribute "" for the module itself."""

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = where
        value: Any = importlib.import_module(module)
        if attr:
            value = getattr(value, attr)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
