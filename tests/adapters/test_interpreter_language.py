"""Interpreted kernels run when triton was imported before ``TRITON_INTERPRET`` was set.

That is the CLI's case on a machine without a GPU: ``import tritune`` imports triton, then the CLI
switches the interpreter on, so triton.language's own helpers (``tl.cdiv``, ``tl.sum``...) are
JITFunctions, which an interpreted kernel cannot call. The test suite itself sets the variable
before triton is imported (conftest.py), so the real case runs in a subprocess.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading

import triton
import triton.language as tl

from tritune.adapters.interpreter import _LOCK, as_interpreted, interpreted_kernel_class, interpreter_language

# Module attributes (tl.cdiv, tl.max, tl.softmax, tl.zeros_like), a tensor method (.sum) and helpers
# that call helpers. tl.cdiv stays out of range(): triton 3.6's interpreter calls int() on a
# one-element array there, which numpy 2 refuses.
WORKLOAD = """
import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def softmax_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / e.sum(axis=0) + (tl.cdiv(n_cols, BLOCK) - 1) + tl.sum(tl.zeros_like(x), axis=0)
    y = (y + tl.softmax(x)) / 2
    tl.store(out_ptr + row * n_cols + offs, y, mask=m)


def make(kernel, name):
    return tritune.Workload(
        name=name,
        kernel=kernel,
        configs=[tritune.Config({"BLOCK": b}, num_warps=4) for b in (64, 128)],
        args=lambda key, device: (torch.randn(4, key["n"]), torch.empty(4, key["n"]), key["n"]),
        grid=lambda meta, key: (4,),
        outputs=[1],
        oracle=lambda args: [torch.softmax(args[0], dim=1)],
        keys=[{"n": 50}],
        atol=1e-5,
        rtol=1e-4,
    )


softmax = make(softmax_rows, "softmax")
"""

SCRIPT = """
import json, os, sys, types
assert "TRITON_INTERPRET" not in os.environ
import torch
import triton.language as tl
from triton.runtime.jit import JITFunction

import tritune
from tritune.cli.main import main
from tritune.adapters.interpreter import as_interpreted
from tritune.adapters.interpreter import compiler_language

sys.path.insert(0, sys.argv[1])
import softmax_wl  # imported now, before the CLI switches the interpreter on: a JITFunction kernel

language = [(o, dict(vars(o))) for o in (tl, tl.core, tl.standard, tl.math, tl.tensor, tl.dtype)]
cdiv = tl.cdiv
assert isinstance(cdiv, JITFunction) and isinstance(softmax_wl.softmax_rows, JITFunction)

# The CLI: TRITON_INTERPRET=1 is set after import tritune; the workload file is loaded after it.
rc = main(["verify", os.path.join(sys.argv[1], "softmax_wl.py"), "--json", sys.argv[2], "--quiet"])
assert rc == 0, rc

# A kernel made before the switch (the @tritune.autotune path), with a compile during its launch.
seen = {}
def hook(*args, **kwargs):
    seen["run"] = type(tl.cdiv).__name__
    with compiler_language():
        seen["compile"] = type(tl.cdiv).__name__
runner = as_interpreted(softmax_wl.softmax_rows)
runner.add_pre_run_hook(hook)
x = torch.randn(4, 50)
out = torch.empty_like(x)
runner[(4,)](x, out, 50, BLOCK=64)
runner.pre_run_hooks.remove(hook)
torch.testing.assert_close(out, torch.softmax(x, 1), atol=1e-5, rtol=1e-4)
assert seen == {"run": "InterpretedKernel", "compile": "JITFunction"}, seen
report = tritune.verify(softmax_wl.softmax)
assert report.ok, report.summary()

# Nothing stays patched: every attribute is the object it was (submodules imported meanwhile aside).
assert tl.cdiv is cdiv
for obj, was in language:
    now = dict(vars(obj))
    changed = [n for n, v in was.items() if now.get(n, None) is not v]
    added = [n for n, v in now.items() if n not in was and not isinstance(v, types.ModuleType)]
    assert not changed and not added, (obj, changed, added)
print("language unchanged")
"""


def test_kernels_run_when_the_interpreter_is_switched_on_after_import(tmp_path):
    (tmp_path / "softmax_wl.py").write_text(WORKLOAD)
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    report = tmp_path / "verify.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    p = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(report)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    assert "language unchanged" in p.stdout
    d = json.loads(report.read_text())
    assert [c["status"] for w in d["workloads"] for c in w["candidates"]] == ["correct", "correct"]


def test_interpreter_language_is_a_no_op_when_the_helpers_are_interpreted():
    # conftest.py set TRITON_INTERPRET=1 before triton was imported: tl.cdiv is Triton's own interpreter function
    cdiv, tensor_sum = tl.cdiv, vars(tl.tensor)["sum"]
    lock_free = []

    def try_lock():
        got = _LOCK.acquire(blocking=False)
        if got:
            _LOCK.release()
        lock_free.append(got)

    with interpreter_language():
        assert tl.cdiv is cdiv and vars(tl.tensor)["sum"] is tensor_sum
        t = threading.Thread(target=try_lock)  # the no-op does not hold the lock, so compiles need not wait
        t.start()
        t.join()
    assert lock_free == [True]


@triton.jit
def _double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


def test_as_interpreted_wraps_an_interpreter_function_once_and_shares_its_hooks():
    import torch

    kernel = as_interpreted(_double)
    assert isinstance(kernel, interpreted_kernel_class())
    assert kernel.fn is _double.fn and as_interpreted(_double) is kernel and as_interpreted(kernel) is kernel
    calls = []
    _double.add_pre_run_hook(lambda *a, **k: calls.append(1))
    try:
        x = torch.ones(8)
        kernel[(1,)](x, 5, BLOCK=8)
    finally:
        _double.pre_run_hooks.clear()
    assert calls == [1] and x.tolist() == [2.0] * 5 + [1.0] * 3
