"""The decorator without a GPU: run the first candidate that passes the checks made before launch, untimed.

Nothing can be timed here, and nothing checks the chosen config's results: the warning says exactly that.
``front_end_rejection`` is also how a pretuned winner is checked for the call's arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tritune.config import Config
from tritune.decorator.choice import Choice, UntunedWarning
from tritune.decorator.tuned import TunedKernel
from tritune.errors import NoLegalConfigError, TimingUnavailableError
from tritune.space.legality import format_rejections


def choose_untuned(
    tuned: TunedKernel,
    key: tuple[Any, ...],
    legal: list[Config],
    rejected: dict[Config, str],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    why: str,
) -> Choice:
    name = tuned.info.name
    if tuned.on_no_gpu == "error":
        raise TimingUnavailableError(
            f"{name}: cannot autotune here: {why}. Timing needs a real GPU driver. To check every candidate "
            f"for correctness without a GPU, run `tritune verify` on a workload (or tritune.verify() in Python); "
            f"to run untimed, set on_no_gpu='warn' (or TRITUNE_ON_NO_GPU=warn)."
        )
    for cfg in legal:
        reason = front_end_rejection(tuned, cfg, args, kwargs)
        if reason is None:
            tuned.warn_once(
                "untuned",
                f"{name}: no timing is possible without a GPU ({why}); running {cfg.id}, the first "
                "candidate that passed the checks made before launch, UNTUNED: it was not timed, and its "
                "results were not checked (`tritune verify` checks every candidate against an oracle).",
                UntunedWarning,
                stacklevel=7,
            )
            return Choice(cfg, "untuned", why)
        rejected[cfg] = reason
    raise NoLegalConfigError(
        f"{name}: every candidate was rejected before launch for key {tuned.key_spec.as_dict(key)}:\n"
        + format_rejections(rejected)
    )

def front_end_rejection(tuned: TunedKernel, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """Why the compiler's front end rejects ``cfg`` for these arguments, or None. The config's pre_hook runs
    first, as Triton runs it before the compile: it may set what the compile depends on (a host
    TensorDescriptor's block shape)."""
    from tritune.screen.specialize import cuda_target, frontend_rejection

    if cfg.pre_hook is not None:
        cfg.pre_hook({**tuned.named_args(args, kwargs), **cfg.kwargs, **cfg.launch_options()})
    try:
        return frontend_rejection(tuned.fn, args, cfg, cuda_target(90), tuned.launch_kwargs(cfg, args, kwargs))
    except Exception:
        return None  # cannot specialize on these arguments: let the launch be the judge, as under Triton
