"""Shapes of a kernel's tensors, read statically: what each expression evaluates to, in the kernel's names.

The reading follows local names, the jitted helpers a kernel calls (their parameters bound to the caller's
arguments) and the shapes Triton's language functions give their results, so that
``offs = pid * BLOCK + tl.arange(0, BLOCK)`` is a ``(BLOCK,)`` tensor. What it cannot follow (an unknown call, a
starred argument) it leaves unknown, never guessed. Nothing is compiled or run.
"""

from __future__ import annotations

import ast
import copy
import types
from typing import Any

from tritune.space.source import ONE, Dim, Function, Scope, blocks_of, broadcast, dim_of

#: How deep nested jitted helpers are followed.
_MAX_DEPTH = 6
#: Triton functions whose result has their first argument's shape.
_SAME_SHAPE = frozenset((
    "load", "advance", "load_tensor_descriptor", "zeros_like", "to", "cast", "multiple_of", "max_contiguous",
    "max_constancy", "cumsum", "cumprod", "associative_scan", "sort", "flip", "histogram",
))  # fmt: skip
_REDUCTIONS = frozenset(("sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "reduce_or", "prod"))
_NO_TENSOR = frozenset((
    "py:range", "store", "store_tensor_descriptor", "static_print", "static_assert", "device_print",
    "device_assert", "debug_barrier", "range", "static_range", "split", "cat", "constexpr", "inline_asm_elementwise",
))  # fmt: skip
_SCALAR = frozenset(("program_id", "num_programs"))


class Shapes:
    """Resolution of names and inference of shapes over one kernel and the helpers it calls."""

    def __init__(self, kernel_params: frozenset[str], constexprs: frozenset[str]) -> None:
        self.kernel_params = kernel_params
        self.constexprs = constexprs
        self._functions: dict[Any, Function] = {}
        self._scopes: dict[tuple[Any, ...], Scope | None] = {}
        # Keyed by the ids of a node and a scope, holding the node: a hit counts only for the same object.
        self._shapes: dict[tuple[int, int], tuple[ast.expr, tuple[Dim, ...] | None]] = {}
        self._resolved: dict[tuple[int, int], tuple[ast.expr, ast.expr]] = {}
        self._busy: set[tuple[int, str]] = set()

    # -- values -----------------------------------------------------------------------------------
    def resolve(self, node: ast.expr, scope: Scope) -> ast.expr:
        """``node`` as an expression over the kernel's parameters: locals and helper parameters substituted."""
        key = (id(node), id(scope))
        hit = self._resolved.get(key)
        if hit is None or hit[0] is not node:
            hit = self._resolved[key] = (node, self._resolve(node, scope))
        return hit[1]

    def _resolve(self, node: ast.expr, scope: Scope) -> ast.expr:
        if isinstance(node, ast.Name):
            return self._resolve_name(node.id, scope)
        if isinstance(node, ast.BinOp):
            return ast.BinOp(self.resolve(node.left, scope), node.op, self.resolve(node.right, scope))
        if isinstance(node, ast.UnaryOp):
            return ast.UnaryOp(node.op, self.resolve(node.operand, scope))
        if isinstance(node, (ast.Tuple, ast.List)):
            return ast.Tuple([self.resolve(e, scope) for e in node.elts], ast.Load())
        if isinstance(node, ast.Call):
            name = self.tl_name(node.func, scope)
            if name == "constexpr" and len(node.args) == 1:
                return self.resolve(node.args[0], scope)
            if name in ("py:min", "py:max") and not node.keywords:
                return ast.Call(ast.Name(name[3:]), [self.resolve(a, scope) for a in node.args], [])
        return self._substituted(node, scope)

    def _substituted(self, node: ast.expr, scope: Scope) -> ast.expr:
        """A copy of ``node`` with its names resolved: what it reads, in the kernel's names (a conditional, a
        call), for the names a relation needs; never evaluated."""
        reader = self

        class Sub(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.expr:
                return reader._resolve_name(n.id, scope)

        if not any(isinstance(n, ast.Name) for n in ast.walk(node)):
            return node
        out = Sub().visit(copy.deepcopy(node))
        assert isinstance(out, ast.expr)
        return out

    def _resolve_name(self, name: str, scope: Scope) -> ast.expr:
        if scope.bound is not None and name in scope.bound:
            expr, outer = scope.bound[name]
            return self.resolve(expr, outer)
        if scope.bound is None and name in self.kernel_params:
            return ast.Name(name)
        values = scope.fn.assigns.get(name)
        busy = (id(scope), name)
        if values and name not in scope.fn.loop_vars and busy not in self._busy and values[0] is not None:
            self._busy.add(busy)
            try:
                return self.resolve(values[0], scope)
            finally:
                self._busy.discard(busy)
        if not scope.fn.local(name):
            value = getattr(scope.fn.lookup(name), "value", scope.fn.lookup(name))
            if isinstance(value, int) and not isinstance(value, bool):
                return ast.Constant(value)
        return ast.Name(name if scope.bound is None else f"{scope.fn.name}.{name}")

    # -- shapes -----------------------------------------------------------------------------------
    def shape(self, node: ast.expr, scope: Scope) -> tuple[Dim, ...] | None:
        """The shape of the tensor ``node`` evaluates to: ``()`` for a scalar, None when not known."""
        key = (id(node), id(scope))
        hit = self._shapes.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        self._shapes[key] = (node, None)  # a cycle reads as unknown
        out = self._shape(node, scope)
        self._shapes[key] = (node, out)
        return out

    def _shape(self, node: ast.expr, scope: Scope) -> tuple[Dim, ...] | None:
        if isinstance(node, ast.Constant):
            return ()
        if isinstance(node, ast.Name):
            return self._name_shape(node.id, scope)
        if isinstance(node, ast.Subscript):
            return self._subscript_shape(node, scope)
        if isinstance(node, ast.BinOp):
            return broadcast([self.shape(node.left, scope), self.shape(node.right, scope)])
        if isinstance(node, ast.Compare):
            return broadcast([self.shape(x, scope) for x in (node.left, *node.comparators)])
        if isinstance(node, ast.BoolOp):
            return broadcast([self.shape(x, scope) for x in node.values])
        if isinstance(node, ast.UnaryOp):
            return self.shape(node.operand, scope)
        if isinstance(node, ast.IfExp):
            return self.shape(node.body, scope) or self.shape(node.orelse, scope)
        if isinstance(node, ast.Call):
            return self._call_shape(node, scope)
        if isinstance(node, ast.Attribute) and node.attr == "T":
            inner = self.shape(node.value, scope)
            return None if inner is None else tuple(reversed(inner))
        return None

    def _name_shape(self, name: str, scope: Scope) -> tuple[Dim, ...] | None:
        if scope.bound is not None and name in scope.bound:
            expr, outer = scope.bound[name]
            return self.shape(expr, outer)
        fn = scope.fn
        if name in fn.loop_vars or (name in fn.params and name not in fn.assigns):
            return ()
        values = fn.assigns.get(name)
        if values is None:
            return () if fn.lookup(name) is not None else None
        busy = (id(scope), name)
        if busy in self._busy:
            return None
        self._busy.add(busy)
        try:
            for value in values:
                if value is not None and (s := self.shape(value, scope)) is not None:
                    return s
        finally:
            self._busy.discard(busy)
        return None

    def _subscript_shape(self, node: ast.Subscript, scope: Scope) -> tuple[Dim, ...] | None:
        base = self.shape(node.value, scope)
        if base is None:
            return None
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        out: list[Dim] = []
        i = 0
        for k, e in enumerate(index):
            if isinstance(e, ast.Constant) and e.value is None:
                out.append(dim_of(ONE))
            elif isinstance(e, ast.Slice):
                if i >= len(base):
                    return None
                out.append(base[i])
                i += 1
            elif isinstance(e, ast.Constant) and e.value is Ellipsis:
                rest = sum(1 for x in index[k + 1 :] if isinstance(x, ast.Slice))
                out.extend(base[i : len(base) - rest])
                i = len(base) - rest
            else:
                return None
        return (*out, *base[i:])

    def _shape_arg(self, node: ast.expr | None, scope: Scope) -> tuple[Dim, ...] | None:
        """A shape argument (``(BLOCK_M, BLOCK_N)``, ``[BLOCK]``, ``BLOCK`` or a local holding one) as dims."""
        if node is None:
            return None
        value = self.resolve(node, scope)
        if isinstance(value, ast.Tuple):
            return tuple(dim_of(e) for e in value.elts)
        if isinstance(value, (ast.Name, ast.Constant, ast.BinOp)):
            return (dim_of(value),)
        return None

    def _call_shape(self, node: ast.Call, scope: Scope) -> tuple[Dim, ...] | None:
        name = self.tl_name(node.func, scope)
        if name is not None:
            return self._tl_shape(name, node, scope)
        callee = self.callee(node.func, scope)
        if callee is not None:
            inner = self.enter(callee, node, scope)
            return None if inner is None else self._return_shape(inner)
        if isinstance(node.func, ast.Attribute):
            return self._method_shape(node, scope)
        return None

    def _tl_shape(self, name: str, node: ast.Call, scope: Scope) -> tuple[Dim, ...] | None:
        args, kw = node.args, {k.arg: k.value for k in node.keywords if k.arg}
        first = args[0] if args else None
        if name == "arange":
            return (self.arange_dim(node, scope),) if len(args) >= 2 or "end" in kw else None
        if name in ("zeros", "full", "empty"):
            return self._shape_arg(first if first is not None else kw.get("shape"), scope)
        if name in ("reshape", "view", "broadcast_to"):
            return self._shape_args(args[1:], kw, scope)
        if name == "make_block_ptr":
            return self._shape_arg(kw.get("block_shape", args[4] if len(args) > 4 else None), scope)
        if name in ("make_tensor_descriptor", "_experimental_make_tensor_descriptor"):
            return self._shape_arg(kw.get("block_shape", args[3] if len(args) > 3 else None), scope)
        if name in ("_experimental_descriptor_load", "experimental_descriptor_load"):
            return self._shape_arg(kw.get("shape", args[2] if len(args) > 2 else None), scope)
        if name == "dot":
            return self._dot_shape(node, scope)
        if name in _SCALAR:
            return ()
        if name in _NO_TENSOR:
            return None
        inner = self.shape(first, scope) if first is not None else None
        if name == "load_tensor_descriptor" and inner == ():
            return self._offsets_shape(args[1] if len(args) > 1 else kw.get("offsets"), scope)
        if name in _SAME_SHAPE:
            return inner
        if name in _REDUCTIONS:
            return self._reduced(inner, args[1] if len(args) > 1 else kw.get("axis"), kw, scope)
        if name in ("trans", "permute"):
            return self._permuted(inner, args[1:], scope)
        if name == "expand_dims" and inner is not None and len(args) > 1:
            axis = self.resolve(args[1], scope)
            if isinstance(axis, ast.Constant) and isinstance(axis.value, int):
                at = axis.value if axis.value >= 0 else len(inner) + 1 + axis.value
                return (*inner[:at], dim_of(ONE), *inner[at:])
            return None
        if name == "join":
            return None if inner is None else (*inner, dim_of(ast.Constant(2)))
        return broadcast([self.shape(a, scope) for a in args if not isinstance(a, ast.Starred)])

    def _shape_args(self, args: list[ast.expr], kw: dict[str, ast.expr], scope: Scope) -> tuple[Dim, ...] | None:
        if "shape" in kw:
            return self._shape_arg(kw["shape"], scope)
        if len(args) == 1:
            return self._shape_arg(args[0], scope)
        if args and not any(isinstance(a, ast.Starred) for a in args):
            return tuple(dim_of(self.resolve(a, scope)) for a in args)
        return None

    def _method_shape(self, node: ast.Call, scope: Scope) -> tuple[Dim, ...] | None:
        assert isinstance(node.func, ast.Attribute)
        attr, receiver = node.func.attr, node.func.value
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if attr in ("reshape", "view", "broadcast_to"):
            return self._shape_args(node.args, kw, scope)
        inner = self.shape(receiver, scope)
        if attr in ("store", "atomic_add"):
            return None
        if attr in _REDUCTIONS:
            return self._reduced(inner, node.args[0] if node.args else kw.get("axis"), kw, scope)
        if attr in ("trans", "permute"):
            return self._permuted(inner, node.args, scope)
        if attr == "load" and inner == ():
            return self._offsets_shape(node.args[0] if node.args else kw.get("offsets"), scope)
        return inner  # .to(...), a descriptor's .load(...), and the other elementwise methods

    def _offsets_shape(self, offsets: ast.expr | None, scope: Scope) -> tuple[Dim, ...] | None:
        """The block a load through a descriptor the caller passes reads, from its offsets: each offset scaled by
        exactly one constexpr (``pid_m * BLOCK_M``, ``k * BLOCK_K``) reads a block of that extent; None otherwise
        (the block shape is then only in the caller's descriptor)."""
        value = None if offsets is None else self.resolve(offsets, scope)
        if not isinstance(value, ast.Tuple):
            return None
        dims = []
        for e in value.elts:
            names = blocks_of(e) & self.constexprs
            if len(names) != 1:
                return None
            dims.append(dim_of(ast.Name(next(iter(names)))))
        return tuple(dims)

    def _dot_shape(self, node: ast.Call, scope: Scope) -> tuple[Dim, ...] | None:
        a, b = self.dot_operands(node, scope)
        if a is None or b is None or len(a) != len(b) or len(a) not in (2, 3):
            return None
        return (*a[:-1], b[-1])

    def dot_operands(self, node: ast.Call, scope: Scope) -> tuple[tuple[Dim, ...] | None, tuple[Dim, ...] | None]:
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        a = node.args[0] if node.args else kw.get("input")
        b = node.args[1] if len(node.args) > 1 else kw.get("other")
        return (self.shape(a, scope) if a is not None else None, self.shape(b, scope) if b is not None else None)

    def _reduced(self, inner: tuple[Dim, ...] | None, axis: ast.expr | None, kw: dict[str, ast.expr],
                 scope: Scope) -> tuple[Dim, ...] | None:  # fmt: skip
        if inner is None:
            return None
        value = None if axis is None else self.resolve(axis, scope)
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return ()
        if not (isinstance(value, ast.Constant) and isinstance(value.value, int)) or not inner:
            return None
        at = value.value % len(inner)
        keep = kw.get("keep_dims")
        if isinstance(keep, ast.Constant) and keep.value is True:
            return (*inner[:at], dim_of(ONE), *inner[at + 1 :])
        return (*inner[:at], *inner[at + 1 :])

    def _permuted(self, inner: tuple[Dim, ...] | None, order: list[ast.expr], scope: Scope) -> tuple[Dim, ...] | None:
        if inner is None:
            return None
        if not order:
            return tuple(reversed(inner))
        value = self.resolve(order[0], scope) if len(order) == 1 else ast.Tuple(list(order), ast.Load())
        elts = value.elts if isinstance(value, ast.Tuple) else [value]
        if all(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in elts) and len(elts) == len(inner):
            return tuple(inner[e.value] for e in elts)  # type: ignore[attr-defined]
        return None

    def _return_shape(self, scope: Scope) -> tuple[Dim, ...] | None:
        for stmt in scope.fn.node.body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.Return) and n.value is not None and not isinstance(n.value, ast.Tuple):
                    return self.shape(n.value, scope)
        return None

    def arange_dim(self, node: ast.Call, scope: Scope) -> Dim:
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        start = node.args[0] if node.args else kw.get("start", ast.Constant(0))
        end = node.args[1] if len(node.args) > 1 else kw["end"]
        s, e = self.resolve(start, scope), self.resolve(end, scope)
        return dim_of(e if isinstance(s, ast.Constant) and s.value == 0 else ast.BinOp(e, ast.Sub(), s))

    # -- names --------------------------------------------------------------------------------------
    def tl_name(self, func: ast.expr, scope: Scope) -> str | None:
        """The Triton language function a call names (``"arange"``), Python's ``range``, ``min`` and ``max`` as
        ``"py:range"``, ``"py:min"``, ``"py:max"``; else None."""
        if isinstance(func, ast.Attribute):
            root: ast.expr = func
            while isinstance(root, ast.Attribute):
                root = root.value
            if not isinstance(root, ast.Name) or scope.fn.local(root.id):
                return None
            obj = scope.fn.lookup(root.id)
            if obj is None:
                return func.attr if root.id in ("tl", "triton") else None
            top = getattr(obj, "__name__", "") if isinstance(obj, types.ModuleType) else ""
            return func.attr if top.split(".")[0] == "triton" else None
        if isinstance(func, ast.Name) and not scope.fn.local(func.id):
            obj = scope.fn.lookup(func.id)
            if obj is range or obj is min or obj is max:
                return f"py:{func.id}"
            module = getattr(obj, "__module__", None) or ""
            if module.startswith("triton.language"):
                return str(getattr(obj, "__name__", func.id))
        return None

    def callee(self, func: ast.expr, scope: Scope) -> Any:
        """The Python function of a jitted helper a call names, else None."""
        obj: Any = None
        if isinstance(func, ast.Name) and not scope.fn.local(func.id):
            obj = scope.fn.lookup(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and not scope.fn.local(func.value.id):
            obj = getattr(scope.fn.lookup(func.value.id), func.attr, None)
        if obj is None or type(obj).__name__ not in ("JITFunction", "InterpretedFunction"):
            return None
        inner = getattr(obj, "fn", None)
        return inner if isinstance(inner, types.FunctionType) else None

    def enter(self, py_fn: Any, call: ast.Call, scope: Scope) -> Scope | None:
        """The helper's scope at this call, read once per distinct binding of its parameters."""
        if scope.depth >= _MAX_DEPTH or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        fn = self._functions.get(py_fn)
        if fn is None:
            try:
                fn = self._functions[py_fn] = Function(py_fn)
            except (OSError, TypeError, SyntaxError, StopIteration):
                return None
        bound = {p: (a, scope) for p, a in zip(fn.params, call.args)}
        bound.update({k.arg: (k.value, scope) for k in call.keywords if k.arg in fn.params})
        key = (py_fn, tuple(sorted((p, ast.dump(self.resolve(e, s))) for p, (e, s) in bound.items())))
        if key in self._scopes:
            return self._scopes[key]
        inner = self._scopes[key] = Scope(fn, bound, scope.depth + 1)
        self.visit(inner)
        return inner

    def visit(self, scope: Scope) -> None:
        """Read the facts of a function at one call (a helper entered for the first time): nothing here."""
