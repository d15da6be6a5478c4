"""Key arguments the caches cannot hold as they come: a NaN (equal to nothing, itself included) is one key, and a
list, dict or set is one clear WorkloadError instead of a raw TypeError from a dict lookup."""

from __future__ import annotations

import warnings

import pytest
import torch
import triton
import triton.language as tl

import tritune
from tritune import Config
from tritune.decorator.keys import NAN, KeySpec
from tritune.errors import WorkloadError


@triton.jit
def scale_by(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha, mask=m)


def _call(k, alpha, **kw):
    x = torch.ones(64)
    out = torch.empty_like(x)
    if kw:
        k[lambda meta: (triton.cdiv(64, meta["BLOCK"]),)](x, out, n=64, alpha=alpha)
    else:
        k[lambda meta: (triton.cdiv(64, meta["BLOCK"]),)](x, out, 64, alpha)
    return out


def _kernel(tmp_path):
    return tritune.autotune(configs=[Config({"BLOCK": 32}), Config({"BLOCK": 64})], key=["alpha"],
                            store=str(tmp_path / "s.sqlite"))(scale_by)  # fmt: skip


@pytest.mark.parametrize("keywords", [False, True], ids=["positional", "keywords"])
def test_a_nan_key_argument_is_one_key(tmp_path, keywords):
    k = _kernel(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (no GPU: the untuned warning)
        for _ in range(5):
            out = _call(k, float("nan"), kw=keywords) if keywords else _call(k, float("nan"))
            assert torch.isnan(out).all()
        _call(k, 2.0, kw=keywords) if keywords else _call(k, 2.0)
    assert len(k.cache) == 2


@pytest.mark.parametrize("bad", [[1, 2], {"a": 1}, {1, 2}])
def test_an_unhashable_key_argument_is_one_clear_error(tmp_path, bad):
    k = _kernel(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _call(k, 2.0)  # the generated call key exists for these argument kinds
        with pytest.raises(WorkloadError, match=r"key argument 'alpha' is a (list|dict|set)"):
            _call(k, bad)


def test_the_generated_call_key_gives_what_the_generic_one_gives():
    spec = KeySpec.build("k", ["x", "alpha", "name"], ["alpha", "name"])
    for sample in [(None, 1.5, "a"), (None, 3, None)]:
        fast = spec.compiled_call_key(sample)
        for call in [(None, float("nan"), "a"), (None, 2.5, "b"), (None, 7, None), (None, True, "c")]:
            assert fast(call) == spec.call_key(call)
        assert fast((None, float("nan"), "a"))[0] is NAN
        with pytest.raises(WorkloadError, match="'name' is a list"):
            fast((None, 1.0, ["x"]))
