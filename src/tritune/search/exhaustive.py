"""Exhaustive search: every legal config once, in the space's stable order.

The reference every other strategy is measured against; with a budget smaller than the space it is a
poor strategy (it measures one corner of the space first), so it is never the default.

>>> from tritune.space import Space
>>> s = ExhaustiveSearch(Space({"BLOCK": [64, 128]}))
>>> [c.id for c in s.ask(2)]
['BLOCK=64,num_warps=4,num_stages=3', 'BLOCK=128,num_warps=4,num_stages=3']
"""

from __future__ import annotations

from collections.abc import Sequence

from tritune.config import Config
from tritune.search.base import Strategy


class ExhaustiveSearch(Strategy):
    """Propose the legal configs in order; the seed changes nothing."""

    name = "exhaustive"

    def _propose(self, n: int) -> Sequence[Config]:
        return [self.candidates[i] for i in self.unasked()[:n]]
