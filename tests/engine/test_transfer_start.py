"""A transfer's start: what ``searching.neighbours`` reads from the store, and that it is what it was.

The store's records are SYNTHETIC (made-up times written through the store API); no kernel runs.
"""

from __future__ import annotations

from typing import Any

import pytest

import tritune
from tritune.engine import plan as searching
from tritune.outcome import Status
from tritune.search import KeyResults
from tritune.store import CandidateRecord, MemoryStore, SQLiteStore
from tritune.store.keys import TuningKey

LEGAL = [tritune.Config({"BLOCK": b}, num_warps=w, num_stages=s)
         for b in (64, 128, 256) for w in (2, 4, 8) for s in (2, 3)]  # fmt: skip
# What the static rules rejected: most records of a key of a large space (4,912 of 4,947 in the search benchmark).
ILLEGAL = [tritune.Config({"BLOCK": b}, num_warps=w, num_stages=s) for b in (4096, 8192) for w in (1, 16, 32)
           for s in range(1, 40)]  # fmt: skip


def key(n: int, device: str = "FAKE GPU") -> TuningKey:
    return TuningKey("scale_kernel", "src", "3.6.0", device, "cuda:90", "env", key=(("n", n),))


class CountingSQLite(SQLiteStore):
    """A SQLite store that counts the candidate records it parses and the rows it reads past their config text."""

    parsed = 0
    rows = 0

    @staticmethod
    def _cand(row: tuple[Any, ...]) -> CandidateRecord:
        CountingSQLite.parsed += 1
        return SQLiteStore._cand(row)

    @staticmethod
    def _wanted(conn: Any, key: TuningKey, asked: list[tritune.Config], cols: str) -> list[tuple[Any, ...]]:
        out = SQLiteStore._wanted(conn, key, asked, cols)
        CountingSQLite.rows += len(out)
        return out


def fill(st: Any) -> None:
    """Keys of one kernel, SYNTHETIC records: two qualifying neighbours, and keys that must be left out."""
    illegal = [CandidateRecord(c, Status.ILLEGAL, None, "FAKE static rule") for c in ILLEGAL]
    times = {c: 1.0 + 0.01 * i for i, c in enumerate(LEGAL)}
    # n=1000: 10 measured, one launch failure, the tie rule's pick a hair slower than the smallest median
    recs = [CandidateRecord(c, Status.MEASURED, times[c], None) for c in LEGAL[:10]]
    recs.append(CandidateRecord(LEGAL[10], Status.LAUNCH_FAILED, None, "FAKE launch failure"))
    st.record(key(1000), recs + illegal, LEGAL[1])
    # n=4000: its winner is not legal here (a config the new key's space lacks)
    odd = tritune.Config({"BLOCK": 32}, num_warps=1, num_stages=1)
    st.record(key(4000), [CandidateRecord(c, Status.MEASURED, times[c] * 2, None) for c in LEGAL[4:8]]
              + [CandidateRecord(odd, Status.MEASURED, 0.5, None)] + illegal, odd)  # fmt: skip
    st.record(key(3000, device="OTHER GPU"), [CandidateRecord(LEGAL[0], Status.MEASURED, 1.0, None)], LEGAL[0])
    st.record(key(5000), illegal)  # nothing measured
    st.record(key(2000), [CandidateRecord(LEGAL[3], Status.MEASURED, 0.9, None), *illegal], LEGAL[3])  # itself


def from_snapshot(store: Any, k: TuningKey, legal: list[tritune.Config]) -> list[KeyResults]:
    """The neighbours as they were read before: every record of every key of the kernel (``store.snapshot``)."""
    wanted = set(legal)
    out = []
    same = ("source_hash", "triton_version", "device", "capability", "env_hash", "measure", "dtypes")
    for other, win, recs in store.snapshot(k.kernel):
        if other == k or any(getattr(other, f) != getattr(k, f) for f in same):
            continue
        times = {r.config: (r.time_ms if r.status is Status.MEASURED else None) for r in recs if r.config in wanted}
        best = getattr(win, "config", None)
        if any(t is not None for t in times.values()):
            out.append(KeyResults(dict(other.key), times, best if best in wanted else None))
    return out


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_neighbours_read_only_the_legal_records_and_say_what_the_snapshot_said(kind, tmp_path):
    st: Any = CountingSQLite(tmp_path / "s.db") if kind == "sqlite" else MemoryStore()
    fill(st)
    CountingSQLite.parsed = CountingSQLite.rows = 0
    near = searching.neighbours(st, key(2000), LEGAL)
    parsed, rows = CountingSQLite.parsed, CountingSQLite.rows
    assert near == from_snapshot(st, key(2000), LEGAL)
    assert [nb.key for nb in near] and {nb.key["n"] for nb in near} == {1000, 4000}
    (a,) = [nb for nb in near if nb.key["n"] == 1000]
    assert a.best == LEGAL[1] and a.times[LEGAL[10]] is None and len(a.times) == 11
    (b,) = [nb for nb in near if nb.key["n"] == 4000]
    assert b.best is None and set(b.times) == set(LEGAL[4:8])
    if kind == "sqlite":  # the 2 x 234 illegal records (and the left-out keys' records) are never read past their
        # config text; the legal ones are read for their times (Store.times), not decoded as records
        assert rows == 11 + 4 and parsed == 0, (rows, parsed)
    # the transfer starts from them exactly as before: the same first batches and info
    p = searching.plan("surrogate", None, len(LEGAL))
    got, info = searching.make_driver(p, LEGAL, width=4, key_values={"n": 2000}, near=near)
    ref, ref_info = searching.make_driver(p, LEGAL, width=4, key_values={"n": 2000},
                                          near=from_snapshot(st, key(2000), LEGAL))  # fmt: skip
    assert info == ref_info and got.next_batch() == ref.next_batch()


def test_the_store_writes_the_same_json_text_and_stamps_as_before(tmp_path):
    """The write path serializes each record once (a searched key writes ~5,000, mostly illegal): the stored text
    is still the records' ``to_json`` text, and a stamped record is the record with its time, checked and frozen."""
    import sqlite3

    from tritune.store.sqlite import _dumps

    meas = {"median_ms": 1.0, "samples": [1.0, 1.25], "extra": {"timer": "FAKE"}}  # SYNTHETIC
    recs = [CandidateRecord(LEGAL[0], Status.MEASURED, 1.0, None, meas, {"by": "FAKE"}),
            CandidateRecord(LEGAL[1], Status.ILLEGAL, None, "FAKE rule")]  # fmt: skip
    st = SQLiteStore(tmp_path / "w.db")
    st.record(key(1000), recs, LEGAL[0])
    with sqlite3.connect(tmp_path / "w.db") as conn:
        rows = dict(((c, (m, p)) for c, m, p in conn.execute("SELECT config, measurement, provenance FROM candidates")))
    for r in recs:
        j = r.to_json()
        assert rows[r.config.dumps()] == (None if r.measurement is None else _dumps(j["measurement"]),
                                          _dumps(j["provenance"]))  # fmt: skip
    stamped = recs[0].stamped(123.0)
    assert stamped.recorded_at == 123.0 and recs[0].recorded_at is None and stamped.measurement is recs[0].measurement
    assert stamped == CandidateRecord(LEGAL[0], Status.MEASURED, 1.0, None, meas, {"by": "FAKE"}, 123.0)
    assert st.candidates(key(1000)) == sorted((r.stamped(st.candidates(key(1000))[0].recorded_at) for r in recs),
                                              key=lambda r: r.config.id)  # fmt: skip


def test_sqlite_candidates_of_some_configs_read_only_those_rows_in_parts(tmp_path):
    """``candidates(key, configs)`` reads the wanted rows only, in parts of 500 ids: the same records as a filter
    of every record, for more than one part."""
    many = [tritune.Config({"BLOCK": b}, num_warps=w, num_stages=s) for b in range(1, 101) for w in (1, 2, 4)
            for s in (1, 2, 3, 4)]  # 1,200 configs  # fmt: skip
    st = CountingSQLite(tmp_path / "m.db")
    st.record(key(1000), [CandidateRecord(c, Status.MEASURED, 1.0 + i / 1000, None) for i, c in enumerate(many)])
    never = tritune.Config({"BLOCK": 4096}, num_warps=8)
    wanted = [*many[100:800], never]  # 700 recorded, one never recorded
    CountingSQLite.parsed = 0
    got = st.candidates(key(1000), wanted)
    assert CountingSQLite.parsed == 700
    every = st.candidates(key(1000))
    assert got == [r for r in every if r.config in set(wanted)] and len(got) == 700
    assert st.missing(key(1000), [never, many[1]]) == [never]


def test_tune_screens_and_writes_each_key_with_the_objects_alive_before_it_frozen(monkeypatch, tmp_path):
    """``tune`` runs each key inside ``old_objects_frozen``: the static screen and the store write see a frozen
    heap, and nothing stays frozen afterwards. FAKE compile workers, SYNTHETIC replayed times, the interpreter."""
    import gc
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ranks"))
    import session_workers as sw

    from fake_compiling import FakeCompiling
    from tritune.engine import precompile as pc
    from tritune.engine.options import TuneOptions
    from tritune.offline import tune as session
    from tritune.store import open_store

    monkeypatch.setattr(pc, "start_precompile", lambda jit, todo, *a: FakeCompiling(list(todo), {}))
    seen: list[tuple[str, int]] = []
    screen = session.screen_static
    store = open_store(str(tmp_path / "s.db"))
    record = store.record

    def counting_screen(*a, **k):  # type: ignore[no-untyped-def]
        seen.append(("screen", gc.get_freeze_count()))
        return screen(*a, **k)

    def counting_record(*a, **k):  # type: ignore[no-untyped-def]
        seen.append(("record", gc.get_freeze_count()))
        return record(*a, **k)

    monkeypatch.setattr(session, "screen_static", counting_screen)
    monkeypatch.setattr(store, "record", counting_record)  # the engine's one store write per key
    assert gc.get_freeze_count() == 0
    opts = TuneOptions(jobs=2, race=sw.OPTS)
    wl = sw.gelu()
    res = session.tune([wl], keys=[{"n": 4096}, {"n": 2048}], ceilings=False, options=opts, store=store,
                       timer=sw.replay_timer(wl, 0), target="sm90", device="cpu", group=None)  # fmt: skip
    assert [w for w, _ in seen] == ["screen", "record", "screen", "record"] and all(n > 0 for _, n in seen)
    assert gc.get_freeze_count() == 0 and all(w.extra["winner"] for w in res.workloads)


@pytest.mark.parametrize("searched", [True, False])
def test_a_searched_key_does_not_store_the_statically_illegal_configs_an_exhaustive_one_does(searched, monkeypatch,
                                                                                             tmp_path):
    """A searched key's store write leaves out the configs the static rules rejected (``session.record``): the tune
    result keeps them, the search resumes from the legal records, and an exhaustive key still writes them all.
    FAKE compile workers, SYNTHETIC replayed times, the interpreter."""
    import dataclasses
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ranks"))
    import session_workers as sw

    from fake_compiling import FakeCompiling
    from tritune.engine import precompile as pc
    from tritune.engine.options import TuneOptions
    from tritune.offline.tune import tune
    from tritune.store import open_store

    monkeypatch.setattr(pc, "start_precompile", lambda jit, todo, *a: FakeCompiling(list(todo), {}))
    base = sw.gelu()
    illegal = [tritune.Config({"BLOCK": 1024}, num_warps=3), tritune.Config({"BLOK": 1024})]  # num_warps, name
    wl = dataclasses.replace(base, configs=[*base.candidates(), *illegal])
    store = open_store(str(tmp_path / "s.db"))
    search = {"search": "random", "budget": 2} if searched else {"sweep": True}
    opts = TuneOptions(jobs=2, race=sw.OPTS, **search)  # type: ignore[arg-type]
    res = tune([wl], keys=[sw.KEY], ceilings=False, options=opts, store=store, timer=sw.replay_timer(base, 0), target="sm90",
               device="cpu", group=None)  # fmt: skip
    (w,) = res.workloads
    assert {c.config: c.status for c in w.candidates if c.config in illegal} == dict.fromkeys(illegal, Status.ILLEGAL)
    (entry,) = store.entries()
    stored = {r.config: r for r in store.candidates(entry.key)}
    if searched:
        assert not set(illegal) & set(stored) and len(stored) == 2 and entry.n_candidates == 2
        again = tune([wl], keys=[sw.KEY], ceilings=False, options=TuneOptions(jobs=2, race=sw.OPTS, search="random",
                                                              budget=4), store=store, timer=sw.replay_timer(base, 0),
                     target="sm90", device="cpu", group=None)  # fmt: skip
        assert again.workloads[0].extra["search"]["resumed"] == 2 and len(store.candidates(entry.key)) == 4
    else:
        assert {c: stored[c].status for c in illegal} == dict.fromkeys(illegal, Status.ILLEGAL)
        assert len(stored) == 6 and store.missing(entry.key, wl.candidates()) == []


def test_sqlite_candidates_of_many_configs_from_few_rows_match_by_text(tmp_path):
    """Few stored rows against many asked configs parse the rows instead of writing every asked config's text
    (``_wanted_rows``): the same rows as matching the texts. ``B=1.0`` is not the text of ``B=1`` though the configs
    are equal, and a row whose text is not a config's matches nothing. SYNTHETIC records."""
    import sqlite3

    from tritune.store.sqlite import _wanted_rows

    asked = [tritune.Config({"B": b}, num_warps=w) for b in range(1, 51) for w in (1, 2, 4, 8)]  # 200
    one_float = tritune.Config({"B": 1.0}, num_warps=1)
    assert one_float == asked[0] and one_float.dumps() != asked[0].dumps()
    recs = [CandidateRecord(c, Status.MEASURED, 1.0, None) for c in (asked[5], asked[77], one_float)]
    recs.append(CandidateRecord(tritune.Config({"C": 3}), Status.MEASURED, 2.0, None))  # not asked
    st = SQLiteStore(tmp_path / "f.db")
    st.record(key(1000), recs)
    with sqlite3.connect(tmp_path / "f.db") as conn:
        rows = conn.execute("SELECT rowid, config FROM candidates").fetchall()
    rows.append((10_000, '{"kwargs": not json'))
    by_text = [i for i, c in rows if c in {a.dumps() for a in asked}]
    assert 4 * len(rows) <= len(asked) and _wanted_rows(rows, asked) == by_text and len(by_text) == 2
    assert _wanted_rows(rows, [*asked, one_float]) == [i for i, c in rows if c in {a.dumps() for a in [*asked, one_float]}]
    assert [r.config for r in st.candidates(key(1000), asked)] == sorted([asked[5], asked[77]], key=lambda c: c.id)
    assert _wanted_rows([], asked) == []


def test_a_transfer_proposes_the_same_whether_its_rows_are_decoded_anew_remembered_or_in_memory(tmp_path):
    """The transfer's start reads its neighbours' times without decoding their records (``SQLiteStore.times``), their
    config texts from the memo once parsed (``_config_of``), and builds its space and grid by column
    (``tritune.config.columns``): every batch of a whole search, and its info, are the ones of a start that parses
    every text (memo cleared) and of one from a MemoryStore holding the same records. SYNTHETIC records and times."""
    from tritune.store.sqlite import _config_of

    def run(store: Any) -> tuple[list[list[str]], dict[str, Any]]:
        near = searching.neighbours(store, key(2000), LEGAL)
        p = searching.plan("surrogate", 24, len(LEGAL))
        assert p is not None
        driver, info = searching.make_driver(p, LEGAL, width=4, key_values={"n": 2000}, near=near)
        out = []
        while not driver.done:
            batch = driver.next_batch()
            if not batch:
                break
            out.append([c.id for c in batch])
            for c in batch:  # SYNTHETIC: BLOCK=128, 4 warps fastest
                driver.record(c, 1.0 + abs(c["BLOCK"] - 128) / 128 + 0.01 * abs(c.num_warps - 4) + 0.001 * c.num_stages)
        return out, info

    sq, mem = SQLiteStore(tmp_path / "p.db"), MemoryStore()
    fill(sq)
    fill(mem)
    _config_of.cache_clear()
    anew = run(sq)
    assert _config_of.cache_info().currsize > 0
    remembered = run(sq)
    assert anew == remembered == run(mem)
    assert len(anew[0]) > 2 and anew[1]["transfer"]["keys"]
