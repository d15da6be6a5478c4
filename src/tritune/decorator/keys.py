"""How the decorator turns a call's arguments into a tuning key, with optional buckets.

A key is built as Triton's ``Autotuner.run`` builds it: the value of each key name the call passes (positionally
or by keyword), then the dtype of every argument that has one. A key name the call does not pass (a meta-parameter
the configs set, as flash-linear-attention keys on ``BV``; a defaulted parameter left out) has no value in Triton's
key; here it holds :data:`ABSENT`, so that every key has one slot per name, and :meth:`KeySpec.public` (the key of
``kernel.cache``, the printed line, the listener and Triton's results file) leaves it out, as Triton does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.decorator.dispatch import descriptor_fact, is_descriptor
from tritune.errors import WorkloadError


def _identity(v: Any) -> Any:
    return v


class _Absent:
    """The value of a key name that the call does not pass (module docstring); one object, kept by pickling."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"

    def __reduce__(self) -> str:
        return "ABSENT"


#: A key slot whose name the call does not pass: Triton's key has no value there.
ABSENT = _Absent()


#: The one NaN a key holds: a NaN key argument becomes this very object, so two NaN keys are equal (a fresh
#: ``float("nan")`` equals nothing, and a key holding one would add a cache entry on every call).
NAN = float("nan")


def key_value(name: str, v: Any) -> Any:
    """``v`` as a key holds it: a NaN as :data:`NAN`; an unhashable value (a list, dict or set) is refused with
    one WorkloadError naming the argument, instead of a raw TypeError from a cache lookup."""
    if isinstance(v, float):
        return v if v == v else NAN
    try:
        hash(v)
    except TypeError:
        raise WorkloadError(
            f"the key argument {name!r} is a {type(v).__name__}, which cannot be part of a tuning key: key on "
            "hashable values (int, float, str, bool, a tuple), or bucket it (key={name: len})"
        ) from None
    return v


def _miss() -> Any:
    raise AttributeError("argument kind changed: use the generic call key")


def _other(a: Any) -> Any:
    """call_key's item for an argument that is neither a tensor, an int nor a descriptor (its type); else a miss."""
    if type(a) is int or getattr(a, "data_ptr", None) is not None or is_descriptor(a):
        _miss()
    return type(a)


#: Argument types that :func:`_other` keys by their type alone (never a tensor, an int or a descriptor).
_PLAIN = (float, bool, type(None), str)


def _desc(a: Any) -> Any:
    """call_key's item for a host TensorDescriptor (:func:`descriptor_fact`); a miss for any other kind."""
    if not is_descriptor(a):
        _miss()
    return descriptor_fact(a)


def int_fact(a: int) -> int:
    """What selects Triton's binary for an int argument, as one small int: 1 (equal to 1), 2 or 3 (fits in 32 bits,
    divisible by 16 or not), 4 or 5 (does not fit, divisible by 16 or not). One conditional expression costs
    ~75 ns a call against ~170 ns for the tuple of three facts it replaces (a kernel with a dozen int arguments,
    such as FlagGems' kron, computes it for each on every cached call)."""
    if -2147483648 <= a < 2147483648:
        return 1 if a == 1 else 2 if a % 16 == 0 else 3
    return 4 if a % 16 == 0 else 5


@dataclass(frozen=True)
class KeySpec:
    """Which arguments form the key, where they sit in the call, and how each value is bucketed."""

    names: tuple[str, ...]
    positions: tuple[int, ...]
    buckets: tuple[Callable[[Any], Any], ...]
    #: Positions of ``tl.constexpr`` parameters: a binary is compiled for their exact value, so a call key
    #: holds the value itself, not only its specialization facts.
    exact: frozenset[int] = frozenset()
    #: Every parameter name, in order (to place keyword arguments).
    arg_names: tuple[str, ...] = ()

    @classmethod
    def build(cls, kernel_name: str, arg_names: Sequence[str], key: Any, constexprs: Collection[str] = ()) -> KeySpec:
        if isinstance(key, str):
            key = [key]
        if isinstance(key, Mapping):
            items = [(n, b if b is not None else _identity) for n, b in key.items()]
        else:
            items = [(n, _identity) for n in key]
        unknown = [n for n, _ in items if n not in arg_names]
        if unknown:
            raise WorkloadError(
                f"{kernel_name}: key name(s) {', '.join(map(repr, unknown))} are not parameters of the kernel; "
                f"its parameters are {', '.join(arg_names)}"
            )
        for n, b in items:
            if not callable(b):
                raise WorkloadError(f"{kernel_name}: the bucket for key {n!r} must be callable, got {b!r}")
        names = tuple(n for n, _ in items)
        return cls(
            names=names,
            positions=tuple(list(arg_names).index(n) for n in names),
            buckets=tuple(b for _, b in items),
            exact=frozenset(i for i, n in enumerate(arg_names) if n in constexprs),
            arg_names=tuple(arg_names),
        )

    def of(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        """The key tuple for a call: bucketed key values (:data:`ABSENT` for a name the call does not pass), then
        the dtype of every tensor argument, positional or keyword (as Triton does)."""
        out: list[Any] = []
        n = len(args)
        for pos, name, bucket in zip(self.positions, self.names, self.buckets):
            v = args[pos] if pos < n else kwargs.get(name, ABSENT)
            out.append(v if v is ABSENT else key_value(name, bucket(v)))
        for a in args:
            dt = getattr(a, "dtype", None)
            if dt is not None:
                out.append(dt)  # the dtype object: hashing it is cheaper than formatting it on every call
        if kwargs:
            for name, a in kwargs.items():
                dt = getattr(a, "dtype", None)
                if dt is not None and name in self.arg_names:
                    out.append(dt)
        return tuple(out)

    def _fact(self, i: int, a: Any, out: list[Any]) -> None:
        """Append what selects Triton's binary for argument ``a`` at parameter index ``i``."""
        if i in self.exact:
            out.append((type(a), a if a == a else NAN))
            return
        dp = getattr(a, "data_ptr", None)
        if dp is not None:
            out.append(a.dtype)
            out.append(dp() % 16 == 0)
        elif type(a) is int:
            out.append(int_fact(a))
        elif is_descriptor(a):  # its dtype and block shape select the binary, as a tensor's dtype does
            out.append(descriptor_fact(a))
        else:
            out.append(type(a))

    def call_key(self, args: Sequence[Any]) -> tuple[Any, ...]:
        """For positional calls: the bucketed key values plus, per argument, what selects Triton's binary
        (dtype and 16-byte alignment of a tensor; for an int: == 1, divisible by 16, fits in 32 bits; for a
        ``tl.constexpr``: its value)."""
        out: list[Any] = []
        n = len(args)
        for pos, name, bucket in zip(self.positions, self.names, self.buckets):
            out.append(key_value(name, bucket(args[pos])) if pos < n else ABSENT)
        for i, a in enumerate(args):
            self._fact(i, a, out)
        return tuple(out)

    def kw_call_key(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        """:meth:`call_key` for a call with keyword arguments: the sorted keyword names first, then the key
        values, then each positional argument's facts and each keyword argument's (in sorted name order).
        A keyword that names no parameter (a launch option) enters with its value."""
        names = tuple(sorted(kwargs))
        out: list[Any] = [names]
        n = len(args)
        for pos, name, bucket in zip(self.positions, self.names, self.buckets):
            v = args[pos] if pos < n else kwargs.get(name, ABSENT)
            out.append(v if v is ABSENT else key_value(name, bucket(v)))
        for i, a in enumerate(args):
            self._fact(i, a, out)
        index = self._index
        for name in names:
            a = kwargs[name]
            at = index.get(name)
            if at is None:
                out.append((type(a), a))
            else:
                self._fact(at, a, out)
        return tuple(out)

    @property
    def _index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.arg_names)}

    def _fact_src(self, i: int, a: Any, var: str, env: dict[str, Any]) -> list[str]:
        if i in self.exact:
            return [f"(type({var}), {var} if {var} == {var} else NAN)"]
        if i < 0:
            return [f"(type({var}), {var})"]
        if getattr(a, "data_ptr", None) is not None:
            return [f"{var}.dtype", f"{var}.data_ptr() % 16 == 0"]
        if type(a) is int:  # int_fact, inlined
            return [f"(((1 if {var} == 1 else 2 if {var} % 16 == 0 else 3) if -2147483648 <= {var} < 2147483648 "
                    f"else (4 if {var} % 16 == 0 else 5)) if type({var}) is int else miss())"]  # fmt: skip
        if is_descriptor(a):
            return [f"desc({var})"]
        if type(a) in _PLAIN:  # other()'s value, without its three tests while the kind holds (~0.25 us each)
            env[f"T_{var}"] = type(a)
            return [f"(T_{var} if type({var}) is T_{var} else other({var}))"]
        return [f"other({var})"]

    def compiled_call_key(self, args: Sequence[Any]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
        """:meth:`call_key`, as generated code specialized to the argument kinds of ``args`` (as Triton builds
        its own binder): one tuple expression, no loop. It returns exactly what ``call_key`` returns for
        any call; a call of another arity or argument kind falls back to ``call_key`` itself."""
        n = len(args)
        env: dict[str, Any] = {"generic": self.call_key, "other": _other, "desc": _desc, "miss": _miss}
        items = self._key_items_src(n, {}, env, args, {})
        for i, a in enumerate(args):
            items += self._fact_src(i, a, f"a{i}", env)
        names = "".join(f"a{i}, " for i in range(n))
        src = (
            "def call_key(args):\n"
            f"    if len(args) != {n}:\n        return generic(args)\n"
            + (f"    {names}= args\n" if n else "")
            + f"    try:\n        return ({''.join(x + ', ' for x in items)})\n"
            "    except AttributeError:\n        return generic(args)\n"
        )
        exec(compile(src, f"<tritune call_key {'/'.join(self.names)}>", "exec"), env)
        fn: Callable[[Sequence[Any]], tuple[Any, ...]] = env["call_key"]
        return fn

    def _key_items_src(self, n: int, kw_vars: Mapping[str, str], env: dict[str, Any], args: Sequence[Any],
                       kwargs: Mapping[str, Any]) -> list[str]:  # fmt: skip
        items: list[str] = []
        env["NAN"] = NAN
        for j, (pos, name, bucket) in enumerate(zip(self.positions, self.names, self.buckets)):
            if pos < n:
                var, sample = f"a{pos}", args[pos]
            elif name in kw_vars:
                var, sample = kw_vars[name], kwargs[name]
            else:
                env["ABSENT"] = ABSENT
                items.append("ABSENT")
                continue
            items.append(self._key_item_src(j, name, var, sample, bucket, env))
        return items

    def _key_item_src(self, j: int, name: str, var: str, sample: Any, bucket: Callable[[Any], Any],
                      env: dict[str, Any]) -> str:  # fmt: skip
        """One key value's expression, as :func:`key_value` of it: checked inline for the sample's type (an int
        argument needs nothing: its fact already misses for any other type), through ``key_value`` otherwise."""
        env[f"v{j}"] = functools.partial(key_value, name)
        if bucket is not _identity:
            env[f"b{j}"] = bucket
            return f"v{j}(b{j}({var}))" if isinstance(bucket(sample), float) else f"b{j}({var})"
        kind = type(sample)
        if kind is int and self._index[name] not in self.exact:
            return var
        if kind is float:
            return f"({var} if type({var}) is float and {var} == {var} else v{j}({var}))"
        if kind in (int, str, bool, type(None)):
            env[f"T{j}"] = kind
            return f"({var} if type({var}) is T{j} else v{j}({var}))"
        return f"v{j}({var})"

    def compiled_kw_call_key(self, args: Sequence[Any], kwargs: Mapping[str, Any]
                             ) -> Callable[[Sequence[Any], Mapping[str, Any]], tuple[Any, ...]]:  # fmt: skip
        """:meth:`kw_call_key` as generated code for calls with ``args``' arity and ``kwargs``' names and
        argument kinds; any other call falls back to ``kw_call_key`` itself, with the same result."""
        n = len(args)
        names = tuple(sorted(kwargs))
        index = self._index
        env: dict[str, Any] = {"generic": self.kw_call_key, "other": _other, "desc": _desc, "miss": _miss, "names": names}
        kw_vars = {name: f"k{j}" for j, name in enumerate(names)}
        items = ["names", *self._key_items_src(n, kw_vars, env, args, kwargs)]
        for i, a in enumerate(args):
            items += self._fact_src(i, a, f"a{i}", env)
        for j, name in enumerate(names):
            items += self._fact_src(index.get(name, -1), kwargs[name], f"k{j}", env)
        unpack = "".join(f"a{i}, " for i in range(n))
        kw_unpack = "".join(f"        k{j} = kwargs[{name!r}]\n" for j, name in enumerate(names))
        src = (
            "def kw_call_key(args, kwargs):\n"
            f"    if len(args) != {n} or len(kwargs) != {len(names)}:\n        return generic(args, kwargs)\n"
            "    try:\n"
            + (f"        {unpack}= args\n" if n else "")
            + kw_unpack
            + f"        return ({''.join(x + ', ' for x in items)})\n"
            "    except (AttributeError, KeyError):\n        return generic(args, kwargs)\n"
        )
        exec(compile(src, f"<tritune kw_call_key {'/'.join(self.names)}>", "exec"), env)
        fn: Callable[[Sequence[Any], Mapping[str, Any]], tuple[Any, ...]] = env["kw_call_key"]
        return fn

    @staticmethod
    def public(key: tuple[Any, ...]) -> tuple[Any, ...]:
        """The key as Triton's autotuner builds it: names the call did not pass left out, dtypes as text."""
        return tuple(str(v) if type(v).__name__ == "dtype" else v for v in key if v is not ABSENT)

    def as_dict(self, key: tuple[Any, ...]) -> dict[str, Any]:
        """The key's values by name, for the names the call passed."""
        return {n: v for n, v in zip(self.names, key[: len(self.names)]) if v is not ABSENT}
