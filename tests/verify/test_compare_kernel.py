"""tritune's comparison kernel (``tritune.verify.compare_kernel``), run by Triton's interpreter on CPU tensors, gives
the counts of torch's comparison (``tritune.verify.compare``'s path for tensors the kernel does not take) on the
cases that matter to the output check: unwritten (poisoned) elements, NaN and infinities, tolerances, integers with
their sentinel, bool, two float dtypes, tails shorter than a block; and it compiles for an sm90 GPU."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from typing import Any

import pytest
import torch

from compare_cases import cases, torch_counts
from tritune.verify import compare_kernel
from tritune.verify.compare import compare, sentinel


@pytest.mark.parametrize("case", cases(), ids=lambda c: c[0])
def test_kernel_counts_what_torchs_comparison_counts(case: tuple[str, Any, Any, float, float]) -> None:
    _, o, e, atol, rtol = case
    assert compare_kernel.takes(o, e)
    poisoned = None if o.dtype.is_floating_point or o.dtype == torch.bool else sentinel(o.dtype)
    unw, bad, err, first, bits = compare_kernel.counts(o, e, atol=atol, rtol=rtol, poisoned=poisoned)
    want = torch_counts(o, e, atol, rtol)
    assert (unw, bad, first) == (want[0], want[1], want[3])
    assert err == pytest.approx(want[2], rel=1e-12) or err == want[2]
    if o.dtype == e.dtype:
        same_bits = o.view(torch.uint8).equal(e.view(torch.uint8)) if o.dtype != torch.bool else o.equal(e)
        assert (bits == 0) == same_bits


def test_kernel_counts_bits_that_differ_where_values_agree() -> None:
    """-0.0 against 0.0, and a NaN of another payload: within any tolerance, yet not the same bits."""
    e = torch.zeros(10)
    o = e.clone()
    o[3] = -0.0
    nan2 = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)
    e[6], o[6] = float("nan"), nan2[0]
    unw, bad, _, first, bits = compare_kernel.counts(o, e, atol=0.0, rtol=0.0)
    assert (unw, bad, first, bits) == (0, 0, None, 2)
    assert compare_kernel.counts(e, e.clone(), atol=0.0, rtol=0.0)[4] == 0


def test_kernel_takes_only_what_it_compares() -> None:
    f = torch.zeros(8)
    assert not compare_kernel.takes(f, torch.zeros(8, dtype=torch.int32))  # float against int
    assert not compare_kernel.takes(torch.zeros(8, dtype=torch.int32), torch.zeros(8, dtype=torch.int64))
    assert not compare_kernel.takes(torch.zeros(4, 4).t().reshape(-1)[::2], f[:8:2].contiguous())  # a strided view
    assert not compare_kernel.takes(torch.zeros(8, dtype=torch.complex64), torch.zeros(8, dtype=torch.complex64))
    assert compare_kernel.counts(f[:0], f[:0], atol=0.0, rtol=0.0) == (0, 0, 0.0, None, 0)


def test_the_check_compares_with_the_kernel_on_a_gpu_never_with_torchs_reductions(monkeypatch: Any) -> None:
    """Labelled fake: tensors that say they live on a CUDA device (CPU tensors, the kernel run by the interpreter) are
    compared by the kernel; torch's reductions (which a library may replace with autotuned kernels of its own:
    FlagGems' ``sum`` and ``max``) are never called, and the agreement reads bit identity from the same launch."""
    from tritune.verify import reference

    compare_mod = importlib.import_module("tritune.verify.compare")  # (the package's ``compare`` is the function)

    real_counts = compare_kernel.counts
    launched: list[int] = []

    def recording(o: Any, e: Any, *, atol: float, rtol: float, poisoned: int | None) -> Any:
        launched.append(o.numel())
        return real_counts(o, e, atol=atol, rtol=rtol, poisoned=poisoned)

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("the comparison ran torch's reductions")

    gx = torch.randn(3000)
    gy = gx.clone()
    gy[17] += 1.0
    monkeypatch.setattr(compare_mod, "on_gpu", lambda t: True)
    monkeypatch.setattr(reference, "on_gpu", lambda t: True)
    monkeypatch.setattr(compare_kernel, "counts", recording)
    monkeypatch.setattr(torch, "equal", refuse)
    monkeypatch.setattr(torch.Tensor, "sum", refuse)
    monkeypatch.setattr(torch.Tensor, "max", refuse)
    monkeypatch.setattr(torch, "stack", refuse)
    same = reference.agreement({0: gx}, {0: gx.clone()}, ["out"])
    differ = reference.agreement({0: gy}, {0: gx}, ["out"])
    assert same.identical and same.close
    assert not differ.identical and not differ.close and "flat index 17" in (differ.reason or "")
    assert launched == [3000, 3000]


@pytest.mark.parametrize("dtype", [torch.float8_e5m2, torch.float8_e4m3fn])
def test_float8_outputs_with_the_same_bits_agree_by_the_kernel_with_no_torch_op(monkeypatch: Any, dtype: Any) -> None:
    """Labelled fake (CPU tensors said to be on a GPU, the kernel run by the interpreter): the check compares every
    tensor argument, and Triton's matmul tutorial's inputs are float8, which the kernel does not read as numbers.
    Their bits are compared as bytes by the kernel, one launch, and equal bits agree without torch's ``equal`` or any
    copy (under ``flag_gems.enable()`` those are FlagGems' kernels: its float8-to-float64 copy failed to compile on
    an H100). Bits that differ go to torch's comparison, as before."""
    from tritune.verify import reference

    compare_mod = importlib.import_module("tritune.verify.compare")
    real_counts = compare_kernel.counts
    launched: list[Any] = []

    def recording(o: Any, e: Any, *, atol: float, rtol: float, poisoned: int | None = None) -> Any:
        launched.append(o.dtype)
        return real_counts(o, e, atol=atol, rtol=rtol, poisoned=poisoned)

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("the comparison ran a torch op on float8 tensors")

    x = torch.randn(3000, generator=torch.Generator().manual_seed(0)).to(dtype)
    monkeypatch.setattr(compare_mod, "on_gpu", lambda t: True)
    monkeypatch.setattr(reference, "on_gpu", lambda t: True)
    monkeypatch.setattr(compare_mod, "_KERNEL_FAILED", set())
    monkeypatch.setattr(compare_kernel, "counts", recording)
    with monkeypatch.context() as m:
        m.setattr(torch, "equal", refuse)
        m.setattr(torch.Tensor, "double", refuse)
        m.setattr(torch.Tensor, "float", refuse)
        same = reference.agreement({0: x}, {0: x.clone()}, ["a_ptr"])
    assert same.identical and same.close and launched == [torch.uint8]
    y = x.clone()
    y.view(torch.uint8)[5] ^= 1  # one element's lowest bit: another value
    differ = compare(y, x, atol=0.0, rtol=0.0)
    assert not differ.ok and differ.first_bad_index == 5 and differ.identical is None


def test_the_kernel_compiles_for_an_sm90_gpu(tmp_path: Any) -> None:
    """Every signature the check launches (each float dtype with its bit view, two float dtypes, integers with a
    sentinel, bool, a float8's bits as bytes) compiles for an H100's target, outside the interpreter."""
    script = """
import triton
from triton.backends.compiler import GPUTarget
from tritune.verify import compare_kernel as K
sigs = [(f, f, b, b, True, False) for f, b in (("fp16", "i16"), ("bf16", "i16"), ("fp32", "i32"), ("fp64", "i64"))]
sigs += [("fp16", "fp32", "fp16", "fp32", True, False), ("i32", "i32", "i32", "i32", False, True),
         ("u8", "u8", "u8", "u8", False, True), ("i1", "i1", "i1", "i1", False, False),
         ("u8", "u8", "u8", "u8", False, False)]
for o, e, ob, eb, floating, has in sigs:
    sig = {"o_ptr": "*" + o, "e_ptr": "*" + e, "ob_ptr": "*" + ob, "eb_ptr": "*" + eb, "n": "i64", "part_ptr": "*fp64",
           "atol": "fp32", "rtol": "fp32", "sentinel": "i64", "FLOATING": "constexpr", "HAS_SENTINEL": "constexpr",
           "BLOCK": "constexpr"}
    src = triton.compiler.ASTSource(fn=K._compare, signature=sig,
                                    constexprs={"FLOATING": floating, "HAS_SENTINEL": has, "BLOCK": K.BLOCK})
    done = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    assert done.asm["cubin"], o
print("ok", len(sigs))
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(TRITON_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "9"]


def test_a_kernel_that_fails_leaves_the_comparison_to_torchs_ops(monkeypatch: Any) -> None:
    """Labelled fake (a CPU tensor said to be on a GPU): where the kernel cannot run (a target or dtype it does not
    compile for), torch's ops compare, with the same verdict, and the kernel is not tried again for those dtypes."""
    compare_mod = importlib.import_module("tritune.verify.compare")
    tried: list[int] = []

    def broken(o: Any, e: Any, *, atol: float, rtol: float, poisoned: int | None) -> Any:
        tried.append(o.numel())
        raise RuntimeError("FAKE: no kernel for this target")

    monkeypatch.setattr(compare_mod, "on_gpu", lambda t: True)
    monkeypatch.setattr(compare_mod, "_KERNEL_FAILED", set())
    monkeypatch.setattr(compare_kernel, "counts", broken)
    e = torch.randn(100)
    o = e.clone()
    o[42] += 1.0
    first, again = compare(o, e, atol=1e-3, rtol=1e-3), compare(o, e, atol=1e-3, rtol=1e-3)
    assert not first.ok and first.first_bad_index == 42 and first.identical is None and first == again
    assert tried == [100]
