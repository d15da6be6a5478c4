"""Search spaces as data: parameters, named constraints, legality before launch, and spaces generated from a kernel
(:func:`derive_space`) or around a library's own configs (:func:`widen`)."""

from tritune.space.bounds import Launch, Limits
from tritune.space.derive import DerivedParam, DerivedSpace, derive_space
from tritune.space.legality import Rejection, check_static, check_static_all
from tritune.space.params import pow2, values
from tritune.space.space import Constraint, Space, constraint
from tritune.space.widen import Widened, WidenedSpace, widen

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
