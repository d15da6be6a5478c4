"""Derived spaces through the project's screen, without a GPU: their configs pass the static rules and Triton's
front end for sm_90, and the compile screen removes those that do not fit the GPU (shared memory)."""

from __future__ import annotations

import pytest
from space_support import EXAMPLES, first_call

from tritune import Config
from tritune.outcome import Status
from tritune.space import check_static_all, derive_space

SMALL = [("gelu.py", "gelu"), ("softmax.py", "softmax"), ("layernorm.py", "layernorm_small"),
         ("matmul.py", "matmul_small"), ("attention.py", "attention_small")]  # fmt: skip


@pytest.fixture(scope="module")
def sm90():
    from tritune.screen.targets import get_target

    return get_target("sm90")


def _derived(file: str, name: str):
    from tritune.workload import load_workloads

    (w,) = load_workloads(EXAMPLES / file, name)
    passed, sizes, args, kwargs = first_call(w, w.keys[0])
    return w, derive_space(w.kernel, passed=passed, sizes=sizes), args, kwargs


@pytest.mark.parametrize(("file", "name"), SMALL)
def test_derived_configs_pass_the_static_rules_and_the_front_end(sm90, file: str, name: str) -> None:
    from tritune.screen.specialize import frontend_rejection

    w, d, args, kwargs = _derived(file, name)
    configs = d.space.configs()
    assert all(r is None for r in check_static_all(configs, w.info, kwargs, d.space))
    for c in (configs[0], configs[len(configs) // 2], configs[-1]):
        assert frontend_rejection(w.kernel, args, c, sm90.gpu_target(), kwargs) is None, c.id


def _tutorial_calls():
    import space_kernels as K
    import torch

    h = torch.float16
    a, b, c = torch.randn(256, 128).to(h), torch.randn(128, 192).to(h), torch.empty(256, 192, dtype=h)
    q = torch.randn(2 * 256, 64).to(h)
    x = torch.randn(8, 3000)
    return [
        (K.grouped_matmul_kernel, [a, b, c, 256, 192, 128, *a.stride(), *b.stride(), *c.stride()],
         {"ACTIVATION": "leaky_relu"}, {}),
        (K.attn_fwd_kernel, [q, q, q, torch.empty_like(q), 0.125, 2], {"N_CTX": 256, "HEAD_DIM": 64, "CAUSAL": True},
         {}),
        (K.row_softmax_kernel, [torch.empty_like(x), x, 8, 3000], {}, {"ONE_TILE_PER_CTA": False}),
        (K.sum_dim_kernel, [torch.empty(4, 64), torch.randn(4, 512, 64), 4, 512, 64], {}, {"TILE_K": 64}),
    ]  # fmt: skip


def test_tutorial_and_library_patterns_derive_configs_the_front_end_takes(sm90) -> None:
    from tritune.adapters.kernel import KernelInfo
    from tritune.screen.specialize import frontend_rejection

    for kernel, args, kwargs, by_heuristics in _tutorial_calls():
        names = KernelInfo.of(kernel).arg_names
        passed = [*names[: len(args)], *kwargs]
        values = {**dict(zip(names, args)), **kwargs}
        sizes = {n: v for n, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}
        d = derive_space(kernel, passed=passed, sizes=sizes)
        configs = d.space.configs()
        for c in (configs[0], configs[len(configs) // 2], configs[-1]):
            why = frontend_rejection(kernel, args, c, sm90.gpu_target(), {**kwargs, **by_heuristics})
            assert why is None, why


def test_the_front_end_refuses_what_the_derivation_leaves_out(sm90) -> None:
    from tritune.screen.specialize import frontend_rejection

    w, d, args, kwargs = _derived("rowsum.py", "rowsum")
    assert max(d.param("BLOCK_N").values) <= 1024  # n_cols=1000
    for block, words in ((300, "power of 2"), (1 << 21, "numel")):
        why = frontend_rejection(w.kernel, args, Config({"BLOCK_N": block}, num_warps=4), sm90.gpu_target(), kwargs)
        assert why is not None and words in why


def test_the_compile_screen_removes_derived_matmul_tiles_that_do_not_fit_shared_memory(sm90, fresh_cache) -> None:
    from tritune.screen.candidate import screen_spec
    from tritune.screen.specialize import specialize

    w, d, args, kwargs = _derived("matmul.py", "matmul_small")
    configs = d.space.configs()
    big = Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128}, num_warps=8, num_stages=5)
    fits = Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3)
    assert big in configs and fits in configs
    results = {}
    for c in (big, fits):
        spec = specialize(w.kernel, args, c, sm90.gpu_target(), kwargs)
        results[c] = screen_spec(spec, c, sm90)
    assert results[fits].status is Status.FITS
    assert results[big].status is Status.ILLEGAL
    assert "of shared memory; sm_90 allows 232448 B per block" in results[big].reason


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    d = tmp_path / "triton-cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(d))
    return d
