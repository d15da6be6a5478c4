"""Correctness of every candidate: oracle comparison, poisoned outputs, bit-exact groups.

``tritune.verify`` is also callable: ``tritune.verify(workloads, ...)`` is :func:`tritune.verify.run.verify`, so
the package and the function share one public name without one hiding the other (as ``tritune.bench``).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from tritune.verify.compare import Comparison, compare, digest, poison
from tritune.verify.run import VerifyReport, verify, verify_key

__all__ = ["Comparison", "VerifyReport", "compare", "digest", "poison", "verify", "verify_key"]


class _CallableModule(types.ModuleType):
    """The package, callable as :func:`tritune.verify.run.verify`."""

    def __call__(self, *args: Any, **kwargs: Any) -> VerifyReport:
        return verify(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
