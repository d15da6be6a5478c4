"""The fast dispatch's specialization check, on CPU tensors (the launch itself needs a GPU: tests/gpu)."""

import torch

from tritune import Config, bucket
from tritune.tune.keys import KeySpec

SPEC = KeySpec.build("k", ["x", "y", "n", "m", "BLOCK"], {"m": 3}, {"n": bucket.pow2})


def test_alignment_and_int_facts_select_the_binary():
    base = torch.empty(64)
    aligned, shifted = base[:32], base[1:33]
    # n = 7 bucketed to 8, then per argument: dtype and alignment; (== 1, % 16 == 0, fits in i32) per int
    assert SPEC.call_key([aligned, 16, 7]) == (8, torch.float32, True, (False, True, True), (False, False, True))
    assert SPEC.call_key([aligned, 1, 16]) != SPEC.call_key([shifted, 1, 16])  # 4-byte offset: not aligned
    assert SPEC.call_key([aligned, 1, 16])[3] == (True, False, True)  # an int equal to 1 becomes a constant
    assert SPEC.call_key([aligned, 2**40, 16])[3][2] is False  # does not fit in i32: another signature
    assert SPEC.call_key([aligned, 0.5, 16])[3] is float


def _outcome(f, args):
    try:
        return f(args)
    except Exception as e:
        return type(e)


def test_generated_call_key_equals_the_generic_one_for_any_call():
    """The hot path's generated key is specialized to the first call's argument kinds; for every call,
    of those kinds or not, it must give exactly what the generic key gives (or raise the same error)."""
    base = torch.empty(64)
    x, y, xs = base[:32], torch.empty(32, dtype=torch.float16), base[1:33]
    fast = SPEC.compiled_call_key([x, y, 1024])
    calls = [
        [x, y, 1024], [x, y, 1], [x, y, 17], [x, y, 2**40], [xs, y, 1024], [y, x, 1024], [x, 5, 7], [x, y],
        [x, y, 1024, None], [x, y, 1024, 2], [5, y, 16], [x, y, x], [x, y, 2.5], [x, None, 16], [],
    ]
    for args in calls:
        assert _outcome(fast, args) == _outcome(SPEC.call_key, args), args
    assert fast([x, y, 1008]) == fast([x, y, 1024])  # same bucket, same specialization
    assert fast([x, y, 1024]) != fast([x, y, 1040])  # 1040 = 1024 + 16: another bucket


def test_launch_options_only_what_is_set():
    assert Config({"B": 1}, num_warps=2, num_stages=1).launch_options() == {"num_warps": 2, "num_stages": 1}
    assert Config(num_ctas=2, maxnreg=128).launch_options() == {
        "num_warps": 4, "num_stages": 3, "num_ctas": 2, "maxnreg": 128,
    }
