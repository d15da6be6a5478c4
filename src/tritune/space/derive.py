"""Derive a search space from a kernel: its free ``tl.constexpr`` parameters, their ranges, and why.

A parameter is *free* when the caller does not pass it and ``@triton.heuristics`` does not set it. A free
parameter that shapes blocks (an ``tl.arange`` length, a tensor or block shape, a ``tl.dot`` operand) gets a
power-of-2 range bounded by Triton's limits and the sizes it is tied to; another free int gets a few values
around its default; the rest keep their defaults. ``num_warps`` and ``num_stages`` are crossed with them, and
named constraints reject what cannot fit. :class:`DerivedSpace` says how each range was found, and a kernel
whose tunable parameters cannot be found says so in one line.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from tritune.adapters.kernel import KernelInfo, unwrap_jit
from tritune.config import LAUNCH_OPTIONS, Config
from tritune.errors import ConfigError
from tritune.space.blocks import BlockRange, TileCheck, block_range
from tritune.space.bounds import Launch, Limits
from tritune.space.reading import read_kernel
from tritune.space.source import Reading
from tritune.space.space import Constraint, Space, use_derivation


@dataclass(frozen=True)
class DerivedParam:
    """One parameter of a derived space: its values, why it is there, and the evidence (sites and bounds)."""

    name: str
    values: tuple[Any, ...]
    why: str
    evidence: tuple[str, ...] = ()

    def __str__(self) -> str:
        vals = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in self.values)
        return f"{self.name} in [{vals}]: {self.why}" + "".join(f"\n    {e}" for e in self.evidence)


@dataclass(frozen=True)
class DerivedSpace:
    """A derived space and how it was derived.

    ``space`` is None when no space could be derived; ``reason`` then says why in one line, and the caller keeps
    its own config list. ``params``: the tuned parameters in the space's order; ``fixed``: free parameters left
    at their defaults; ``unresolved``: what could not be derived; ``notes``: trims and other facts."""

    kernel: str
    space: Space | None
    params: tuple[DerivedParam, ...] = ()
    fixed: tuple[DerivedParam, ...] = ()
    unresolved: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.space is not None

    def param(self, name: str) -> DerivedParam:
        for p in (*self.params, *self.fixed):
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def blocks(self) -> tuple[str, ...]:
        """The parameters that shape blocks."""
        return tuple(p.name for p in self.params if p.why.startswith("shapes blocks"))

    def explain(self) -> str:
        """Every parameter, constraint and note, one per line (evidence indented)."""
        if self.space is None:
            return f"{self.reason}" + "".join(f"\n  {u}" for u in self.unresolved)
        lines = [f"{self.kernel}: {len(self.space)} configs of {self.space.size} combinations"]
        lines += [f"  {p}" for p in self.params]
        lines += [f"  {p}" for p in self.fixed]
        lines += [f"  constraint {c.name}: {c.message}" for c in self.space.constraints]
        lines += [f"  cannot derive: {u}" for u in self.unresolved]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def heuristics_of(kernel: Any) -> set[str]:
    """The names the ``@triton.heuristics`` wrappers around ``kernel`` set."""
    from triton.runtime.autotuner import Heuristics

    out: set[str] = set()
    fn = kernel
    for _ in range(16):
        if isinstance(fn, Heuristics):
            out.update(fn.values)
        inner = getattr(fn, "fn", None)
        if inner is None or inner is fn:
            break
        fn = inner
    return out


def shapes_blocks(name: str, reading: Reading, caller_set: Collection[str]) -> bool:
    """Whether ``name`` sets a tensor's extent, or tiles a size the caller passes (``tl.cdiv(K, BLOCK_K)``)."""
    return bool(reading.uses_of(name)) or any(name in r.blocks and r.sizes & set(caller_set) for r in reading.relations)


def _check_names(kind: str, names: Collection[str], info: KernelInfo) -> None:
    """Refuse names the kernel does not have (a launch option the call passes is not a parameter: left alone)."""
    unknown = sorted(set(names) - set(info.arg_names) - set(LAUNCH_OPTIONS))
    if unknown:
        raise ConfigError(
            f"{info.name} has no parameter {', '.join(unknown)} ({kind}); its parameters are {', '.join(info.arg_names)}"
        )


def _around(default: int) -> list[int]:
    """A free int's values around its positive default: half, itself, double (powers of 2 stay powers of 2)."""
    return sorted({max(1, default // 2), default, default * 2})


def derive_space(
    kernel: Any,
    *,
    passed: Collection[str],
    heuristics: Collection[str] = (),
    sizes: Mapping[str, int] | None = None,
    limits: Limits | None = None,
    launch: Launch | None = None,
    launch_only: bool = False,
) -> DerivedSpace:
    """The search space of ``kernel``'s free ``tl.constexpr`` parameters and launch options.

    ``passed``: the parameter names the call binds, positionally or by keyword (launch options among them are
    ignored). ``heuristics``: names set by ``@triton.heuristics`` (those of heuristics wrapping ``kernel`` are
    added). ``sizes``: integer values of the call's arguments (``{"M": 4096, "HEAD_DIM": 64}``), and of heuristics'
    names where known: a block tied to sizes by the source (``offs < N``, ``range(0, N, BLOCK)``,
    ``tl.cdiv(N, BLOCK)``) is bounded by the next power of 2 of the smallest, and passed constexprs' values size
    the tiles. ``limits``/``launch``: :class:`Limits` and :class:`Launch`. ``launch_only``: a kernel without
    tunable meta-parameters gets a space of launch options alone instead of none.
    """
    limits = limits or Limits()
    launch = launch or Launch()
    sizes = dict(sizes or {})
    jit = unwrap_jit(kernel)
    info = KernelInfo.of(jit)
    _check_names("passed", passed, info)
    _check_names("heuristics", heuristics, info)
    set_by = set(heuristics) | heuristics_of(kernel)
    defaults = dict(info.defaults)
    free = [n for n in info.arg_names if n in info.constexprs and n not in passed and n not in set_by]
    reading = read_kernel(jit.fn, info.arg_names, info.constexprs)
    if reading.error is not None:
        return DerivedSpace(info.name, None, reason=f"{info.name}: {reading.error}; keep its config list")

    blocks: list[BlockRange] = []
    tuned: list[DerivedParam] = []
    fixed: list[DerivedParam] = []
    unresolved: list[str] = []
    caller_set = set(info.arg_names) - set(free)
    for name in free:
        has_default = name in defaults
        default = defaults.get(name)
        if name in LAUNCH_OPTIONS:
            if not has_default:
                unresolved.append(f"{name} is a kernel parameter named like a launch option: a config cannot set it")
            else:
                fixed.append(DerivedParam(name, (default,), "left at its default (named like a launch option)"))
        elif shapes_blocks(name, reading, caller_set) and not (has_default and not isinstance(default, int)):
            r = block_range(name, reading, sizes, caller_set, limits)
            blocks.append(r)
            tuned.append(DerivedParam(name, tuple(r.values), "shapes blocks", r.evidence))
        elif has_default and isinstance(default, int) and not isinstance(default, bool) and default > 0 \
                and name not in reading.flags:  # fmt: skip
            tuned.append(DerivedParam(name, tuple(_around(default)), f"a free int: around its default {default}"))
        elif has_default:
            fixed.append(DerivedParam(name, (default,), "left at its default"))
        elif name in reading.flags:
            unresolved.append(
                f"{name} has no default and is a mode switch (tested or compared with a constant): pass it at the call"
            )
        else:
            tuned.append(DerivedParam(name, tuple(limits.other_ints),
                                      "a free int without a default: the small set Limits.other_ints"))  # fmt: skip

    if unresolved:
        return DerivedSpace(info.name, None, tuple(tuned), tuple(fixed), tuple(unresolved),
                            reason=f"{info.name}: cannot derive a space: {unresolved[0]}")  # fmt: skip
    if not tuned and not launch_only:
        return DerivedSpace(info.name, None, (), tuple(fixed), reason=_nothing_free(info, passed, set_by, fixed))

    env = {p.name: p.values[0] for p in fixed}
    env.update({k: v for k, v in sizes.items() if k in caller_set})
    tiles = TileCheck(reading, [p.name for p in tuned], env, limits)
    launch_params = _launch_params(reading, launch, tiles, limits)
    values = {p.name: p.values for p in tuned}
    constraints = tiles.constraints(values, min(launch.num_warps))
    return _assemble(info.name, tuned, launch_params, fixed, constraints, limits, {b.name for b in blocks})


def _nothing_free(info: KernelInfo, passed: Collection[str], set_by: Collection[str], fixed: list[DerivedParam]) -> str:
    if not info.constexprs:
        why = "it has no tl.constexpr parameter"
    else:
        parts = []
        by_caller = [n for n in info.arg_names if n in info.constexprs and n in passed]
        by_heuristics = [n for n in info.arg_names if n in info.constexprs and n in set_by and n not in passed]
        if by_caller:
            parts.append(f"{', '.join(by_caller)} {'is' if len(by_caller) == 1 else 'are'} passed by the caller")
        if by_heuristics:
            parts.append(f"{', '.join(by_heuristics)} set by @triton.heuristics")
        if fixed:
            whose = "its default" if len(fixed) == 1 else "their defaults"
            parts.append(f"{', '.join(p.name for p in fixed)} left at {whose}")
        why = "; ".join(parts)
    return f"{info.name}: no tunable tl.constexpr parameter ({why}); keep its config list"


def _launch_params(reading: Reading, launch: Launch, tiles: TileCheck, limits: Limits) -> list[DerivedParam]:
    warps_ev: tuple[str, ...] = ()
    if tiles.shapes:
        warps_ev = (f"per config: 32 x num_warps <= elements of the largest tile <= "
                    f"{limits.max_per_thread} x 32 x num_warps",)  # fmt: skip
    out = [DerivedParam("num_warps", launch.num_warps, "launch option", warps_ev)]
    if reading.has_loop:
        out.append(DerivedParam("num_stages", launch.num_stages, "launch option: the kernel has a loop to pipeline"))
    else:
        out.append(DerivedParam("num_stages", launch.num_stages[:1], "launch option: no loop to pipeline, one value"))
    for name in ("num_ctas", "maxnreg"):
        values = getattr(launch, name)
        if len(values) > 1:
            out.append(DerivedParam(name, values, "launch option"))
    return out


def _space(params: list[DerivedParam], constraints: list[Constraint]) -> Space:
    return Space({p.name: list(p.values) for p in params}, constraints)


def _size(params: list[DerivedParam]) -> int:
    n = 1
    for p in params:
        n *= len(p.values)
    return n


def _drop(params: list[DerivedParam], i: int, gone: tuple[Any, ...], why: str) -> None:
    p = params[i]
    keep = tuple(v for v in p.values if v not in gone)
    params[i] = DerivedParam(p.name, keep, p.why, (*p.evidence, f"{', '.join(map(str, gone))}: {why}"))


def _trim_one(params: list[DerivedParam], blocks: set[str]) -> tuple[str, Any] | None:
    """Drop one value to shrink the space, the least informed first: the smallest of a free int that shapes no
    block (down to its two largest), else the smallest of the block parameter with the most values (at least 3),
    else the largest ``num_stages``; the (name, value) dropped, or None when nothing is left to drop."""
    launch = {"num_warps", "num_stages", "num_ctas", "maxnreg"}
    ints = [i for i, p in enumerate(params) if p.name not in blocks and p.name not in launch and len(p.values) >= 3]
    cands = [(len(p.values), -i, i) for i, p in enumerate(params) if p.name in blocks and len(p.values) >= 3]
    if ints:
        i = ints[0]
        value = params[i].values[0]
    elif cands:
        i = max(cands)[2]
        value = params[i].values[0]
    else:
        at = [i for i, p in enumerate(params) if p.name == "num_stages" and len(p.values) >= 3]
        if not at:
            return None
        i = at[0]
        value = params[i].values[-1]
    _drop(params, i, (value,), "dropped to keep within Limits.max_configs")
    return params[i].name, value


def _live(params: list[DerivedParam], configs: list[Config]) -> None:
    """Drop the values no allowed config has (a block too small for one warp, say): the configs stay the same."""
    for i, p in enumerate(params):
        seen = {c.get(p.name) for c in configs}
        gone = tuple(v for v in p.values if v not in seen)
        if gone and len(gone) < len(p.values):
            _drop(params, i, gone, "no config within the constraints")


def _assemble(kernel: str, tuned: list[DerivedParam], launch_params: list[DerivedParam], fixed: list[DerivedParam],
              constraints: list[Constraint], limits: Limits, blocks: set[str]) -> DerivedSpace:  # fmt: skip
    """The space of ``tuned`` x ``launch_params`` under ``constraints``, trimmed to ``limits.max_configs``.

    Combinations beyond 8 x ``max_configs`` are trimmed before enumerating them; the allowed configs are then
    enumerated once and trimmed by filtering them."""
    params = [*tuned, *launch_params]
    dropped: list[str] = []
    while _size(params) > 8 * limits.max_configs and (d := _trim_one(params, blocks)) is not None:
        dropped.append(f"{d[0]}={d[1]}")
    configs = _space(params, constraints).configs()
    _live(params, configs)
    while len(configs) > limits.max_configs and (d := _trim_one(params, blocks)) is not None:
        dropped.append(f"{d[0]}={d[1]}")
        configs = [c for c in configs if c.get(d[0]) != d[1]]
        _live(params, configs)
    notes = []
    if dropped:
        notes.append(f"trimmed to {len(configs)} configs (Limits.max_configs={limits.max_configs}): "
                     f"dropped {', '.join(dropped)}")  # fmt: skip
    if len(configs) > limits.max_configs:
        notes.append(f"{len(configs)} configs remain above Limits.max_configs={limits.max_configs}")
    space = _space(params, constraints)
    if not configs:
        first = next((why for _, why in space.enumerate() if why), "")
        return DerivedSpace(kernel, None, tuple(params), tuple(fixed), notes=tuple(notes),
                            reason=f"{kernel}: no combination keeps to the bounds; the first: {first}")  # fmt: skip
    derived = DerivedSpace(kernel, space, tuple(params), tuple(fixed), notes=tuple(notes))
    space.derivation = derived
    return derived


use_derivation(derive_space)
