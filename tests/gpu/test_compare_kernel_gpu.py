"""GPU: tritune's comparison kernel (``tritune.verify.compare_kernel``) on CUDA tensors gives the counts torch's
comparison gives on CPU copies of them, over the cases of ``tests/verify/test_compare_kernel.py``, and ``compare``
uses it there (``Comparison.identical`` set). Skips at run time without a GPU."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritune.device import gpu_unavailable_reason

HERE = Path(__file__).resolve().parent
SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import torch
import test_compare_kernel as T
from tritune.verify import compare_kernel
from tritune.verify.compare import compare, sentinel

bad = []
for name, o, e, atol, rtol in T._cases():
    want = T._torch_counts(o, e, atol, rtol)
    go, ge = o.cuda(), e.cuda()
    poisoned = None if o.dtype.is_floating_point or o.dtype == torch.bool else sentinel(o.dtype)
    unw, mis, err, first, bits = compare_kernel.counts(go, ge, atol=atol, rtol=rtol, poisoned=poisoned)
    if (unw, mis, first) != (want[0], want[1], want[3]) or not (err == want[2] or abs(err - want[2]) <= 1e-12 * abs(want[2])):
        bad.append((name, (unw, mis, err, first), want))
    c = compare(go, ge, atol=atol, rtol=rtol)
    if c.ok != (want[1] == 0) or (o.dtype == e.dtype and c.identical is None):
        bad.append((name, "compare", c))
print("BAD", bad) if bad else print("OK", len(T._cases()))
"""


@pytest.mark.gpu
def test_the_comparison_kernel_counts_on_the_gpu_what_torch_counts_on_the_cpu() -> None:
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(HERE.parent / "verify")], env=env, capture_output=True,
                         text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[0] == "OK", out.stdout[-3000:]
