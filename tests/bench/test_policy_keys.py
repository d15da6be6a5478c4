"""The policy in the store key: entries of different policies are apart; old keys (no policy) read as cold.

The store here is the real SQLite store; no timer is involved."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tritune.bench import MeasurePolicy
from tritune.config import Config
from tritune.errors import ConfigError
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore
from tritune.store.keys import TuningKey

#: A key as stores wrote it before measurement policies existed (no "measure" field).
OLD_KEY_JSON = {
    "kernel": "rmsnorm", "source_hash": "abc", "triton_version": "3.6.0", "device": "NVIDIA H200",
    "capability": "cuda:90", "env_hash": "e3b0", "key": {"M": 64, "N": 2048}, "buckets": {"M": "pow2", "N": "exact"},
    "dtypes": ["torch.float16"],
}  # fmt: skip


def _key(measure: MeasurePolicy | str = MeasurePolicy.COLD) -> TuningKey:
    return TuningKey("rmsnorm", "abc", "3.6.0", "NVIDIA H200", "cuda:90", "e3b0", key=(("M", 64), ("N", 2048)),
                     buckets=(("M", "pow2"),), dtypes=("torch.float16",),
                     measure=measure)  # type: ignore[arg-type]  # a name is parsed too  # fmt: skip


def test_old_key_reads_as_cold_with_the_same_digest() -> None:
    old = TuningKey.from_json(OLD_KEY_JSON)
    assert old.measure is MeasurePolicy.COLD and old == _key()
    old_text = json.dumps(OLD_KEY_JSON, sort_keys=True, separators=(",", ":"))
    assert old.dumps() == old_text and old.digest == hashlib.sha256(old_text.encode()).hexdigest()
    assert "measure" not in _key("cold").to_json()


def test_policies_make_different_keys() -> None:
    keys = [_key(p) for p in MeasurePolicy]
    assert len({k.digest for k in keys}) == len(MeasurePolicy) == 4 and len(set(keys)) == 4  # served too
    warm = _key("warm")
    assert warm.to_json()["measure"] == "warm" and TuningKey.from_json(warm.to_json()) == warm
    assert warm.measure is MeasurePolicy.WARM  # the string is parsed into the enum


def test_bad_policy_in_a_key() -> None:
    with pytest.raises(ConfigError, match=r"TuningKey\(rmsnorm\).measure='hot'"):
        _key("hot")
    with pytest.raises(ConfigError, match="TuningKey JSON measure"):
        TuningKey.from_json({**OLD_KEY_JSON, "measure": "hot"})


def test_store_keeps_policies_apart_and_serves_old_entries_as_cold(tmp_path: Path) -> None:
    a, b = Config({"BLOCK": 1024}, num_warps=8), Config({"BLOCK": 2048}, num_warps=4)
    with SQLiteStore(tmp_path / "s.sqlite") as store:
        store.record(TuningKey.from_json(OLD_KEY_JSON), [CandidateRecord(a, Status.MEASURED, 0.005)], a)
        store.record(_key("graph"), [CandidateRecord(b, Status.MEASURED, 0.0018)], b)
        cold, graph, warm = store.lookup_winner(_key("cold")), store.lookup_winner(_key("graph")), store.lookup_winner(_key("warm"))
        assert cold is not None and cold.config == a
        assert graph is not None and graph.config == b
        assert warm is None  # a winner measured one way is not reused for another
        measures = sorted(e.key.measure.value for e in store.entries("rmsnorm"))
        assert measures == ["cold", "graph"]


def test_landscape_records_its_policy(tmp_path: Path) -> None:
    pts = [LandscapePoint(Config({"B": 1}), Status.MEASURED, 0.002)]
    ls = Landscape.from_points("rmsnorm", "NVIDIA H200", {"M": 64}, pts, measure="graph")
    ls.write(tmp_path / "l.json")
    back = Landscape.load(tmp_path / "l.json")
    assert back.measure is MeasurePolicy.GRAPH and back.to_json()["measure"] == "graph"
    old = ls.to_json()
    del old["measure"]
    assert Landscape.from_json(old).measure is MeasurePolicy.COLD  # recorded before policies: cold
    with pytest.raises(ConfigError, match=r"l\.json: measure=.hot."):
        Landscape.from_json({**old, "measure": "hot"}, source="l.json")
