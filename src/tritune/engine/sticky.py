"""Sticky CUDA errors: one candidate's illegal address must not fail every candidate after it.

After an illegal memory access (or a misaligned address, an illegal instruction, a device-side assert,
an unspecified launch failure) the CUDA context of the process is lost: every later launch in it fails
too. A :class:`StickyGuard` wraps a job's ``prepare`` and ``measure``. The first sticky error costs its
candidate (``launch_failed``, the reason says the context was lost); every later candidate then goes to
``recover()``, a measure in a fresh process (:class:`tritune.engine.isolate.IsolatedBench`, which checks a
candidate's outputs before it times it when asked), so the tuning goes on. Without ``recover`` the later
candidates end ``launch_failed`` with a reason naming the culprit, never a misleading error of their own.
"""

from __future__ import annotations

from collections.abc import Callable

from tritune.bench.stats import Measurement
from tritune.bench.timer import ConfigMeasure, Failure
from tritune.config import Config
from tritune.engine.pipeline import Prepared
from tritune.outcome import Status

#: What CUDA (driver or runtime) and Triton say for the errors that leave a context unusable.
STICKY_MARKERS = (
    "illegal memory access",
    "illegal address",
    "misaligned address",
    "illegal instruction",
    "unspecified launch failure",
    "device-side assert",
    "hardware stack error",
    "uncorrectable ecc",
    "cuda_error_illegal_address",
    "cuda_error_launch_failed",
    "cuda_error_misaligned_address",
)


def is_sticky(text: str | None) -> bool:
    """Whether an error message is one of the CUDA errors after which the process's context is lost."""
    low = (text or "").lower()
    return any(m in low for m in STICKY_MARKERS)


def cuda_context_error() -> str | None:
    """None while this process's CUDA context works; else the error a trivial launch raises now (a check
    for launch errors whose message was cut short, as ``verify``'s one-line reasons are)."""
    import torch

    try:
        torch.cuda.synchronize()
        torch.ones(1, device="cuda").add_(1)
        torch.cuda.synchronize()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


class StickyGuard:
    """Wraps ``prepare`` and ``measure`` of one job (module docstring); ``culprit`` is the first sticky config."""

    def __init__(self, prepare: Callable[[Config], Prepared], measure: ConfigMeasure,
                 recover: Callable[[], ConfigMeasure] | None = None,
                 probe: Callable[[], str | None] | None = None) -> None:  # fmt: skip
        self._prepare = prepare
        self._measure = measure
        self._recover = recover
        self._probe = probe  # asks whether the context is lost (cuda_context_error on a GPU)
        self.culprit: Config | None = None
        self.why = ""
        self._fresh: ConfigMeasure | None = None

    def _sticky(self, failure: Failure) -> Failure | None:
        """``failure`` (made to say so) when it lost the context, else None."""
        if failure.status is not Status.LAUNCH_FAILED:
            return None
        if is_sticky(failure.reason):
            return failure
        err = self._probe() if self._probe is not None else None
        if err is not None and is_sticky(err):
            first = err.strip().splitlines()[0]
            return Failure(Status.LAUNCH_FAILED, f"{failure.reason} [{first}]")
        return None

    def _lost(self, config: Config, failure: Failure) -> Failure:
        self.culprit, self.why = config, failure.reason
        if self._recover is not None:
            self._fresh = self._recover()
        return Failure(Status.LAUNCH_FAILED, f"{failure.reason} (a sticky CUDA error: it lost this process's "
                                             "CUDA context, so the other candidates are timed in a fresh process)"
                                             if self._recover is not None else
                                             f"{failure.reason} (a sticky CUDA error: it lost this process's "
                                             "CUDA context)")  # fmt: skip

    def _not_run(self, config: Config) -> Failure:
        assert self.culprit is not None
        return Failure(Status.LAUNCH_FAILED, f"{config.id}: not run: {self.culprit.id} lost the CUDA context "
                                             f"of this process ({self.why})")  # fmt: skip

    def prepare(self, config: Config) -> Prepared:
        if self.culprit is not None:  # the fresh process loads and checks it, or nothing can
            return None if self._fresh is not None else self._not_run(config)
        got = self._prepare(config)
        sticky = self._sticky(got) if isinstance(got, Failure) else None
        return self._lost(config, sticky) if sticky is not None else got

    def measure(self, config: Config, budget_s: float) -> Measurement | Failure:
        if self._fresh is not None:
            return self._fresh(config, budget_s)
        if self.culprit is not None:
            return self._not_run(config)
        try:
            got = self._measure(config, budget_s)
        except Exception as e:
            if not is_sticky(str(e)):
                raise
            got = Failure(Status.LAUNCH_FAILED, f"{config.id}: {type(e).__name__}: {e}")
        sticky = self._sticky(got) if isinstance(got, Failure) else None
        return self._lost(config, sticky) if sticky is not None else got
