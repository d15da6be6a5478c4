"""The source of a ``@triton.jit`` function as the space derivation reads it, and the facts it reads from it.

:class:`Reading` is what :func:`tritune.space.reading.read_kernel` returns: where names set tensor extents
(:class:`Use`), the tensors built (:class:`Tile`), the blocks tied to sizes (:class:`Relation`), with the site of
each. :class:`Function` is one function's parsed source with its local assignments; :class:`Scope` a function
read at one call, its parameters bound to the caller's arguments.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

ONE = ast.Constant(1)

@dataclass(frozen=True)
class Site:
    """Where something was read: the function, its line in the source file, and the expression."""

    function: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.text} at {self.function} line {self.line}"


@dataclass(frozen=True)
class Dim:
    """One dimension of a tensor, as an expression over the kernel's parameters.

    ``names``: every name it reads; ``blocks``: the names that scale it up (``BLOCK_N`` in ``BLOCK_N // 2``, not
    the divisor). ``expr`` is the resolved expression (kernel parameters, constants, arithmetic)."""

    text: str
    names: frozenset[str]
    blocks: frozenset[str]
    expr: ast.expr = field(compare=False, hash=False, repr=False)

    @property
    def is_one(self) -> bool:
        return isinstance(self.expr, ast.Constant) and self.expr.value == 1


@dataclass(frozen=True)
class Use:
    """``name`` sets the extent of a tensor: ``kind`` is ``arange``, ``shape``, ``block_shape`` or ``dot``."""

    name: str
    kind: str
    site: Site


@dataclass(frozen=True)
class Tile:
    """A tensor the kernel builds, explicitly or by broadcasting, with at least one dimension that is not fixed."""

    dims: tuple[Dim, ...]
    site: Site


@dataclass(frozen=True)
class Relation:
    """A block tied to a size: ``offs < N`` (``mask``), ``offs % N`` (``modulo``), ``tl.cdiv(N, BLOCK)``
    (``cdiv``), ``range(0, N, BLOCK)`` (``loop``) or a block pointer's or descriptor's block and tensor shapes
    (``block_ptr``). ``sizes``: the parameters the size reads; ``extent``: the size itself (``N``,
    ``Z * N_CTX``, ``K - k * BLOCK_K``). ``whole``: an un-offset ``tl.arange(0, BLOCK)`` compared with the size
    itself, so one block must cover all of it."""

    blocks: frozenset[str]
    sizes: frozenset[str]
    kind: str
    whole: bool
    site: Site
    extent: Dim


@dataclass(frozen=True)
class Reading:
    """What the source of one kernel says about its shapes. ``error``: why the source could not be read."""

    kernel: str
    uses: tuple[Use, ...] = ()
    tiles: tuple[Tile, ...] = ()
    relations: tuple[Relation, ...] = ()
    #: Parameters used as a truth value or compared with a constant: mode switches, not sizes.
    flags: frozenset[str] = frozenset()
    has_loop: bool = False
    error: str | None = None

    def uses_of(self, name: str) -> list[Use]:
        return [u for u in self.uses if u.name == name]


class Function:
    """One jitted function's parsed source: its AST, its local assignments and where its lines are."""

    def __init__(self, py_fn: Any) -> None:
        lines, start = inspect.getsourcelines(py_fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
        node = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
        self.py_fn = py_fn
        self.node = node
        self.name: str = py_fn.__name__
        self.line0 = start - 1
        args = node.args
        self.params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        self.assigns: dict[str, list[ast.expr | None]] = {}
        self.loop_vars: set[str] = set()
        self.globals: dict[str, Any] = py_fn.__globals__
        self.closure: dict[str, Any] = {}
        for name, cell in zip(py_fn.__code__.co_freevars, py_fn.__closure__ or ()):
            try:
                self.closure[name] = cell.cell_contents
            except ValueError:  # a name the enclosing scope assigns later
                pass
        for stmt in node.body:
            for n in ast.walk(stmt):
                self._collect(n)

    def _collect(self, n: ast.AST) -> None:
        if isinstance(n, ast.Assign):
            for target in n.targets:
                self._assign(target, n.value)
        elif isinstance(n, (ast.AnnAssign, ast.NamedExpr)) and n.value is not None:
            self._assign(n.target, n.value)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            self.assigns.setdefault(n.target.id, []).append(ast.BinOp(ast.Name(n.target.id), n.op, n.value))
        elif isinstance(n, ast.For):
            self.loop_vars.update(x.id for x in ast.walk(n.target) if isinstance(x, ast.Name))

    def _assign(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self.assigns.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
            if parts is not None and len(parts) == len(target.elts):
                for t, v in zip(target.elts, parts):
                    self._assign(t, v)
            else:
                for t in target.elts:
                    self._assign(t, None)

    def lookup(self, name: str) -> Any:
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, None)

    def local(self, name: str) -> bool:
        return name in self.assigns or name in self.loop_vars or name in self.params


@dataclass(eq=False)
class Scope:
    """A function read at one call: the kernel itself (``bound`` None) or a helper with its parameters bound."""

    fn: Function
    bound: dict[str, tuple[ast.expr, Scope]] | None
    depth: int


def names_of(expr: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(expr) if isinstance(n, ast.Name))


def blocks_of(expr: ast.AST) -> frozenset[str]:
    """The names that scale ``expr`` up: through ``+ - * <<`` and ``min``/``max``, the left of ``// / % >>``."""
    if isinstance(expr, ast.Name):
        return frozenset((expr.id,))
    if isinstance(expr, ast.BinOp):
        if isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.LShift)):
            return blocks_of(expr.left) | blocks_of(expr.right)
        if isinstance(expr.op, (ast.FloorDiv, ast.Div, ast.Mod, ast.RShift)):
            return blocks_of(expr.left)
    if isinstance(expr, ast.UnaryOp):
        return blocks_of(expr.operand)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("min", "max"):
        return frozenset().union(*(blocks_of(a) for a in expr.args))
    return frozenset()


def dim_of(expr: ast.expr) -> Dim:
    return Dim(ast.unparse(expr), names_of(expr), blocks_of(expr), expr)


def broadcast(shapes: list[tuple[Dim, ...] | None]) -> tuple[Dim, ...] | None:
    """Numpy-style broadcasting of the shapes that are known (an unknown one is left out)."""
    known = [s for s in shapes if s is not None]
    if not known:
        return None
    rank = max(len(s) for s in known)
    out: list[Dim] = []
    for i in range(rank):
        pick: Dim | None = None
        for s in known:
            j = i - (rank - len(s))
            if j >= 0 and (pick is None or pick.is_one):
                pick = s[j]
        assert pick is not None
        out.append(pick)
    return tuple(out)
