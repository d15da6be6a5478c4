"""The bounds a generated space keeps to: Triton's rules, practical tile sizes, launch-option sets.

Each default states its reason. ``Limits`` bound the meta-parameters a derivation or a widening generates;
``Launch`` lists the launch options they are crossed with. Dimension expressions read from a kernel's source are
evaluated by :func:`evaluator`, which walks a small arithmetic subset of Python's AST (never ``eval``).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tritune.errors import ConfigError

#: ``triton.language.TRITON_MAX_TENSOR_NUMEL`` (Triton 3.x): no tensor of a kernel may hold more elements.
TRITON_MAX_TENSOR_NUMEL = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Bounds of generated block sizes and of a space's size.

    ``max_tile``: elements of one tile a program builds (2**16 = a 256x256 fp32 accumulator, the largest tile
    Triton's own tutorials and the tuned libraries use; capped by Triton's 2**20 per tensor).
    ``max_per_thread``: elements of the largest tile per thread (``tile / (32 * num_warps)``): 256 fp32 values
    fill the 255 registers a thread can have, so more only spills.
    ``min_dot``: the smallest extent of a ``tl.dot`` operand dimension (Triton needs K >= 16 for 16-bit
    operands; M and N below 16 pad the tensor-core instruction).
    ``max_dot``: the largest (256, the widest tile edge of Hopper's ``wgmma``; larger edges only add registers).
    ``max_configs``: the size a derived space is trimmed to (before the screen): the smallest values of free ints
    that shape no block go first (down to two), then the smallest block values, then the deepest ``num_stages``;
    the search handles spaces of thousands of configs.
    ``other_ints``: the values of a free integer meta-parameter that shapes no block and has no default.
    """

    max_tile: int = 1 << 16
    max_per_thread: int = 256
    min_dot: int = 16
    max_dot: int = 256
    max_configs: int = 4096
    other_ints: tuple[int, ...] = (1, 2, 4, 8)

    def __post_init__(self) -> None:
        for name in ("max_tile", "min_dot", "max_dot"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1 or v & (v - 1):
                raise ConfigError(f"Limits.{name}={v!r} must be a positive power of 2")
        if self.min_dot > self.max_dot:
            raise ConfigError(f"Limits.min_dot={self.min_dot} is above max_dot={self.max_dot}")
        if self.max_per_thread < 1 or self.max_configs < 1 or not self.other_ints:
            raise ConfigError("Limits.max_per_thread and max_configs must be positive and other_ints not empty")

    @property
    def tile_cap(self) -> int:
        return min(self.max_tile, TRITON_MAX_TENSOR_NUMEL)


@dataclass(frozen=True)
class Launch:
    """The launch options a generated space crosses its meta-parameters with.

    ``num_warps`` 1..16 (powers of 2, as Triton takes them); ``num_stages`` 1..5 (software-pipelining depth; a
    kernel without a loop gets only the first value, as nothing is pipelined); ``num_ctas`` and ``maxnreg`` are
    left at Triton's defaults unless several values are given.
    """

    num_warps: tuple[int, ...] = (1, 2, 4, 8, 16)
    num_stages: tuple[int, ...] = (1, 2, 3, 4, 5)
    num_ctas: tuple[int, ...] = (1,)
    maxnreg: tuple[int | None, ...] = (None,)

    def __post_init__(self) -> None:
        for name in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
            values = getattr(self, name)
            if not isinstance(values, tuple) or not values:
                raise ConfigError(f"Launch.{name} must be a non-empty tuple, got {values!r}")
        if any(w < 1 or w & (w - 1) for w in self.num_warps):
            raise ConfigError(f"Launch.num_warps={self.num_warps} must be powers of 2")
        if any(s < 1 for s in self.num_stages):
            raise ConfigError(f"Launch.num_stages={self.num_stages} must be at least 1")


def is_pow2(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1 and v & (v - 1) == 0


def next_pow2(n: int) -> int:
    """The smallest power of 2 at least ``n`` (1 for ``n <= 1``)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def prev_pow2(n: int) -> int:
    """The largest power of 2 at most ``n`` (``n >= 1``)."""
    return 1 << (n.bit_length() - 1)


_BINOPS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}

Values = Mapping[str, Any]


def evaluator(expr: ast.expr) -> Callable[[Values], int | None] | None:
    """A function of the names' values computing the integer expression ``expr``, or None when ``expr`` uses
    anything but int constants, names, ``+ - * // % << >>``, unary minus and ``min``/``max``. The function
    returns None when a name has no int value or a division is by zero."""
    if isinstance(expr, ast.Constant):
        value = expr.value
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return lambda env: value
    if isinstance(expr, ast.Name):
        name = expr.id

        def read(env: Values) -> int | None:
            v = env.get(name)
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        return read
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        inner = evaluator(expr.operand)
        if inner is None:
            return None
        sign = -1 if isinstance(expr.op, ast.USub) else 1
        return lambda env: None if (v := inner(env)) is None else sign * v
    if isinstance(expr, ast.BinOp) and type(expr.op) in _BINOPS:
        left, right, op = evaluator(expr.left), evaluator(expr.right), _BINOPS[type(expr.op)]
        if left is None or right is None:
            return None

        def binop(env: Values) -> int | None:
            a, b = left(env), right(env)
            if a is None or b is None or (b == 0 and op in (operator.floordiv, operator.mod)):
                return None
            return op(a, b)

        return binop
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("min", "max"):
        parts = [evaluator(a) for a in expr.args]
        if not parts or any(p is None for p in parts):
            return None
        pick = min if expr.func.id == "min" else max

        def call(env: Values) -> int | None:
            vals = [p(env) for p in parts]  # type: ignore[misc]
            return None if any(v is None for v in vals) else pick(vals)  # type: ignore[type-var]

        return call
    return None
