"""The fast dispatch's specialization check, on CPU tensors (the launch itself needs a GPU: tests/gpu)."""

import torch

from tritune import Config, bucket
from tritune.decorator.keys import KeySpec

SPEC = KeySpec.build("k", ["x", "y", "n", "m", "BLOCK"], {"n": bucket.pow2})


def test_alignment_and_int_facts_select_the_binary():
    base = torch.empty(64)
    aligned, shifted = base[:32], base[1:33]
    # n = 7 bucketed to 8, then per argument: dtype and alignment; per int one code for (== 1, % 16 == 0, fits
    # in i32): 1 for 1, 2/3 for a 32-bit int divisible by 16 or not, 4/5 for a wider one
    assert SPEC.call_key([aligned, 16, 7]) == (8, torch.float32, True, 2, 3)
    assert SPEC.call_key([aligned, 1, 16]) != SPEC.call_key([shifted, 1, 16])  # 4-byte offset: not aligned
    assert SPEC.call_key([aligned, 1, 16])[3] == 1  # an int equal to 1 becomes a constant
    assert SPEC.call_key([aligned, 2**40, 16])[3] == 4  # does not fit in i32: another signature
    assert SPEC.call_key([aligned, 2**40 + 1, 16])[3] == 5 and SPEC.call_key([aligned, -(2**31) - 1, 16])[3] == 5
    assert SPEC.call_key([aligned, -(2**31), 16])[3] == 2 and SPEC.call_key([aligned, 2**31, 16])[3] == 4
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


def test_generated_call_key_for_plain_arguments_equals_the_generic_one():
    """Floats, None, bools and strings key by their type; the generated key tests the type inline while the
    first call's kinds hold and must still agree with the generic key when another kind comes."""
    spec = KeySpec.build("k", ["x", "s", "o", "b", "t", "n"], ["n"])
    x = torch.empty(8)
    fast = spec.compiled_call_key([x, 2.5, None, True, "a", 16])
    calls = [
        [x, 2.5, None, True, "a", 16], [x, 0.5, None, False, "b", 16], [x, 3, None, True, "a", 16],
        [x, x, None, True, "a", 16], [x, 2.5, 1, True, "a", 16], [x, 2.5, None, 1, "a", 16],
        [x, 2.5, None, True, x, 16], [x, True, 2.5, "a", None, 16], [x, 2.5, None, True, "a", 2.0],
    ]
    for args in calls:
        assert _outcome(fast, args) == _outcome(spec.call_key, args), args
    assert fast([x, 2.5, None, True, "a", 16]) != fast([x, 3, None, True, "a", 16])  # an int is another binary


def test_launch_options_only_what_is_set():
    assert Config({"B": 1}, num_warps=2, num_stages=1).launch_options() == {"num_warps": 2, "num_stages": 1}
    assert Config(num_ctas=2, maxnreg=128).launch_options() == {
        "num_warps": 4, "num_stages": 3, "num_ctas": 2, "maxnreg": 128,
    }


KW_SPEC = KeySpec.build("k", ["x", "y", "n", "GROUP", "ACT", "BLOCK"], ["n"],
                        constexprs={"GROUP", "ACT", "BLOCK"})  # fmt: skip


def _kw_outcome(f, args, kwargs):
    try:
        return f(args, kwargs)
    except Exception as e:
        return type(e)


def test_generated_keyword_call_key_equals_the_generic_one_for_any_call():
    """Keyword calls (a meta-parameter by name, tensors by name, values added by @triton.heuristics): the
    generated key for the first call's names and kinds agrees with the generic key on every call."""
    base = torch.empty(64)
    x, y, xs = base[:32], torch.empty(32, dtype=torch.float16), base[1:33]
    fast = KW_SPEC.compiled_kw_call_key([x, y, 1024], {"GROUP": 8, "ACT": "relu"})
    calls = [
        ([x, y, 1024], {"GROUP": 8, "ACT": "relu"}), ([x, y, 1024], {"ACT": "relu", "GROUP": 8}),
        ([x, y, 1024], {"GROUP": 4, "ACT": "relu"}), ([x, y, 1024], {"GROUP": 8, "ACT": ""}),
        ([x, y, 17], {"GROUP": 8, "ACT": "relu"}), ([xs, y, 1024], {"GROUP": 8, "ACT": "relu"}),
        ([x, y, 1024], {"GROUP": 8}), ([x, y], {"n": 1024, "GROUP": 8}), ([x], {"y": y, "n": 16, "ACT": "a"}),
        ([x, y, 1024], {"GROUP": 8, "ACT": "relu", "num_warps": 4}), ([x, y, 1024], {"GROUP": [8], "ACT": "r"}),
        ([x, y, 1024], {"GROUP": 8.0, "ACT": "relu"}), ([], {"x": x, "y": y, "n": 1}),
    ]
    for args, kwargs in calls:
        assert _kw_outcome(fast, args, kwargs) == _kw_outcome(KW_SPEC.kw_call_key, args, kwargs), (args, kwargs)
    base_key = fast([x, y, 1024], {"GROUP": 8, "ACT": "relu"})
    assert fast([x, y, 1024], {"GROUP": 4, "ACT": "relu"}) != base_key  # a constexpr's value selects the binary
    assert fast([x, y, 1024], {"GROUP": 8, "ACT": ""}) != base_key
    assert fast([x, y, 1024], {"ACT": "relu", "GROUP": 8}) == base_key  # keyword order does not matter


def test_keyword_dtypes_enter_the_tuning_key():
    x16, x32 = torch.empty(8, dtype=torch.float16), torch.empty(8)
    assert KW_SPEC.of([], {"x": x16, "n": 8}) != KW_SPEC.of([], {"x": x32, "n": 8})
    assert KW_SPEC.of([x32], {"y": x16, "n": 8}) == (8, torch.float32, torch.float16)


def test_positional_constexpr_values_select_the_binary():
    x = torch.empty(8)
    assert KW_SPEC.call_key([x, x, 8, 4]) != KW_SPEC.call_key([x, x, 8, 8])
    fast = KW_SPEC.compiled_call_key([x, x, 8, 4])
    assert fast([x, x, 8, 8]) == KW_SPEC.call_key([x, x, 8, 8])


def test_keyword_launcher_passes_every_parameter_in_the_kernels_order(monkeypatch):
    """make_fast_kw's generated code, with a FAKE FastLauncher (the real one needs a GPU) that records the
    argument list it was built for and the one each launch passes."""
    import tritune.decorator.dispatch as dispatch

    class FakeFastLauncher:
        def __init__(self, jit, cfg, args, defaults):
            assert cfg.kwargs == {}  # meta-parameters travel positionally, launch options in the config
            self.built = list(args)
            self.launched = []
            self.launch = lambda a, grid: self.launched.append((list(a), grid)) or "kernel"
            made.append(self)

    class FakeJit:
        arg_names = ("x", "y", "n", "BLOCK", "GROUP", "ACT")

    made = []
    monkeypatch.setattr(dispatch, "FastLauncher", FakeFastLauncher)
    cfg = Config({"BLOCK": 128}, num_warps=8)
    launch = dispatch.make_fast_kw(FakeJit(), cfg, ["X", "Y"], {"ACT": "relu", "n": 7}, {"GROUP": 8})
    assert made[0].built == ["X", "Y", 7, 128, 8, "relu"]
    assert launch(["X2", "Y2"], {"n": 9, "ACT": "gelu"}, (3,)) == "kernel"
    assert made[0].launched == [(["X2", "Y2", 9, 128, 8, "gelu"], (3,))]
    # a launch option or an unknown name by keyword, or a parameter with no value anywhere: Triton's path
    assert dispatch.make_fast_kw(FakeJit(), cfg, ["X", "Y"], {"n": 7, "num_warps": 4}, {"GROUP": 8, "ACT": ""}) is None
    assert dispatch.make_fast_kw(FakeJit(), cfg, ["X", "Y"], {"n": 7}, {}) is None


def test_constant_launcher_holds_the_heuristics_values_and_launches_positionally(monkeypatch):
    """make_fast_const (positional calls under @triton.heuristics), with a FAKE FastLauncher (the real one needs
    a GPU) that records what it was built with: the heuristics' values travel as constants of the launcher, whose
    positional launch is returned; a value for a launch option or a positional parameter, or a config with a
    pre_hook, takes Triton's path (None)."""
    import tritune.decorator.dispatch as dispatch

    made = []

    class FakeFastLauncher:
        def __init__(self, jit, cfg, args, defaults, consts=None):
            self.seen = (cfg, list(args), dict(defaults), dict(consts or {}))
            self.launch = lambda a, grid: ("launched", list(a), grid)
            made.append(self)

    class FakeJit:
        arg_names = ("x", "y", "n", "BLOCK", "EVEN")

    monkeypatch.setattr(dispatch, "FastLauncher", FakeFastLauncher)
    cfg = Config({"BLOCK": 128}, num_warps=8)
    launch = dispatch.make_fast_const(FakeJit(), cfg, ["X", "Y", 7], {"EVEN": True}, {})
    assert made[0].seen == (cfg, ["X", "Y", 7], {}, {"EVEN": True})
    assert launch(["X2", "Y2", 9], (3,)) == ("launched", ["X2", "Y2", 9], (3,))
    assert dispatch.make_fast_const(FakeJit(), cfg, ["X", "Y", 7], {"num_warps": 4}, {}) is None
    assert dispatch.make_fast_const(FakeJit(), cfg, ["X", "Y", 7], {"n": 4}, {}) is None
    assert dispatch.make_fast_const(FakeJit(), cfg.replace(pre_hook=print), ["X", "Y", 7], {"EVEN": True}, {}) is None
    assert len(made) == 1
