"""Is there a GPU to run and time on? One place decides, and says why not in plain words."""

from __future__ import annotations

import os


def interpreter_on() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").lower() not in ("", "0", "false", "no", "off")


def gpu_unavailable_reason() -> str | None:
    """``None`` when a CUDA GPU can run and time Triton kernels here; otherwise the reason."""
    if interpreter_on():
        return "TRITON_INTERPRET=1 is set, so kernels run in Triton's CPU interpreter, which has no GPU clock"
    try:
        import torch
    except ImportError:  # pragma: no cover
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU driver is active on this machine (torch.cuda.is_available() is False)"
    return None


def gpu_available() -> bool:
    return gpu_unavailable_reason() is None


def current_target() -> object:
    """The GPUTarget of the active device, or sm_90 (Hopper) where there is none."""
    if gpu_available():
        from triton.runtime import driver

        return driver.active.get_current_target()
    return cuda_target(90)


def cuda_target(arch: int = 90, warp_size: int = 32) -> object:
    """A ``GPUTarget`` for an NVIDIA compute capability, e.g. ``cuda_target(90)`` for Hopper."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", arch, warp_size)
