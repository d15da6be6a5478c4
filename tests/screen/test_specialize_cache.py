"""The binder cache of ``screen.specialize`` never hands one kernel's binder to another."""

from __future__ import annotations

import importlib

import torch
import triton
import triton.language as tl

from tritune.config import Config

sp = importlib.import_module("tritune.screen.specialize")  # the module: the package exports a function of this name


@triton.jit
def _two_args(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@triton.jit
def _three_args(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


def test_a_reused_id_never_hits_another_kernels_binder(monkeypatch) -> None:
    """A FAKE ``id`` gives every kernel the same id, as CPython does once a freed kernel's memory is reused."""
    monkeypatch.setattr(sp, "_BINDERS", {})
    monkeypatch.setattr(sp, "id", lambda obj: 12345, raising=False)
    target = sp.cuda_target(90)
    x = torch.empty(64)
    cfg = Config({"BLOCK": 64})
    first = sp.specialize(_two_args, (x,), cfg, target)
    # Before the fix: the first kernel's binder bound (x, 64) and raised "multiple values for argument 'BLOCK'".
    second = sp.specialize(_three_args, (x, 64), cfg, target)
    assert first.kernel_name == "_two_args" and second.kernel_name == "_three_args"
    assert len(second.signature) == 3 and "n" in second.signature
    assert len(sp.specialize(_two_args, (x,), cfg, target).signature) == 2  # and back again
