"""The Store contract as a pytest suite every backend must pass (like optuna's ``pytest_storages``).

Subclass :class:`StoreContract` in a test module and say how to make a fresh, empty store::

    from tritune.store import MemoryStore
    from tritune.testing.store_contract import StoreContract

    class TestMemoryStore(StoreContract):
        def make_store(self, tmp_path):
            return MemoryStore()

The class name does not start with ``Test``, so pytest collects only the subclasses. The suite
checks what :mod:`tritune.store.base` promises and that every backend behaves the same way;
cross-process behaviour of file stores is tested by each backend itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tritune.config import Config
from tritune.errors import ConfigError, StoreError, StoreSchemaError
from tritune.outcome import Status
from tritune.store.base import Store
from tritune.store.keys import TuningKey
from tritune.store.records import CandidateRecord, Write

A = Config({"BLOCK": 1024}, num_warps=4)
B = Config({"BLOCK": 512}, num_warps=2)
C = Config({"BLOCK": 256}, num_warps=1, num_stages=1)


def make_test_key(kernel: str = "gelu", n: int = 4096, **changes: Any) -> TuningKey:
    """A TuningKey with fixed made-up device fields, for tests that need no GPU."""
    fields: dict[str, Any] = dict(
        kernel=kernel, source_hash="src-" + kernel, triton_version="3.6.0", device="NVIDIA H200",
        capability="cuda:90", env_hash="0" * 16, key=(("n", n),), buckets=(("n", "pow2"),),
        dtypes=("torch.float32", "torch.float32"),
    )  # fmt: skip
    fields.update(changes)
    return TuningKey(**fields)


def measured(cfg: Config, ms: float, **kw: Any) -> CandidateRecord:
    return CandidateRecord(cfg, Status.MEASURED, ms, **kw)


class StoreContract:
    """Behaviour every :class:`~tritune.store.base.Store` backend must show."""

    def make_store(self, tmp_path: Path) -> Store:
        raise NotImplementedError("a StoreContract subclass says how to make an empty store")

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        s = self.make_store(tmp_path)
        yield s
        s.close()

    # -- identity and per-candidate storage ------------------------------------------------------
    def test_empty_store_has_nothing(self, store: Store) -> None:
        k = make_test_key()
        assert store.lookup_winner(k) is None
        assert store.candidates(k) == []
        assert store.entries() == [] and store.kernels() == []
        assert store.check() == []

    def test_record_and_read_back(self, store: Store) -> None:
        k = make_test_key()
        rec = measured(A, 0.25, reason=None, measurement={"samples": [0.25, 0.26]}, provenance={"host": "x"})
        win = store.record(k, [rec, CandidateRecord(B, Status.ILLEGAL, reason="BLOCK too big")], winner=A)
        assert win is not None and win.config == A and win.time_ms == 0.25 and win.key == k
        assert store.lookup_winner(k) == win
        got = {r.config: r for r in store.candidates(k)}
        assert set(got) == {A, B}
        assert got[A].measurement == {"samples": (0.25, 0.26)} and got[A].provenance == {"host": "x"}
        assert got[B].status is Status.ILLEGAL and got[B].time_ms is None and got[B].reason == "BLOCK too big"
        assert got[A].recorded_at is not None

    def test_candidates_sorted_and_filtered(self, store: Store) -> None:
        k = make_test_key()
        store.record(k, [measured(c, t) for c, t in ((A, 1.0), (B, 2.0), (C, 3.0))])
        assert [r.config for r in store.candidates(k)] == sorted([A, B, C], key=lambda c: c.id)
        assert [r.config for r in store.candidates(k, [C, Config({"BLOCK": 8})])] == [C]

    def test_times_are_what_candidates_say(self, store: Store) -> None:
        """``times`` (a transfer's read of a tuned key) agrees with ``candidates``, after a rewrite too."""
        k = make_test_key()
        store.record(k, [measured(A, 1.0), measured(B, 2.5), CandidateRecord(C, Status.LAUNCH_FAILED, reason="x")])
        never = Config({"BLOCK": 8})
        got = store.times(k, [C, A, never])
        assert list(got.items()) == [(r.config, r.time_ms) for r in store.candidates(k, [C, A, never])]
        assert got == {A: 1.0, C: None} and isinstance(got[A], float)
        store.record(k, [CandidateRecord(A, Status.LAUNCH_FAILED, reason="x"), measured(C, 0.5)])
        assert store.times(k, [A, B, C]) == {A: None, B: 2.5, C: 0.5} and store.times(make_test_key(n=8192), [A]) == {}

    def test_adding_a_config_measures_only_the_new_one(self, store: Store) -> None:
        k = make_test_key()
        store.record(k, [measured(A, 1.0), measured(B, 2.0)], winner=A)
        assert store.missing(k, [A, B, C]) == [C]
        w = store.record(k, [measured(C, 0.5)], winner=C)
        assert w is not None and w.config == C and w.time_ms == 0.5
        assert {r.config: r.time_ms for r in store.candidates(k)} == {A: 1.0, B: 2.0, C: 0.5}

    def test_winner_none_keeps_the_stored_winner(self, store: Store) -> None:
        k = make_test_key()
        store.record(k, [measured(A, 1.0)], winner=A)
        w = store.record(k, [measured(B, 2.0)])
        assert w is not None and w.config == A

    def test_rerecord_replaces_the_candidate(self, store: Store) -> None:
        k = make_test_key()
        store.record(k, [measured(A, 1.0)])
        store.record(k, [CandidateRecord(A, Status.LAUNCH_FAILED, reason="out of resources")])
        [r] = store.candidates(k)
        assert r.status is Status.LAUNCH_FAILED and r.time_ms is None

    def test_keys_differing_in_any_field_are_separate(self, store: Store) -> None:
        base = make_test_key()
        variants = [
            make_test_key(source_hash="edited"), make_test_key(triton_version="3.7.0"),
            make_test_key(device="NVIDIA H100"), make_test_key(capability="cuda:80"),
            make_test_key(env_hash="1" * 16), make_test_key(n=8192), make_test_key(buckets=(("n", "exact"),)),
            make_test_key(dtypes=("torch.float16", "torch.float16")),
        ]  # fmt: skip
        store.record(base, [measured(A, 1.0)], winner=A)
        for v in variants:
            assert v != base and v.digest != base.digest
            assert store.lookup_winner(v) is None and store.candidates(v) == []
        assert store.lookup_winner(make_test_key()) is not None  # an equal key built anew finds it

    def test_ties_are_kept(self, store: Store) -> None:
        k = make_test_key()
        w = store.record(k, [measured(A, 1.0), measured(B, 1.001)], winner=A, ties=[B])
        assert w is not None and w.ties == (B,)

    # -- refused writes are atomic ---------------------------------------------------------------
    def test_winner_without_candidate_is_refused_and_nothing_written(self, store: Store) -> None:
        k = make_test_key()
        with pytest.raises(StoreError, match=r"BLOCK=256.*no candidate record"):
            store.record(k, [measured(A, 1.0)], winner=C)
        assert store.candidates(k) == [] and store.lookup_winner(k) is None

    def test_failed_candidate_cannot_win(self, store: Store) -> None:
        k = make_test_key()
        with pytest.raises(StoreError, match="cannot win, its status is illegal"):
            store.record(k, [CandidateRecord(A, Status.ILLEGAL, reason="r")], winner=A)
        assert store.entries() == []

    def test_record_many_is_all_or_nothing(self, store: Store) -> None:
        good = Write(make_test_key(n=1), (measured(A, 1.0),), A)
        bad = Write(make_test_key(n=2), (measured(A, 1.0),), B)
        with pytest.raises(StoreError):
            store.record_many([good, bad])
        assert store.entries() == []
        store.record_many([good])
        assert store.lookup_winner(make_test_key(n=1)) is not None

    def test_invalid_records_are_refused(self) -> None:
        with pytest.raises(StoreError, match="never inf"):
            measured(A, float("inf"))
        with pytest.raises(StoreError, match="only measured candidates carry a time"):
            CandidateRecord(A, Status.ILLEGAL, 1.0)
        with pytest.raises(StoreError, match="not a JSON value"):
            CandidateRecord(A, Status.NOT_TIMED, measurement={"x": object()})
        with pytest.raises(ConfigError):
            make_test_key(kernel="")

    # -- listing, clearing -----------------------------------------------------------------------
    def test_entries_and_kernels(self, store: Store) -> None:
        store.record(
            make_test_key("gelu", 1), [measured(A, 1.0), CandidateRecord(B, Status.ILLEGAL)], winner=A
        )
        store.record(make_test_key("gelu", 2), [measured(A, 1.0)])
        store.record(make_test_key("mm", 1), [measured(A, 1.0)], winner=A)
        es = store.entries("gelu")
        assert [e.key.key_dict["n"] for e in sorted(es, key=lambda e: e.key.key_dict["n"])] == [1, 2]
        e1 = next(e for e in es if e.key.key_dict["n"] == 1)
        assert e1.n_candidates == 2 and e1.n_measured == 1 and e1.winner is not None
        ks = {s.kernel: (s.entries, s.winners, s.candidates) for s in store.kernels()}
        assert ks == {"gelu": (2, 1, 3), "mm": (1, 1, 1)}

    def test_clear_one_kernel_then_all(self, store: Store) -> None:
        store.record(make_test_key("gelu"), [measured(A, 1.0)], winner=A)
        store.record(make_test_key("mm"), [measured(A, 1.0)], winner=A)
        assert store.clear("gelu") == 1
        assert [s.kernel for s in store.kernels()] == ["mm"]
        assert store.lookup_winner(make_test_key("gelu")) is None
        assert store.clear() == 1 and store.entries() == []

    # -- immutability, threads -------------------------------------------------------------------
    def test_returned_records_are_immutable(self, store: Store) -> None:
        k = make_test_key()
        meas = {"samples": [1.0]}
        store.record(k, [measured(A, 1.0, measurement=meas)], winner=A)
        meas["samples"].append(99.0)  # the caller's dict is not the stored one
        [r] = store.candidates(k)
        assert r.measurement == {"samples": (1.0,)}
        with pytest.raises(TypeError):
            r.measurement["samples"] = ()  # type: ignore[index]
        with pytest.raises(AttributeError):
            r.time_ms = 2.0  # type: ignore[misc]

    def test_threads_write_and_read_at_once(self, store: Store) -> None:
        errors: list[BaseException] = []

        def work(t: int) -> None:
            try:
                for i in range(10):
                    k = make_test_key(n=t * 100 + i)
                    store.record(k, [measured(A, 1.0 + i)], winner=A)
                    assert store.lookup_winner(k) is not None
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert len(store.entries()) == 40

    # -- export / import -------------------------------------------------------------------------
    def test_export_import_round_trip(self, store: Store, tmp_path: Path) -> None:
        k1, k2 = make_test_key("gelu"), make_test_key("mm", dtypes=("torch.float16",))
        store.record(k1, [measured(A, 1.0, measurement={"n": 3}), CandidateRecord(B, Status.ILLEGAL, reason="r")],
                     winner=A)  # fmt: skip
        store.record(k2, [measured(A, 2.0), measured(B, 2.001)], winner=A, ties=[B])
        path = tmp_path / "export.json"
        assert store.export(path) == 2
        other = self.make_store(tmp_path / "other")
        try:
            assert other.import_(path) == 2
            assert other.snapshot() == store.snapshot()
        finally:
            other.close()
        assert store.export(tmp_path / "mm.json", kernel="mm") == 1

    def test_bad_import_writes_nothing(self, store: Store, tmp_path: Path) -> None:
        bad = tmp_path / "bad.json"
        bad.write_text('{"format": "tritune.store/1", "entries": [\n {"key": {}, "candidates": []}\n]}\n')
        with pytest.raises(StoreSchemaError, match=r"line 2, entries\[0\]\.key: missing field 'kernel'"):
            store.import_(bad)
        assert store.entries() == []

    def test_closed_store_raises(self, tmp_path: Path) -> None:
        s = self.make_store(tmp_path)
        s.close()
        s.close()
        with pytest.raises(StoreError, match="closed"):
            s.lookup_winner(make_test_key())
