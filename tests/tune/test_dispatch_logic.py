"""The fast dispatch's specialization check, on CPU tensors (the launch itself needs a GPU: tests/gpu)."""

import torch

from tritune import Config
from tritune.tune.dispatch import specialization


def test_alignment_and_int_facts_select_the_binary():
    base = torch.empty(64)
    aligned, shifted = base[:32], base[1:33]
    assert specialization([aligned, 16, 7]) == (True, (False, True, True), (False, False, True))
    assert specialization([aligned]) != specialization([shifted])  # 4-byte offset: not 16-byte aligned
    assert specialization([1])[0] == (True, False, True)  # Triton makes an int equal to 1 a constant
    assert specialization([2**40])[0][2] is False  # does not fit in i32: another signature
    assert specialization([0.5]) == (float,)


def test_launch_options_only_what_is_set():
    assert Config({"B": 1}, num_warps=2, num_stages=1).launch_options() == {"num_warps": 2, "num_stages": 1}
    assert Config(num_ctas=2, maxnreg=128).launch_options() == {
        "num_warps": 4, "num_stages": 3, "num_ctas": 2, "maxnreg": 128,
    }
