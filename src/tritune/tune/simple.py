"""What one timing run of a decorated kernel does: the timed call.

``candidate_call`` builds the zero-argument function a timer runs for one config, honouring
``reset_to_zero``, ``restore_value``, ``pre_hook`` and ``post_hook`` with triton.autotune's meaning, so
in-place kernels are not corrupted by timing runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tritune.config import Config

if TYPE_CHECKING:
    from tritune.tune.autotune import Autotuned


def candidate_call(
    tuned: Autotuned,
    cfg: Config,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    grid: Any,
    saved: Mapping[str, Any] | None = None,
) -> tuple[Callable[[], None], Callable[[], None]]:
    """(call, cleanup): ``call`` runs one timed launch with the hooks; ``cleanup`` restores saved values.

    ``saved`` holds the ``restore_value`` arguments as they were before ANY candidate ran; pass the same
    snapshot to every candidate of a race, whose candidates interleave.
    """
    named = tuned._named(args, kwargs)
    if saved is None:
        saved = {n: named[n].clone() for n in tuned.restore_value}
    jit = tuned._launcher()
    opts = cfg.launch_options()
    full = {**named, **cfg.kwargs}

    def call() -> None:
        if cfg.pre_hook is not None:
            cfg.pre_hook(full)
        if tuned.pre_hook is not None:
            tuned.pre_hook(full)
        for n in tuned.reset_to_zero:
            named[n].zero_()
        for n, v in saved.items():
            named[n].copy_(v)
        try:
            jit.run(*args, grid=grid, warmup=False, **kwargs, **cfg.kwargs, **opts)
        except Exception as e:
            if tuned.post_hook is not None:
                tuned.post_hook(full, exception=e)
            raise
        if tuned.post_hook is not None:
            tuned.post_hook(full, exception=None)

    def cleanup() -> None:
        for n, v in saved.items():
            named[n].copy_(v)

    return call, cleanup
