"""``@tritune.autotune``: a drop-in for ``@triton.autotune`` that screens before it launches.

The object it returns IS a ``triton.runtime.Autotuner`` (a subclass that does not run Triton's constructor):
``run(*args, grid=, warmup=, **kwargs)`` returns what the JIT's ``run`` returns, ``cache`` is live (and may be
replaced by any mapping), ``configs`` can be assigned, ``best_config`` is the config object the caller gave, hooks,
pruning and ``reset_to_zero`` keep Triton's meaning, and it stacks with ``@triton.heuristics`` either way round.

The first call for new key values picks a config, in the order of Triton's ``Autotuner.run``: a kernel with one
config runs it (no key, no cache, no pruning); an entry of ``kernel.cache`` is used as it is; the pruned configs
(``prune_configs_by``, called with the call's keyword arguments, ``grid`` and ``warmup``) are tuned unless one is
left; a winner in tritune's store, a pretuned file or Triton's ``*.autotune.json`` (``cache_results``) is used
without timing. Tuning is tritune's engine, or Triton's own loop over ``_bench`` where the kernel benchmarks itself
(a ``do_bench`` given, a replaced ``_bench``). ``TRITON_PRINT_AUTOTUNING`` prints Triton's lines and
``knobs.autotuning.listener`` hears each new key, as under Triton. Later calls with the same key reuse the choice.

On a GPU the pick is timed. With no GPU driver (``TRITON_INTERPRET=1``) nothing can be timed by tritune: the first
legal config runs, labelled *untuned*, with one plain warning per kernel, or
:class:`~tritune.errors.TimingUnavailableError` when ``on_no_gpu="error"`` (or ``TRITUNE_ON_NO_GPU=error``); a
``do_bench`` given is still called, as Triton calls it. Illegal candidates are never launched.
"""

from __future__ import annotations

import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from operator import itemgetter
from typing import Any, Protocol

from triton import knobs

from tritune.adapters.autotune_file import AutotuneFile, autotune_file
from tritune.adapters.interpreter import as_interpreted
from tritune.adapters.kernel import KernelInfo, as_jit, unwrap_jit
from tritune.adapters.triton_key import install_triton_key_memo
from tritune.config import Config
from tritune.decorator.choice import Choice, PretunedIgnoredWarning, UntunedWarning, resolve_on_no_gpu
from tritune.decorator.dispatch import make_fast, make_fast_const, make_fast_hooked, make_fast_kw
from tritune.decorator.keys import KeySpec
from tritune.decorator.miss import KeyTuner, space_summary
from tritune.decorator.observed import (
    bench_each,
    fastest,
    notify_listener,
    print_summary,
    print_trying,
    printing,
)
from tritune.decorator.timing import bench_config, untimed_neighbours
from tritune.decorator.triton_surface import (
    DEFAULT_TRITON_CONFIG,
    ORIGINAL_AUTOTUNER,
    HeuristicsLauncher,
    LiveCache,
    TunedConfig,
    apply_heuristics,
    default_hooks,
    from_triton,
    heuristic_layers,
    normalize,
    triton_fields,
    triton_prune,
)
from tritune.device import gpu_unavailable_reason
from tritune.errors import CaptureMissError, ConfigError
from tritune.space import Space, check_static

_MISS = object()
#: ``widen=DERIVED`` (``$TRITUNE_WIDEN=derived``): a list widened to the space derived from its kernel's source
#: (:func:`tritune.space.derive_space`), not by steps.
DERIVED = "derived"
#: ``widen="derived"`` in a library's own loop (FlagGems' ``LibTuner``), which times every config it is given:
#: the most configs the derived space may add there (a larger one: the list widened one step instead).
OWN_LOOP_DERIVED_MAX = 256

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
        widen: bool | int | str = False,
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
        self._cache: Any = LiveCache(self)
        self._foreign = False  # kernel.cache replaced by a mapping of the caller's: read on every call
        #: Where the candidates come from: "given" (the list), "derived" (configs=None: from the kernel's source,
        #: per call's sizes) or "widened" (the list and its neighbours, or with ``widen="derived"`` the list and the
        #: space derived from the kernel's source): see :meth:`_call_space`.
        self.space_source = "derived" if configs is None else "widened" if widen else "given"
        #: ``widen="derived"``: the list is widened to the kernel's derived space (one step where none can be).
        self.widen_derived = widen == DERIVED
        #: How many steps from a given config a widened list reaches (:func:`~tritune.space.widen`'s ``radius``).
        self.widen_radius = 1 if self.widen_derived else int(widen)
        self._declared = [] if configs is None else configs
        #: Generated candidates of the last call's space (not in the list anyone wrote): config -> where it came from.
        self.generated: dict[Config, str] = {}
        #: a widened list's generated configs -> the configs one step nearer the list that they neighbour
        self.generated_origins: dict[Config, tuple[Config, ...]] = {}
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
        # As Triton: the three entries it knows are read, any other is left alone (torch.compile's re-wrap of a
        # kernel passes ``configs_top_k``, which Triton ignores too).
        self.prune_configs_by = dict(prune_configs_by or {})
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
        # Triton's ``*.autotune.json`` files, as Triton decides at construction (never under the interpreter);
        # tritune's store is used either way unless store=False.
        self.cache_results = bool((cache_results or knobs.autotuning.cache) and not knobs.runtime.interpret)
        self.nargs: dict[str, Any] | None = None
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
        self._on_gpu = gpu_unavailable_reason() is None
        self._fast_ok = self._heur_fast = False
        self._update_dispatch()
        self.__name__ = name
        REACHED.add(self)
        self.__doc__ = getattr(fn, "__doc__", None)
        # tune while serving (incremental=True, or TRITUNE_INCREMENTAL=1): chosen by the caller at decoration
        self._incremental = serving

    def _update_dispatch(self) -> None:
        """Which hot path cached calls take: generated launchers on a GPU, unless ``kernel.cache`` is a caller's
        mapping, which Triton reads on every call (so then does this kernel)."""
        self._fast_ok = self._on_gpu and not self._heuristics and not self._foreign
        self._heur_fast = self._on_gpu and bool(self._heuristics) and not self._foreign

    # -- Triton-compatible surface ---------------------------------------------------------------------
    def _set_configs(self, configs: Sequence[Any] | Space) -> None:
        """Keep ``configs`` as given (a tritune Config is shown as a TunedConfig, a ``triton.Config`` that compares
        equal to it; an empty list becomes Triton's default config); tritune's own form of them is made at the
        first miss (:meth:`_normalized`), not at decoration."""
        self._space_given = configs if isinstance(configs, Space) else None
        listed = configs.all_configs() if isinstance(configs, Space) else configs
        given = [TunedConfig(c) if isinstance(c, Config) else c for c in listed]
        self._given = given or [DEFAULT_TRITON_CONFIG.to_triton()]
        self._only = self._given[0] if len(self._given) == 1 else None  # Triton launches it, untuned
        self._tuned_names = frozenset(n for c in self._given for n in c.kwargs)
        self._norm: tuple[list[Config], dict[Config, Any], Space] | None = None
        self._tconf: dict[Config, TunedConfig] = {}

    def _normalized(self) -> tuple[list[Config], dict[Config, Any], Space]:
        """(tritune Configs in order, each one's object as the caller gave it, the space they span)."""
        norm = self._norm
        if norm is None:
            if self._space_given is not None:
                cfgs = list(self._space_given.all_configs())
                norm = (cfgs, dict(zip(cfgs, self._given)), self._space_given)
            else:
                cfgs, originals = normalize(self._given)
                norm = (cfgs, originals, Space.from_configs(cfgs))
            self._norm = norm
        return norm

    @property
    def configs(self) -> list[Any]:
        """The candidate configs as given (``triton.Config`` or tritune ``Config``); assignable, as in Triton (the
        entries of ``cache`` stay, as in Triton)."""
        return self._given

    @configs.setter
    def configs(self, value: Sequence[Any] | Space) -> None:
        with self._lock:
            self._set_configs(value)
            self.forget()

    @property
    def candidates(self) -> list[Config]:
        """The candidate configs as tritune Configs (launch options inside kwargs moved out, as Triton reads them)."""
        return list(self._normalized()[0])

    @property
    def space(self) -> Space:
        """The candidates as a :class:`~tritune.space.Space` (the one given, or the one the list spans)."""
        return self._normalized()[2]

    def tuned_config(self, cfg: Config) -> TunedConfig:
        """The ``triton.Config`` shown for ``cfg`` (the original object's pre_hook, tritune's ``.id``)."""
        tc = self._tconf.get(cfg)
        if tc is None:
            tc = self._tconf[cfg] = TunedConfig(cfg, self._normalized()[1].get(cfg))
        return tc

    def _original_of(self, cfg: Config) -> Any:
        """The object the caller gave for ``cfg`` (in ``configs``, or from a pruner), else a TunedConfig for it."""
        obj = self._normalized()[1].get(cfg)
        return obj if obj is not None else self.tuned_config(cfg)

    def _shown(self, choice: Choice) -> Any:
        """The config object a choice hands out (``best_config``, ``cache`` values, timings, the listener)."""
        return choice.original if choice.original is not None else self._original_of(choice.config)

    @property
    def best_config(self) -> Any:
        """The config of the most recent call: the very object given in ``configs`` (or returned by the pruner, or
        put in ``cache``), as under Triton; None before any call."""
        last = self._last
        if last is None:
            return self._best_set
        return last.original if last.original is not None else self._original_of(last.config)

    @best_config.setter
    def best_config(self, value: Any) -> None:  # a subclass that runs its own loop (as FlagGems' LibTuner) sets it
        self._last, self._best_set = None, value

    @property
    def cache(self) -> Any:
        """Triton's key tuple -> config object. Setting, deleting or popping an entry makes the next call for that
        key use it (or choose again); the whole attribute may be replaced by any mapping (a dict, a library's
        own store), which is then read on every call as Triton reads it, and written when a key is chosen."""
        return self._cache

    @cache.setter
    def cache(self, value: Any) -> None:
        with self._lock:
            self._cache = value
            self._foreign = not (isinstance(value, LiveCache) and value.owned_by(self))
            self.forget()
            self._update_dispatch()

    def choices(self) -> dict[tuple[Any, ...], Choice]:
        """Key tuple -> :class:`Choice` (config and how it was chosen, e.g. ``untuned``); with ``incremental``,
        keys still tuning show their ``provisional`` config and their state in ``stats``."""
        tuning = self._incremental.tuning(self) if self._incremental is not None else {}
        return {**tuning, **{self.key_spec.public(k): c for k, c in self.tuned_keys().items()}}

    def _library_loop_choices(self) -> dict[tuple[Any, ...], Choice]:
        """The keys a subclass's own loop over ``_bench`` decided (FlagGems' ``LibTuner``), as ``library`` choices:
        the config the loop left in ``cache``, with the output check's report (the numerics class under
        ``numerics="exact"``), the generated configs kept from winning (``generated_refused``: tied with the
        written best, or slower than it with the L2 warm) and those not timed (``generated_untimed``: no config one
        step nearer the list was near the best) in ``stats``; in a pinned or sensitivity run, the choice
        the loop was steered to (the table's ``pretuned``, the stated rule's ``pinned``, or the draw's
        ``sensitivity``)."""
        loop = self.__dict__.get("_library_loop_keys")
        if not loop:
            return {}
        checks = self.__dict__.get("_library_loop_checks") or {}
        pins = self.__dict__.get("_library_loop_pins") or {}
        generated_refused = self.__dict__.get("_library_loop_refused") or {}
        out = {}
        for key in list(loop):
            if key in self._choices:
                continue
            entry = self._cache_entry(self.key_spec.public(key))
            if entry is None:
                continue
            pin = pins.get(key)
            if pin is not None and pin.config == from_triton(entry):  # pinned or sensitivity: the pick steered to
                out[key] = Choice(pin.config, pin.source, pin.detail, original=entry)
                continue
            check = checks.get(key)
            stats = None if check is None else {("numerics" if check.exact else "checked"): check.summary()}
            refused = generated_refused.get(key)
            if refused:  # generated configs tied with the written best, or faster only with the L2 flushed
                stats = {**(stats or {}), "generated_refused": dict(refused)}
            looks = (self.__dict__.get("_library_loop_looks") or {}).get(key)
            if self.space_report is not None and looks:  # what the loop's widened or derived space bought
                timings = {c: m.triton_quantiles() for c, m in looks.items()}
                space = space_summary(self.space_report, loop[key] or list(looks), self.generated, timings,
                                      from_triton(entry))  # fmt: skip
                stats = {**(stats or {}), "space": space}
            untimed = untimed_neighbours(self, key)
            if untimed:  # a widened list's neighbours of configs far from the best: neither compiled nor timed
                stats = {**(stats or {}), "generated_untimed": untimed}
            out[key] = Choice(from_triton(entry), "library", "the library's own loop over _bench, each config "
                                 "timed by tritune", stats=stats, original=entry)  # fmt: skip
        return out

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
        choice = self._foreign_choice(key) if self._foreign else self._choices.get(key)
        if choice is None and self._incremental is not None and not warmup and self._only is None:
            out = self._incremental.run(self, key, args, kwargs, grid, ck)  # tune while serving: tritune.serving
            if out is not SERVING_MISS:
                return out
            choice = self._choices.get(key)
        if choice is None:
            with self._lock:
                choice = self._foreign_choice(key) if self._foreign else self._choices.get(key)
                if choice is None:
                    choice = self._choices[key] = self._decide(key, args, kwargs, grid, warmup)
                    if choice.source != "only":  # Triton never puts a lone config in the cache
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
        """Every key with a choice, and its choice (a copy); a library's own loop's keys included."""
        return {**self._library_loop_choices(), **self._choices}

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
        """Put ``key``'s choice in ``cache`` as Triton does: Triton's key -> the config object."""
        public, shown = self.key_spec.public(key), self._shown(choice)
        if self._foreign:  # a mapping of the caller's (a dict, FlagGems' sqlite table): written as Triton writes it
            self._cache[public] = shown
        else:
            dict.__setitem__(self._cache, public, shown)  # not a caller's choice: no _forget

    def _cache_entry(self, public: tuple[Any, ...]) -> Any:
        """``cache[public]`` if the key is there (any mapping: ``in`` and ``[]``, as Triton reads it), else None."""
        cache = self._cache
        return cache[public] if public in cache else None

    def _foreign_choice(self, key: tuple[Any, ...]) -> Choice | None:
        """With ``cache`` replaced by a caller's mapping, ``key``'s choice as Triton makes it on every call: the
        mapping's entry itself (a new entry, a new choice), None where it has none."""
        if self._only is not None:  # a lone config never reads the cache
            return self._choices.get(key)
        entry = self._cache_entry(self.key_spec.public(key))
        if entry is None:
            return None
        choice = self._choices.get(key)
        if choice is None or choice.original is not entry:
            choice = self._choices[key] = Choice(from_triton(entry), "user", "kernel.cache entry", original=entry)
        return choice

    def _conflict(self, kwargs: Mapping[str, Any]) -> None:
        clash = sorted(self._tuned_names & kwargs.keys())
        if self._only is None:  # Triton's check, made before any config is benchmarked
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
    def do_bench(self) -> Callable[..., Any]:
        """The benchmark function, as Triton's ``Autotuner.do_bench``: the ``do_bench`` given (or set), else the
        active driver's benchmarker (with no active driver, ``triton.testing.do_bench``, what NVIDIA's driver
        gives). Configs are timed by tritune's own timer unless one was given."""
        if self._do_bench is not None:
            return self._do_bench
        from triton.runtime.driver import driver

        try:
            return driver.active.get_benchmarker()
        except RuntimeError:  # "0 active drivers": no GPU here
            import triton.testing

            return triton.testing.do_bench

    @do_bench.setter
    def do_bench(self, value: Callable[..., Any] | None) -> None:
        self._do_bench = value

    @property
    def user_do_bench(self) -> Callable[..., Any] | None:
        """The ``do_bench`` given or set, None where tritune's timer times the configs."""
        return self._do_bench

    def _bench(self, *args: Any, config: Any, **meta: Any) -> Any:
        """Triton's ``Autotuner._bench``: ``config``'s timing for these arguments, Triton's line printed first when
        it prints (:func:`tritune.decorator.timing.bench_config`). Triton's loop calls it once per pruned config
        where the kernel benchmarks itself; a subclass with its own loop (FlagGems' ``LibTuner``) calls it too."""
        if printing():
            print_trying(self.base_fn.__name__, config)
        if self.nargs is None:
            self.nargs = dict(zip(self.arg_names, args))
        return bench_config(self, args, config, meta)

    def _benches_itself(self) -> bool:
        """Whether this kernel's configs are timed by Triton's loop over ``_bench``: a ``do_bench`` was given, or
        ``_bench`` was replaced (on the class or the instance: a tool wrapping ``Autotuner._bench``) and there is a
        GPU to time on (without one, tritune's ``_bench`` could time nothing for it)."""
        if self._do_bench is not None:
            return True
        return self._on_gpu and (type(self)._bench is not Autotuned._bench or "_bench" in self.__dict__)

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
            grid = kwargs.pop("grid", (1,))
            kwargs.pop("warmup", None)
            legal, _ = self.legal_configs(args, kwargs, grid=grid, warmup=True)
            run = self.launcher().run
            return [run(*args, grid=grid, warmup=True, **kwargs, **c.kwargs, **c.launch_options()) for c in legal]
        finally:
            self.nargs = None

    # -- choosing -----------------------------------------------------------------------------------
    def prune_configs(self, kwargs: Mapping[str, Any], nargs: Mapping[str, Any] | None = None) -> list[Any]:
        """Triton's pruning: ``early_config_prune(configs, nargs, **kwargs)`` (new or reordered configs are
        honoured), then the ``perf_model``'s ``top_k``. ``kwargs`` are a call's, with ``grid`` and ``warmup`` as
        Triton passes them; ``nargs`` its positional arguments by name (default: ``self.nargs``). Returns configs
        as the user's functions gave them."""
        named = dict(self.nargs if nargs is None and self.nargs is not None else nargs or {})
        if self.space_source != "given" and nargs is None and named:  # a library's own loop: this call's space
            names = list(self.info.arg_names)
            n = next((i for i, a in enumerate(names) if a not in named), len(names))
            extra = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup") and k in names}
            self._call_space([named[a] for a in names[:n]], extra, own_loop=True)
        pruned = triton_prune(self.info.name, self._given, self.early_config_prune, self.perf_model,
                              self.configs_top_k, named, kwargs)  # fmt: skip
        self._last_pruned = list(pruned)  # what a library's own loop will time next (simple.precompile_for_library_loop)
        return pruned

    def _call_space(self, args: Sequence[Any], kwargs: Mapping[str, Any], *, own_loop: bool = False) -> None:
        """A derived or widened space for this call (once per set of argument names and integer sizes): derived
        from the kernel's source (:func:`~tritune.space.derive_space`), or the list and its neighbours
        (:func:`~tritune.space.widen`), or with ``widen="derived"`` the list and the derived space (in a library's
        own loop, which times every config, only up to :data:`OWN_LOOP_DERIVED_MAX` of them; where there is no
        derived space or a larger one, the list widened one step, and the report says why). Its configs become the
        candidates; the generated ones are checked against a written config's outputs before they may serve
        (``decorator.miss``)."""
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
            derived = self.candidates
            self.generated = {c: "derived from the kernel's source" for c in derived}
            self.generated_origins = {}
            self.space_report = {"source": "derived", "configs": len(derived), "how": d.explain()}
        else:
            declared, given = normalize(self._declared)
            around = self._derived_around(declared, passed, sizes, own_loop) if self.widen_derived else None
            if isinstance(around, tuple):
                extra, how = around
                self._set_configs([given.get(c, c) for c in declared] + extra)
                self.generated = {c: "derived from the kernel's source" for c in extra}
                self.generated_origins = {}
                self.space_report = {"source": "derived around the list", "given": len(given),
                                     "generated": len(extra), "stages_kept": None, "how": how}  # fmt: skip
            else:
                w = widen(declared, kernel=self.fn, sizes=sizes, radius=self.widen_radius)
                self._set_configs([given.get(c, c) for c in w.configs()])  # the library's objects stay what callers see
                self.generated = {g.config: str(g) for g in w.generated}
                self.generated_origins = {g.config: g.origins for g in w.generated}
                self.space_report = {"source": "widened", "given": len(given), "generated": len(self.generated),
                                     "stages_kept": w.stages_kept, "how": w.explain()}  # fmt: skip
                if around is not None:
                    self.space_report["not_derived"] = around
        self._space_ident = ident

    def _derived_around(self, declared: Sequence[Config], passed: Sequence[str], sizes: Mapping[str, int],
                        own_loop: bool) -> tuple[list[Config], str] | str:  # fmt: skip
        """``widen="derived"``: the configs of the kernel's derived space that the list lacks and how the space was
        derived, or why there are none to add (the list is then widened one step)."""
        from tritune.space import derive_space

        hooks = {id(c.pre_hook): c.pre_hook for c in declared}
        if len(hooks) > 1:  # a derived config could not tell which hook sets what its launch depends on
            return "the list's configs carry different pre_hooks; widened one step instead"
        d = derive_space(self.fn, passed=list(passed), sizes=dict(sizes))
        if d.space is None:
            return f"{d.reason}; widened one step instead"
        listed = set(declared)
        (hook,) = hooks.values() if hooks else (None,)
        # the list's pre_hook (a host descriptor's block shape set from the config, as Liger's SwiGLU and Triton's
        # tutorial 06 do) runs for the derived configs too, as for the list's own and their widened neighbours
        extra = [c if hook is None else c.replace(pre_hook=hook) for c in d.space.configs() if c not in listed]
        if own_loop and len(extra) > OWN_LOOP_DERIVED_MAX:
            return (f"the derived space adds {len(extra)} configs and the library's own loop times every config "
                    f"(at most {OWN_LOOP_DERIVED_MAX} there); widened one step instead")  # fmt: skip
        return extra, d.explain()

    def legal_configs(self, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any = None,
                      warmup: Any = False) -> tuple[list[Config], dict[Config, str]]:  # fmt: skip
        """Pruned candidates (in the pruner's order) that pass the static rules, and the reasons of the rejected."""
        self._call_space(args, kwargs)
        pruned = self.prune_configs({"grid": grid, "warmup": warmup, **kwargs}, self.named_args(args, {}))
        return self._screen(pruned, kwargs)

    def _screen(self, pruned: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Config], dict[Config, str]]:
        """The pruned configs (objects as the pruner gave them) that pass the static rules, as tritune Configs in
        order, and the reasons of the rejected. A config the pruner made up is remembered as its own original."""
        rejected: dict[Config, str] = {}
        legal: list[Config] = []
        declared, originals, space = self._normalized()
        declared_set = set(declared)
        for obj in pruned:
            cfg = from_triton(obj)
            originals.setdefault(cfg, obj)
            if cfg in rejected or cfg in legal:
                continue
            # A config the pruner made up is not in the declared space: only the space's own configs meet
            # its constraints by construction, so new ones get the static rules alone.
            rej = check_static(cfg, self.info, kwargs.keys(), space if cfg in declared_set else None)
            if rej is not None:
                rejected[cfg] = rej.reason
            else:
                legal.append(cfg)
        return legal, rejected

    def _decide(self, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any,
                warmup: Any) -> Choice:  # fmt: skip
        """The choice for a key new to this kernel, made in the order of Triton's ``Autotuner.run`` (module
        docstring), with ``original`` set: the object ``best_config`` and ``cache`` hand out."""
        install_triton_key_memo()  # a key new to this process: its compiles or lookups need Triton's key
        self._call_space(args, kwargs)  # configs=None or widen: this call's space first
        if self._only is not None:
            return Choice(from_triton(self._only), "only", "the kernel's only config", original=self._only)
        entry = self._cache_entry(self.key_spec.public(key))
        if entry is not None:
            return Choice(from_triton(entry), "user", "kernel.cache entry", original=entry)
        self._refuse_during_capture(key)
        self.nargs = dict(zip(self.arg_names, args))
        try:
            choice = self._tune_new_key(key, args, kwargs, grid, warmup)
        finally:
            self.nargs = None
        return choice if choice.original is not None else replace(choice, original=self._original_of(choice.config))

    def _tune_new_key(self, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any,
                      warmup: Any) -> Choice:  # fmt: skip
        """Triton's branch for a key not in ``cache``: prune (one config left is used untimed); a winner tritune
        or Triton cached is used as it is; else the pruned configs are tuned (``bench_time``, ``configs_timings``,
        Triton's file written). Triton's lines are printed and its listener told, as Triton does."""
        meta = {"grid": grid, "warmup": warmup, **kwargs}
        pruned = self.prune_configs(meta)
        if len(pruned) == 1:
            return Choice(from_triton(pruned[0]), "pruned", "the only config prune_configs_by left", original=pruned[0])
        public = self.key_spec.public(key)
        legal, rejected = self._screen(pruned, kwargs)
        file = autotune_file(unwrap_jit(self.fn), public, pruned) if self.cache_results else None
        hit: Choice | None = self._cached(key, args, kwargs, grid, legal)
        timings: dict[Any, Any] = {}
        if hit is None and file is not None:
            hit, timings = self._from_file(file)
        if hit is not None:
            if hit.source != "autotune-file":  # Triton resets once more after benchmarking, and not after a file
                self._reset_after(hit, args, kwargs)
            notify_listener(self, public, self._shown(hit), timings, None, True)
            return hit
        started = time.perf_counter()
        choice, timings = self._benchmark(key, args, kwargs, grid, meta, pruned, legal, rejected)
        self.bench_time = time.perf_counter() - started  # as Triton's: the last tuning's seconds
        self.configs_timings = timings  # as Triton's: config object -> timing of the last tuning
        self._reset_after(choice, args, kwargs)
        self._save(file, public, timings)
        best = self._shown(choice)
        if printing():
            print_summary(self.base_fn.__name__, public, self.bench_time, best, choice)
        notify_listener(self, public, best, timings, self.bench_time, False)
        return choice

    def _cached(self, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any,
                legal: list[Config]) -> Choice | None:  # fmt: skip
        """A winner tritune has for ``key`` (a pretuned file, the store) among ``legal``, else None."""
        hit = self.tuner.lookup(self, key, args, kwargs, allowed=legal)
        if hit is not None and hit.source == "pretuned":
            reason = self._front_end_rejection(hit.config, args, kwargs)
            if reason is not None:  # listed but illegal for these arguments: the untuned path would skip it too
                self.warn_once("pretuned-ignored", f"{self.info.name}: the pretuned winner {hit.config.id} is ignored: "
                               f"{reason}", PretunedIgnoredWarning)  # fmt: skip
                return None
            if self.tuner.pretuned_disagrees(self, key, hit.config, legal, args, kwargs, grid, "the key is tuned"):
                return None
        return hit

    def _from_file(self, file: AutotuneFile) -> tuple[Choice | None, dict[Any, Any]]:
        """The winner in Triton's ``*.autotune.json`` for this key, as Triton reads it (a new config object, the
        file's timings as ``configs_timings``), or None without a file."""
        loaded = file.load()
        if loaded is None:
            return None, {}
        best = fastest(loaded)
        self.configs_timings = loaded
        return Choice(from_triton(best), "autotune-file", "Triton's *.autotune.json", original=best), loaded

    def _save(self, file: AutotuneFile | None, public: tuple[Any, ...], timings: Mapping[Any, Any]) -> None:
        """Write Triton's ``*.autotune.json`` for a key just tuned, as Triton writes it (configs with a pre_hook
        left out); nothing where no file applies or nothing was timed."""
        if file is not None and timings:
            file.save(public, [(triton_fields(c), t) for c, t in timings.items() if not getattr(c, "pre_hook", None)])

    def _benchmark(self, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any,
                   meta: Mapping[str, Any], pruned: Sequence[Any], legal: list[Config],
                   rejected: dict[Config, str]) -> tuple[Choice, dict[Any, Any]]:  # fmt: skip
        """Tune the pruned configs: Triton's loop over ``_bench`` where the kernel benchmarks itself, else tritune's
        engine (with no GPU: the first legal config, untuned; in sensitivity mode: a drawn config). Returns the choice and Triton's ``configs_timings``
        (config object -> timing, in pruned order; a config tritune did not time gets ``inf``)."""
        if self.tuner.sensitivity is not None:  # sensitivity mode: a config drawn from its seed, nothing timed
            return self.tuner.sensitive_pick(self, key, legal, args, kwargs, grid), {}
        if self._benches_itself():
            timings = bench_each(self, args, pruned, meta)
            best = fastest(timings)
            how = "the kernel's do_bench" if self._do_bench is not None else "the kernel's _bench"
            return Choice(from_triton(best), "benched", f"{how}, once per config", original=best), timings
        if printing():
            for obj in pruned:
                print_trying(self.base_fn.__name__, obj)
        why = gpu_unavailable_reason()
        if why is not None and getattr(self.tuner, "timer", None) is None:
            return self._untuned(key, legal, rejected, args, kwargs, why), {}
        choice = self.tuner.tune(self, key, legal, rejected, args, kwargs, grid)
        measured = choice.timings or {}
        inf = [float("inf")] * 3
        return choice, ({obj: measured.get(from_triton(obj), inf) for obj in pruned} if measured else {})

    def _reset_after(self, choice: Choice, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        """Triton's ``pre_hook(..., reset_only=True)`` after tuning, before the real launch: ``reset_to_zero``
        arguments are zeroed once more."""
        cfg = choice.config
        self.pre_hook({**self.named_args(args, kwargs), **cfg.kwargs, **cfg.launch_options()}, reset_only=True)

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
