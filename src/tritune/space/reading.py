"""Read a kernel's facts: where its names set tensor extents, the tiles it builds, and the blocks tied to sizes.

``offs[:, None] < M`` with ``offs = pid * BLOCK + tl.arange(0, BLOCK)`` ties ``BLOCK`` to ``M``;
``tl.cdiv(K, BLOCK_K)`` and ``range(0, N, BLOCK_N)`` tie a block to the size it tiles; ``cols < n_cols`` with
``cols = tl.arange(0, BLOCK)`` (no offset) says one block covers all of ``n_cols``.
"""

from __future__ import annotations

import ast
from typing import Any

from tritune.space.shapes import Shapes
from tritune.space.source import (
    Dim,
    Function,
    Reading,
    Relation,
    Scope,
    Site,
    Tile,
    Use,
    blocks_of,
    dim_of,
    names_of,
)


class _Reader(Shapes):
    def __init__(self, kernel_params: frozenset[str], constexprs: frozenset[str]) -> None:
        super().__init__(kernel_params, constexprs)
        self.uses: list[Use] = []
        self.tiles: dict[tuple[str, ...], Tile] = {}
        self.relations: list[Relation] = []
        self.flags: set[str] = set()
        self.has_loop = False

    # -- facts --------------------------------------------------------------------------------------
    def site(self, node: ast.AST, scope: Scope) -> Site:
        text = ast.unparse(node)
        if len(text) > 72:
            text = text[:71] + "…"
        return Site(scope.fn.name, scope.fn.line0 + getattr(node, "lineno", 1), text)

    def kernel_name(self, expr: ast.expr) -> str | None:
        return expr.id if isinstance(expr, ast.Name) and expr.id in self.kernel_params else None

    def visit(self, scope: Scope) -> None:
        for stmt in scope.fn.node.body:
            for node in ast.walk(stmt):
                self._visit_node(node, scope)

    def _visit_node(self, node: ast.AST, scope: Scope) -> None:
        if isinstance(node, ast.While) or (isinstance(node, ast.For) and not self._static_loop(node, scope)):
            self.has_loop = True
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            self._flag(node.test, scope)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self._flag(v, scope)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self._flag(node.operand, scope)
        if isinstance(node, ast.Call):
            self._visit_call(node, scope)
        elif isinstance(node, ast.Compare):
            self._visit_compare(node, scope)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            self._relate(node.left, node.right, "modulo", node, scope)
        if isinstance(node, (ast.Call, ast.BinOp, ast.Compare, ast.Subscript, ast.UnaryOp)):
            self._tile(self.shape(node, scope), node, scope)

    def _static_loop(self, node: ast.For, scope: Scope) -> bool:
        return isinstance(node.iter, ast.Call) and self.tl_name(node.iter.func, scope) == "static_range"

    def _flag(self, test: ast.expr, scope: Scope) -> None:
        name = self.kernel_name(self.resolve(test, scope)) if isinstance(test, ast.Name) else None
        if name is not None:
            self.flags.add(name)

    def _use(self, dims: tuple[Dim, ...] | None, kind: str, node: ast.AST, scope: Scope) -> None:
        for d in dims or ():
            for name in sorted(d.blocks & self.kernel_params):
                self.uses.append(Use(name, kind, self.site(node, scope)))

    def _visit_call(self, node: ast.Call, scope: Scope) -> None:
        name = self.tl_name(node.func, scope)
        args = node.args
        if name == "arange" and (len(args) >= 2 or any(k.arg == "end" for k in node.keywords)):
            self._use((self.arange_dim(node, scope),), "arange", node, scope)
        elif name in ("zeros", "full", "empty", "reshape", "view", "broadcast_to"):
            self._use(self.shape(node, scope), "shape", node, scope)
        elif name in ("make_block_ptr", "make_tensor_descriptor", "_experimental_make_tensor_descriptor",
                      "_experimental_descriptor_load", "experimental_descriptor_load"):  # fmt: skip
            block = self.shape(node, scope)
            self._use(block, "block_shape", node, scope)
            if "descriptor_load" in name:  # a load with its own block shape: no tensor shape beside it
                return
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            extent = kw.get("shape", args[1] if len(args) > 1 else None)
            dims = self.resolve(extent, scope) if extent is not None else None
            if block is not None and isinstance(dims, ast.Tuple) and len(dims.elts) == len(block):
                for extent_of, e in zip(block, dims.elts):
                    self._add_relation(extent_of.blocks, e, "block_ptr", False, node, scope)
        elif name == "dot":
            lhs, rhs = self.dot_operands(node, scope)
            acc = node.args[2] if len(args) > 2 else next((k.value for k in node.keywords if k.arg == "acc"), None)
            out = self.shape(acc, scope) if acc is not None else None
            self._use((*(lhs or ())[-2:], *(rhs or ())[-1:], *(out or ())[-2:]), "dot", node, scope)
        elif name in ("py:range", "range", "static_range") and len(args) >= 3 \
                and self._tiling_loop(args[0], args[2], scope):  # fmt: skip
            self._relation(args[2], args[1], "loop", False, node, scope)
        elif name == "cdiv" and len(args) == 2:
            self._relation(args[1], args[0], "cdiv", False, node, scope)
        elif name is None and isinstance(node.func, ast.Attribute) and node.func.attr in ("reshape", "view"):
            self._use(self.shape(node, scope), "shape", node, scope)
        elif name is None and (callee := self.callee(node.func, scope)) is not None:
            if self.enter(callee, node, scope) is None:
                self.has_loop = True  # a helper not read may loop: num_stages may matter

    def _tiling_loop(self, start: ast.expr, step: ast.expr, scope: Scope) -> bool:
        """A loop that walks a size in blocks starts at 0 or at a multiple of its block (``pid * BLOCK``); one that
        starts at the program id (``range(pid, tiles, NUM_SMS)``) walks programs, not a size."""
        first = self.resolve(start, scope)
        if isinstance(first, ast.Constant):
            return first.value == 0
        return bool(blocks_of(first) & blocks_of(self.resolve(step, scope)))

    def _visit_compare(self, node: ast.Compare, scope: Scope) -> None:
        if len(node.ops) != 1:
            return
        op, right = node.ops[0], node.comparators[0]
        if isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            self._relate(node.left, right, "mask", node, scope)
            self._relate(right, node.left, "mask", node, scope)
        elif isinstance(op, (ast.Eq, ast.NotEq)):
            for x, y in ((node.left, right), (right, node.left)):
                if isinstance(y, ast.Constant) and isinstance(x, ast.Name):
                    self._flag(x, scope)

    def _relate(self, offsets: ast.expr, size: ast.expr, kind: str, node: ast.AST, scope: Scope) -> None:
        """``offsets`` a vector along one block's dimension, ``size`` a scalar: the block is tied to the size."""
        shape = self.shape(offsets, scope)
        if not shape or self.shape(size, scope) != ():
            return
        wide = [d for d in shape if not d.is_one]
        if len(wide) != 1:
            return
        resolved = self.resolve(size, scope)
        whole = kind == "mask" and isinstance(resolved, ast.Name) and self._bare_arange(offsets, scope, 0)
        self._add_relation(wide[0].blocks, resolved, kind, whole, node, scope)

    def _relation(self, block: ast.expr, size: ast.expr, kind: str, whole: bool, node: ast.AST, scope: Scope) -> None:
        self._add_relation(blocks_of(self.resolve(block, scope)), self.resolve(size, scope), kind, whole, node, scope)

    def _add_relation(self, blocks: frozenset[str], extent: ast.expr, kind: str, whole: bool, node: ast.AST,
                      scope: Scope) -> None:  # fmt: skip
        blocks &= self.kernel_params
        sizes = (names_of(extent) & self.kernel_params) - blocks
        if blocks and sizes:
            self.relations.append(Relation(blocks, sizes, kind, whole, self.site(node, scope), dim_of(extent)))

    def _bare_arange(self, node: ast.expr, scope: Scope, depth: int) -> bool:
        """Whether ``node`` is ``tl.arange(0, ...)`` itself (maybe indexed with ``None``), with no offset added."""
        if depth > 16:
            return False
        if isinstance(node, ast.Subscript):
            return self._bare_arange(node.value, scope, depth + 1)
        if isinstance(node, ast.Name):
            if scope.bound is not None and node.id in scope.bound:
                expr, outer = scope.bound[node.id]
                return self._bare_arange(expr, outer, depth + 1)
            values = scope.fn.assigns.get(node.id)
            if values and len(values) == 1 and values[0] is not None and node.id not in scope.fn.loop_vars:
                return self._bare_arange(values[0], scope, depth + 1)
            return False
        if isinstance(node, ast.Call) and self.tl_name(node.func, scope) == "arange":
            start = node.args[0] if node.args else None
            value = self.resolve(start, scope) if start is not None else ast.Constant(0)
            return isinstance(value, ast.Constant) and value.value == 0
        return False

    def _tile(self, shape: tuple[Dim, ...] | None, node: ast.AST, scope: Scope) -> None:
        if not shape:
            return
        dims = tuple(d for d in shape if not d.is_one)
        if not any(d.names for d in dims):
            return
        key = tuple(sorted(d.text for d in dims))
        if key not in self.tiles:
            self.tiles[key] = Tile(dims, self.site(node, scope))


def read_kernel(py_fn: Any, params: tuple[str, ...], constexprs: frozenset[str]) -> Reading:
    """Read the source of the kernel's Python function ``py_fn``: its parameters ``params``, of which
    ``constexprs`` are ``tl.constexpr``."""
    name = getattr(py_fn, "__name__", "kernel")
    try:
        fn = Function(py_fn)
    except (OSError, TypeError, SyntaxError, StopIteration) as e:
        return Reading(name, error=f"its source cannot be read ({type(e).__name__}: {e})")
    reader = _Reader(frozenset(params), constexprs)
    try:
        reader.visit(Scope(fn, None, 0))
    except Exception as e:  # a construct the reading does not know: no space, and the caller keeps its list
        return Reading(name, error=f"its source could not be read ({type(e).__name__}: {e})")
    return Reading(
        kernel=name,
        uses=tuple(reader.uses),
        tiles=tuple(reader.tiles.values()),
        relations=tuple(reader.relations),
        flags=frozenset(reader.flags),
        has_loop=reader.has_loop,
    )
