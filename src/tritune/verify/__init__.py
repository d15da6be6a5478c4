"""Correctness of every candidate: oracle comparison, poisoned outputs, bit-exact groups."""

from tritune.verify.compare import Comparison, compare, digest, poison
from tritune.verify.run import VerifyReport, verify, verify_key

__all__ = ["Comparison", "VerifyReport", "compare", "digest", "poison", "verify", "verify_key"]
