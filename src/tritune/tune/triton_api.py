"""tritune's engine behind Triton's own class and decorator signatures.

:class:`TritonAutotuner` takes ``triton.runtime.Autotuner``'s constructor (triton 3.6 through 3.9:
``fn, arg_names, configs, key, reset_to_zero, restore_value, pre_hook, post_hook, prune_configs_by, warmup,
rep, use_cuda_graph, do_bench, cache_results``), so a library's subclass of Triton's Autotuner (FlagGems'
``LibTuner``) gets tritune's engine when :func:`tritune.patch_triton` has put this class in Triton's place.
While it stands in, ``isinstance(obj, triton.runtime.Autotuner)`` holds for tuners made by either engine.
:func:`triton_autotune` is ``triton.autotune``'s signature over the same class.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tritune.tune.autotune import Autotuned
from tritune.tune.triton_surface import ORIGINAL_AUTOTUNER

__all__ = ["TritonAutotuner", "triton_autotune"]


class _StandIn(type):
    """Metaclass of the stand-in: every Triton autotuner (original or tritune's) is an instance of it."""

    def __instancecheck__(cls, obj: object) -> bool:
        if cls is TritonAutotuner:
            return isinstance(obj, ORIGINAL_AUTOTUNER)
        return type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub: type) -> bool:
        if cls is TritonAutotuner:
            return issubclass(sub, ORIGINAL_AUTOTUNER)
        return type.__subclasscheck__(cls, sub)


class TritonAutotuner(Autotuned, metaclass=_StandIn):
    """``triton.runtime.Autotuner``'s constructor over tritune's engine (store, screen, race, fast dispatch)."""

    def __init__(
        self,
        fn: Any,
        arg_names: Sequence[str],
        configs: Sequence[Any],
        key: Sequence[str],
        reset_to_zero: Iterable[str] | None = None,
        restore_value: Iterable[str] | None = None,
        pre_hook: Callable[..., Any] | None = None,
        post_hook: Callable[..., Any] | None = None,
        prune_configs_by: Mapping[str, Any] | None = None,
        warmup: Any = None,
        rep: Any = None,
        use_cuda_graph: bool = False,
        do_bench: Callable[..., Any] | None = None,
        cache_results: bool = False,
        **tritune_options: Any,
    ) -> None:
        from tritune.tune.tuner import Tuner

        key = _known_key_names(fn, list(arg_names), list(key))
        on_no_gpu = tritune_options.pop("on_no_gpu", None)
        tuner = Tuner(**tritune_options)
        tuner.open_pretuned()
        super().__init__(fn, configs, list(key), prune_configs_by=prune_configs_by, reset_to_zero=reset_to_zero,
                         restore_value=restore_value, pre_hook=pre_hook, post_hook=post_hook, do_bench=do_bench,
                         on_no_gpu=on_no_gpu, tuner=tuner, warmup=warmup, rep=rep, use_cuda_graph=use_cuda_graph,
                         cache_results=cache_results)  # fmt: skip


def _known_key_names(fn: Any, arg_names: list[str], key: list[str]) -> list[str]:
    """``key`` as the installed Triton treats it. Triton >= 3.7 refuses a key name that is no kernel argument
    (ValueError, raised here with the same type); 3.6 silently leaves it out of the key, and so does this, with a
    warning, since code that runs under Triton must run under its stand-in."""
    unknown = [n for n in key if n not in arg_names]
    if not unknown:
        return key
    try:
        ORIGINAL_AUTOTUNER(fn, arg_names, [], key, None, None)
    except ValueError as e:
        raise ValueError(f"{getattr(fn, '__name__', fn)}: {e}") from None
    warnings.warn(f"{getattr(fn, '__name__', fn)}: key names {unknown} are not kernel arguments; as this Triton "
                  "does, they are left out of the tuning key (fix the key to tune per value)", UserWarning,
                  stacklevel=4)  # fmt: skip
    return [n for n in key if n in arg_names]


def triton_autotune(
    configs: Sequence[Any],
    key: Sequence[str],
    prune_configs_by: Mapping[str, Any] | None = None,
    reset_to_zero: Iterable[str] | None = None,
    restore_value: Iterable[str] | None = None,
    pre_hook: Callable[..., Any] | None = None,
    post_hook: Callable[..., Any] | None = None,
    warmup: Any = None,
    rep: Any = None,
    use_cuda_graph: bool = False,
    do_bench: Callable[..., Any] | None = None,
    cache_results: bool = False,
) -> Callable[[Any], TritonAutotuner]:
    """``triton.autotune`` with tritune's engine: what :func:`tritune.patch_triton` installs."""

    def decorator(fn: Any) -> TritonAutotuner:
        return TritonAutotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                               post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                               use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)  # fmt: skip

    return decorator
