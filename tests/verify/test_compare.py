"""verify.compare against a plain elementwise reference (CPU tensors), chunked and unchunked."""

from __future__ import annotations

import importlib
import math

import pytest
import torch

from tritune.verify.compare import compare, poison

cmp_mod = importlib.import_module("tritune.verify.compare")  # (tritune.verify.compare is also the function)


def _reference(out: torch.Tensor, exp: torch.Tensor, atol: float, rtol: float) -> tuple[int, int, float, int | None]:
    """(unwritten, mismatched, max error, first bad index), element by element in Python floats."""
    o, e = out.reshape(-1).tolist(), exp.reshape(-1).tolist()
    unw = bad = 0
    top = 0.0
    first = None
    for i, (x, y) in enumerate(zip(o, e, strict=True)):
        xn, yn = math.isnan(x), math.isnan(y)
        err = abs(x - y) if not (xn or yn) and not (math.isinf(x) and x == y) else math.nan
        ok = (xn and yn) or x == y or (math.isfinite(y) and not math.isnan(err) and err <= atol + rtol * abs(y))
        unw += xn and not yn
        if not ok:
            bad += 1
            first = i if first is None else first
        if not math.isnan(err):
            top = max(top, err)
    return unw, bad, top, first


@pytest.mark.parametrize("chunk", [7, 1 << 22])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.bfloat16])
def test_floats_match_the_elementwise_reference(monkeypatch: pytest.MonkeyPatch, chunk: int, dtype: torch.dtype) -> None:
    monkeypatch.setattr(cmp_mod, "_CHUNK", chunk)
    g = torch.Generator().manual_seed(3)
    exp = torch.randn(61, generator=g)
    out = (exp + 1e-3 * torch.randn(61, generator=g)).to(dtype)
    out[5] = exp[5] + 1.0  # beyond the tolerance
    out[9], exp[9] = float("nan"), float("nan")  # NaN where NaN is expected: equal
    out[11] = float("nan")  # unwritten (the poison left)
    exp[13], out[13] = float("inf"), float("inf")  # equal infinities: equal (torch.isclose)
    exp[17], out[17] = float("-inf"), 1.0  # an infinity missed: infinite error
    exp[19] = float("nan")  # NaN expected, a number written
    r = compare(out, exp, atol=1e-2, rtol=1e-2)
    unw, bad, top, first = _reference(out.double(), exp.double(), 1e-2, 1e-2)
    assert (r.unwritten, r.mismatched, r.first_bad_index) == (unw, bad, first) == (1, 4, 5)
    assert r.max_abs_error == top == math.inf
    assert not r.ok and "1 of 61 elements of output were never written" in r.detail


def test_equal_outputs_agree_with_their_largest_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmp_mod, "_CHUNK", 5)
    exp = torch.linspace(-3, 3, 23)
    out = exp + 1e-4
    out[7] = exp[7] + 2e-3
    r = compare(out, exp, atol=1e-2, rtol=0.0)
    assert r.ok and r.mismatched == 0 and r.first_bad_index is None
    assert r.max_abs_error == pytest.approx(2e-3, rel=1e-3)


@pytest.mark.parametrize("chunk", [4, 1 << 22])
def test_integers_count_the_sentinel_as_unwritten(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(cmp_mod, "_CHUNK", chunk)
    exp = torch.arange(19, dtype=torch.int32)
    out = exp.clone()
    poison(out[3:5])  # two elements never written
    out[10] += 1  # one off by one
    r = compare(out, exp, atol=0, rtol=0)
    assert (r.unwritten, r.mismatched, r.first_bad_index, r.max_abs_error) == (2, 3, 3, 1.0)
    assert compare(exp.clone(), exp, atol=0, rtol=0).ok


def test_shapes_that_differ_are_one_mismatch_report() -> None:
    r = compare(torch.zeros(4), torch.zeros(5), atol=0, rtol=0)
    assert not r.ok and "shape (4,)" in r.detail and "(5,)" in r.detail


def test_warming_the_comparison_skips_what_is_not_on_a_gpu() -> None:
    from tritune.verify.compare import warm_compare

    assert warm_compare([torch.zeros(3), torch.zeros(2, dtype=torch.int32), None], atol=0, rtol=0) == 0
    from tritune.verify.compare import compare_warmed, warm_compare_dtypes

    assert warm_compare_dtypes([(torch.float32, "cpu"), (torch.float16, torch.device("cpu"))]) == 0
    assert not compare_warmed(torch.device("cpu"))  # nothing was warmed, so a tune_key would warm float32 early


@pytest.mark.parametrize("dtype", [torch.float8_e5m2, torch.float8_e4m3fn, torch.float16, torch.bfloat16])
def test_narrow_floats_reach_float64_through_float32(dtype: torch.dtype) -> None:
    """Under ``flag_gems.enable()`` every torch copy is FlagGems' Triton kernel, and on an H100 its direct
    float8-to-float64 copy failed to compile while checking Triton's matmul tutorial (float8 inputs). torch's
    comparison path converts a float narrower than 32 bits to float32 first: no copy it asks for goes from such a
    float straight to float64, and the counts are those of the element-by-element reference."""
    from torch.utils._python_dispatch import TorchDispatchMode

    copies: list[tuple[torch.dtype, torch.dtype]] = []

    class Copies(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            if func in (torch.ops.aten._to_copy.default, torch.ops.aten.to.dtype) and "dtype" in kwargs:
                copies.append((args[0].dtype, kwargs["dtype"]))
            return func(*args, **kwargs)

    exp = torch.tensor([0.5, -1.0, 2.0, 3.0, float("nan")]).to(dtype)
    out = exp.clone()
    out[2] = torch.tensor(4.0).to(dtype)
    with Copies():
        c = compare(out, exp, atol=0.0, rtol=0.0)
    assert copies and all(src.itemsize >= 4 for src, dst in copies if dst == torch.float64), copies
    unw, bad, _, first = _reference(out.double(), exp.double(), 0.0, 0.0)
    assert (c.unwritten, c.mismatched, c.first_bad_index) == (unw, bad, first) == (0, 1, 2)
