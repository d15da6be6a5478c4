"""Rules that reject a candidate before anything is compiled or launched, each with its reason."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from tritune.config import Config
from tritune.kernel import KernelInfo


@dataclass(frozen=True)
class Rejection:
    """Why a config is illegal: ``rule`` is a short machine name, ``reason`` the sentence for people."""

    rule: str
    reason: str

    def __str__(self) -> str:
        return self.reason


def format_rejections(rejected: Mapping[Config, str]) -> str:
    """One indented line per rejected config with its reason, for error messages."""
    return "\n".join(f"  {c.id}: {r}" for c, r in rejected.items())


def check_static(
    config: Config,
    kernel: KernelInfo,
    caller_kwargs: Collection[str] = (),
    space: object | None = None,
) -> Rejection | None:
    """Checks that need no compiler: launch options, parameter names, clashes and constraints.

    ``space`` is anything with a ``rejection(config) -> str | None`` method (a :class:`Space`).
    """
    w = config.num_warps
    if not (1 <= w <= 32 and w & (w - 1) == 0):
        return Rejection(
            "num_warps", f"{kernel.name}: num_warps={w} in {config.id} must be a power of 2 from 1 to 32"
        )
    if config.num_stages < 1:
        return Rejection(
            "num_stages", f"{kernel.name}: num_stages={config.num_stages} in {config.id} must be at least 1"
        )
    if config.num_ctas < 1:
        return Rejection("num_ctas", f"{kernel.name}: num_ctas={config.num_ctas} in {config.id} must be at least 1")
    if config.maxnreg is not None and not (1 <= config.maxnreg <= 255):
        return Rejection("maxnreg", f"{kernel.name}: maxnreg={config.maxnreg} in {config.id} must be 1..255")
    names = config.kwargs
    unknown = [k for k in names if k not in kernel.arg_names]
    if unknown:
        return Rejection(
            "unknown_param",
            f"{kernel.name} has no parameter {', '.join(unknown)} (config {config.id}); "
            f"its parameters are {', '.join(kernel.arg_names)}",
        )
    clash = sorted(set(names) & set(caller_kwargs)) if caller_kwargs else []
    if clash:
        return Rejection(
            "param_clash",
            f"{kernel.name}: {', '.join(clash)} is set both by config {config.id} and by the caller; "
            "drop it from the call or from the config",
        )
    check = getattr(space, "rejection", None)
    if check is not None:
        reason = check(config)
        if reason is not None:
            return Rejection("constraint", f"{kernel.name}: {reason}")
    return None
