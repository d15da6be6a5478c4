"""Widen a library's own config list: around each config, its neighbours one step away along one axis at a time.

A block size is multiplied and divided by ``factor`` (a power of 2 stays a power of 2; any other value gets the
powers of 2 on either side), ``num_warps`` doubled and halved, ``num_stages`` one more and one less (given the
kernel, only where it has a loop to pipeline: without one, every ``num_stages`` compiles to the same binary). With
``radius`` above 1, the neighbours' neighbours in turn, up to that many steps from a given config (two steps reach
a block size doubled with the warps halved, or the warps halved twice). The given configs come first and are never
dropped; every generated config names the config it came from and what changed.
Given the kernel, only the parameters that shape its blocks are widened, each step within the bounds a derivation
would give the value it changes (:mod:`tritune.space.derive`) and within the constraints over the kernel's tiles
that its origin keeps.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tritune.adapters.kernel import KernelInfo, unwrap_jit
from tritune.config import Config, as_config
from tritune.errors import ConfigError
from tritune.space.blocks import BlockRange, TileCheck, block_range
from tritune.space.bounds import Launch, Limits, is_pow2, next_pow2, prev_pow2
from tritune.space.derive import heuristics_of, shapes_blocks
from tritune.space.reading import read_kernel
from tritune.space.space import Constraint, Space

#: Name parts that mark a meta-parameter as a block size when no kernel is given.
_BLOCK_WORDS = ("BLOCK", "TILE")


@dataclass(frozen=True)
class Widened:
    """One config of a widened list: ``origin`` None for a given config, else the config it neighbours (a given one,
    or one step nearer to one) and ``change`` what differs (``"BLOCK_M 128->256"``); ``also``: the other configs of
    the ring before it that it is one step from."""

    config: Config
    origin: Config | None = None
    change: str = ""
    also: tuple[Config, ...] = ()

    @property
    def given(self) -> bool:
        return self.origin is None

    @property
    def origins(self) -> tuple[Config, ...]:
        """Every config one step nearer to a given one that this one neighbours (none for a given config)."""
        return () if self.origin is None else (self.origin, *self.also)

    def __str__(self) -> str:
        return self.config.id if self.origin is None else f"{self.config.id} ({self.change} from {self.origin.id})"


@dataclass(frozen=True)
class WidenedSpace:
    """The given configs, then their neighbours. ``params``: the meta-parameters widened; ``skipped``: neighbours
    left out, with why (outside a block's bounds, a constraint of the kernel's tiles)."""

    entries: tuple[Widened, ...]
    params: tuple[str, ...]
    skipped: tuple[tuple[Config, str], ...] = ()
    radius: int = 1
    #: Why ``num_stages`` was not widened (the kernel has no loop to pipeline), or None when it was.
    stages_kept: str | None = None
    space: Space = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "space", Space.from_configs([e.config for e in self.entries]))

    def configs(self) -> list[Config]:
        return [e.config for e in self.entries]

    @property
    def given(self) -> tuple[Config, ...]:
        return tuple(e.config for e in self.entries if e.given)

    @property
    def generated(self) -> tuple[Widened, ...]:
        return tuple(e for e in self.entries if not e.given)

    def entry(self, config: Any) -> Widened | None:
        """How ``config`` came into the list, or None when it is not in it."""
        config = as_config(config)
        return next((e for e in self.entries if e.config == config), None)

    def explain(self) -> str:
        within = "" if self.radius == 1 else f", up to {self.radius} steps"
        launch = "num_warps" if self.stages_kept else "num_warps, num_stages"
        kept = f"; num_stages kept: {self.stages_kept}" if self.stages_kept else ""
        lines = [f"{len(self.given)} given + {len(self.generated)} neighbours "
                 f"(widened: {', '.join([*self.params, launch])}{within}{kept})"]  # fmt: skip
        lines += [f"  {e}" for e in self.entries]
        lines += [f"  skipped {c.id}: {why}" for c, why in self.skipped]
        return "\n".join(lines)


def _steps(value: Any, factor: int) -> list[int]:
    """A block value's neighbours: ``value / factor`` and ``value * factor`` for a power of 2, else the powers of 2
    on either side of it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return []
    if is_pow2(value):
        return [v for v in (value // factor, value * factor) if v >= 1]
    return [prev_pow2(value), next_pow2(value)]


class _Bounds:
    """What the kernel allows a neighbour: each block parameter's range and the constraints over its tiles."""

    def __init__(self, ranges: Mapping[str, BlockRange], constraints: Sequence[Constraint]) -> None:
        self.ranges = dict(ranges)
        self.constraints = tuple(constraints)

    def rejection(self, config: Config, changed: str, origin: Config) -> str | None:
        """Why the neighbour ``config`` of ``origin`` (``changed`` changed) is left out, or None. Only the changed
        value is held to its range, and only the constraints ``origin`` keeps: the library chose the rest."""
        r = self.ranges.get(changed)
        v = config.get(changed)
        if r is not None and not r.allows(v):
            why = [e for e in r.evidence if e.startswith(("at most", "bounded", "covers", "must cover"))]
            return f"{changed}={v} is outside {r.lo}..{r.hi}: " + "; ".join(why)
        for c in self.constraints:
            if not c.check(config) and c.check(origin):
                return c.explain(config)
        return None


def _kernel_bounds(kernel: Any, names: Collection[str], heuristics: Collection[str], sizes: Mapping[str, Any],
                   limits: Limits, min_warps: int) -> tuple[list[str], _Bounds, bool]:  # fmt: skip
    """The configs' meta-parameters that shape the kernel's blocks, the bounds a derivation gives them, and whether
    the kernel has a loop to pipeline (else ``num_stages`` changes nothing in its binary)."""
    jit = unwrap_jit(kernel)
    info = KernelInfo.of(jit)
    unknown = sorted(set(names) - set(info.arg_names))
    if unknown:
        raise ConfigError(f"{info.name} has no parameter {', '.join(unknown)} that the configs set")
    reading = read_kernel(jit.fn, info.arg_names, info.constexprs)
    if reading.error is not None:
        raise ConfigError(f"{info.name}: {reading.error}")
    caller_set = set(info.arg_names) - set(names) - set(heuristics) - heuristics_of(kernel)
    blocks = [n for n in names if shapes_blocks(n, reading, caller_set)]
    ranges = {n: block_range(n, reading, sizes, caller_set, limits) for n in blocks}
    env = {k: v for k, v in sizes.items() if k in caller_set}
    env.update({n: v for n, v in info.defaults if n not in names and n not in env})
    tiles = TileCheck(reading, names, env, limits).constraints(min_warps=min_warps)
    return blocks, _Bounds(ranges, tiles), reading.has_loop


def widen(
    configs: Iterable[Any],
    *,
    factor: int = 2,
    launch: Launch | None = None,
    kernel: Any = None,
    heuristics: Collection[str] = (),
    sizes: Mapping[str, int] | None = None,
    limits: Limits | None = None,
    params: Collection[str] | None = None,
    radius: int = 1,
) -> WidenedSpace:
    """The given configs (duplicates removed, order kept), then each one's neighbours in turn (then, with ``radius``
    above 1, the neighbours' own neighbours, one ring at a time).

    ``params``: the meta-parameters to widen. By default, given ``kernel``, those that shape its blocks
    (neighbours then keep to the bounds of :func:`~tritune.space.derive_space` for ``sizes`` and ``limits``, and
    to the constraints over its tiles); without a kernel, the int meta-parameters the list varies or whose name
    has BLOCK or TILE in it. ``launch``: ``num_warps`` and ``num_stages`` stay within the smallest and largest of
    its sets. ``factor``: a power of 2 of at least 2."""
    if not is_pow2(factor) or factor < 2:
        raise ConfigError(f"widen(factor={factor!r}): the factor must be a power of 2 of at least 2")
    if isinstance(radius, bool) or not isinstance(radius, int) or radius < 1:
        raise ConfigError(f"widen(radius={radius!r}): the radius is how many steps from a given config, 1 or more")
    launch = launch or Launch()
    given = list(dict.fromkeys(as_config(c) for c in configs))
    if not given:
        raise ConfigError("widen() needs at least one config")
    names = sorted({n for c in given for n in c.names})
    bounds: _Bounds | None = None
    stages_kept: str | None = None
    if kernel is not None:
        blocks, bounds, has_loop = _kernel_bounds(kernel, names, heuristics, dict(sizes or {}), limits or Limits(),
                                                  min(launch.num_warps))
        if not has_loop:
            stages_kept = "the kernel has no loop to pipeline"
    else:
        blocks = [n for n in names if _block_like(n, given)]
    if params is not None:
        missing = sorted(set(params) - set(names))
        if missing:
            raise ConfigError(f"widen(params=...): no given config sets {', '.join(missing)}")
        blocks = [n for n in names if n in params]
    warps = (min(launch.num_warps), max(launch.num_warps))
    stages = None if stages_kept else (min(launch.num_stages), max(launch.num_stages))
    entries = [Widened(c) for c in given]
    seen = set(given)
    skipped: list[tuple[Config, str]] = []
    ring = given
    for _ in range(radius):
        outer: dict[Config, Widened] = {}
        for c in ring:
            for name, old, new in _neighbours(c, blocks, factor, warps, stages):
                n = c.replace(**{name: new})
                if n in outer:  # one step from another config of this ring too
                    if c not in outer[n].origins:
                        outer[n] = replace(outer[n], also=(*outer[n].also, c))
                    continue
                if n in seen:
                    continue
                seen.add(n)
                why = bounds.rejection(n, name, c) if bounds is not None else None
                if why is None:
                    outer[n] = Widened(n, c, f"{name} {old}->{new}")
                else:
                    skipped.append((n, why))
        entries += outer.values()
        ring = list(outer)
    return WidenedSpace(tuple(entries), tuple(blocks), tuple(skipped), radius, stages_kept)


def _block_like(name: str, configs: Sequence[Config]) -> bool:
    values = [c.get(name) for c in configs if name in c.names]
    if not values or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        return False
    return len(set(values)) > 1 or any(w in name.upper() for w in _BLOCK_WORDS)


def _neighbours(c: Config, blocks: Sequence[str], factor: int, warps: tuple[int, int],
                stages: tuple[int, int] | None) -> list[tuple[str, Any, Any]]:  # fmt: skip
    out: list[tuple[str, Any, Any]] = []
    for name in blocks:
        if name in c.names:
            out += [(name, c[name], v) for v in _steps(c[name], factor)]
    w, s = c.num_warps, c.num_stages
    out += [("num_warps", w, v) for v in (w // 2, w * 2) if warps[0] <= v <= warps[1] and v != w]
    if stages is not None:
        out += [("num_stages", s, v) for v in (s - 1, s + 1) if stages[0] <= v <= stages[1]]
    return out
