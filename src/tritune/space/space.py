"""``Space``: a search space declared as data, with named constraints that are plain callables."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tritune.config import LAUNCH_OPTIONS, Config, as_config, check_value, columns
from tritune.errors import ConfigError

if TYPE_CHECKING:
    from tritune.space.bounds import Launch, Limits

#: What :meth:`Space.auto` runs: :func:`tritune.space.derive.derive_space`, which builds Spaces and so registers
#: itself here when it is imported (``tritune.space`` imports it) instead of this module importing it.
_derive_space: Callable[..., Any] | None = None


def use_derivation(derive_space: Callable[..., Any]) -> None:
    """Set the function :meth:`Space.auto` derives spaces with."""
    global _derive_space
    _derive_space = derive_space


@dataclass(frozen=True)
class Constraint:
    """A named rule over a config. ``check(config)`` returns True when the config is allowed.

    The callable receives the Config, which reads like a dict: ``lambda c: c["BLOCK"] >= 32 * c["num_warps"]``.
    ``message`` is shown when the rule rejects a config.
    """

    name: str
    check: Callable[[Config], bool]
    message: str = ""

    def explain(self, config: Config) -> str:
        why = self.message or f"constraint {self.name!r} is false"
        return f"{why} for {config.id}"


def constraint(name: str, message: str = "") -> Callable[[Callable[[Config], bool]], Constraint]:
    """Decorator form: ``@tritune.constraint("fits_smem") def f(c): ...``."""

    def wrap(fn: Callable[[Config], bool]) -> Constraint:
        return Constraint(name, fn, message or (fn.__doc__ or "").strip())

    return wrap


def _as_constraint(obj: Any) -> Constraint:
    if isinstance(obj, Constraint):
        return obj
    if isinstance(obj, str):
        raise ConfigError(
            f"constraint {obj!r} is a string; tritune never evaluates strings. Pass a named Python function "
            "or tritune.Constraint(name, fn)"
        )
    if callable(obj):
        name = getattr(obj, "__name__", "")
        if not name or name == "<lambda>":
            raise ConfigError(
                "a constraint needs a name for its error messages: use tritune.Constraint('name', lambda c: ...) "
                "or a def'd function"
            )
        return Constraint(name, obj, (obj.__doc__ or "").strip())
    raise ConfigError(f"a constraint must be callable, got {type(obj).__name__}")


class Space:
    """Parameters as value lists, plus constraints; enumerates legal configs in a stable order.

    >>> s = Space({"BLOCK": [256, 512], "num_warps": [2, 4]},
    ...           constraints=[Constraint("one_warp_per_128", lambda c: c["BLOCK"] >= 128 * c["num_warps"])])
    >>> [c.id for c in s]
    ['BLOCK=256,num_warps=2,num_stages=3', 'BLOCK=512,num_warps=2,num_stages=3', 'BLOCK=512,num_warps=4,num_stages=3']
    """

    def __init__(
        self,
        params: Mapping[str, Sequence[Any]],
        constraints: Iterable[Any] = (),
        *,
        members: Iterable[Config] | None = None,
    ) -> None:
        if not params:
            raise ConfigError("a Space needs at least one parameter")
        self.params: dict[str, tuple[Any, ...]] = {}
        for name, vals in params.items():
            if isinstance(vals, (str, bytes)) or not isinstance(vals, Iterable):
                raise ConfigError(f"parameter {name!r} must be a list of values, got {vals!r}")
            tup = tuple(dict.fromkeys(vals))
            if not tup:
                raise ConfigError(f"parameter {name!r} has no values")
            self.params[name] = tup
        self.constraints: tuple[Constraint, ...] = tuple(_as_constraint(c) for c in constraints)
        names = [c.name for c in self.constraints]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ConfigError(f"constraint names must be unique; repeated: {sorted(dup)}")
        self._members: frozenset[Config] | None = frozenset(members) if members is not None else None

    @classmethod
    def from_configs(cls, configs: Iterable[Any], constraints: Iterable[Any] = ()) -> Space:
        """The space spanned by an explicit list: each parameter's values, restricted to the listed configs."""
        cfgs = [as_config(c) for c in configs]
        if not cfgs:
            raise ConfigError("an empty config list has no space")
        names: dict[str, dict[Any, None]] = {}  # each parameter's values, the first of equal ones kept
        cols = columns(cfgs)  # by column when every config has the same names (as_dict's values, in its order)
        if cols is not None:
            for k, vals in cols.items():
                names[k] = dict.fromkeys(v for v in vals if v is not None) if k == "maxnreg" else dict.fromkeys(vals)
        else:
            for c in cfgs:
                for k, v in c.as_dict().items():
                    seen = names.get(k)
                    if seen is None:
                        seen = names[k] = {}
                    seen.setdefault(v, None)
        params = {k: sorted(v, key=_sort_key) for k, v in names.items()}
        space = cls(params, constraints, members=cfgs)
        space._order = list(dict.fromkeys(cfgs))
        return space

    _order: list[Config] | None = None
    #: How the space was derived from a kernel (a :class:`~tritune.space.derive.DerivedSpace`, see :meth:`auto`);
    #: None for a space written by hand.
    derivation: Any = None

    @classmethod
    def auto(
        cls,
        kernel: Any,
        *,
        passed: Collection[str],
        heuristics: Collection[str] = (),
        sizes: Mapping[str, int] | None = None,
        limits: Limits | None = None,
        launch: Launch | None = None,
        launch_only: bool = False,
    ) -> Space:
        """The space derived from ``kernel``'s source (:func:`tritune.space.derive_space`, same arguments), with
        the derivation in :attr:`derivation`. Raises ``ConfigError`` with the one-line reason when no space can
        be derived (the caller then keeps its own configs)."""
        if _derive_space is None:  # pragma: no cover (tritune.space imports the derivation)
            raise ConfigError("Space.auto needs tritune.space.derive: import tritune.space")
        derived = _derive_space(kernel, passed=passed, heuristics=heuristics, sizes=sizes, limits=limits,
                                launch=launch, launch_only=launch_only)  # fmt: skip
        if derived.space is None:
            raise ConfigError(derived.reason or f"{derived.kernel}: no space could be derived")
        return derived.space

    def make(self, values: Mapping[str, Any]) -> Config:
        """The Config for one assignment of parameter values."""
        kwargs: dict[str, Any] = {}
        opts: dict[str, Any] = {}
        for k, v in values.items():
            (opts if k in LAUNCH_OPTIONS else kwargs)[k] = v
        return Config(kwargs, **opts)

    def all_configs(self) -> Iterator[Config]:
        """Every combination (or every listed member), constrained or not, in a stable order."""
        if self._order is not None:
            yield from self._order
            return
        names = list(self.params)
        fast = self._trusted_parts(names)
        if fast is None:  # a value Config refuses: the checked path raises its error where it did
            for combo in itertools.product(*(self.params[n] for n in names)):
                yield self.make(dict(zip(names, combo)))
            return
        columns, kw_at, launch_at = fast
        get_items: Callable[[tuple[Any, ...]], Any] = operator.itemgetter(*kw_at) if kw_at else (lambda combo: ())
        one = len(kw_at) == 1
        trusted = Config._trusted
        defaults = [LAUNCH_OPTIONS[o] for o in _LAUNCH_ORDER]
        at = None  # every config has the same names: the first one's positions serve all (Config.__getitem__)
        for combo in itertools.product(*columns):
            items = get_items(combo)
            w, s, c, r = (combo[i] if i is not None else d for i, d in zip(launch_at, defaults))
            config = trusted((items,) if one else items, w, s, c, r, at)
            yield config
            if at is None:
                at = config._positions()

    def _trusted_parts(self, names: list[str]) -> tuple[list[tuple[Any, ...]], list[int], list[int | None]] | None:
        """What :meth:`all_configs` builds each config from without re-checking it (``Config._trusted``): every
        parameter's values checked once, as ``Config`` checks them (a meta-parameter's value as its
        ``(name, value)`` item), the positions of the meta-parameters in sorted name order, and of the launch
        options; None when some name or value would fail ``Config``'s checks."""
        columns: list[tuple[Any, ...]] = []
        try:
            for n in names:
                if n in LAUNCH_OPTIONS:
                    for v in self.params[n]:
                        if not (v is None and n == "maxnreg") and (isinstance(v, bool) or not isinstance(v, int)):
                            return None
                    columns.append(self.params[n])
                else:
                    if not isinstance(n, str) or not n.isidentifier():
                        return None
                    columns.append(tuple((n, check_value(n, v)) for v in self.params[n]))
        except ConfigError:
            return None
        kw_at = sorted((i for i, n in enumerate(names) if n not in LAUNCH_OPTIONS), key=lambda i: names[i])
        launch_at = [names.index(o) if o in names else None for o in _LAUNCH_ORDER]
        return columns, kw_at, launch_at

    def rejection(self, config: Any) -> str | None:
        """``None`` when the config is allowed, else the reason, naming the constraint."""
        config = as_config(config)
        if self._members is not None and config not in self._members:
            return f"{config.id} is not one of the listed configs"
        for c in self.constraints:
            try:
                ok = bool(c.check(config))
            except Exception as e:
                return f"constraint {c.name!r} raised {type(e).__name__}: {e} for {config.id}"
            if not ok:
                return c.explain(config)
        return None

    def __contains__(self, config: Any) -> bool:
        return self.rejection(config) is None

    def enumerate(self) -> list[tuple[Config, str | None]]:
        """Every combination with its rejection reason (``None`` for allowed ones)."""
        return [(c, self.rejection(c)) for c in self.all_configs()]

    def configs(self) -> list[Config]:
        """The allowed configs, in a stable order.

        A space of listed configs without constraints (:meth:`from_configs`, what a search's space is) allows
        every listed config: they are returned without asking :meth:`rejection` of each (2,000 of them took
        0.5 ms of every new key's search start on this project's CPU, fastest of 20)."""
        if self._order is not None and not self.constraints:
            return list(self._order)
        return [c for c in self.all_configs() if self.rejection(c) is None]

    def __iter__(self) -> Iterator[Config]:
        return iter(self.configs())

    def __len__(self) -> int:
        return len(self.configs())

    @property
    def size(self) -> int:
        """Number of combinations before constraints."""
        if self._order is not None:
            return len(self._order)
        n = 1
        for v in self.params.values():
            n *= len(v)
        return n

    def __repr__(self) -> str:
        ps = ", ".join(f"{k}={list(v)}" for k, v in self.params.items())
        return f"Space({ps}; {len(self.constraints)} constraint(s))"


#: The launch options in ``Config._trusted``'s argument order.
_LAUNCH_ORDER = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _sort_key(v: Any) -> tuple[int, Any]:
    if isinstance(v, bool) or v is None:
        return (0, str(v))
    if isinstance(v, (int, float)):
        return (1, v)
    return (2, str(v))
