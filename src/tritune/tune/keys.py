"""How the decorator turns a call's arguments into a tuning key, with optional buckets."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.errors import WorkloadError


def _identity(v: Any) -> Any:
    return v


def _miss() -> Any:
    raise AttributeError("argument kind changed: use the generic call key")


def _other(a: Any) -> Any:
    """call_key's item for an argument that is neither a tensor nor an int (its type); else a miss."""
    if type(a) is int or getattr(a, "data_ptr", None) is not None:
        _miss()
    return type(a)


@dataclass(frozen=True)
class KeySpec:
    """Which arguments form the key, where they sit in the call, and how each value is bucketed."""

    names: tuple[str, ...]
    positions: tuple[int, ...]
    defaults: tuple[Any, ...]
    buckets: tuple[Callable[[Any], Any], ...]
    #: Positions of ``tl.constexpr`` parameters: a binary is compiled for their exact value, so a call key
    #: holds the value itself, not only its specialization facts.
    exact: frozenset[int] = frozenset()
    #: Every parameter name, in order (to place keyword arguments).
    arg_names: tuple[str, ...] = ()

    @classmethod
    def build(cls, kernel_name: str, arg_names: Sequence[str], defaults: Mapping[str, Any], key: Any,
              constexprs: Collection[str] = ()) -> KeySpec:  # fmt: skip
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
            defaults=tuple(defaults.get(n) for n in names),
            buckets=tuple(b for _, b in items),
            exact=frozenset(i for i, n in enumerate(arg_names) if n in constexprs),
            arg_names=tuple(arg_names),
        )

    def of(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        """The key tuple for a call: bucketed key values, then the dtype of every tensor argument, positional or
        keyword (as Triton does)."""
        out: list[Any] = []
        n = len(args)
        for pos, name, default, bucket in zip(self.positions, self.names, self.defaults, self.buckets):
            v = args[pos] if pos < n else kwargs.get(name, default)
            out.append(bucket(v))
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

    def call_key(self, args: Sequence[Any]) -> tuple[Any, ...]:
        """For positional calls: the bucketed key values plus, per argument, what selects Triton's binary
        (dtype and 16-byte alignment of a tensor; for an int: == 1, divisible by 16, fits in 32 bits)."""
        out: list[Any] = []
        n = len(args)
        for pos, default, bucket in zip(self.positions, self.defaults, self.buckets):
            out.append(bucket(args[pos] if pos < n else default))
        exact = self.exact
        for i, a in enumerate(args):
            dp = getattr(a, "data_ptr", None)
            if i in exact:
                out.append((type(a), a))
            elif dp is not None:
                out.append(a.dtype)
                out.append(dp() % 16 == 0)
            elif type(a) is int:
                out.append((a == 1, a % 16 == 0, -(2**31) <= a < 2**31))
            else:
                out.append(type(a))
        return tuple(out)

    def compiled_call_key(self, args: Sequence[Any]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
        """:meth:`call_key`, as generated code specialized to the argument kinds of ``args`` (as Triton builds
        its own binder): one tuple expression, no loop. It returns exactly what ``call_key`` returns for
        any call; a call of another arity or argument kind falls back to ``call_key`` itself."""
        n = len(args)
        env: dict[str, Any] = {"generic": self.call_key, "other": _other, "miss": _miss}
        items: list[str] = []
        for j, (pos, default, bucket) in enumerate(zip(self.positions, self.defaults, self.buckets)):
            if pos >= n:
                env[f"c{j}"] = bucket(default)
                items.append(f"c{j}")
            elif bucket is _identity:
                items.append(f"a{pos}")
            else:
                env[f"b{j}"] = bucket
                items.append(f"b{j}(a{pos})")
        for i, a in enumerate(args):
            if i in self.exact:
                items.append(f"(type(a{i}), a{i})")
            elif getattr(a, "data_ptr", None) is not None:
                items += [f"a{i}.dtype", f"a{i}.data_ptr() % 16 == 0"]
            elif type(a) is int:
                items.append(f"((a{i} == 1, a{i} % 16 == 0, -2147483648 <= a{i} < 2147483648) "
                             f"if type(a{i}) is int else miss())")
            else:
                items.append(f"other(a{i})")
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

    @staticmethod
    def public(key: tuple[Any, ...]) -> tuple[Any, ...]:
        """The key as Triton's autotuner shows it: dtypes as text."""
        return tuple(str(v) if type(v).__name__ == "dtype" else v for v in key)

    def as_dict(self, key: tuple[Any, ...]) -> dict[str, Any]:
        return dict(zip(self.names, key[: len(self.names)]))
