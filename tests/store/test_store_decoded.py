"""The SQLite store parses a stored config text once (``_config_of``) and reads a transfer's times without decoding
the records (``SQLiteStore.times``): a record written later, by this store, another store or another process, with
the same stamp, is what every later read returns, and the memo stays bounded.

Every record here is SYNTHETIC (made-up times written through the store API); no kernel runs."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from tritune.config import Config
from tritune.engine import plan as searching
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore
from tritune.store.keys import TuningKey
from tritune.store.sqlite import DECODED_CONFIGS, _config_of

LEGAL = [Config({"BLOCK": b}, num_warps=w) for b in (64, 128, 256) for w in (2, 4, 8)]


def key(n: int) -> TuningKey:
    return TuningKey("scale_kernel", "src", "3.6.0", "FAKE GPU", "cuda:90", "env", key=(("n", n),))


def rec(c: Config, ms: float | None, *, at: float = 100.0, meas: dict | None = None,
        status: Status = Status.MEASURED) -> CandidateRecord:  # fmt: skip
    return CandidateRecord(c, status, ms, None if ms is not None else "FAKE failure", meas, {"by": "FAKE"}, at)


def write_in_child(path: str, ms: float) -> None:
    st = SQLiteStore(path)
    st.record(key(1000), [rec(LEGAL[0], ms)])
    st.close()


@pytest.mark.parametrize("writer", ["same store", "another store", "another process"])
def test_a_record_written_after_its_row_was_decoded_is_read_anew(writer: str, tmp_path: Path) -> None:
    """The record's stamp (``recorded_at``) and its config's text stay: only the content can tell the rows apart,
    and the new one is what every read returns, through ``candidates``, ``times`` and a transfer's neighbours."""
    path = tmp_path / "s.db"
    st = SQLiteStore(path)
    meas = {"median_ms": 1.0, "samples": [1.0, 1.01]}
    st.record(key(1000), [rec(c, 1.0 + i / 10, meas=meas if i == 0 else None) for i, c in enumerate(LEGAL)], LEGAL[0])
    before = st.candidates(key(1000), LEGAL)
    assert st.candidates(key(1000), LEGAL) == before and len(before) == len(LEGAL)  # filled, then served
    first = {r.config: r for r in before}[LEGAL[0]]
    near = searching.neighbours(st, key(2000), LEGAL)
    assert near[0].times[LEGAL[0]] == 1.0 and first.measurement is not None
    if writer == "same store":
        st.record(key(1000), [rec(LEGAL[0], 0.5, meas=meas)])
    elif writer == "another store":
        other = SQLiteStore(path)
        other.record(key(1000), [rec(LEGAL[0], 0.5, meas=meas)])
        other.close()
    else:
        p = mp.get_context("spawn").Process(target=write_in_child, args=(str(path), 0.5))
        p.start()
        p.join(60)
        assert p.exitcode == 0
    after = {r.config: r for r in st.candidates(key(1000), LEGAL)}
    assert after[LEGAL[0]].time_ms == 0.5 and after[LEGAL[0]].recorded_at == 100.0
    assert (after[LEGAL[0]].measurement is None) == (writer == "another process")
    assert {c: r for c, r in after.items() if c != LEGAL[0]} == {r.config: r for r in before if r.config != LEGAL[0]}
    assert searching.neighbours(st, key(2000), LEGAL)[0].times[LEGAL[0]] == 0.5
    assert st.times(key(1000), LEGAL) == {r.config: r.time_ms for r in st.candidates(key(1000), LEGAL)}
    # a failure written over a measurement: another status, no time
    st.record(key(1000), [rec(LEGAL[0], None, status=Status.LAUNCH_FAILED)])
    (got,) = st.candidates(key(1000), [LEGAL[0]])
    assert got.status is Status.LAUNCH_FAILED and got.time_ms is None
    assert LEGAL[0] not in {c for c, t in searching.neighbours(st, key(2000), LEGAL)[0].times.items() if t is not None}


def test_records_and_times_are_the_same_with_the_texts_parsed_anew_or_remembered(tmp_path: Path) -> None:
    st = SQLiteStore(tmp_path / "s.db")
    meas = {"median_ms": 1.0, "samples": [1.0, 1.01], "extra": {"timer": "FAKE"}}
    st.record(key(1000), [rec(c, 1.0 + i, meas=meas) for i, c in enumerate(LEGAL)])
    warm, warm_times = st.candidates(key(1000)), st.times(key(1000), LEGAL)
    _config_of.cache_clear()
    cold = st.candidates(key(1000))
    assert warm == cold and st.candidates(key(1000)) == cold
    _config_of.cache_clear()
    assert st.times(key(1000), LEGAL) == warm_times == {r.config: r.time_ms for r in cold}
    with pytest.raises(TypeError):
        cold[0].measurement["median_ms"] = 2.0  # type: ignore[index]
    assert st.candidates(key(1000))[0].measurement["median_ms"] == 1.0  # type: ignore[index]


def test_the_parsed_config_texts_are_bounded(tmp_path: Path) -> None:
    """More config texts than the memo keeps: it holds at most ``DECODED_CONFIGS`` of them, every read still right."""
    many = [Config({"BLOCK": b}, num_warps=w) for b in range(1, DECODED_CONFIGS // 4 + 200) for w in (1, 2, 4, 8)]
    assert len(many) > DECODED_CONFIGS
    st = SQLiteStore(tmp_path / "m.db")
    st.record(key(1000), [rec(c, 1.0 + i / 10_000) for i, c in enumerate(many)])
    want = {c: 1.0 + i / 10_000 for i, c in enumerate(many)}
    assert {r.config: r.time_ms for r in st.candidates(key(1000))} == want
    assert st.times(key(1000), many) == want
    assert _config_of.cache_info().maxsize == DECODED_CONFIGS and _config_of.cache_info().currsize <= DECODED_CONFIGS
