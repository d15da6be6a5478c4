import json
import pickle

import pytest
import triton
from hypothesis import given
from hypothesis import strategies as st

from tritune import Config, ConfigError
from tritune.config import as_config

names = st.from_regex(r"[A-Z][A-Z_0-9]{0,7}", fullmatch=True).filter(
    lambda s: s not in ("num_warps", "num_stages", "num_ctas", "maxnreg")
)
scalars = st.one_of(st.integers(-(2**40), 2**40), st.booleans(), st.text(max_size=5), st.none(),
                    st.floats(allow_nan=False, allow_infinity=False))
configs = st.builds(
    Config,
    st.dictionaries(names, scalars, max_size=4),
    num_warps=st.sampled_from([1, 2, 4, 8, 16, 32]),
    num_stages=st.integers(1, 6),
    num_ctas=st.sampled_from([1, 2]),
    maxnreg=st.one_of(st.none(), st.integers(16, 255)),
)


@given(configs)
def test_json_round_trip(c):
    assert Config.from_json(json.loads(json.dumps(c.to_json()))) == c
    assert Config.from_json(c.dumps()) == c
    assert Config.from_json(c.to_json()).id == c.id


@given(configs)
def test_triton_round_trip(c):
    t = c.to_triton()
    assert isinstance(t, triton.Config)
    back = Config.from_triton(t)
    assert back == c and hash(back) == hash(c)


@given(configs)
def test_pickle_round_trip(c):
    assert pickle.loads(pickle.dumps(c)) == c


@given(st.dictionaries(names, st.integers(), max_size=4))
def test_equal_regardless_of_kwargs_order(d):
    a = Config(d)
    b = Config(dict(reversed(list(d.items()))))
    assert a == b and hash(a) == hash(b) and a.id == b.id


def test_id_is_readable_and_stable():
    assert Config({"BLOCK": 1024}, num_warps=8, num_stages=3).id == "BLOCK=1024,num_warps=8,num_stages=3"
    # a string value is quoted: an illegal "64" never shares the id (nor a table's bit group) of the int 64
    assert Config({"BLOCK": "64"}).id == "BLOCK='64',num_warps=4,num_stages=3" != Config({"BLOCK": 64}).id
    assert Config({"M": "None"}).id != Config({"M": None}).id and Config({"M": "a,b=1"}).id.startswith("M='a,b=1'")
    assert Config({"BN": 64, "BM": 128}, num_ctas=2, maxnreg=128).id == (
        "BM=128,BN=64,num_warps=4,num_stages=3,num_ctas=2,maxnreg=128"
    )


def test_old_serialized_form_still_reads():
    # The JSON shape written by tritune 0.1's first releases: must keep reading.
    c = Config.from_json({"kwargs": {"BLOCK": 256}, "num_warps": 2, "num_stages": 1})
    assert c == Config({"BLOCK": 256}, num_warps=2, num_stages=1)
    assert c.num_ctas == 1 and c.maxnreg is None


def test_frozen_and_kwargs_copy():
    c = Config({"BLOCK": 64})
    with pytest.raises(AttributeError):
        c.num_warps = 8  # type: ignore[misc]
    c.kwargs["BLOCK"] = 1
    assert c.kwargs == {"BLOCK": 64}
    assert c.replace(num_warps=8, BLOCK=128) == Config({"BLOCK": 128}, num_warps=8)


@pytest.mark.parametrize(
    "kwargs, opts, match",
    [
        ({"num_warps": 4}, {}, "launch option"),
        ({"BLOCK": [1, 2]}, {}, "int, float, bool, str or None"),
        ({"1BAD": 1}, {}, "identifier"),
        ({}, {"num_warps": 4.0}, "num_warps must be an int"),
    ],
)
def test_bad_configs_are_clear(kwargs, opts, match):
    with pytest.raises(ConfigError, match=match):
        Config(kwargs, **opts)


def test_from_json_rejects_unknown_fields():
    with pytest.raises(ConfigError, match="unknown config field"):
        Config.from_json({"kwargs": {}, "num_wraps": 4})


def test_as_config_accepts_triton_and_json():
    assert as_config(triton.Config({"B": 1}, num_warps=2)) == Config({"B": 1}, num_warps=2)
    assert as_config({"kwargs": {"B": 1}}) == Config({"B": 1})
    with pytest.raises(ConfigError):
        as_config(42)


@given(configs, st.sampled_from(["num_warps", "num_stages", "num_ctas", "maxnreg", "NOPE"]))
def test_item_reads_and_cached_texts_match_the_dict_and_fresh_texts(c, other):
    """``c[name]``/``c.get`` read without building ``as_dict()``, ``id``/``dumps()`` are computed once: both must
    say exactly what the dict and a fresh computation say (``maxnreg`` unset is no key, as in the dict)."""
    d = c.as_dict()
    for name in [*c.kwargs, other]:
        if name in d:
            assert c[name] == d[name] and c.get(name, "x") == d[name]
        else:
            with pytest.raises(KeyError):
                c[name]
            assert c.get(name, "x") == "x"
    first_id, first_text = c.id, c.dumps()
    assert c.id is first_id and c.dumps() is first_text  # cached
    fresh = Config(c.kwargs, c.num_warps, c.num_stages, c.num_ctas, c.maxnreg)
    assert fresh.dumps() == first_text and fresh.id == first_id
    assert json.dumps(c.to_json(), sort_keys=True, separators=(",", ":")) == first_text
    assert pickle.loads(pickle.dumps(c)).dumps() == first_text
