"""Strategies by name: ``get("random", space, seed=0)``; ``register(name, factory)`` adds your own.

A factory is any callable ``factory(space, *, seed, illegal, **options) -> SearchStrategy`` (a Strategy
subclass is one). Where a name is accepted, an object that already implements the interface is too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from tritune.errors import SearchError
from tritune.search.base import SearchStrategy
from tritune.search.exhaustive import ExhaustiveSearch
from tritune.search.neighbourhood import NeighbourhoodSearch
from tritune.search.random_search import RandomSearch
from tritune.search.rings import RingSearch
from tritune.search.surrogate import SurrogateSearch
from tritune.search.transfer import TransferSearch
from tritune.space import Space

Factory = Callable[..., SearchStrategy]

#: The strategy tuning uses when none is named; chosen by benchmarks/search_eval.py (see its report). The
#: surrogate's guided asks take the best config's untried swaps first (``swap=1``: BLOCK_M <-> BLOCK_N, the
#: transposed tile): over 40 seeds, 25% budget, it met the targets on 27 of 30 recorded rows at 0/1/2% replay noise
#: and 25 of 38 held-out rows at 2%, as with ``swap=0``, no row lost, none newly worse than random; recorded matmul
#: 4096's p90 1.072-1.073 -> 1.052-1.057 (still a miss), matmul 8192x1024x4096's 1.019-1.038 -> 1.007-1.017. Its
#: Gaussian process also sees the output tile per warp on 2-D tiles (``tile_per_warp``): 64/63/60 of 77 development
#: rows and 34/31/33 of 41 held-out rows met at 0/1/2% noise (without it: 63/62/58 and 32/30/33); recorded matmul
#: 4096's p90 at 2% 1.052 -> 1.005.
DEFAULT = "surrogate"


def _tpe(space: Space, **kwargs: Any) -> SearchStrategy:
    from tritune.search.tpe import TPESearch  # optuna is imported only when this strategy is built

    return TPESearch(space, **kwargs)


_REGISTRY: dict[str, Factory] = {
    "exhaustive": ExhaustiveSearch,
    "random": RandomSearch,
    "neighbourhood": NeighbourhoodSearch,
    "surrogate": SurrogateSearch,
    "tpe": _tpe,
    "transfer": TransferSearch,  # needs key=..., neighbours=[KeyResults, ...]
    "rings": RingSearch,  # needs origins={generated: (configs one step nearer the list, ...)}
}


def register(name: str, factory: Factory, *, replace: bool = False) -> None:
    """Make ``factory`` available as ``name``; re-registering a name needs ``replace=True``."""
    if not isinstance(name, str) or not name:
        raise SearchError(f"a strategy name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise SearchError(f"strategy {name!r}: the factory must be callable, got {type(factory).__name__}")
    if name in _REGISTRY and not replace:
        raise SearchError(f"strategy {name!r} is already registered; pass replace=True to override it")
    _REGISTRY[name] = factory


def unregister(name: str) -> None:
    """Remove a registered strategy (built-in ones included)."""
    if _REGISTRY.pop(name, None) is None:
        raise SearchError(f"no strategy named {name!r} is registered")


def names() -> list[str]:
    """Registered strategy names, sorted."""
    return sorted(_REGISTRY)


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """A strategy spec, ``name`` or ``name:key=value,...`` (``surrogate:probe=1``), as ``(name, options)``.

    Values that read as JSON (numbers, ``true``/``false``/``null``, lists) are parsed; others stay strings.
    The name must be registered; the options are checked by the strategy when it is built.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise SearchError(f"a strategy spec must be a name or 'name:key=value,...', got {spec!r}")
    name, sep, opts = spec.strip().partition(":")
    if name not in _REGISTRY:
        raise SearchError(f"unknown search strategy {name!r}; registered: {', '.join(names())}")
    options: dict[str, Any] = {}
    for item in opts.split(",") if sep else ():
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise SearchError(
                f"strategy {spec!r}: options are key=value pairs separated by commas "
                f"(e.g. 'surrogate:probe=1'), got {item!r}"
            )
        value = value.strip()
        try:
            options[key.strip()] = json.loads(value) if value[:1] in "-0123456789[{tfn" else value
        except json.JSONDecodeError:
            options[key.strip()] = value
    return name, options


def get(
    name: str, space: Space, *, seed: int = 0, illegal: Iterable[Any] = (), **options: Any
) -> SearchStrategy:
    """A fresh strategy ``name`` over ``space``, minus the ``illegal`` configs screening rejected."""
    factory = _REGISTRY.get(name)
    if factory is None:
        raise SearchError(f"unknown search strategy {name!r}; registered: {', '.join(names())}")
    strategy = factory(space, seed=seed, illegal=illegal, **options)
    if not isinstance(strategy, SearchStrategy):
        raise SearchError(
            f"strategy factory {name!r} returned {type(strategy).__name__}, which lacks ask/tell"
        )
    return strategy


def resolve(
    strategy: str | SearchStrategy | None, space: Space, *, seed: int = 0, illegal: Iterable[Any] = ()
) -> SearchStrategy:
    """A name (``None`` for :data:`DEFAULT`) becomes a fresh strategy; a strategy object is returned as is."""
    if strategy is None:
        return get(DEFAULT, space, seed=seed, illegal=illegal)
    if isinstance(strategy, str):
        return get(strategy, space, seed=seed, illegal=illegal)
    if isinstance(strategy, SearchStrategy):
        return strategy
    raise SearchError(
        f"{type(strategy).__name__} is not a search strategy: pass a name ({', '.join(names())}) or an "
        "object with ask(n), tell(config, status, time_ms), best() and done()"
    )
