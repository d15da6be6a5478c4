"""The check's comparison: the fused kernel (run by Triton's interpreter here) and torch's fallback agree
on every case: integers and bools bit-exact, floats within the dtype's default tolerance, NaN in both."""

from __future__ import annotations

import pytest
import torch

from tritune.serving.check import compare_outputs, default_tolerance

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64, torch.bool]


def verdict(ref, got, fused):
    return compare_outputs({"o": ref}, {"o": got}, None, None, {str(ref.dtype)} if fused else ())()


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "torch"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_equal_agrees_and_one_unit_off_differs(dtype, fused):
    x = (torch.arange(5000) % 7).to(dtype)
    assert verdict(x, x.clone(), fused) is None
    y = x.clone()
    y[4321] = ~y[4321] if dtype == torch.bool else y[4321] + 1
    why = verdict(x, y, fused)
    assert why is not None and "1 of 5000 elements differ" in why


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "torch"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str)
def test_floats_agree_within_the_tolerance_and_nan_in_both(dtype, fused):
    atol, rtol = default_tolerance(dtype)
    x = torch.linspace(-4, 4, 3001, dtype=torch.float64).to(dtype)
    x[7] = float("nan")
    within = (x.double() * (1 + rtol / 4)).to(dtype)
    within[7] = float("nan")
    assert verdict(x, within, fused) is None
    beyond = x.clone()
    beyond[100] = (x[100].double() + 4 * (atol + rtol * abs(float(x[100])))).to(dtype)
    assert "1 of 3001" in (verdict(x, beyond, fused) or "")
    one_nan = x.clone()
    one_nan[200] = float("nan")
    assert "1 of 3001" in (verdict(x, one_nan, fused) or "")


def test_integer_tolerance_is_zero_whatever_the_float_tolerance():
    x = torch.arange(100, dtype=torch.int32)
    y = x.clone()
    y[3] += 1
    assert compare_outputs({"o": x}, {"o": y}, 10.0, 10.0, {"torch.int32"})() is not None
