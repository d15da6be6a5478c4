"""PretunedStore: a shipped export file as a read-only layer, and its documented fallback order."""

from __future__ import annotations

from pathlib import Path

import pytest
import triton
import triton.language as tl

from tritune.config import Config
from tritune.errors import StoreError, StoreSchemaError
from tritune.outcome import Status
from tritune.store import INTERPRETER, CandidateRecord, MemoryStore, PretunedStore, SQLiteStore, make_key
from tritune.testing.store_contract import make_test_key

A, B, C = Config({"BLOCK": 1024}), Config({"BLOCK": 512}), Config({"BLOCK": 256})


def ship(tmp_path: Path) -> Path:
    """An export holding gelu on H200 (3.6.0) with winner A, and on A100 (cuda:80) with winner B."""
    s = MemoryStore()
    s.record(make_test_key(), [CandidateRecord(A, Status.MEASURED, 1.0), CandidateRecord(B, Status.MEASURED, 2.0)],
             winner=A)  # fmt: skip
    s.record(make_test_key(device="NVIDIA A100", capability="cuda:80"), [CandidateRecord(B, Status.MEASURED, 3.0)],
             winner=B)  # fmt: skip
    path = tmp_path / "configs.json"
    s.export(path)
    return path


def test_exact_lookup_and_read_only(tmp_path: Path) -> None:
    p = PretunedStore(ship(tmp_path))
    win = p.lookup_winner(make_test_key())
    assert win is not None and win.config == A and win.time_ms == 1.0
    assert not p.writable and len(p.entries()) == 2
    for write in (
        lambda: p.record(make_test_key(), [CandidateRecord(C, Status.MEASURED, 0.1)], winner=C),
        lambda: p.clear(),
        lambda: p.import_(tmp_path / "configs.json"),
    ):
        with pytest.raises(StoreError, match=r"configs\.json is a read-only pretuned file"):
            write()
    assert p.lookup_winner(make_test_key()) == win


def test_resolve_fallback_order(tmp_path: Path) -> None:
    p = PretunedStore(ship(tmp_path))
    other_triton = make_test_key(triton_version="3.7.0", env_hash="f" * 16)
    h100 = make_test_key(device="NVIDIA H100")
    assert p.lookup_winner(other_triton) is None and p.lookup_winner(h100) is None
    assert p.resolve(other_triton).config == A  # type: ignore[union-attr]  # same device, other triton
    assert p.resolve(h100).config == A  # type: ignore[union-attr]  # same capability
    assert p.resolve(make_test_key(device="NVIDIA L4", capability="cuda:89")) is None  # another arch: tune
    assert p.resolve(make_test_key(n=8192)) is None  # another bucket
    assert p.resolve(make_test_key(source_hash="edited")) is None  # edited kernel: never served
    # a winner measured cold never serves a key tuned under another measurement policy, on any device
    assert p.resolve(make_test_key(measure="warm")) is None
    assert p.resolve(make_test_key(device="NVIDIA H100", measure="graph")) is None
    interp = make_test_key(device=INTERPRETER, capability=INTERPRETER)
    # any device for the interpreter, deterministically: "NVIDIA A100" sorts before "NVIDIA H200"
    assert p.resolve(interp).config == B  # type: ignore[union-attr]


def test_bad_pretuned_file_is_rejected_with_its_line(tmp_path: Path) -> None:
    path = ship(tmp_path)
    path.write_text(path.read_text().replace('"status": "measured"', '"status": "quick"', 1))
    with pytest.raises(
        StoreSchemaError, match=r"configs.json: not a valid .*\n  line \d+, entries\[\d\]\.candidates"
    ):
        PretunedStore(path)


@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def _edited() -> object:
    @triton.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):  # same name, another body
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)

    return scale


def test_store_semantics_across_a_session(tmp_path: Path) -> None:
    """Another process finds the winner; adding a config measures one; editing the source starts fresh."""
    path = tmp_path / "store.sqlite"
    key = make_key(scale, {"n": 4096}, buckets={"n": "pow2"}, dtypes=("torch.float32",))
    with SQLiteStore(path) as s:
        s.record(
            key,
            [CandidateRecord(A, Status.MEASURED, 1.0), CandidateRecord(B, Status.MEASURED, 1.5)],
            winner=A,
        )
    with SQLiteStore(path) as s:  # a later process: same kernel and key
        win = s.lookup_winner(make_key(scale, {"n": 4096}, buckets={"n": "pow2"}, dtypes=("torch.float32",)))
        assert win is not None and win.config == A
        assert s.missing(key, [A, B, C]) == [C]
        s.record(key, [CandidateRecord(C, Status.MEASURED, 0.5)], winner=C)
        assert s.lookup_winner(key).config == C  # type: ignore[union-attr]
        edited = make_key(_edited(), {"n": 4096}, buckets={"n": "pow2"}, dtypes=("torch.float32",))
        assert edited.kernel == key.kernel and edited.source_hash != key.source_hash
        assert s.lookup_winner(edited) is None and s.missing(edited, [A, B, C]) == [A, B, C]
