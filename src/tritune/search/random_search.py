"""Random search: legal configs drawn uniformly without replacement, from a seeded generator.

The baseline every other strategy must beat at the same budget.

>>> from tritune.space import Space
>>> s = RandomSearch(Space({"BLOCK": [64, 128, 256]}), seed=1)
>>> len(set(s.ask(3)))
3
"""

from __future__ import annotations

from collections.abc import Sequence

from tritune.config import Config
from tritune.search.base import Strategy


class RandomSearch(Strategy):
    """Uniform sampling without replacement over the legal configs."""

    name = "random"

    def _propose(self, n: int) -> Sequence[Config]:
        return [self.candidates[i] for i in self.random_unasked(n)]
