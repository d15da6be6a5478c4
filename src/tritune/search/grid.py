"""Candidates as points on a grid: each parameter's value replaced by its position in the sorted value list.

On a power-of-2 parameter one grid step is ×2 or ÷2; on stages it is ±1. Neighbourhood search walks this
grid, and the surrogate model reads its features from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tritune.config import LAUNCH_OPTIONS, Config, columns

#: Axis names (upper-cased) that set the tile: ``BLOCK_M``, ``BM``, ``TILE_N``, ``BLOCK_SIZE`` (:func:`is_tile_axis`).
TILE_AXES = ("BLOCK", "BM", "BN", "BK", "TILE")


def is_tile_axis(name: str) -> bool:
    """Whether axis ``name`` sets the tile: ``BLOCK_M``, ``BM``, ``TILE_N``, ..."""
    up = name.upper()
    return any(up == t or up.startswith(t + "_") or (t == "BLOCK" and up.startswith(t)) for t in TILE_AXES)


def is_reduction_axis(name: str) -> bool:
    """Whether tile axis ``name`` is a reduction (K) axis: ``BLOCK_K``, ``BK``, ``TILE_K``: its values set how much
    of the reduction a step loads, not the output tile a thread group accumulates."""
    up = name.upper()
    return is_tile_axis(name) and (up == "BK" or up.endswith("_K"))


def _order_key(v: Any) -> tuple[int, Any]:
    if isinstance(v, bool) or v is None:
        return (0, str(v))
    if isinstance(v, (int, float)):
        return (1, v)
    return (2, str(v))


def _shared(a: Sequence[Any], b: Sequence[Any]) -> list[Any]:
    """The values of ``a`` also in ``b`` (numbers only: a swap of strings or flags has no meaning)."""
    return [v for v in a if isinstance(v, (int, float)) and not isinstance(v, bool) and v in b]


class Grid:
    """Grid coordinates of a fixed candidate list over the parameters that vary among them."""

    def __init__(self, candidates: Sequence[Config]) -> None:
        cols = columns(candidates)  # as_dict's values by column (None where a config lacks a name)
        if cols is None:  # configs of different names: one dict per config, a missing name read as None
            dicts = [c.as_dict() for c in candidates]
            cols = {k: [d.get(k) for d in dicts] for k in sorted({k for d in dicts for k in d})}
        self.values: dict[str, list[Any]] = {}
        for name in sorted(cols):
            vals = sorted(set(cols[name]), key=_order_key)
            if len(vals) > 1:
                self.values[name] = vals
        self.names = list(self.values)
        n = len(candidates)
        self.coords = np.zeros((n, len(self.names)), dtype=np.int64)
        for d, name in enumerate(self.names):
            pos = {v: i for i, v in enumerate(self.values[name])}
            self.coords[:, d] = [pos[v] for v in cols[name]]
        self.lookup: dict[tuple[int, ...], int] = {tuple(row): i for i, row in enumerate(self.coords.tolist())}
        self.sizes = [len(self.values[n]) for n in self.names]
        #: Pairs of axes (a, b), a < b, whose values may be exchanged (:meth:`swaps`): two kernel
        #: meta-parameters (not launch options such as num_warps) sharing at least two values.
        self.swap_axes: list[tuple[int, int]] = [
            (a, b)
            for a in range(self.dims)
            for b in range(a + 1, self.dims)
            if self.names[a] not in LAUNCH_OPTIONS
            and self.names[b] not in LAUNCH_OPTIONS
            and len(_shared(self.values[self.names[a]], self.values[self.names[b]])) >= 2
        ]

    @property
    def dims(self) -> int:
        return len(self.names)

    def step(self, i: int, dim: int, direction: int) -> int | None:
        """The nearest candidate from ``i`` along one axis in ``direction`` (±1), jumping over gaps."""
        point = list(self.coords[i])
        k = int(point[dim]) + direction
        while 0 <= k < self.sizes[dim]:
            point[dim] = k
            j = self.lookup.get(tuple(int(x) for x in point))
            if j is not None:
                return j
            k += direction
        return None

    def neighbours(self, i: int) -> list[int]:
        """One step up and down along every axis (the ×2 / ÷2 / ±1 moves), nearest legal point per move."""
        out: list[int] = []
        for dim in range(self.dims):
            for direction in (-1, 1):
                j = self.step(i, dim, direction)
                if j is not None and j not in out:
                    out.append(j)
        return out

    def swaps(self, i: int) -> list[int]:
        """The candidates that exchange the values of two axes of :attr:`swap_axes` (BLOCK_M=256, BLOCK_N=128
        -> BLOCK_M=128, BLOCK_N=256), every other value kept: the transposed tile, which is one move here but a
        two-axis move of two steps or more on the grid. Only exchanges that give a candidate are listed."""
        out: list[int] = []
        point = [int(x) for x in self.coords[i]]
        for a, b in self.swap_axes:
            va, vb = self.values[self.names[a]], self.values[self.names[b]]
            x, y = va[point[a]], vb[point[b]]
            if x == y or x not in vb or y not in va:
                continue
            moved = list(point)
            moved[a], moved[b] = va.index(y), vb.index(x)
            j = self.lookup.get(tuple(moved))
            if j is not None and j not in out:
                out.append(j)
        return out

    def tile_per_warp(self) -> np.ndarray | None:
        """Each candidate's log2 output tile per warp, scaled to [0, 1]: the product of the non-reduction tile axes
        (:func:`is_tile_axis`, not :func:`is_reduction_axis`) over ``num_warps``. A 2-D tile's accumulator takes
        BLOCK_M x BLOCK_N / (32 x num_warps) registers per thread, so register spills, a matmul's 5-10x cliff,
        follow this one diagonal of the grid rather than any axis. None unless the grid has two or more such tile
        axes of positive numbers and ``num_warps`` varies."""
        if "num_warps" not in self.names:
            return None
        axes = [d for d, name in enumerate(self.names) if is_tile_axis(name) and not is_reduction_axis(name)]
        if len(axes) < 2:
            return None
        col = np.zeros(len(self.coords))
        for d in [*axes, self.names.index("num_warps")]:
            vals = self.values[self.names[d]]
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in vals):
                return None
            logs = np.log2(np.asarray(vals, dtype=float))
            col += (-1.0 if self.names[d] == "num_warps" else 1.0) * logs[self.coords[:, d]]
        span = float(col.max() - col.min())
        return (col - col.min()) / span if span > 0 else None

    def features(self) -> np.ndarray:
        """Model features per candidate: scaled position, its square, one-hot values and pairwise products."""
        n = len(self.coords)
        cols: list[np.ndarray] = []
        scaled = [self.coords[:, d] / max(1, self.sizes[d] - 1) for d in range(self.dims)]
        for d in range(self.dims):
            cols.append(scaled[d])
            if self.sizes[d] > 2:
                cols.append((scaled[d] - 0.5) ** 2)
                for k in range(self.sizes[d]):
                    cols.append((self.coords[:, d] == k).astype(float))
        for a in range(self.dims):
            for b in range(a + 1, self.dims):
                cols.append((scaled[a] - 0.5) * (scaled[b] - 0.5))
        if not cols:
            return np.zeros((n, 0))
        return np.stack(cols, axis=1)
