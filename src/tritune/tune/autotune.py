"""``@tritune.autotune``: a drop-in for ``@triton.autotune`` that screens before it launches.

The first call for new key values picks a config; later calls with the same key reuse it. On a GPU
the pick is timed. With no GPU driver (``TRITON_INTERPRET=1``) nothing can be timed: the first legal
config runs, labelled *untuned*, with one plain warning per kernel, or
:class:`~tritune.errors.TimingUnavailableError` when ``on_no_gpu="error"`` (or
``TRITUNE_ON_NO_GPU=error``). Illegal candidates are never launched.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tritune.config import Config, as_config
from tritune.device import gpu_unavailable_reason
from tritune.errors import (
    CaptureMissError,
    ConfigError,
    KernelSpecError,
    NoLegalConfigError,
    TimingUnavailableError,
)
from tritune.kernel import KernelInfo, as_interpreted, as_jit, unwrap_jit
from tritune.space import Space, check_static
from tritune.space.legality import format_rejections
from tritune.tune.dispatch import make_fast
from tritune.tune.keys import KeySpec

ON_NO_GPU = ("warn", "error")


class UntunedWarning(UserWarning):
    """A kernel ran a config that was not timed, because no GPU can time it here."""


@dataclass(frozen=True)
class Choice:
    """The config a key dispatches to, and how it was chosen: ``timed``, ``store``, ``pretuned``, ``untuned``
    (no GPU, nothing measured) or ``replayed`` (recorded timings replayed by a test timer, not a measurement)."""

    config: Config
    source: str
    detail: str = ""
    #: How the choice was made, when it was timed: seconds spent per phase (precompile, load, race) and
    #: the race's summary (stop, rounds, measurements, device seconds). Not part of equality.
    stats: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def tuned(self) -> bool:
        return self.source in ("timed", "store", "pretuned")


def _resolve_on_no_gpu(value: str | None) -> str:
    v = (value or os.environ.get("TRITUNE_ON_NO_GPU") or "warn").lower()
    if v not in ON_NO_GPU:
        raise ConfigError(f"on_no_gpu={v!r}: expected one of {', '.join(ON_NO_GPU)} (or TRITUNE_ON_NO_GPU)")
    return v


class Autotuned:
    """A tuned kernel: launch it as ``kernel[grid](*args)``; inspect ``best_config``, ``configs``, ``cache``."""

    def __init__(
        self,
        fn: Any,
        configs: Sequence[Any] | Space,
        key: Any,
        *,
        prune_configs_by: Mapping[str, Any] | None = None,
        reset_to_zero: Iterable[str] | None = None,
        restore_value: Iterable[str] | None = None,
        pre_hook: Callable[..., Any] | None = None,
        post_hook: Callable[..., Any] | None = None,
        do_bench: Callable[..., Any] | None = None,
        on_no_gpu: str | None = None,
        tuner: Any = None,
    ) -> None:
        self.fn = fn
        self.info = KernelInfo.of(fn)
        self.space = configs if isinstance(configs, Space) else Space.from_configs(configs)
        self.configs: list[Config] = list(self.space.all_configs())
        name = self.info.name
        self.key_spec = KeySpec.build(name, self.info.arg_names, dict(self.info.defaults), key)
        self.keys = list(self.key_spec.names)
        for what, names in (("reset_to_zero", reset_to_zero), ("restore_value", restore_value)):
            bad = [n for n in (names or ()) if n not in self.info.arg_names]
            if bad:
                raise ConfigError(f"{name}: {what} names {bad} are not parameters of the kernel")
        self.reset_to_zero = list(reset_to_zero or ())
        self.restore_value = list(restore_value or ())
        self.prune_configs_by = dict(prune_configs_by or {})
        unknown_prune = set(self.prune_configs_by) - {"perf_model", "top_k", "early_config_prune"}
        if unknown_prune:
            raise ConfigError(f"{name}: prune_configs_by has unknown entries {sorted(unknown_prune)}")
        self.pre_hook = pre_hook
        self.post_hook = post_hook
        self.do_bench = do_bench
        self.on_no_gpu = _resolve_on_no_gpu(on_no_gpu)
        if tuner is None:
            from tritune.tune.tuner import Tuner

            tuner = Tuner(store=False)
        self.tuner = tuner
        self._cache: dict[tuple[Any, ...], Choice] = {}
        self._lock = threading.Lock()
        self._warned = False
        self._last: Choice | None = None
        self._runner: Any = None
        #: call key (key values, dtypes and the specialization facts of every argument) -> (Choice, FastLauncher)
        self._hot: dict[tuple[Any, ...], tuple[Choice, Any | None]] = {}
        self._call_key: Callable[[Sequence[Any]], tuple[Any, ...]] = self.key_spec.call_key
        self._fast_ok = not self.reset_to_zero and gpu_unavailable_reason() is None
        self.__name__ = name
        self.__doc__ = getattr(fn, "__doc__", None)

    # -- Triton-compatible surface ---------------------------------------------------------------------
    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    @property
    def best_config(self) -> Config | None:
        """The config of the most recent call (as ``triton.autotune``'s attribute); None before any call."""
        return self._last.config if self._last else None

    @property
    def cache(self) -> dict[tuple[Any, ...], Config]:
        """Key tuple -> chosen config, like ``triton.autotune``'s ``cache``."""
        return {self.key_spec.public(k): c.config for k, c in self._cache.items()}

    def choices(self) -> dict[tuple[Any, ...], Choice]:
        """Key tuple -> :class:`Choice` (config and how it was chosen, e.g. ``untuned``)."""
        return {self.key_spec.public(k): c for k, c in self._cache.items()}

    @property
    def arg_names(self) -> list[str]:
        return list(self.info.arg_names)

    def _launcher(self) -> Any:
        if self._runner is None:
            self._runner = as_interpreted(self.fn) if gpu_unavailable_reason() else as_jit(self.fn)
        return self._runner

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        fast = self._fast_ok and not kwargs
        if fast:
            # Hot path: one generated expression gives the key and the binary's specialization.
            ck = self._call_key(args)
            hot = self._hot.get(ck)
            if hot is not None:
                self._last = hot[0]
                if hot[1] is not None:
                    return hot[1](args, grid)
                return self._launch(hot[0].config, args, kwargs, grid)  # a config that needs Triton's path
        key = self.key_spec.of(args, kwargs)
        choice = self._cache.get(key)
        if choice is None:
            with self._lock:
                choice = self._cache.get(key)
                if choice is None:
                    self._refuse_during_capture(key)
                    choice = self._choose(key, args, kwargs, grid)
                    self._cache[key] = choice
        self._last = choice
        if fast:
            if self._call_key == self.key_spec.call_key:  # the first call shows the argument kinds
                self._call_key = self.key_spec.compiled_call_key(args)
            fl = make_fast(self._launcher(), choice.config, args, dict(self.info.defaults))
            self._hot[ck] = (choice, fl.launch if fl is not None else None)
            if fl is not None:
                return fl.launch(args, grid)
        return self._launch(choice.config, args, kwargs, grid)

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

    def _launch(self, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Any:
        if self.reset_to_zero:
            named = self._named(args, kwargs)
            for n in self.reset_to_zero:
                named[n].zero_()
        if cfg.pre_hook is not None:
            cfg.pre_hook({**self._named(args, kwargs), **cfg.kwargs})
        opts = cfg.launch_options()
        return self._launcher()[grid](*args, **kwargs, **cfg.kwargs, **opts)

    def _named(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        named = dict(zip(self.info.arg_names, args))
        named.update(kwargs)
        return named

    # -- choosing -----------------------------------------------------------------------------------
    def legal_configs(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Config], dict[Config, str]]:
        """Candidates that pass the static rules and the user's pruning, plus the reasons of the rejected."""
        rejected: dict[Config, str] = {}
        legal: list[Config] = []
        for cfg in self.configs:
            rej = check_static(cfg, self.info, kwargs.keys(), self.space)
            if rej is not None:
                rejected[cfg] = rej.reason
            else:
                legal.append(cfg)
        legal = self._prune(legal, args, kwargs)
        return legal, rejected

    def _prune(self, configs: list[Config], args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Config]:
        named = self._named(args, kwargs)
        early = self.prune_configs_by.get("early_config_prune")
        if early is not None and configs:
            pruned = [as_config(c) for c in early([c.to_triton() for c in configs], named, **kwargs)]
            configs = [c for c in configs if c in set(pruned)]
        perf_model = self.prune_configs_by.get("perf_model")
        top_k = self.prune_configs_by.get("top_k")
        if perf_model is not None and top_k is not None and configs:
            k = int(top_k * len(configs)) if isinstance(top_k, float) and top_k <= 1.0 else int(top_k)
            k = max(1, min(k, len(configs)))
            est = {
                c: perf_model(**named, **c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages, num_ctas=c.num_ctas)
                for c in configs
            }
            configs = sorted(configs, key=lambda c: est[c])[:k]
        return configs

    def _choose(self, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Choice:
        hit = self.tuner.lookup(self, key, args, kwargs)
        if hit is not None:
            return hit
        legal, rejected = self.legal_configs(args, kwargs)
        why = gpu_unavailable_reason()
        if why is not None and getattr(self.tuner, "timer", None) is None:
            return self._untuned(key, legal, rejected, args, kwargs, why)
        return self.tuner.tune(self, key, legal, rejected, args, kwargs, grid)

    def _untuned(
        self,
        key: tuple[Any, ...],
        legal: list[Config],
        rejected: dict[Config, str],
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        why: str,
    ) -> Choice:
        name = self.info.name
        if self.on_no_gpu == "error":
            raise TimingUnavailableError(
                f"{name}: cannot autotune here: {why}. Timing needs a real GPU driver. To check every candidate "
                f"for correctness without a GPU, run `tritune verify` on a workload (or tritune.verify() in Python); "
                f"to run untimed, set on_no_gpu='warn' (or TRITUNE_ON_NO_GPU=warn)."
            )
        from tritune.screen.specialize import cuda_target, frontend_rejection

        target = cuda_target(90)
        for cfg in legal:
            try:
                reason = frontend_rejection(self.fn, args, cfg, target, kwargs)
            except KernelSpecError:
                reason = None  # cannot specialize on these args: let the interpreter be the judge
            if reason is None:
                if not self._warned:
                    self._warned = True
                    warnings.warn(
                        f"{name}: no timing is possible without a GPU ({why}); running the first legal config "
                        f"{cfg.id} UNTUNED. It is correct to use but was not measured and is not known to be fastest.",
                        UntunedWarning,
                        stacklevel=5,
                    )
                return Choice(cfg, "untuned", why)
            rejected[cfg] = reason
        raise NoLegalConfigError(
            f"{name}: every candidate was rejected before launch for key {self.key_spec.as_dict(key)}:\n"
            + format_rejections(rejected)
        )


def autotune(
    configs: Sequence[Any] | Space,
    key: Any = (),
    *,
    prune_configs_by: Mapping[str, Any] | None = None,
    reset_to_zero: Iterable[str] | None = None,
    restore_value: Iterable[str] | None = None,
    pre_hook: Callable[..., Any] | None = None,
    post_hook: Callable[..., Any] | None = None,
    warmup: Any = None,
    rep: Any = None,
    do_bench: Callable[..., Any] | None = None,
    cache_results: Any = None,
    on_no_gpu: str | None = None,
    store: Any = None,
    pretuned: Any = None,
    distributed: bool = False,
    **tuner_options: Any,
) -> Callable[[Any], Autotuned]:
    """Decorate a ``@triton.jit`` kernel: ``@tritune.autotune(configs=[...], key=["n"])``.

    Takes ``triton.autotune``'s arguments with the same meaning (``warmup``/``rep``/``cache_results`` are
    accepted for compatibility; tritune's timer decides repetitions by confidence interval instead).
    ``key`` may also be a dict mapping names to buckets, e.g. ``{"n": tritune.bucket.pow2}``.
    ``store``: the SQLite store's path (default ``$TRITUNE_STORE`` or the user cache dir), a Store, or False.
    ``pretuned``: an exported JSON file consulted first, read-only; a hit needs no timing.
    ``distributed``: in a torch.distributed job, split the candidates of a miss over the ranks.
    """
    del warmup, rep, cache_results

    def decorator(fn: Any) -> Autotuned:
        from tritune.tune.tuner import Tuner

        unwrap_jit(fn)
        tuner = Tuner(store=store, pretuned=pretuned, distributed=distributed, **tuner_options)
        return Autotuned(
            fn,
            configs,
            key,
            prune_configs_by=prune_configs_by,
            reset_to_zero=reset_to_zero,
            restore_value=restore_value,
            pre_hook=pre_hook,
            post_hook=post_hook,
            do_bench=do_bench,
            on_no_gpu=on_no_gpu,
            tuner=tuner,
        )

    return decorator
