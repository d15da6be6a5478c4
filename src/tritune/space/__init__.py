"""Search spaces as data: parameters, named constraints, legality before launch, and spaces generated from a kernel
(:func:`derive_space`) or around a library's own configs (:func:`widen`).

Deriving and widening read a kernel's source (``ast``) and load at their first use, so a library whose import
decorates hundreds of kernels under the switch does not pay for them."""

from typing import TYPE_CHECKING

from tritune.lazy import lazy_names
from tritune.space.bounds import Launch, Limits
from tritune.space.legality import Rejection, check_static, check_static_all
from tritune.space.params import pow2, values
from tritune.space.space import Constraint, Space, constraint

if TYPE_CHECKING:
    from tritune.space.derive import DerivedParam, DerivedSpace, derive_space
    from tritune.space.widen import Widened, WidenedSpace, widen

#: Names loaded at their first use: name -> (module, attribute).
_LAZY = {
    **{n: ("tritune.space.derive", n) for n in ("DerivedParam", "DerivedSpace", "derive_space")},
    **{n: ("tritune.space.widen", n) for n in ("Widened", "WidenedSpace", "widen")},
}
__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)

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
