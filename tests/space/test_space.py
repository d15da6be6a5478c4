import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests_support import info_of

import tritune
from tritune import Config, ConfigError, Constraint, Space, pow2
from tritune.space import check_static


def test_pow2():
    assert pow2(128, 1024) == [128, 256, 512, 1024]
    with pytest.raises(ConfigError):
        pow2(100, 200)


def test_enumeration_and_reasons():
    s = Space(
        {"BLOCK": [256, 512], "num_warps": [2, 4]},
        constraints=[Constraint("per_warp", lambda c: c["BLOCK"] >= 128 * c["num_warps"], "too few elements per warp")],
    )
    assert s.size == 4 and len(s) == 3
    (bad,) = [(c, why) for c, why in s.enumerate() if why]
    assert bad[0] == Config({"BLOCK": 256}, num_warps=4)
    assert "per_warp" not in bad[1] and "too few elements per warp" in bad[1]
    assert Config({"BLOCK": 512}, num_warps=4) in s


def test_constraints_are_callables_never_strings():
    with pytest.raises(ConfigError, match="never evaluates strings"):
        Space({"B": [1]}, constraints=["c['B'] > 0"])
    with pytest.raises(ConfigError, match="needs a name"):
        Space({"B": [1]}, constraints=[lambda c: True])


def test_raising_constraint_is_a_reason_not_a_crash():
    def needs_x(c):
        return c["X"] > 1

    s = Space({"B": [1]}, constraints=[needs_x])
    assert "needs_x" in s.rejection(Config({"B": 1}))


@given(st.lists(st.sampled_from([16, 32, 64, 128]), min_size=1, max_size=4, unique=True),
       st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=4, unique=True))
def test_no_legal_config_is_dropped(blocks, warps):
    s = Space({"BLOCK": blocks, "num_warps": warps},
              constraints=[Constraint("c", lambda c: c["BLOCK"] >= 16 * c["num_warps"])])
    expected = {Config({"BLOCK": b}, num_warps=w) for b in blocks for w in warps if b >= 16 * w}
    assert set(s.configs()) == expected
    assert len(s.configs()) == len(set(s.configs()))


def test_from_configs_keeps_list_order_and_membership():
    cfgs = [Config({"B": 2}), Config({"B": 1}, num_warps=8)]
    s = Space.from_configs(cfgs)
    assert s.configs() == cfgs
    assert "not one of the listed" in s.rejection(Config({"B": 2}, num_warps=8))


@pytest.mark.parametrize(
    "cfg, caller, rule",
    [
        (Config({"BLOCK": 64}, num_warps=3), (), "num_warps"),
        (Config({"BLOCK": 64}, num_warps=64), (), "num_warps"),
        (Config({"BLOCK": 64}, num_stages=0), (), "num_stages"),
        (Config({"BLOK": 64}), (), "unknown_param"),
        (Config({"BLOCK": 64}), ("BLOCK",), "param_clash"),
    ],
)
def test_static_rules(cfg, caller, rule):
    rej = check_static(cfg, info_of(), caller)
    assert rej is not None and rej.rule == rule
    assert "scale_kernel" in rej.reason and cfg.id in rej.reason


def test_static_rules_pass_a_good_config():
    assert check_static(Config({"BLOCK": 64}), info_of()) is None
    assert tritune.Space({"BLOCK": [64]}).configs() == [Config({"BLOCK": 64})]


def _checked_configs(s):
    """Every combination through ``Space.make`` and ``Config.__init__``'s checks (what ``all_configs`` did)."""
    import itertools

    names = list(s.params)
    return [s.make(dict(zip(names, combo))) for combo in itertools.product(*(s.params[n] for n in names))]


@pytest.mark.parametrize("params", [
    {"BLOCK": [64, 128], "num_warps": [4, 8], "GROUP": [1, 8], "num_stages": [2, 3], "maxnreg": [None, 128]},
    {"BLOCK": [64]},  # one meta-parameter
    {"num_warps": [2, 4], "num_ctas": [1, 2]},  # launch options only
    {"Z": [1.5, "x", None, True], "A": [0, -1]},  # names out of sorted order, every scalar type
])
def test_all_configs_are_the_checked_configs(params):
    """``all_configs`` checks each value once and builds configs unchecked: equal to the checked ones, with the
    same ids, hashes, value types and item order, and the same ``c[name]`` reads."""
    s = Space(params)
    got, ref = list(s.all_configs()), _checked_configs(s)
    assert got == ref and [c.id for c in got] == [c.id for c in ref] and [hash(c) for c in got] == [hash(c) for c in ref]
    for a, b in zip(got, ref):
        assert a.to_json() == b.to_json() and a.names == b.names
        assert [type(v) for v in a.kwargs.values()] == [type(v) for v in b.kwargs.values()]
        assert {n: a[n] for n in b.as_dict()} == b.as_dict() and a.get("maxnreg", "-") == b.get("maxnreg", "-")
        with pytest.raises(KeyError):
            a["nope"]


def test_all_configs_with_a_value_config_refuses_raises_as_before():
    np = pytest.importorskip("numpy")
    s = Space({"BLOCK": [np.int64(64), 128], "num_warps": [4]})
    assert list(s.all_configs()) == _checked_configs(s) and type(s.configs()[0]["BLOCK"]) is int
    with pytest.raises(ConfigError, match="num_warps must be an int"):
        list(Space({"BLOCK": [64], "num_warps": [4, 2.0]}).all_configs())
    with pytest.raises(ConfigError, match="has type object"):
        list(Space({"BLOCK": [64, object()]}).all_configs())


def test_check_static_all_is_check_static_of_each():
    """The once-per-distinct-value checks give every config ``check_static``'s own rejection (rule and reason)."""
    from tritune.space import check_static_all

    def fits(c):
        return c["BLOCK"] * c["num_warps"] <= 512

    def raises(c):
        return c["MISSING"] > 0 if c["BLOCK"] == 128 else True

    s = Space({"BLOCK": [64, 128, 256], "num_warps": [1, 3, 4, 64], "num_stages": [0, 2]},
              constraints=[fits, raises])  # fmt: skip
    cfgs = [*s.all_configs(), Config({"BLOK": 64}), Config({"BLOCK": 64}, maxnreg=300), Config({"BLOCK": 64})]
    for caller, space in (((), s), (("BLOCK",), s), ((), None)):
        got = check_static_all(cfgs, info_of(), caller, space)
        assert got == [check_static(c, info_of(), caller, space) for c in cfgs]
    assert {r.rule for r in check_static_all(cfgs, info_of(), (), s) if r} == {
        "num_warps", "num_stages", "unknown_param", "maxnreg", "constraint"}


def test_from_configs_keeps_the_first_of_equal_values_in_sorted_order():
    s = Space.from_configs([Config({"B": 2}, num_warps=8), Config({"B": 1}), Config({"B": 1.0}), Config({"B": True})])
    assert s.params == {"B": (1, 2), "num_warps": (4, 8), "num_stages": (3,), "num_ctas": (1,)}
    assert type(s.params["B"][0]) is int
