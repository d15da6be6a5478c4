"""``Config``: one candidate's kernel meta-parameters and launch options, as a frozen value.

A Config is hashable, compares by value, has a stable readable id such as
``BLOCK=1024,num_warps=8,num_stages=3``, and round-trips to and from ``triton.Config`` and JSON.
Meta-parameter names are kept sorted, so two configs that are equal have the same id everywhere
(in a store, in a report, in another process).
"""

from __future__ import annotations

import copy
import json
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tritune.errors import ConfigError

#: Launch options that are not kernel meta-parameters, with triton.Config's defaults.
LAUNCH_OPTIONS: dict[str, Any] = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}

_SCALARS = (bool, int, float, str, type(None))
_SCALAR_TYPES = frozenset(_SCALARS)
#: The launch options every config has (``maxnreg`` only when set), as ``config[name]`` reads them.
_ALWAYS = frozenset(("num_warps", "num_stages", "num_ctas"))


def _check_value(name: str, value: Any) -> Any:
    if type(value) in _SCALAR_TYPES or isinstance(value, _SCALARS):
        return value
    # numpy / torch scalars become plain Python values so that hashing and JSON are stable.
    item = getattr(value, "item", None)
    if callable(item):
        value = item()
        if isinstance(value, _SCALARS):
            return value
    raise ConfigError(
        f"meta-parameter {name}={value!r} has type {type(value).__name__}; a Config holds only "
        "int, float, bool, str or None values (they must survive JSON and hashing)"
    )


_INDEXES: dict[tuple[str, ...], dict[str, int]] = {}


def _index(items: tuple[tuple[str, Any], ...]) -> dict[str, int]:
    """Each name's position in ``items``, one dict per distinct tuple of names (a space's configs share it)."""
    names = tuple(k for k, _ in items)
    at = _INDEXES.get(names)
    if at is None:
        at = _INDEXES.setdefault(names, {k: i for i, k in enumerate(names)})
    return at


#: :func:`_check_value` for :class:`tritune.space.Space`, which checks each parameter's values once.
check_value = _check_value


class Config:
    """One candidate: ``kwargs`` (the kernel's constexpr meta-parameters) plus launch options.

    >>> c = Config({"BLOCK": 1024}, num_warps=8, num_stages=3)
    >>> c.id
    'BLOCK=1024,num_warps=8,num_stages=3'
    >>> Config.from_json(c.to_json()) == c
    True
    """

    __slots__ = ("_at", "_hash", "_id", "_items", "_text", "maxnreg", "num_ctas", "num_stages", "num_warps", "pre_hook")

    _items: tuple[tuple[str, Any], ...]
    #: Each meta-parameter's position in ``_items``, one dict shared by the configs of the same names
    #: (:func:`_index`); None until :meth:`__getitem__` first needs it.
    _at: dict[str, int] | None
    _hash: int
    #: :attr:`id`, computed once (stores and reports sort thousands of records by it).
    _id: str | None
    #: :meth:`dumps`, computed once (a store filters thousands of records by it per key).
    _text: str | None
    num_warps: int
    num_stages: int
    num_ctas: int
    maxnreg: int | None
    pre_hook: Any

    def __init__(
        self,
        kwargs: Mapping[str, Any] | None = None,
        num_warps: int = 4,
        num_stages: int = 3,
        num_ctas: int = 1,
        maxnreg: int | None = None,
        pre_hook: Any = None,
    ) -> None:
        kwargs = dict(kwargs or {})
        for name in kwargs:
            if not isinstance(name, str) or not name.isidentifier():
                raise ConfigError(f"meta-parameter name {name!r} is not a Python identifier")
            if name in LAUNCH_OPTIONS:
                raise ConfigError(
                    f"{name} is a launch option, not a meta-parameter: pass it as Config(..., {name}=...)"
                )
        items = tuple(sorted((k, _check_value(k, v)) for k, v in kwargs.items()))
        for opt, val in (("num_warps", num_warps), ("num_stages", num_stages), ("num_ctas", num_ctas)):
            if isinstance(val, bool) or not isinstance(val, int):
                raise ConfigError(f"{opt} must be an int, got {val!r}")
        if maxnreg is not None and (isinstance(maxnreg, bool) or not isinstance(maxnreg, int)):
            raise ConfigError(f"maxnreg must be an int or None, got {maxnreg!r}")
        self._fill(items, num_warps, num_stages, num_ctas, maxnreg, pre_hook, None)

    def _fill(self, items: tuple[tuple[str, Any], ...], num_warps: int, num_stages: int, num_ctas: int,
              maxnreg: int | None, pre_hook: Any, at: dict[str, int] | None) -> None:  # fmt: skip
        set_ = object.__setattr__
        set_(self, "_items", items)
        set_(self, "num_warps", num_warps)
        set_(self, "num_stages", num_stages)
        set_(self, "num_ctas", num_ctas)
        set_(self, "maxnreg", maxnreg)
        set_(self, "pre_hook", pre_hook)
        set_(self, "_text", None)
        set_(self, "_id", None)
        set_(self, "_at", at)
        set_(self, "_hash", hash((items, num_warps, num_stages, num_ctas, maxnreg)))

    @classmethod
    def _trusted(cls, items: tuple[tuple[str, Any], ...], num_warps: int, num_stages: int, num_ctas: int,
                 maxnreg: int | None, at: dict[str, int] | None = None) -> Config:
        """The Config ``__init__`` would make, without its checks: for callers that checked every name and value
        the same way already (``items`` sorted by name, each value through :func:`_check_value`, the launch options
        ints). ``Space.all_configs`` builds 6,912 configs of the search benchmark's matmul so: 0.03 s instead of
        0.07 s on this project's CPU (each check once per distinct value, not once per config). ``at``: another
        config's ``_positions()`` when ``items`` has the same names in the same order."""
        self = object.__new__(cls)
        self._fill(items, num_warps, num_stages, num_ctas, maxnreg, None, at)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Config is frozen; use Config.replace(...) to change {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Config is frozen")

    # -- value semantics -------------------------------------------------------------------------
    @property
    def kwargs(self) -> dict[str, Any]:
        """The meta-parameters, as a fresh dict (mutating it does not change the Config)."""
        return dict(self._items)

    @property
    def names(self) -> tuple[str, ...]:
        """The meta-parameters' names, sorted (without the dict :attr:`kwargs` builds)."""
        return tuple(self._at or self._positions())

    def _positions(self) -> dict[str, int]:
        """Each meta-parameter's position in ``_items``, shared with the configs of the same names."""
        at = _index(self._items)
        object.__setattr__(self, "_at", at)
        return at

    def _key(self) -> tuple[Any, ...]:
        return (self._items, self.num_warps, self.num_stages, self.num_ctas, self.maxnreg)

    def __eq__(self, other: object) -> bool:
        if self is other:  # the common case in the dispatch's sets and lists: no key tuples built
            return True
        if not isinstance(other, Config):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Config) -> bool:
        return self.id < other.id

    def __reduce__(self) -> tuple[Any, ...]:
        # pre_hook is a callable and does not travel across processes.
        return (Config, (self.kwargs, self.num_warps, self.num_stages, self.num_ctas, self.maxnreg))

    def __repr__(self) -> str:
        return f"Config({self.id})"

    def __getitem__(self, name: str) -> Any:
        """``c["BLOCK"]`` and ``c["num_warps"]`` alike: the view constraints and grids see (:meth:`as_dict`'s,
        without building it: a static screen of 6,912 configs reads ~100,000 values). A meta-parameter is found
        by its position (:func:`_index`), not by scanning the names: the search benchmark's constraints read
        103,000 values in 0.06 s instead of 0.1 s on this project's CPU (profiled)."""
        i = (self._at or self._positions()).get(name)
        if i is not None:
            return self._items[i][1]
        if name in _ALWAYS or (name == "maxnreg" and self.maxnreg is not None):
            return getattr(self, name)
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def as_dict(self) -> dict[str, Any]:
        """Meta-parameters and launch options in one flat dict (the ``meta`` a grid function sees)."""
        d = dict(self._items)
        d.update(num_warps=self.num_warps, num_stages=self.num_stages, num_ctas=self.num_ctas)
        if self.maxnreg is not None:
            d["maxnreg"] = self.maxnreg
        return d

    def all_kwargs(self) -> dict[str, Any]:
        """Triton's ``Config.all_kwargs()``: the meta-parameters, then ``num_warps``, ``num_ctas``, ``num_stages`` and
        ``maxnreg`` when set, in Triton's order; so code written for ``triton.Config`` (Triton's own equality
        included: ``triton.Config(...) == config``) reads a tritune Config."""
        d = dict(self._items)
        d.update(num_warps=self.num_warps, num_ctas=self.num_ctas, num_stages=self.num_stages)
        if self.maxnreg is not None:
            d["maxnreg"] = self.maxnreg
        return d

    def launch_options(self) -> dict[str, Any]:
        """The launch keyword arguments a JIT launch of this config takes (num_ctas/maxnreg only when set)."""
        opts: dict[str, Any] = {"num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.num_ctas != 1:
            opts["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            opts["maxnreg"] = self.maxnreg
        return opts

    @property
    def id(self) -> str:
        """Stable readable id: ``BLOCK=1024,num_warps=8,num_stages=3`` (num_ctas/maxnreg when set). A string
        value is quoted (``MODE='fast'``), so ``BLOCK='64'`` and ``BLOCK=64`` never share an id."""
        if self._id is None:
            parts = [f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in self._items]
            parts += [f"num_warps={self.num_warps}", f"num_stages={self.num_stages}"]
            if self.num_ctas != 1:
                parts.append(f"num_ctas={self.num_ctas}")
            if self.maxnreg is not None:
                parts.append(f"maxnreg={self.maxnreg}")
            object.__setattr__(self, "_id", ",".join(parts))
        return self._id  # type: ignore[return-value]

    def replace(self, **changes: Any) -> Config:
        """A copy with launch options or meta-parameters changed."""
        kwargs = self.kwargs
        opts: dict[str, Any] = {
            "num_warps": self.num_warps,
            "num_stages": self.num_stages,
            "num_ctas": self.num_ctas,
            "maxnreg": self.maxnreg,
            "pre_hook": self.pre_hook,
        }
        for k, v in changes.items():
            if k in opts:
                opts[k] = v
            else:
                kwargs[k] = v
        return Config(kwargs, **opts)

    # -- conversions ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """JSON object form: ``{"kwargs": {...}, "num_warps": 2, "num_stages": 1}``.

        ``num_ctas`` and ``maxnreg`` appear only when they differ from Triton's defaults.
        """
        d: dict[str, Any] = {"kwargs": dict(self._items), "num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.num_ctas != 1:
            d["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            d["maxnreg"] = self.maxnreg
        return d

    def dumps(self) -> str:
        """Canonical JSON text (sorted keys): equal configs give equal strings."""
        if self._text is None:
            object.__setattr__(self, "_text", json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")))
        return self._text  # type: ignore[return-value]

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> Config:
        """Read the form :meth:`to_json` writes; unknown fields are an error naming them."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as e:
                raise ConfigError(f"config JSON does not parse: {e}") from None
        if not isinstance(data, Mapping):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        unknown = set(data) - {"kwargs", *LAUNCH_OPTIONS}
        if unknown:
            raise ConfigError(f"unknown config field(s) {sorted(unknown)}; known: kwargs, {', '.join(LAUNCH_OPTIONS)}")
        kwargs = data.get("kwargs", {})
        if not isinstance(kwargs, Mapping):
            raise ConfigError("config field 'kwargs' must be an object")
        opts = {k: data[k] for k in LAUNCH_OPTIONS if k in data}
        return cls(kwargs, **opts)

    def to_triton(self) -> Any:
        """The equivalent ``triton.Config``."""
        import triton

        return triton.Config(
            self.kwargs,
            num_warps=self.num_warps,
            num_stages=self.num_stages,
            num_ctas=self.num_ctas,
            maxnreg=self.maxnreg,
            pre_hook=self.pre_hook,
        )

    @classmethod
    def from_triton(cls, cfg: Any) -> Config:
        """Build from a ``triton.Config`` (or anything with its attributes)."""
        return cls(
            dict(cfg.kwargs),
            num_warps=cfg.num_warps,
            num_stages=cfg.num_stages,
            num_ctas=getattr(cfg, "num_ctas", 1),
            maxnreg=getattr(cfg, "maxnreg", None),
            pre_hook=getattr(cfg, "pre_hook", None),
        )


def as_config(obj: Any) -> Config:
    """Accept a tritune Config, a triton.Config, or a JSON-form mapping."""
    if isinstance(obj, Config):
        return obj
    if hasattr(obj, "kwargs") and hasattr(obj, "num_warps"):
        return Config.from_triton(obj)
    if isinstance(obj, Mapping):
        return Config.from_json(obj)
    raise ConfigError(f"cannot make a Config from {type(obj).__name__}: pass tritune.Config or triton.Config")


_NAME, _VALUE = operator.itemgetter(0), operator.itemgetter(1)


def columns(configs: Sequence[Config]) -> dict[str, list[Any]] | None:
    """Every config's value of each parameter, one list per name in :meth:`Config.as_dict`'s order (``maxnreg``
    only when some config sets it, ``None`` where one does not), or None when the configs do not all have the
    same meta-parameter names.

    What ``[c.as_dict() for c in configs]`` gives, read by column without building a dict per config: over the
    2,000 legal configs of the search benchmark's matmul, at every new key's search start, ``Space.from_configs``
    took 4.5 ms and ``Grid`` 5.6 ms through ``as_dict`` on this project's CPU, 1.8 and 2.6 ms by column (fastest
    of 20)."""
    if not configs:
        return {}
    first = configs[0]._items
    items = [c._items for c in configs]
    if len(set(map(len, items))) != 1:
        return None
    out: dict[str, list[Any]] = {}
    for (name, _), col in zip(first, zip(*items)):
        if len(set(map(_NAME, col))) != 1:  # some config has another name at this position
            return None
        out[name] = list(map(_VALUE, col))
    out["num_warps"] = [c.num_warps for c in configs]
    out["num_stages"] = [c.num_stages for c in configs]
    out["num_ctas"] = [c.num_ctas for c in configs]
    regs = [c.maxnreg for c in configs]
    if any(r is not None for r in regs):
        out["maxnreg"] = regs
    return out


def detached(value: Any) -> Any:
    """A copy a config's ``pre_hook`` may change without touching the caller's argument: objects such as a host
    ``TensorDescriptor`` are copied (their list attributes too); tensors, numbers and strings are passed as is."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)) or hasattr(value, "data_ptr"):
        return value
    if not hasattr(value, "__dict__"):
        return value
    try:
        dup = copy.copy(value)
        for name, attr in vars(dup).items():
            if isinstance(attr, list):
                setattr(dup, name, list(attr))
    except Exception:  # an object that refuses to be copied: the hook would change the caller's own
        return value
    return dup


def hooked_arguments(arg_names: Sequence[str], cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any],
                     pre_hook: Any = None) -> tuple[tuple[Any, ...], dict[str, Any]]:  # fmt: skip
    """The arguments as the JIT will see them for ``cfg``: after its ``pre_hook``, which may set what the
    compile depends on (a host ``TensorDescriptor``'s block shape). The hook runs on copies of the non-tensor
    arguments, so the caller's descriptors are left as they were; Triton runs the same hook before every
    benchmark launch of ``cfg``, so one more run is what any hook must already allow. ``pre_hook``: the hook for
    a config without one of its own (a Workload's)."""
    hook = cfg.pre_hook if cfg.pre_hook is not None else pre_hook
    if hook is None:
        return tuple(args), dict(kwargs)
    full = {n: detached(v) for n, v in zip(arg_names, args)}
    full.update({n: detached(v) for n, v in kwargs.items()})
    full.update(cfg.kwargs)
    full.update(cfg.launch_options())
    hook(full)
    return tuple(full[n] for n in arg_names[: len(args)]), {n: full[n] for n in kwargs}
