"""From a kernel's :class:`~tritune.space.shapes.Reading` to bounds: each block parameter's power-of-2 range, and
named constraints over the tiles the kernel builds (their dims powers of 2, their size within the tile cap, the
warps matched to the largest tile)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from tritune.config import Config
from tritune.space.bounds import Limits, evaluator, is_pow2, next_pow2
from tritune.space.params import pow2
from tritune.space.source import Reading, Relation, Tile, Use
from tritune.space.space import Constraint

_KIND_WORDS = {
    "arange": "arange length",
    "shape": "tensor shape",
    "block_shape": "block shape",
    "dot": "tl.dot operand",
}


@dataclass(frozen=True)
class BlockRange:
    """A block parameter's bounds (powers of 2 from ``lo`` to ``hi``) and the evidence for them.

    ``whole``: the sizes the block must cover in one piece (an un-offset ``tl.arange`` masked by the size)."""

    name: str
    lo: int
    hi: int
    evidence: tuple[str, ...]
    whole: tuple[str, ...] = ()

    @property
    def values(self) -> list[int]:
        return pow2(self.lo, self.hi)

    def allows(self, value: Any) -> bool:
        return is_pow2(value) and self.lo <= value <= self.hi


def _sites(uses: list[Use]) -> list[str]:
    """One line per kind of use: the first site, and how many more there are."""
    out = []
    for kind, words in _KIND_WORDS.items():
        of_kind = [u for u in uses if u.kind == kind]
        if of_kind:
            more = len({str(u.site) for u in of_kind}) - 1
            out.append(f"{words}: {of_kind[0].site}" + (f" (+{more} more)" if more > 0 else ""))
    return out


def _positive(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _ties(name: str, reading: Reading, fixed: Collection[str],
          sizes: Mapping[str, Any]) -> list[tuple[Relation, tuple[str, ...], str, int | None]]:  # fmt: skip
    """The relations tying ``name`` to sizes the caller sets (not mode switches): each with those sizes' names and
    the size's value, where known: the size expression's own value, else the largest of the named sizes."""
    out = []
    for r in reading.relations:
        named = tuple(sorted(s for s in r.sizes if s in fixed and s not in reading.flags))
        if name not in r.blocks or not named:
            continue
        f = evaluator(r.extent.expr)
        value = f(sizes) if f is not None else None
        text = r.extent.text
        if not _positive(value):
            known = [(sizes[s], s) for s in named if _positive(sizes.get(s))]
            value, text = max(known) if known else (None, named[0])
        out.append((r, named, text, value))
    return out


def block_range(name: str, reading: Reading, sizes: Mapping[str, Any], fixed: Collection[str],
                limits: Limits) -> BlockRange:  # fmt: skip
    """``name``'s range: powers of 2 from 1 (16 for a ``tl.dot`` operand) to the tile cap (``max_dot`` for a dot
    operand), at most ``next_pow2`` of the smallest size it is tied to, exactly that of a size it must cover whole.
    ``fixed``: the parameters whose values the caller sets (sizes can only be those)."""
    uses = reading.uses_of(name)
    dot = any(u.kind == "dot" for u in uses)
    lo = limits.min_dot if dot else 1
    hi = min(limits.max_dot, limits.tile_cap) if dot else limits.tile_cap
    evidence = _sites(uses)
    evidence.append(f"at most {hi} ({'Limits.max_dot' if dot else 'Limits.max_tile'})"
                    + (f", at least {lo} (Limits.min_dot)" if dot else ""))  # fmt: skip
    ties = _ties(name, reading, fixed, sizes)
    if not uses and ties:
        evidence.insert(0, f"tiles {ties[0][2]}: {ties[0][0].site}")
    by_size: dict[str, list[Relation]] = {}
    for r, named, _, _ in ties:
        for s in named:
            by_size.setdefault(s, []).append(r)
    whole = tuple(s for s, rels in by_size.items() if all(r.whole for r in rels))
    covered = [(sizes[s], s) for s in whole if _positive(sizes.get(s))]
    if covered:
        size, s = max(covered)
        lo = hi = max(lo, next_pow2(size))
        evidence.append(f"covers all of {s}={size} in one block ({by_size[s][0].site}): {name} = {hi}")
        return BlockRange(name, lo, hi, tuple(evidence), whole)
    valued = [(value, text, r) for r, _, text, value in ties if value is not None]
    if valued:
        value, text, r = min(valued, key=lambda t: t[0])  # no larger than the smallest extent it tiles
        hi = max(lo, min(hi, next_pow2(value)))
        evidence.append(f"bounded by {text}={value} ({r.site})")
    for s in whole:
        evidence.append(f"must cover all of {s} in one block ({by_size[s][0].site}); {s} is not in sizes")
    return BlockRange(name, lo, hi, tuple(evidence), whole)


Env = Mapping[str, Any]


@dataclass(frozen=True)
class _Shape:
    tile: Tile
    dims: tuple[Callable[[Env], int | None], ...]
    #: Whether a config's values size it; a tile of the caller's sizes alone only bounds the warps.
    varies: bool

    @property
    def text(self) -> str:
        return "(" + ", ".join(d.text for d in self.tile.dims) + ")"


def _dominated(t: Tile, u: Tile) -> bool:
    """Every dim of ``t`` is a dim of ``u`` (and ``u`` has more): ``u`` is at least as large for any values."""
    a, b = Counter(d.text for d in t.dims), Counter(d.text for d in u.dims)
    return a != b and all(b[k] >= n for k, n in a.items())


class TileCheck:
    """The tiles of a kernel whose sizes are known for a config, evaluated once per distinct meta-parameters.

    ``tuned``: the meta-parameters a config sets; ``env``: the values of the others that are known (sizes the
    caller passed, defaults). Tiles whose dims read anything else are left out; tiles of ``env`` alone bound
    only the warps."""

    def __init__(self, reading: Reading, tuned: Collection[str], env: Env, limits: Limits) -> None:
        self.limits = limits
        self.tuned = tuple(sorted(tuned))
        self.env = dict(env)
        known = set(self.tuned) | set(self.env)
        tiles = [t for t in reading.tiles if all(d.names <= known for d in t.dims)]
        tiles = [t for t in tiles if not any(_dominated(t, u) for u in tiles)]
        shapes: list[_Shape] = []
        for t in tiles:
            fns = [evaluator(d.expr) for d in t.dims]
            if all(f is not None for f in fns):
                varies = any(d.names & set(self.tuned) for d in t.dims)
                shapes.append(_Shape(t, tuple(fns), varies))  # type: ignore[arg-type]
        self.shapes = tuple(shapes)
        self._memo: dict[tuple[Any, ...], tuple[int | None, ...]] = {}

    def numels(self, config: Config) -> tuple[int | None, ...]:
        """Each tile's element count for ``config``; None for a tile with a dim that is not a power of 2."""
        key = tuple(config.get(n) for n in self.tuned)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._numels(key)
        return hit

    def _numels(self, key: tuple[Any, ...]) -> tuple[int | None, ...]:
        env = dict(self.env)
        env.update(zip(self.tuned, key))
        out: list[int | None] = []
        for s in self.shapes:
            dims = [f(env) for f in s.dims]
            if all(is_pow2(d) for d in dims):
                n = 1
                for d in dims:
                    n *= d  # type: ignore[operator]
                out.append(n)
            else:
                out.append(None)
        return tuple(out)

    def largest(self, config: Config) -> int:
        return max((n for n in self.numels(config) if n is not None), default=0)

    def _fits(self, i: int, cap: int) -> Callable[[Config], bool]:
        def fits(config: Config) -> bool:
            n = self.numels(config)[i]
            return n is not None and n <= cap

        return fits

    def constraints(self, values: Mapping[str, Collection[Any]] | None = None, min_warps: int = 1) -> list[Constraint]:
        """One constraint per tile (dims powers of 2, at most the tile cap), then the warps against the largest.

        ``min_warps``: the fewest warps a config may have, always allowed. ``values``: each tuned parameter's
        values; given them, the largest tile must fill ``min_warps`` warps where the largest values allow it
        (with the largest values every tile is at its largest; a tile smaller than that only where they force it)."""
        cap, out = self.limits.tile_cap, []
        for i, s in enumerate(self.shapes):
            if not s.varies:
                continue
            out.append(Constraint(
                f"tile{s.text}",
                self._fits(i, cap),
                f"the {s.text} tile ({s.tile.site}) needs power-of-2 dims and at most {cap} elements (Limits.max_tile)",
            ))  # fmt: skip
        if not self.shapes:
            return out
        least = 32 * min_warps
        if values is not None:
            top = tuple(max(values[n], default=None) if n in values else None for n in self.tuned)
            floor = min(least, max((n for n in self._numels(top) if n is not None), default=least))
            out.append(Constraint(
                "tile_fills_warps",
                lambda c: self.largest(c) >= floor,
                f"the largest tile has fewer than {floor} elements, the threads of {min_warps} warp(s), "
                "where larger blocks are allowed",
            ))  # fmt: skip
        per = self.limits.max_per_thread
        out.append(Constraint(
            "warps_within_tile",
            lambda c: 32 * c.num_warps <= max(self.largest(c), least),
            "more threads (32 x num_warps) than elements in the largest tile: whole warps would idle",
        ))  # fmt: skip
        out.append(Constraint(
            "elements_per_thread",
            lambda c: self.largest(c) <= per * 32 * c.num_warps,
            f"the largest tile holds more than {per} elements per thread (Limits.max_per_thread): it would spill",
        ))  # fmt: skip
        return out
