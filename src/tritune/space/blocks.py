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


def _tied(name: str, reading: Reading, fixed: Collection[str]) -> dict[str, list[Relation]]:
    """The sizes ``name`` is tied to (parameters the caller sets), with the relations that tie them."""
    out: dict[str, list[Relation]] = {}
    for r in reading.relations:
        if name in r.blocks:
            for s in sorted(r.sizes):
                if s in fixed and s not in reading.flags:
                    out.setdefault(s, []).append(r)
    return out


def block_range(name: str, reading: Reading, sizes: Mapping[str, Any], fixed: Collection[str],
                limits: Limits) -> BlockRange:  # fmt: skip
    """``name``'s range: powers of 2 from 1 (16 for a ``tl.dot`` operand) to the tile cap (``max_dot`` for a dot
    operand), at most ``next_pow2`` of the sizes it is tied to, exactly that for a size it must cover whole.
    ``fixed``: the parameters whose values the caller sets (sizes can only be those)."""
    uses = reading.uses_of(name)
    dot = any(u.kind == "dot" for u in uses)
    lo = limits.min_dot if dot else 1
    hi = min(limits.max_dot, limits.tile_cap) if dot else limits.tile_cap
    evidence = _sites(uses)
    evidence.append(f"at most {hi} ({'Limits.max_dot' if dot else 'Limits.max_tile'})"
                    + (f", at least {lo} (Limits.min_dot)" if dot else ""))  # fmt: skip
    tied = _tied(name, reading, fixed)
    if not uses and tied:
        first, rels = next(iter(tied.items()))
        evidence.insert(0, f"tiles {first}: {rels[0].site}")
    known = {s: v for s in tied if isinstance(v := sizes.get(s), int) and not isinstance(v, bool) and v > 0}
    whole = tuple(s for s, rels in tied.items() if all(r.whole for r in rels))
    covered = [s for s in whole if s in known]
    if covered:
        size = max(known[s] for s in covered)
        lo = hi = max(lo, next_pow2(size))
        s = next(s for s in covered if known[s] == size)
        evidence.append(f"covers all of {s}={size} in one block ({tied[s][0].site}): {name} = {hi}")
    else:
        bounded = [s for s in tied if s in known]
        if bounded:
            size = max(known[s] for s in bounded)
            s = next(s for s in bounded if known[s] == size)
            if next_pow2(size) < hi:
                hi = max(lo, next_pow2(size))
            evidence.append(f"bounded by {s}={size} ({tied[s][0].site})")
        for s in whole:
            evidence.append(f"must cover all of {s} in one block ({tied[s][0].site}); {s} is not in sizes")
    return BlockRange(name, lo, hi, tuple(evidence), whole)


Env = Mapping[str, Any]


@dataclass(frozen=True)
class _Shape:
    tile: Tile
    dims: tuple[Callable[[Env], int | None], ...]

    @property
    def text(self) -> str:
        return "(" + ", ".join(d.text for d in self.tile.dims) + ")"


def _dominated(t: Tile, u: Tile) -> bool:
    """Every dim of ``t`` is a dim of ``u`` (and ``u`` has more): ``u`` is at least as large for any values."""
    a, b = Counter(d.text for d in t.dims), Counter(d.text for d in u.dims)
    return a != b and all(b[k] >= n for k, n in a.items())


class TileCheck:
    """The tiles of a kernel that a config's values determine, evaluated once per distinct meta-parameters.

    ``tuned``: the meta-parameters a config sets; ``env``: the values of the others that are known (sizes the
    caller passed, defaults). Tiles whose dims read anything else are left out."""

    def __init__(self, reading: Reading, tuned: Collection[str], env: Env, limits: Limits) -> None:
        self.limits = limits
        self.tuned = tuple(sorted(tuned))
        self.env = dict(env)
        known = set(self.tuned) | set(self.env)
        tiles = [t for t in reading.tiles if any(d.names & set(self.tuned) for d in t.dims)]
        tiles = [t for t in tiles if all(d.names <= known for d in t.dims)]
        tiles = [t for t in tiles if not any(_dominated(t, u) for u in tiles)]
        shapes: list[_Shape] = []
        for t in tiles:
            fns = [evaluator(d.expr) for d in t.dims]
            if all(f is not None for f in fns):
                shapes.append(_Shape(t, tuple(fns)))  # type: ignore[arg-type]
        self.shapes = tuple(shapes)
        self._memo: dict[tuple[Any, ...], tuple[int | None, ...]] = {}

    def numels(self, config: Config) -> tuple[int | None, ...]:
        """Each tile's element count for ``config``; None for a tile with a dim that is not a power of 2."""
        key = tuple(config.get(n) for n in self.tuned)
        hit = self._memo.get(key)
        if hit is None:
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
            hit = self._memo[key] = tuple(out)
        return hit

    def largest(self, config: Config) -> int:
        return max((n for n in self.numels(config) if n is not None), default=0)

    def _fits(self, i: int, cap: int) -> Callable[[Config], bool]:
        def fits(config: Config) -> bool:
            n = self.numels(config)[i]
            return n is not None and n <= cap

        return fits

    def constraints(self) -> list[Constraint]:
        """One constraint per tile (dims powers of 2, at most the tile cap), then the warps against the largest."""
        cap, out = self.limits.tile_cap, []
        for i, s in enumerate(self.shapes):
            out.append(Constraint(
                f"tile{s.text}",
                self._fits(i, cap),
                f"the {s.text} tile ({s.tile.site}) needs power-of-2 dims and at most {cap} elements (Limits.max_tile)",
            ))  # fmt: skip
        if self.shapes:
            per = self.limits.max_per_thread
            out.append(Constraint(
                "warps_within_tile",
                lambda c: 32 * c.num_warps <= self.largest(c),
                "more threads (32 x num_warps) than elements in the largest tile: whole warps would idle",
            ))  # fmt: skip
            out.append(Constraint(
                "elements_per_thread",
                lambda c: self.largest(c) <= per * 32 * c.num_warps,
                f"the largest tile holds more than {per} elements per thread (Limits.max_per_thread): it would spill",
            ))  # fmt: skip
        return out
