"""Search spaces as data: parameters, named constraints, and legality before launch."""

from tritune.space.legality import Rejection, check_static, check_static_all
from tritune.space.params import pow2, values
from tritune.space.space import Constraint, Space, constraint

__all__ = ["Constraint", "Rejection", "Space", "check_static", "check_static_all", "constraint", "pow2", "values"]
