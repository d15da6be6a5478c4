"""The pieces of Triton's autotuner surface that tritune's decorator reproduces with Triton's meaning.

* :class:`TunedConfig` is a real ``triton.Config`` (``all_kwargs()``, ``pre_hook``, ``kwargs``...) that also
  carries tritune's frozen :class:`~tritune.config.Config` (``.config``, ``.id``).
* :func:`normalize` turns a config list as Triton takes it (``triton.Config`` with launch options inside the
  kwargs dict, an empty list) into tritune Configs, remembering each original object.
* :class:`HeuristicsLauncher` launches the kernel through the ``@triton.heuristics`` layers stacked under the
  decorator, so their values reach the kernel as they do under ``triton.autotune``.
* :func:`default_hooks` are Triton's default ``pre_hook``/``post_hook`` for ``reset_to_zero``/``restore_value``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import triton
from triton.runtime.autotuner import Autotuner as ORIGINAL_AUTOTUNER
from triton.runtime.autotuner import Heuristics as TritonHeuristics

from tritune.config import LAUNCH_OPTIONS, Config
from tritune.decorator.tuned import TunedKernel

__all__ = ["DEFAULT_TRITON_CONFIG", "ORIGINAL_AUTOTUNER", "HeuristicsLauncher", "LiveCache", "TunedConfig",
           "default_hooks", "heuristic_layers", "normalize", "triton_fields", "triton_prune"]

#: Triton's config for an empty list (``Autotuner.__init__``: num_warps=4, num_stages=3, num_ctas=1).
DEFAULT_TRITON_CONFIG = Config({}, num_warps=4, num_stages=3, num_ctas=1)


class TunedConfig(triton.Config):  # type: ignore[misc]
    """A ``triton.Config`` for the config a key dispatches to, that also knows tritune's :class:`Config`.

    It compares equal to the tritune Config it stands for, as well as to equal ``triton.Config`` objects.
    """

    def __init__(self, config: Config, original: Any = None) -> None:
        pre_hook = getattr(original, "pre_hook", None) if original is not None else config.pre_hook
        super().__init__(dict(config.kwargs), num_warps=config.num_warps, num_stages=config.num_stages,
                         num_ctas=config.num_ctas, maxnreg=config.maxnreg, pre_hook=pre_hook)  # fmt: skip
        self.config = config

    @property
    def id(self) -> str:
        return self.config.id

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Config):
            return self.config == other
        if hasattr(other, "all_kwargs"):
            return bool(super().__eq__(other))
        return NotImplemented

    def __hash__(self) -> int:
        return int(super().__hash__())

    def __repr__(self) -> str:
        return f"TunedConfig({self.config.id})"


def from_triton(obj: Any) -> Config:
    """A tritune Config for a ``triton.Config`` (or tritune Config), with Triton's meaning.

    Triton launches ``config.all_kwargs()``: launch options written inside the kwargs dict are overridden by
    the attributes (which always have values), except ``maxnreg``, whose attribute may be None.
    """
    if isinstance(obj, Config):
        return obj
    if isinstance(obj, TunedConfig):
        return obj.config
    if not (hasattr(obj, "kwargs") and hasattr(obj, "num_warps")):
        raise TypeError(f"expected a triton.Config or tritune.Config, got {type(obj).__name__}: {obj!r}")
    kwargs = dict(obj.kwargs)
    opts: dict[str, Any] = {}
    for name in LAUNCH_OPTIONS:
        attr = getattr(obj, name, None)
        inner = kwargs.pop(name, None)
        opts[name] = attr if attr is not None else inner
    kwargs.pop("ir_override", None)
    return Config(kwargs, num_warps=opts["num_warps"] if opts["num_warps"] is not None else 4,
                  num_stages=opts["num_stages"] if opts["num_stages"] is not None else 3,
                  num_ctas=opts["num_ctas"] if opts["num_ctas"] is not None else 1, maxnreg=opts["maxnreg"],
                  pre_hook=getattr(obj, "pre_hook", None))  # fmt: skip


def normalize(configs: Iterable[Any]) -> tuple[list[Config], dict[Config, Any]]:
    """(tritune Configs in order, each Config's original object). An empty list gets Triton's default config."""
    out: list[Config] = []
    originals: dict[Config, Any] = {}
    for obj in configs:
        cfg = from_triton(obj)
        if cfg not in originals:
            out.append(cfg)
            originals[cfg] = obj
    if not out:
        out = [DEFAULT_TRITON_CONFIG]
        originals[DEFAULT_TRITON_CONFIG] = triton.Config({}, num_warps=4, num_stages=3, num_ctas=1)
    return out, originals


def triton_fields(obj: Any) -> dict[str, Any]:
    """A config's fields as Triton writes them to its results file (``config.__dict__``), without tritune's own."""
    fields = dict(vars(obj))
    if isinstance(obj, TunedConfig):
        fields.pop("config", None)
    return fields


def heuristic_layers(fn: Any) -> list[Any]:
    """The ``@triton.heuristics`` objects between the decorator and the jitted function, outermost first."""
    layers = []
    seen = 0
    while isinstance(fn, TritonHeuristics) and seen < 16:
        layers.append(fn)
        fn = fn.fn
        seen += 1
    return layers


def apply_heuristics(layers: Sequence[Any], args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with every heuristic's value added, as ``Heuristics.run`` computes them (outermost first)."""
    for layer in layers:
        named = dict(zip(layer.arg_names, args))
        for name, heur in layer.values.items():
            kwargs[name] = heur({**named, **kwargs})  # a fresh dict for each heuristic, as Triton's
    return kwargs


class HeuristicsLauncher:
    """A jitted (or interpreted) kernel behind ``@triton.heuristics`` layers: ``run`` adds their values."""

    def __init__(self, inner: Any, layers: Sequence[Any]) -> None:
        self.inner = inner
        self.layers = list(layers)
        self.arg_names = inner.arg_names
        self.fn = inner

    def run(self, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        kw = apply_heuristics(self.layers, args, dict(kwargs))
        return self.inner.run(*args, grid=grid, warmup=warmup, **kw)

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def default_hooks(owner: Any, reset_to_zero: Sequence[str], restore_value: Sequence[str]) -> tuple[Any, Any]:
    """Triton's default ``pre_hook(kwargs, reset_only=False)`` and ``post_hook(kwargs, exception)``: zero the
    ``reset_to_zero`` arguments and snapshot ``restore_value`` before a benchmark run, restore after it.
    ``None`` arguments are skipped. The snapshot lives on ``owner.restore_copies``, as in Triton."""

    def pre_hook(kwargs: Mapping[str, Any], reset_only: bool = False) -> None:
        for name in reset_to_zero:
            if kwargs.get(name) is not None:
                kwargs[name].zero_()
        if not reset_only:
            owner.restore_copies = {n: kwargs[n].clone() for n in restore_value if kwargs.get(n) is not None}

    def post_hook(kwargs: Mapping[str, Any], exception: BaseException | None) -> None:
        for name, value in getattr(owner, "restore_copies", {}).items():
            kwargs[name].copy_(value)
        owner.restore_copies = {}

    def nothing_pre(kwargs: Mapping[str, Any], reset_only: bool = False) -> int:
        return 0

    def nothing_post(kwargs: Mapping[str, Any], exception: BaseException | None) -> int:
        return 0

    pre = pre_hook if (reset_to_zero or restore_value) else nothing_pre
    post = post_hook if restore_value else nothing_post
    return pre, post


def _all_kwargs(obj: Any) -> dict[str, Any]:
    if hasattr(obj, "all_kwargs"):
        return dict(obj.all_kwargs())
    cfg = from_triton(obj)
    return {**cfg.kwargs, **cfg.launch_options()}


class LiveCache(dict):  # type: ignore[type-arg]
    """``kernel.cache``: Triton's key tuple -> config object, as Triton's. Clearing or deleting entries makes the
    kernel choose again for those keys; setting one makes the kernel use that config object for the key."""

    def __init__(self, owner: TunedKernel) -> None:
        super().__init__()
        self._owner = owner

    def owned_by(self, kernel: Any) -> bool:
        """Whether this is ``kernel``'s own cache (one kernel's cache assigned to another is a foreign mapping)."""
        return self._owner is kernel

    def _forget(self, public: Any = None) -> None:
        self._owner.forget(public)

    def clear(self) -> None:
        super().clear()
        self._forget()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self._forget(key)

    def pop(self, key: Any, *default: Any) -> Any:
        out = super().pop(key, *default)
        self._forget(key)
        return out

    def popitem(self) -> tuple[Any, Any]:
        k, v = super().popitem()
        self._forget(k)
        return k, v

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self._forget(key)

    def update(self, *other: Any, **entries: Any) -> None:
        for key, value in dict(*other, **entries).items():
            self[key] = value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def __ior__(self, other: Any) -> LiveCache:  # type: ignore[misc,override]
        self.update(other)
        return self


def triton_prune(name: str, configs: Sequence[Any], early: Any, perf_model: Any, top_k: Any,
                 named: Mapping[str, Any], kwargs: Mapping[str, Any]) -> list[Any]:  # fmt: skip
    """``Autotuner.prune_configs`` with Triton's meaning (3.6-3.9): ``early_config_prune(configs, nargs,
    **kwargs)``, whose result is used as returned (new or reordered configs included), then the
    ``perf_model``'s ``top_k`` (a float <= 1 is a fraction, at least one)."""
    from triton.runtime.errors import AutotunerError

    pruned: list[Any] = list(configs)
    if early is not None:
        pruned = list(early(list(configs), dict(named), **kwargs))
        if not pruned:
            raise AutotunerError("No valid autotuner configs after pruning. `early_config_prune` should return "
                                 f"at least one config. ({name})")  # fmt: skip
    if perf_model is not None:
        if isinstance(top_k, float) and top_k <= 1.0:
            top_k = max(1, int(len(pruned) * top_k))
        elif not isinstance(top_k, int):
            raise TypeError("Error while pruning configs, top_k must be either 1) a float <= 1.0 or 2) an int")
        if len(pruned) > top_k:
            est = [(perf_model(**named, **kwargs, **_all_kwargs(c)), i) for i, c in enumerate(pruned)]
            pruned = [pruned[i] for _, i in sorted(est, key=lambda t: t[0])[:top_k]]
    return pruned
