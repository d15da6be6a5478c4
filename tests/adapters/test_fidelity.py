"""A kernel that runs under Triton's interpreter runs the same under tritune (interpreter fidelity).

Each kernel in kernels_late.py is launched through ``@tritune.autotune`` and compared with Triton's own
interpreter on the same input; then rebuilt for the compiler (``as_jit``) and taken through the sm_90
front end, which is what tritune's legality screen does. The subprocess test covers the CLI's case:
triton imported before ``TRITON_INTERPRET`` is set, so every kernel there is a JITFunction that tritune
must rebuild for the interpreter.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import kernels_late  # tests/adapters is on sys.path (conftest.py)
import pytest
import torch
import triton
import triton.language as tl

import tritune
from tritune.adapters.interpreter import as_interpreted
from tritune.adapters.kernel import KernelInfo, as_jit
from tritune.config import Config

HERE = Path(__file__).parent
N = 50


def _launch(kernel, x):
    out = torch.empty_like(x)
    kernel[(triton.cdiv(N, 16),)](x, out, N, BLOCK=16)
    return out


@pytest.mark.parametrize("name", sorted(kernels_late.KERNELS))
def test_autotuned_kernel_matches_triton_interpreter(name: str) -> None:
    kernel = kernels_late.KERNELS[name]
    x = torch.randn(N, generator=torch.Generator().manual_seed(1))
    want = _launch(kernel, x)  # Triton's interpreter, no tritune involved
    torch.testing.assert_close(want, kernels_late.expected(name, x))
    tuned = tritune.autotune(configs=[tritune.Config({"BLOCK": 16}), tritune.Config({"BLOCK": 32})], key=["n"])(kernel)
    out = torch.empty_like(x)
    with pytest.warns(tritune.UntunedWarning):
        tuned[lambda m: (triton.cdiv(N, m["BLOCK"]),)](x, out, N)
    torch.testing.assert_close(out, want, rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(kernels_late.KERNELS))
def test_rebuilt_for_the_compiler_and_back(name: str) -> None:
    from tritune.screen.specialize import specialize
    from tritune.screen.targets import get_target

    kernel = kernels_late.KERNELS[name]
    info = KernelInfo.of(kernel)  # as_jit on the decorated kernel: no RecursionError, no NameError
    assert info.arg_names == ("x_ptr", "out_ptr", "n", "BLOCK")
    x = torch.randn(N)
    spec = specialize(kernel, (x, torch.empty_like(x), N), Config({"BLOCK": 16}), get_target("sm90").gpu_target())
    ttir = str(spec.frontend())  # the compiler resolves every callee, through module attributes too
    assert "tt.store" in ttir
    # the interpreter copy of the compiler copy still computes the same thing
    torch.testing.assert_close(_launch(as_interpreted(as_jit(kernel)), x), kernels_late.expected(name, x))


def test_kernel_decorated_before_its_helper_exists() -> None:
    x = torch.randn(N)
    out = torch.empty_like(x)
    with pytest.warns(tritune.UntunedWarning):
        kernels_late.tuned_late[lambda m: (triton.cdiv(N, m["BLOCK"]),)](x, out, N)
    torch.testing.assert_close(out, kernels_late.expected("late", x))


def test_a_global_defined_after_the_first_conversion_is_found(tmp_path: Path) -> None:
    src = textwrap.dedent(
        """
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            m = offs < n
            tl.store(out_ptr + offs, helper(tl.load(x_ptr + offs, mask=m)), mask=m)
        """
    )
    import importlib.util

    path = tmp_path / "late_module.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("late_module", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ns = vars(mod)
    as_jit(ns["k"])  # converted before the helper exists, as @tritune.autotune does at decoration
    runner = as_interpreted(as_jit(ns["k"]))

    @triton.jit
    def helper(x):
        return x + 7

    ns["helper"] = helper
    x = torch.arange(8, dtype=torch.float32)
    out = torch.empty_like(x)
    runner[(1,)](x, out, 8, BLOCK=8)
    assert out.tolist() == [v + 7 for v in range(8)]


def test_conversions_do_not_keep_a_freed_kernel_alive() -> None:
    def make():
        @triton.jit
        def local_kernel(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)

        return local_kernel

    k = make()
    x = torch.zeros(4)
    as_interpreted(as_jit(k))[(1,)](x, BLOCK=4)  # launched through tritune's rebuilt copies only:
    assert x.tolist() == [1.0] * 4  # Triton's interpreter itself keeps every function it launched
    ref = weakref.ref(k.fn)
    del k
    gc.collect()
    assert ref() is None, "tritune's kernel conversions still hold a freed kernel"


SCRIPT = """
import os, sys
assert "TRITON_INTERPRET" not in os.environ
sys.path.insert(0, sys.argv[1])
import torch, triton
from triton.runtime.jit import JITFunction
import tritune
import kernels_late  # JITFunctions: triton was imported without the interpreter

os.environ["TRITON_INTERPRET"] = "1"  # as the CLI does on a machine without a GPU
import warnings
warnings.simplefilter("ignore", tritune.UntunedWarning)
for name, kernel in sorted(kernels_late.KERNELS.items()):
    assert isinstance(kernel, JITFunction), type(kernel)
    tuned = tritune.autotune(configs=[tritune.Config({"BLOCK": 16})], key=["n"])(kernel)
    x = torch.randn(50)
    out = torch.empty_like(x)
    tuned[lambda m: (triton.cdiv(50, m["BLOCK"]),)](x, out, 50)
    torch.testing.assert_close(out, kernels_late.expected(name, x))
    print("ok", name)
"""


def test_kernels_made_before_the_interpreter_is_switched_on(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    p = subprocess.run(
        [sys.executable, str(script), str(HERE)], capture_output=True, text=True, env=env, timeout=300
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert p.stdout.split() == ["ok", "late", "ok", "module", "ok", "shadow"]
