"""Search spaces as data: parameters, named constraints, legality before launch, and spaces generated from a kernel
(:func:`derive_space`) or around a library's own configs (:func:`widen`).

Deriving and widening read a kernel's source (``ast``) and load at their first use, so a library whose import
decorates hundreds of kernels under the switch does not pay for them."""

from typing import TYPE_CHECKING

from tritune.space.bounds import Launch, Limits
from tritune.space.legality import Rejection, check_static, check_static_all
from tritune.space.params import pow2, values
from tritune.space.space import Constraint, Space, constraint

if TYPE_CHECKING:
    from tritune.space.derive import DerivedParam, DerivedSpace, derive_space
    from tritune.space.widen import Widened, WidenedSpace, widen

#: Names loaded at their first use: name -> module.
_LAZY = {
    "DerivedParam": "tritune.space.derive",
    "DerivedSpace": "tritune.space.derive",
    "derive_space": "tritune.space.derive",
    "Widened": "tritune.space.widen",
    "WidenedSpace": "tritune.space.widen",
    "widen": "tritune.space.widen",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tritune.space' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Constraint",
    "DerivedParam",
    "DerivedSpace",
    "Launch",
    "Limits",
    "Rejection",
    "Space",
    "Widened",
    "WidenedSpace",
    "check_static",
    "check_static_all",
    "constraint",
    "derive_space",
    "pow2",
    "values",
    "widen",
]
