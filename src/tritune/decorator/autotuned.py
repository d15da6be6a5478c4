"""``@tritune.autotune``: a drop-in for ``@triton.autotune`` that screens before it launches.

The object it returns IS a ``triton.runtime.Autotuner`` (a subclass that does not run Triton's constructor):
``run(*args, grid=, warmup=, **kwargs)`` returns what the JIT's ``run`` returns, ``cache`` is live,
``configs`` can be assigned, ``best_config`` is a ``triton.Config``, hooks, pruning and ``reset_to_zero``
keep Triton's meaning, and it stacks with ``@triton.heuristics`` either way round.

The first call for new key values picks a config; later calls with the same key reuse it. On a GPU
the pick is timed. With no GPU driver (``TRITON_INTERPRET=1``) nothing can be timed: the first legal
config runs, labelled *untuned*, with one plain warning per kernel, or
:class:`~tritune.errors.TimingUnavailableError` when ``on_no_gpu="error"`` (or
``TRITUNE_ON_NO_GPU=error``). Illegal candidates are never launched.
"""

from __future__ import annotations

import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Protocol

from tritune.adapters.interpreter import as_interpreted
from tritune.adapters.kernel import KernelInfo, as_jit, unwrap_jit
from tritune.adapters.triton_key import install_triton_key_memo
from tritune.config import Config
from tritune.decorator.choice import Choice, PretunedIgnoredWarning, UntunedWarning, resolve_on_no_gpu
from tritune.decorator.dispatch import make_fast, make_fast_const, make_fast_hooked, make_fast_kw
from tritune.decorator.keys import KeySpec
from tritune.decorator.miss import KeyTuner
from tritune.decorator.triton_surface import (
    ORIGINAL_AUTOTUNER,
    HeuristicsLauncher,
    LiveCache,
    TunedConfig,
    apply_heuristics,
    default_hooks,
    from_triton,
    heuristic_layers,
    normalize,
    triton_prune,
)
from tritune.device import gpu_unavailable_reason
from tritune.errors import CaptureMissError, ConfigError
from tritune.space import Space, check_static

_MISS = object()
#: Every decorated kernel made in this process (weakly held): what ``tritune.fleet`` lists, records and checks.
REACHED: weakref.WeakSet[Autotuned] = weakref.WeakSet()
#: What a :class:`Serving` mode's ``run`` returns when it leaves a call to the blocking path.
SERVING_MISS = object()


class Serving(Protocol):
    """A mode that tunes while serving (``tritune.serving.Incremental``), chosen at decoration: a key without a
    choice goes to :meth:`run` first, which launches the call itself or returns :data:`SERVING_MISS`."""

    def run(self, tuned: Autotuned, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
            grid: Any, call_key: tuple[Any, ...] | None) -> Any: ...  # fmt: skip
    def tuning(self, tuned: Autotuned) -> dict[tuple[Any, ...], Choice]: ...


def _values_getter(names: Sequence[str]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """A mapping's values for ``names``, as a tuple (``itemgetter`` of one name gives the bare value)."""
    if len(names) == 1:
        (name,) = names
        return lambda d: (d[name],)
    return itemgetter(*names) if names else (lambda d: ())

__all__ = ["SERVING_MISS", "Autotuned", "Choice", "PretunedIgnoredWarning", "Serving", "UntunedWarning"]

class Autotuned(ORIGINAL_AUTOTUNER):  # type: ignore[misc]
    """A tuned kernel: launch it as ``kernel[grid](*args)``; inspect ``best_config``, ``configs``, ``cache``."""

    def __init__(
        self,
        fn: Any,
        configs: Sequence[Any] | Space | None,
        key: Any,
        *,
        prune_configs_by: Mapping[str, Any] | None = None,
        reset_to_zero: Iterable[str] | None = None,
        restore_value: Iterable[str] | None = None,
        pre_hook: Callable[..., Any] | None = None,
        post_hook: Callable[..., Any] | None = None,
        do_bench: Callable[..., Any] | None = None,
        on_no_gpu: str | None = None,
        tuner: KeyTuner | None = None,
        warmup: Any = None,
        rep: Any = None,
        use_cuda_graph: bool = False,
        cache_results: bool = False,
        serving: Serving | None = None,
        widen: bool = False,
    ) -> None:
        self.fn = fn
        self.info = KernelInfo.of(fn)
        self.base_fn = unwrap_jit(fn).fn
        self.arg_names = list(self.info.arg_names)
        name = self.info.name
        self._heuristics = heuristic_layers(fn)
        self._choices: dict[tuple[Any, ...], Choice] = {}
        self._hot: dict[tuple[Any, ...], tuple[Choice, Any | None]] = {}
        self._hot_kw: dict[tuple[Any, ...], tuple[Choice, Any | None]] = {}
        # under @triton.heuristics: generated call key -> (choice, its config's values and launch options)
        # (and, for positional calls, the heuristics' values -> fast launcher)
        self._heur_hot: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._heur_names = tuple(n for layer in self._heuristics for n in layer.values)
        self.cache = LiveCache(self)
        #: Where the candidates come from: "given" (the list), "derived" (configs=None: from the kernel's source,
        #: per call's sizes) or "widened" (the list and its neighbours): see :meth:`_call_space`.
        self.space_source = "derived" if configs is None else "widened" if widen else "given"
        self._declared = [] if configs is None else configs
        #: Generated candidates of the last call's space (not in the list anyone wrote): config -> where it came from.
        self.generated: dict[Config, str] = {}
        self.space_report: dict[str, Any] | None = None
        self._space_ident: Any = None
        self._set_configs([] if configs is None else configs)
        self.key_spec = KeySpec.build(name, self.info.arg_names, key, constexprs=self.info.constexprs)
        self.keys = list(self.key_spec.names)
        for what, names in (("reset_to_zero", reset_to_zero), ("restore_value", restore_value)):
            bad = [n for n in (names or ()) if n not in self.info.arg_names]
            if bad:
                raise ConfigError(f"{name}: {what} names {bad} are not parameters of the kernel; "
                                  f"its parameters are {', '.join(self.info.arg_names)}")  # fmt: skip
        self.reset_to_zero = list(reset_to_zero or ())
        self.restore_value = list(restore_value or ())
        self.prune_configs_by = dict(prune_configs_by or {})
        unknown_prune = set(self.prune_configs_by) - {"perf_model", "top_k", "early_config_prune"}
        if unknown_prune:
            raise ConfigError(f"{name}: prune_configs_by has unknown entries {sorted(unknown_prune)}; "
                              "known: perf_model, top_k, early_config_prune")  # fmt: skip
        self.perf_model = self.prune_configs_by.get("perf_model")
        self.configs_top_k = self.prune_configs_by.get("top_k", 1.0)
        self.early_config_prune = self.prune_configs_by.get("early_config_prune")
        # Triton's hooks: the user's, else the defaults that reset/restore arguments around a benchmark run.
        self.restore_copies: dict[str, Any] = {}
        default_pre, default_post = default_hooks(self, self.reset_to_zero, self.restore_value)
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.pre_hook = pre_hook if pre_hook is not None else default_pre
        self.post_hook = post_hook if post_hook is not None else default_post
        self._do_bench = do_bench
        self.num_warmups, self.num_reps, self.use_cuda_graph = warmup, rep, bool(use_cuda_graph)
        self.cache_results = bool(cache_results)  # tritune's store is always on unless store=False
        self.nargs: dict[str, Any] | None = None
        self.bench_time = 0.0
        self.configs_timings: dict[Any, Any] = {}
        self.on_no_gpu = resolve_on_no_gpu(on_no_gpu)
        self.tuner = tuner if tuner is not None else KeyTuner(store=False)
        self._lock = threading.RLock()
        self._warned: set[str] = set()
        self._last: Choice | None = None
        self._best_set: Any = None
        self._runner: Any = None
        self._call_key: Callable[[Sequence[Any]], tuple[Any, ...]] = self.key_spec.call_key
        self._kw_key: Callable[[Sequence[Any], Mapping[str, Any]], tuple[Any, ...]] = self.key_spec.kw_call_key
        self._heur_key: Callable[[Sequence[Any]], tuple[Any, ...]] | None = None  # generated at the first call
        # the heuristics' values of one call, as a tuple (itemgetter of one name gives the bare value)
        self._heur_values = _values_getter(self._heur_names)
        on_gpu = gpu_unavailable_reason() is None
        self._fast_ok = on_gpu and not self._heuristics
        self._heur_fast = on_gpu and bool(self._heuristics)
        self.__name__ = name
        REACHED.add(self)
        self.__doc__ = getattr(fn, "__doc__", None)
        # tune while serving (incremental=True, or TRITUNE_INCREMENTAL=1): chosen by the caller at decoration
        self._incremental = serving

    # -- Triton-compatible surface ---------------------------------------------------------------------
    def _set_configs(self, configs: Sequence[Any] | Space) -> None:
        if isinstance(configs, Space):
            self.space = configs
            self._configs = list(configs.all_configs())
            self._originals: dict[Config, Any] = {c: c for c in self._configs}
        else:
            self._configs, self._originals = normalize(configs)
            self.space = Space.from_configs(self._configs)
        # Callers' functions (early_config_prune, perf_model) and readers of ``configs`` get triton.Configs,
        # as under Triton; a tritune Config given is shown as a TunedConfig, which compares equal to it.
        for c, obj in self._originals.items():
            if isinstance(obj, Config):
                self._originals[c] = TunedConfig(c)
        self._given = [self._originals[c] for c in self._configs]
        self._tuned_names = frozenset(n for c in self._configs for n in c.kwargs)
        self._tconf: dict[Config, TunedConfig] = {}

    @property
    def configs(self) -> list[Any]:
        """The candidate configs as given (``triton.Config`` or tritune ``Config``); assignable, as in Triton."""
        return self._given

    @configs.setter
    def configs(self, value: Sequence[Any] | Space) -> None:
        with self._lock:
            self._set_configs(value)
            if isinstance(self.cache, LiveCache):  # a subclass's own mapping (LibTuner's sqlite table) is its own
                self.cache.clear()

    @property
    def candidates(self) -> list[Config]:
        """The candidate configs as tritune Configs (launch options inside kwargs moved out, as Triton reads them)."""
        return list(self._configs)

    def tuned_config(self, cfg: Config) -> TunedConfig:
        """The ``triton.Config`` shown for ``cfg`` (the original object's pre_hook, tritune's ``.id``)."""
        tc = self._tconf.get(cfg)
        if tc is None:
            tc = self._tconf[cfg] = TunedConfig(cfg, self._originals.get(cfg))
        return tc

    @property
    def best_config(self) -> Any:
        """The config of the most recent call, a ``triton.Config`` (with ``.id``); None before any call."""
        if self._last is not None:
            return self.tuned_config(self._last.config)
        return self._best_set

    @best_config.setter
    def best_config(self, value: Any) -> None:  # a subclass that runs its own loop (as FlagGems' LibTuner) sets it
        self._last, self._best_set = None, value

    def choices(self) -> dict[tuple[Any, ...], Choice]:
        """Key tuple -> :class:`Choice` (config and how it was chosen, e.g. ``untuned``); with ``incremental``,
        keys still tuning show their ``provisional`` config and their state in ``stats``."""
        tuning = self._incremental.tuning(self) if self._incremental is not None else {}
        return {**tuning, **{self.key_spec.public(k): c for k, c in self._choices.items()}}

    def launcher(self) -> Any:
        if self._runner is None:
            base = as_interpreted(self.fn) if gpu_unavailable_reason() else as_jit(self.fn)
            self._runner = HeuristicsLauncher(base, self._heuristics) if self._heuristics else base
        return self._runner

    def run(self, *args: Any, grid: Any = None, warmup: Any = False, **kwargs: Any) -> Any:
        if kwargs and not self._tuned_names.isdisjoint(kwargs):
            self._conflict(kwargs)
        if self._heur_fast and not warmup:
            out = self._run_under_heuristics(args, kwargs, grid)
            if out is not _MISS:
                return out
        ck = None  # the call key of a positional call, when computed (the incremental mode's launchers reuse it)
        if self._fast_ok and not warmup:
            # Hot path: one generated expression gives the key and the binary's specialization.
            if not kwargs:
                ck = self._call_key(args)
                hot = self._hot.get(ck)
                if hot is not None:
                    self._last = hot[0]
                    if hot[1] is not None:
                        return hot[1](args, grid)
                    return self.launch(hot[0].config, args, kwargs, grid, False)
            else:
                try:
                    hot_kw = self._hot_kw.get(self._kw_key(args, kwargs))
                except TypeError:  # an unhashable keyword value: Triton's path
                    hot_kw = None
                if hot_kw is not None:
                    self._last = hot_kw[0]
                    if hot_kw[1] is not None:
                        return hot_kw[1](args, kwargs, grid)
                    return self.launch(hot_kw[0].config, args, kwargs, grid, False)
        key = self.key_spec.of(args, kwargs)
        choice = self._choices.get(key)
        if choice is None and self._incremental is not None and not warmup:
            out = self._incremental.run(self, key, args, kwargs, grid, ck)  # tune while serving: tritune.serving
            if out is not SERVING_MISS:
                return out
            choice = self._choices.get(key)
        if choice is None:
            with self._lock:
                choice = self._choices.get(key)
                if choice is None:
                    self._refuse_during_capture(key)
                    install_triton_key_memo()  # a key new to this process: its compiles or lookups need Triton's key
                    self.nargs = dict(zip(self.arg_names, args))
                    started = time.perf_counter()
                    try:
                        choice = self._choose(key, args, kwargs, grid)
                    finally:
                        self.nargs = None
                    if choice.source in ("timed", "replayed", "untuned"):
                        self.bench_time = time.perf_counter() - started  # as Triton's: the last tuning's seconds
                        # as Triton's: config -> times of the last tuning (nothing is timed without a GPU)
                        self.configs_timings = {self.tuned_config(c): t for c, t in (choice.timings or {}).items()}
                    self._choices[key] = choice
                    self._remember(key, choice)
        self._last = choice
        if self._fast_ok and not warmup:
            return self._launch_and_remember(choice, args, kwargs, grid)
        return self.launch(choice.config, args, kwargs, grid, warmup)

    def _run_under_heuristics(self, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Any:
        """Fast dispatch with ``@triton.heuristics`` under the decorator: the key's cached config, the
        heuristics' values for it and this call (computed per call, as Triton does), then a fast launcher for
        the jitted kernel with those values as keywords. ``_MISS`` where the key has no choice yet."""
        ent, hk = None, None
        if not kwargs:
            # The choice and its config's values, by the generated call key (key values and the binary's
            # specialization, a finer split than the key): the generic key and a dict merge per call cost
            # ~2 us of the ~13 us a call under heuristics took on the H200 (``benchmarks/dispatch.py``).
            if self._heur_key is None:
                self._heur_key = self.key_spec.compiled_call_key(args)
            try:
                hk = self._heur_key(args)
                ent = self._heur_hot.get(hk)
            except TypeError:  # an unhashable argument: the generic key below
                hk = None
        if ent is None:
            choice = self._choices.get(self.key_spec.of(args, kwargs))
            if choice is None:
                return _MISS
            values = {**choice.config.kwargs, **choice.config.launch_options()}
            if not kwargs and hk is not None:
                ent = self._heur_hot[hk] = (choice, values, {})
            else:
                ent = (choice, values)
        choice, values = ent[0], ent[1]
        cfg = choice.config
        self._last = choice
        if len(ent) > 2:
            # A positional call: its generated key already holds the binary's specialization of every argument,
            # so the heuristics' values alone pick the launcher, which holds them as constants (no keyword dict
            # and no second key over the keywords per call).
            full = apply_heuristics(self._heuristics, args, dict(values))
            try:
                hv = self._heur_values(full)
                fl = ent[2].get(hv, _MISS)
            except TypeError:  # an unhashable heuristic value: Triton's path
                return self.launch(cfg, args, kwargs, grid, False)
            if fl is _MISS:
                consts = dict(zip(self._heur_names, hv))
                fl = ent[2][hv] = make_fast_const(self.launcher().inner, cfg, args, consts, dict(self.info.defaults))
            if fl is not None:
                return fl(args, grid)
            return self.launch(cfg, args, kwargs, grid, False)
        full = apply_heuristics(self._heuristics, args, {**kwargs, **values})
        kw = dict(kwargs)
        for n in self._heur_names:
            kw[n] = full[n]
        if self._kw_key == self.key_spec.kw_call_key:
            self._kw_key = self.key_spec.compiled_kw_call_key(args, kw)
        try:
            ck = self._kw_key(args, kw)
            hot = self._hot_kw.get(ck)
        except TypeError:  # an unhashable value: Triton's path
            return self.launch(cfg, args, kwargs, grid, False)
        if hot is None:
            fk = make_fast_kw(self.launcher().inner, cfg, args, kw, dict(self.info.defaults))
            hot = self._hot_kw[ck] = (choice, fk)
        if hot[1] is not None:
            return hot[1](args, kw, grid)
        return self.launch(cfg, args, kwargs, grid, False)

    def _launch_and_remember(self, choice: Choice, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Any:
        """Build the fast launcher of this call's shape (the first call shows the argument kinds), keep it
        for the next calls of that shape, and launch."""
        defaults = dict(self.info.defaults)
        if choice.config.pre_hook is not None:
            return self._hooked_launch_and_remember(choice, args, kwargs, grid, defaults)
        if not kwargs:
            if self._call_key == self.key_spec.call_key:
                self._call_key = self.key_spec.compiled_call_key(args)
            fl = make_fast(self.launcher(), choice.config, args, defaults)
            self._hot[self._call_key(args)] = (choice, fl.launch if fl is not None else None)
            if fl is not None:
                return fl.launch(args, grid)
            return self.launch(choice.config, args, kwargs, grid, False)
        if self._kw_key == self.key_spec.kw_call_key:
            self._kw_key = self.key_spec.compiled_kw_call_key(args, kwargs)
        try:
            ck = self._kw_key(args, kwargs)
            hash(ck)
        except TypeError:
            return self.launch(choice.config, args, kwargs, grid, False)
        fk = make_fast_kw(self.launcher(), choice.config, args, kwargs, defaults)
        self._hot_kw[ck] = (choice, fk)
        if fk is not None:
            return fk(args, kwargs, grid)
        return self.launch(choice.config, args, kwargs, grid, False)

    def _hooked_launch_and_remember(self, choice: Choice, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any,
                                    defaults: dict[str, Any]) -> Any:  # fmt: skip
        """:meth:`_launch_and_remember` for a config with a ``pre_hook``: the fast launcher runs the hook on every
        call, as Triton does before the real launch (:func:`tritune.decorator.dispatch.make_fast_hooked`)."""
        cfg = choice.config
        opts = {**cfg.kwargs, **cfg.launch_options()}
        launcher = self.launcher()

        def slow(a: Sequence[Any], kw: Mapping[str, Any], g: Any) -> Any:  # the hook has run
            return launcher.run(*a, grid=g, warmup=False, **kw, **opts)

        positional = not kwargs
        if positional:
            if self._call_key == self.key_spec.call_key:
                self._call_key = self.key_spec.compiled_call_key(args)
        elif self._kw_key == self.key_spec.kw_call_key:
            self._kw_key = self.key_spec.compiled_kw_call_key(args, kwargs)
        try:
            ck = self._call_key(args) if positional else self._kw_key(args, kwargs)
            hash(ck)
        except TypeError:
            return self.launch(cfg, args, kwargs, grid, False)
        fk = make_fast_hooked(launcher, cfg, args, kwargs, defaults, slow)
        if positional:
            self._hot[ck] = (choice, None if fk is None else (lambda a, g: fk(a, {}, g)))
        else:
            self._hot_kw[ck] = (choice, fk)
        if fk is not None:
            return fk(args, kwargs, grid)
        return self.launch(cfg, args, kwargs, grid, False)

    # -- what a serving mode (tritune.serving) uses ---------------------------------------------------------
    @property
    def lock(self) -> threading.RLock:
        """The lock a key's choice is made and published under."""
        return self._lock

    @property
    def fast_dispatch(self) -> bool:
        """Whether cached calls go through generated launchers (a GPU, no stacked heuristics)."""
        return self._fast_ok

    def choice_of(self, key: tuple[Any, ...]) -> Choice | None:
        """The choice ``key`` dispatches to (None before one is made)."""
        return self._choices.get(key)

    def tuned_keys(self) -> dict[tuple[Any, ...], Choice]:
        """Every key with a choice, and its choice (a copy)."""
        return dict(self._choices)

    def serve(self, choice: Choice) -> None:
        """Report ``choice`` as this call's (``best_config``), for a call a serving mode launched itself."""
        self._last = choice

    def publish(self, key: tuple[Any, ...], choice: Choice, launchers: Mapping[Any, Any] | None = None) -> None:
        """Make ``choice`` ``key``'s for every later call, with ``launchers`` (call shape -> (choice, launcher))
        already built for its dispatch table; under :attr:`lock`."""
        with self._lock:
            self._hot.update(launchers or {})
            self._choices[key] = choice
            self._remember(key, choice)

    def adopt_call_key(self, call_key: Callable[[Sequence[Any]], tuple[Any, ...]]) -> None:
        """Use ``call_key`` (generated for this kernel's argument kinds, the same values as
        :meth:`KeySpec.call_key`) for positional calls, where the generic one is still in use."""
        if self._call_key == self.key_spec.call_key:
            self._call_key = call_key

    def _remember(self, key: tuple[Any, ...], choice: Choice) -> None:
        public, shown = self.key_spec.public(key), self.tuned_config(choice.config)
        if isinstance(self.cache, LiveCache):
            dict.__setitem__(self.cache, public, shown)  # not a caller's choice: no _forget
        else:  # a subclass put its own mapping there (as FlagGems' LibTuner does)
            self.cache[public] = shown

    def _conflict(self, kwargs: Mapping[str, Any]) -> None:
        clash = sorted(self._tuned_names & kwargs.keys())
        if len(self._configs) > 1:  # Triton's check, made before any config is benchmarked
            raise ValueError(f"Conflicting meta-parameters: {', '.join(clash)}. Make sure that you don't re-define "
                             f"auto-tuned symbols. ({self.info.name}: the configs set {', '.join(clash)}; drop it "
                             "from the call, or from the configs)")  # fmt: skip
        raise TypeError(f"{self.info.name}: run() got multiple values for keyword argument {clash[0]!r} "
                        "(the call and the only config both set it)")  # fmt: skip

    def _refuse_during_capture(self, key: tuple[Any, ...]) -> None:
        if gpu_unavailable_reason() is not None:
            return
        import torch

        if torch.cuda.is_current_stream_capturing():
            raise CaptureMissError(
                f"{self.info.name}: no tuned config for key {self.key_spec.as_dict(key)} while a CUDA graph is "
                "being captured; tuning launches and synchronizes, which would break the capture. Call the kernel "
                "once with these arguments before capturing (warm up), or ship a pretuned file."
            )

    def launch(self, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any, warmup: Any) -> Any:
        opts = cfg.launch_options()
        if cfg.pre_hook is not None:
            cfg.pre_hook({**self.named_args(args, kwargs), **cfg.kwargs, **opts})
        return self.launcher().run(*args, grid=grid, warmup=warmup, **kwargs, **cfg.kwargs, **opts)

    def named_args(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        named = dict(zip(self.info.arg_names, args))
        named.update(kwargs)
        return named

    def launch_kwargs(self, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The caller's kwargs plus the values of the ``@triton.heuristics`` stacked under this decorator, as
        the kernel sees them when launched with ``cfg``."""
        if not self._heuristics:
            return dict(kwargs)
        full = apply_heuristics(self._heuristics, args, {**kwargs, **cfg.kwargs, **cfg.launch_options()})
        return {**kwargs, **{n: full[n] for layer in self._heuristics for n in layer.values}}

    @property
    def do_bench(self) -> Callable[..., Any] | None:
        """The user's ``do_bench(fn, quantiles=...)``, or None for tritune's own timer."""
        return self._do_bench

    @do_bench.setter
    def do_bench(self, value: Callable[..., Any] | None) -> None:
        self._do_bench = value

    def _bench(self, *args: Any, config: Any, **meta: Any) -> list[float]:
        """Triton's ``Autotuner._bench``, for subclasses that run their own loop: see
        :func:`tritune.decorator.timing.bench_config`."""
        from tritune.decorator.timing import bench_config

        if self.nargs is None:
            self.nargs = dict(zip(self.arg_names, args))
        return bench_config(self, args, config, meta)

    def compiles_in_process(self, configs: Sequence[Config]) -> bool:
        """True where ``configs`` must compile in this process, not in forked workers: stacked
        ``@triton.heuristics`` compute meta-parameters per config. (A ``Config.pre_hook`` that sets what the
        compile depends on, a host TensorDescriptor's block shape, is run on copies of the arguments before the
        workers compile: see :func:`tritune.engine.precompile.hooked_arguments`.)"""
        return bool(self._heuristics)

    def compile_plan(self, args: Sequence[Any], kwargs: Mapping[str, Any]
                     ) -> tuple[Any, Callable[[Config], Mapping[str, Any]] | None]:  # fmt: skip
        """What the worker processes compile for these arguments: the JIT and, with stacked
        ``@triton.heuristics``, each config's keyword arguments with the heuristics' values for it (computed
        here, as :meth:`launch_kwargs`), so that those kernels compile in parallel too (FlagGems' bmm, baddbmm,
        var_mean: 12 to 24 configs each compiled one after another before). Returns ``(jit, kwargs_for)``."""
        launcher = self.launcher()
        if not self._heuristics:
            return launcher, None
        return launcher.inner, lambda cfg: self.launch_kwargs(cfg, args, kwargs)

    def warmup(self, *args: Any, **kwargs: Any) -> list[Any]:
        """Compile every pruned config for these arguments without launching (Triton's ``Autotuner.warmup``)."""
        self.nargs = dict(zip(self.arg_names, args))
        try:
            legal, _ = self.legal_configs(args, kwargs)
            grid = kwargs.pop("grid", (1,))
            kwargs.pop("warmup", None)
            run = self.launcher().run
            return [run(*args, grid=grid, warmup=True, **kwargs, **c.kwargs, **c.launch_options()) for c in legal]
        finally:
            self.nargs = None

    # -- choosing -----------------------------------------------------------------------------------
    def prune_configs(self, kwargs: Mapping[str, Any], nargs: Mapping[str, Any] | None = None) -> list[Any]:
        """Triton's pruning: ``early_config_prune(configs, nargs, **kwargs)`` (new or reordered configs are
        honoured), then the ``perf_model``'s ``top_k``. Returns configs as the user's functions gave them."""
        named = dict(self.nargs if nargs is None and self.nargs is not None else nargs or {})
        pruned = triton_prune(self.info.name, self._given, self.early_config_prune, self.perf_model,
                              self.configs_top_k, named, kwargs)  # fmt: skip
        self._last_pruned = list(pruned)  # what a library's own loop will time next (simple.precompile_for_library_loop)
        return pruned

    def _call_space(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        """A derived or widened space for this call (once per set of argument names and integer sizes): derived
        from the kernel's source (:func:`~tritune.space.derive_space`), or the list and its neighbours
        (:func:`~tritune.space.widen`). Its configs become the candidates; the generated ones are checked against
        the first legal config's outputs before they may serve (``decorator.miss``)."""
        if self.space_source == "given":
            return
        from tritune.space import derive_space, widen

        passed = [*self.info.arg_names[: len(args)], *kwargs]
        named = {**dict(zip(self.info.arg_names, args)), **kwargs}
        sizes = {n: v for n, v in named.items() if isinstance(v, int) and not isinstance(v, bool)}
        ident = (tuple(passed), tuple(sorted(sizes.items())))
        if ident == self._space_ident:
            return
        if self.space_source == "derived":
            d = derive_space(self.fn, passed=passed, sizes=sizes)
            if d.space is None:
                raise ConfigError(f"{self.info.name}: configs=None asks for a space derived from the kernel, and "
                                  f"none could be: {d.reason}. Pass configs=[...].")  # fmt: skip
            self._set_configs(d.space)
            self.generated = {c: "derived from the kernel's source" for c in self._configs}
            self.space_report = {"source": "derived", "configs": len(self._configs), "how": d.explain()}
        else:
            w = widen(normalize(self._declared)[0], kernel=self.fn, sizes=sizes)
            given = {c: o for c, o in normalize(self._declared)[1].items()}
            self._set_configs(w.configs())
            for c, o in given.items():  # the library's own objects stay what callers see
                self._originals[c] = o
            self._given = [self._originals[c] for c in self._configs]
            self.generated = {g.config: str(g) for g in w.generated}
            self.space_report = {"source": "widened", "given": len(given), "generated": len(self.generated),
                                 "how": w.explain()}  # fmt: skip
        self._space_ident = ident

    def legal_configs(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Config], dict[Config, str]]:
        """Pruned candidates (in the pruner's order) that pass the static rules, and the reasons of the rejected."""
        self._call_space(args, kwargs)
        rejected: dict[Config, str] = {}
        legal: list[Config] = []
        declared = set(self._configs)
        for obj in self.prune_configs(kwargs, self.named_args(args, {})):
            cfg = from_triton(obj)
            self._originals.setdefault(cfg, obj)
            if cfg in rejected or cfg in legal:
                continue
            # A config the pruner made up is not in the declared space: only the space's own configs meet
            # its constraints by construction, so new ones get the static rules alone.
            rej = check_static(cfg, self.info, kwargs.keys(), self.space if cfg in declared else None)
            if rej is not None:
                rejected[cfg] = rej.reason
            else:
                legal.append(cfg)
        return legal, rejected

    def _choose(self, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Choice:
        user = self.cache.get(self.key_spec.public(key)) if hasattr(self.cache, "get") else None
        if user is not None:  # set by the caller: kernel.cache[key] = config
            return Choice(from_triton(user), "user", "set through kernel.cache")
        legal, rejected = self.legal_configs(args, kwargs)
        hit = self.tuner.lookup(self, key, args, kwargs, allowed=legal)
        if hit is not None and hit.source == "pretuned":
            reason = self._front_end_rejection(hit.config, args, kwargs)
            if reason is not None:  # listed but illegal for these arguments: the untuned path would skip it too
                self.warn_once("pretuned-ignored", f"{self.info.name}: the pretuned winner {hit.config.id} is ignored: "
                               f"{reason}", PretunedIgnoredWarning)  # fmt: skip
                hit = None
            elif (differs := self.tuner.pretuned_disagrees(self, hit.config, legal, args, kwargs, grid)) is not None:
                self.warn_once(f"pretuned-wrong-{hit.config.id}",
                               f"{self.info.name}: the pretuned winner {hit.config.id} for key "
                               f"{self.key_spec.as_dict(key)} computes other results than {legal[0].id} on this call "
                               f"({differs}); it is ignored and the key is tuned. Check who wrote the pretuned file, "
                               "or regenerate it with `tritune cache export`.", PretunedIgnoredWarning)  # fmt: skip
                hit = None
        if hit is not None:
            return hit
        if self.tuner.sensitivity is not None:
            return self.tuner.sensitive_pick(self, key, legal, args, kwargs, grid)
        why = gpu_unavailable_reason()
        if why is not None and getattr(self.tuner, "timer", None) is None:
            choice = self._untuned(key, legal, rejected, args, kwargs, why)
        else:
            choice = self.tuner.tune(self, key, legal, rejected, args, kwargs, grid)
        if len(legal) > 1:  # Triton resets the arguments once more after benchmarking, before the real launch
            cfg = choice.config
            self.pre_hook({**self.named_args(args, kwargs), **cfg.kwargs, **cfg.launch_options()}, reset_only=True)
        return choice

    def _untuned(self, key: tuple[Any, ...], legal: list[Config], rejected: dict[Config, str],
                 args: Sequence[Any], kwargs: Mapping[str, Any], why: str) -> Choice:  # fmt: skip
        from tritune.decorator.untuned import choose_untuned

        return choose_untuned(self, key, legal, rejected, args, kwargs, why)

    def _front_end_rejection(self, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
        from tritune.decorator.untuned import front_end_rejection

        return front_end_rejection(self, cfg, args, kwargs)

    def warn_once(self, what: str, message: str, category: type[Warning], stacklevel: int = 6) -> None:
        """Warn ``message`` once per kernel for ``what``; ``stacklevel`` points at the caller's launch."""
        if what not in self._warned:
            self._warned.add(what)
            warnings.warn(message, category, stacklevel=stacklevel)

    def forget(self, public_key: Any = None) -> None:
        """Choose again: for every key (None), or for the keys whose public form is ``public_key``; the dispatch
        tables are emptied, so no launcher built for a forgotten choice is used again."""
        self._hot.clear()
        self._hot_kw.clear()
        self._heur_hot.clear()
        if public_key is None:
            self._choices.clear()
        else:
            for k in [k for k in self._choices if self.key_spec.public(k) == public_key]:
                del self._choices[k]
