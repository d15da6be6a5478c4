"""The decorator's parallel precompile: real compiles for sm_90 in spawned workers, no GPU needed."""

import torch

from kernels import scale_kernel
from tritune import Config
from tritune.screen.specialize import cuda_target, specialize
from tritune.tune.precompile import _cached, _locate, precompile


def test_precompile_fills_tritons_cache_in_workers(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    x = torch.randn(4096)
    args = (x, torch.empty_like(x), 4096)
    good = [Config({"BLOCK": b}, num_warps=w) for b in (256, 512) for w in (2, 4)]
    bad = Config({"BLOCK": 300})
    target = cuda_target(90)
    assert _locate(scale_kernel) == ("kernels", "scale_kernel")
    specs = {c: specialize(scale_kernel, args, c, target) for c in good}
    assert not any(_cached(s) for s in specs.values())
    failed = precompile(scale_kernel, [*good, bad], args, {}, target, jobs=2)
    assert set(failed) == {bad} and "power of 2" in failed[bad]
    assert all(_cached(s) for s in specs.values())  # the JIT will find exactly these binaries


def test_nothing_to_do_when_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    x = torch.randn(64)
    args = (x, torch.empty_like(x), 64)
    cfg = Config({"BLOCK": 64})
    specialize(scale_kernel, args, cfg, cuda_target(90)).compile()
    assert precompile(scale_kernel, [cfg], args, {}, cuda_target(90), jobs=2) == {}
