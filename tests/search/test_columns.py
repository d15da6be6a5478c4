"""A search's start reads candidates by column (``tritune.config.columns``): the Space, the Grid and the legal list
it builds are the ones the per-config ``as_dict`` code built, value types and orders included, so the proposals
of every strategy stay the same (the transfer's start relies on them).

The references below are the previous code, kept here verbatim: a change to the fast paths that alters any value,
its type, an order or a position fails these tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritune.config import Config, columns
from tritune.search.grid import Grid, _order_key
from tritune.space import Constraint, Space
from tritune.space.space import _sort_key


def reference_space_params(cfgs: list[Config]) -> dict[str, list[Any]]:
    names: dict[str, dict[Any, None]] = {}
    for c in cfgs:
        for k, v in c.as_dict().items():
            names.setdefault(k, {}).setdefault(v, None)
    return {k: sorted(v, key=_sort_key) for k, v in names.items()}


def reference_grid(cfgs: list[Config]) -> tuple[dict[str, list[Any]], np.ndarray]:
    dicts = [c.as_dict() for c in cfgs]
    values: dict[str, list[Any]] = {}
    for name in sorted({k for d in dicts for k in d}):
        vals = sorted({d.get(name) for d in dicts}, key=_order_key)
        if len(vals) > 1:
            values[name] = vals
    pos = {n: {v: i for i, v in enumerate(vs)} for n, vs in values.items()}
    coords = np.array([[pos[n][d.get(n)] for n in values] for d in dicts], dtype=np.int64).reshape(len(dicts),
                                                                                                      len(values))  # fmt: skip
    return values, coords


def typed(d: dict[str, list[Any]]) -> list[tuple[str, list[tuple[type, Any]]]]:
    """Names in order, each value with its type (1, 1.0 and True are equal but not the same value here)."""
    return [(k, [(type(v), v) for v in vs]) for k, vs in d.items()]


# Values that compare equal across types (1 == 1.0 == True), None, strings: the cases a dict or set keeps by first.
VALUE = st.sampled_from([1, 1.0, True, 2, 2.5, 0, False, None, "a", "b", 64, 128])
CONFIG = st.builds(
    lambda kw, w, s, r: Config(kw, num_warps=w, num_stages=s, maxnreg=r),
    st.dictionaries(st.sampled_from(["BLOCK_M", "BLOCK_N", "B", "X"]), VALUE, min_size=0, max_size=3),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2, 3]),
    st.sampled_from([None, None, 128, 168]),
)
SAME_NAMES = st.builds(
    lambda vals, ws, rs: [Config({"BLOCK_M": a, "B": b}, num_warps=w, maxnreg=r) for (a, b), w, r in zip(vals, ws, rs)],
    st.lists(st.tuples(VALUE, VALUE), min_size=1, max_size=30),
    st.lists(st.sampled_from([2, 4, 8]), min_size=30, max_size=30),
    st.lists(st.sampled_from([None, 168]), min_size=30, max_size=30),
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(CONFIG, min_size=1, max_size=25), SAME_NAMES))
def test_space_grid_and_columns_are_the_per_config_codes(cfgs: list[Config]) -> None:
    cols = columns(cfgs)
    dicts = [c.as_dict() for c in cfgs]
    if cols is not None:  # one column per as_dict name, in its order; maxnreg None where a config leaves it unset
        assert len({tuple(c.names) for c in cfgs}) == 1
        assert list(cols) == list(dict.fromkeys(k for d in dicts for k in d))
        assert all([(type(x), x) for x in cols[k]] == [(type(d.get(k)), d.get(k)) for d in dicts] for k in cols)
    else:
        assert len({tuple(c.names) for c in cfgs}) > 1
    space = Space.from_configs(cfgs)
    assert typed({k: list(v) for k, v in space.params.items()}) == typed(reference_space_params(cfgs))
    assert space.configs() == [c for c in space.all_configs() if space.rejection(c) is None] == list(dict.fromkeys(cfgs))
    unique = list(dict.fromkeys(cfgs))
    grid, (values, coords) = Grid(unique), reference_grid(unique)
    assert typed(grid.values) == typed(values) and grid.names == list(values)
    assert grid.coords.dtype == coords.dtype and grid.coords.shape == coords.shape
    assert (grid.coords == coords).all()
    assert grid.lookup == {tuple(row): i for i, row in enumerate(coords.tolist())}


def test_columns_refuses_configs_of_different_names_and_reads_an_empty_list() -> None:
    assert columns([]) == {}
    assert columns([Config({"A": 1}), Config({"B": 1})]) is None
    assert columns([Config({"A": 1}), Config({"A": 1, "B": 2})]) is None
    assert columns([Config({"A": 1}, num_warps=2), Config({"A": 2}, maxnreg=128)]) == {
        "A": [1, 2], "num_warps": [2, 4], "num_stages": [3, 3], "num_ctas": [1, 1], "maxnreg": [None, 128]}  # fmt: skip


def test_a_listed_space_with_constraints_still_asks_them() -> None:
    """``configs()`` skips :meth:`Space.rejection` only for a listed space without constraints."""
    cfgs = [Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128) for w in (2, 4)]
    big = Constraint("big", lambda c: c["BLOCK"] >= 64)
    space = Space.from_configs(cfgs, constraints=[big])
    assert space.configs() == [c for c in cfgs if c["BLOCK"] >= 64]
    assert Space.from_configs(cfgs).configs() == cfgs


@pytest.mark.parametrize("strategy", ["surrogate", "neighbourhood", "random"])
def test_a_strategy_proposes_the_same_from_a_space_built_anew(strategy: str) -> None:
    """Two searches of one list, each from its own Space and Grid, told the same SYNTHETIC times, ask the same."""
    from tritune.outcome import Status
    from tritune.search import get

    cfgs = [Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s, maxnreg=r)
            for m in (32, 64, 128) for n in (32, 64, 128) for w in (2, 4, 8) for s in (2, 3) for r in (None, 168)]  # fmt: skip

    def run() -> list[list[str]]:
        s = get(strategy, Space.from_configs(list(cfgs)), seed=3)
        out = []
        for _ in range(6):
            batch = s.ask(5)
            out.append([c.id for c in batch])
            for c in batch:  # SYNTHETIC landscape
                s.tell(c, Status.MEASURED, 1.0 + abs(c["BLOCK_M"] - 64) / 64 + abs(c["BLOCK_N"] - 128) / 128
                       + 0.01 * c.num_warps + 0.001 * (c.maxnreg is None))  # fmt: skip
        return out

    assert run() == run()
