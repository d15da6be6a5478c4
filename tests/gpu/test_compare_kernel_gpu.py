"""GPU: tritune's comparison kernel (``tritune.verify.compare_kernel``) on CUDA tensors gives the counts torch's
comparison gives on CPU copies of them, over the cases of ``tests/compare_cases.py``, and ``compare`` uses it there
(``Comparison.identical`` set). Skips at run time without a GPU."""

import pytest
import torch

from compare_cases import cases, torch_counts
from tritune.device import gpu_unavailable_reason
from tritune.verify import compare_kernel
from tritune.verify.compare import compare, sentinel


@pytest.mark.gpu
@pytest.mark.parametrize("case", cases(), ids=lambda c: c[0])
def test_the_comparison_kernel_counts_on_the_gpu_what_torch_counts_on_the_cpu(case):
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")
    _, o, e, atol, rtol = case
    want = torch_counts(o, e, atol, rtol)
    go, ge = o.cuda(), e.cuda()
    poisoned = None if o.dtype.is_floating_point or o.dtype == torch.bool else sentinel(o.dtype)
    unw, bad, err, first, bits = compare_kernel.counts(go, ge, atol=atol, rtol=rtol, poisoned=poisoned)
    assert (unw, bad, first) == (want[0], want[1], want[3])
    assert err == pytest.approx(want[2], rel=1e-12) or err == want[2]
    c = compare(go, ge, atol=atol, rtol=rtol)
    assert c.ok == (want[1] == 0) and (c.identical is not None) == (o.dtype == e.dtype)
    if o.dtype == e.dtype:
        assert c.identical == (bits == 0)
