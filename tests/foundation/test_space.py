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
