"""Key buckets: which values of a tuning key share one tuned config.

A bucket maps a key value to the value that represents its bucket; the winner tuned for a bucket
serves every value in it. Buckets are small frozen values with a ``name`` that is stored with each
tuning entry and shown by ``tritune cache show``, so a user can see which values share a tuning::

    >>> from tritune import bucket
    >>> bucket.pow2(3000), bucket.pow2.span(4096)
    (4096, (2049, 4096))
    >>> bucket.multiple(32)(33), bucket.multiple(32).name
    (64, 'multiple(32)')
    >>> normalize_key({"n": bucket.pow2, "M": bucket.multiple(32)})
    (('M', multiple(32)), ('n', pow2))

Every bucket satisfies, for the values it accepts: ``b(v) >= v``, ``b(b(v)) == b(v)`` and
``v <= w  =>  b(v) <= b(w)`` (tested with hypothesis). ``pow2`` and ``multiple`` accept integers
only: a float or a string key must use ``exact``, and saying so is better than rounding it silently.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tritune.errors import ConfigError

__all__ = [
    "Bucket",
    "Exact",
    "Multiple",
    "Pow2",
    "bucket_values",
    "exact",
    "from_name",
    "multiple",
    "normalize_key",
    "pow2",
]


def _as_int(bucket: str, value: Any) -> int:
    if isinstance(value, bool):
        raise ConfigError(
            f"bucket {bucket} applies to integer key values, got the bool {value!r}: use bucket.exact"
        )
    try:
        return operator.index(value)
    except TypeError:
        raise ConfigError(
            f"bucket {bucket} applies to integer key values, got {value!r} ({type(value).__name__}): "
            "use bucket.exact for this key"
        ) from None


class Bucket:
    """A rule mapping a key value to its bucket's value. Subclasses are frozen dataclasses."""

    @property
    def name(self) -> str:
        """The stored, shown name, e.g. ``"pow2"`` or ``"multiple(32)"``; :func:`from_name` reads it back."""
        raise NotImplementedError

    def __call__(self, value: Any) -> Any:
        raise NotImplementedError

    def span(self, bucket_value: Any) -> tuple[Any, Any]:
        """The smallest and largest values that fall into ``bucket_value`` (equal for ``exact``)."""
        return (bucket_value, bucket_value)

    def describe(self, bucket_value: Any) -> str:
        """Human text for a bucket: ``"4096"`` for exact, ``"2049..4096"`` for a range."""
        lo, hi = self.span(bucket_value)
        return repr(lo) if lo == hi else f"{lo}..{hi}"

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, repr=False)
class Exact(Bucket):
    """Every distinct value is its own bucket (Triton's ``key=[...]`` behaviour)."""

    @property
    def name(self) -> str:
        return "exact"

    def __call__(self, value: Any) -> Any:
        return value


@dataclass(frozen=True, repr=False)
class Pow2(Bucket):
    """Round an integer up to the next power of two. Values below 1 are their own bucket (0 stays 0)."""

    @property
    def name(self) -> str:
        return "pow2"

    def __call__(self, value: Any) -> int:
        v = _as_int(self.name, value)
        if v < 1:
            return v
        return 1 << (v - 1).bit_length()

    def span(self, bucket_value: Any) -> tuple[Any, Any]:
        b = _as_int(self.name, bucket_value)
        if b <= 1:
            return (b, b)
        return (b // 2 + 1, b)


@dataclass(frozen=True, repr=False)
class Multiple(Bucket):
    """Round an integer up to a multiple of ``n`` (``multiple(32)(33) == 64``; 0 stays 0)."""

    n: int

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise ConfigError(f"bucket.multiple(n) needs a positive int n, got {self.n!r}")

    @property
    def name(self) -> str:
        return f"multiple({self.n})"

    def __call__(self, value: Any) -> int:
        v = _as_int(self.name, value)
        return -(-v // self.n) * self.n

    def span(self, bucket_value: Any) -> tuple[Any, Any]:
        b = _as_int(self.name, bucket_value)
        if self.n == 1:
            return (b, b)
        return (b - self.n + 1, b)


exact: Exact = Exact()
pow2: Pow2 = Pow2()


def multiple(n: int) -> Multiple:
    """The bucket that rounds integers up to a multiple of ``n``."""
    return Multiple(n)


_MULTIPLE_RE = re.compile(r"multiple\((\d+)\)")


def from_name(name: str) -> Bucket:
    """The bucket a stored ``name`` denotes (the inverse of ``Bucket.name``)."""
    if name == "exact":
        return exact
    if name == "pow2":
        return pow2
    m = _MULTIPLE_RE.fullmatch(name)
    if m:
        return Multiple(int(m.group(1)))
    raise ConfigError(f"unknown bucket name {name!r}; known: exact, pow2, multiple(N)")


def normalize_key(
    key: Iterable[str] | Mapping[str, Bucket] | None,
    arg_names: Iterable[str] | None = None,
    *,
    kernel: str = "",
) -> tuple[tuple[str, Bucket], ...]:
    """A key spec as sorted ``(name, bucket)`` pairs.

    ``key=["n"]`` means every name is ``exact`` (as in Triton); ``key={"n": bucket.pow2}`` buckets
    values. With ``arg_names`` (the kernel's arguments), a name the kernel does not have is an error
    naming the kernel and the known names, where Triton would silently ignore it.
    """
    if key is None:
        return ()
    if isinstance(key, str):
        raise ConfigError(f"key={key!r} is a string; pass a list of argument names, e.g. key=[{key!r}]")
    pairs: list[tuple[str, Bucket]] = []
    if isinstance(key, Mapping):
        for name, b in key.items():
            if not isinstance(b, Bucket):
                raise ConfigError(
                    f"key {name!r} maps to {b!r}, not a bucket: use tritune.bucket.exact, .pow2 or .multiple(n)"
                )
            pairs.append((name, b))
    else:
        pairs = [(name, exact) for name in key]
    seen: set[str] = set()
    known = None if arg_names is None else list(arg_names)
    where = f" of kernel {kernel}" if kernel else ""
    for name, _ in pairs:
        if not isinstance(name, str):
            raise ConfigError(f"key names must be strings, got {name!r}")
        if name in seen:
            raise ConfigError(f"key name {name!r} is given twice")
        seen.add(name)
        if known is not None and name not in known:
            raise ConfigError(f"key name {name!r} is not an argument{where}; its arguments are {known}")
    return tuple(sorted(pairs, key=lambda p: p[0]))


def bucket_values(spec: Iterable[tuple[str, Bucket]], values: Mapping[str, Any]) -> dict[str, Any]:
    """Apply each bucket of ``spec`` to its value in ``values`` (name -> bucket value)."""
    out: dict[str, Any] = {}
    for name, b in spec:
        if name not in values:
            raise ConfigError(f"key {name!r} has no value among {sorted(values)}")
        out[name] = b(values[name])
    return out
