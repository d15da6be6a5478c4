"""Export format tritune.store/1: round trips, and rejections that name the right line and field."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tritune.config import Config
from tritune.errors import StoreSchemaError
from tritune.outcome import Status
from tritune.store import FORMAT, CandidateRecord, MemoryStore, parse_export
from tritune.store.jsonpos import Located, path_text
from tritune.testing.store_contract import make_test_key

A, B = Config({"BLOCK": 1024}, num_warps=8), Config({"BLOCK": 300})


def exported_text() -> str:
    s = MemoryStore()
    s.record(make_test_key(), [CandidateRecord(A, Status.MEASURED, 0.5), CandidateRecord(B, Status.ILLEGAL, reason="r")],
             winner=A)  # fmt: skip
    s.record(make_test_key("mm"), [CandidateRecord(A, Status.MEASURED, 0.7)], winner=A)
    buf = io.StringIO()
    s.export(buf)
    return buf.getvalue()


def line_of(text: str, needle: str, nth: int = 0) -> int:
    """1-based line of the ``nth`` occurrence of ``needle`` (how a user would find it in an editor)."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1


def rejection(text: str) -> str:
    with pytest.raises(StoreSchemaError) as info:
        parse_export(text, "ship.json")
    return str(info.value)


def test_export_is_versioned_and_round_trips() -> None:
    text = exported_text()
    doc = json.loads(text)
    assert doc["format"] == FORMAT == "tritune.store/1"
    writes = parse_export(text)
    assert [w.key for w in writes] == sorted([make_test_key(), make_test_key("mm")], key=lambda k: k.kernel)
    m = MemoryStore()
    m.record_many(writes)
    win = m.lookup_winner(make_test_key())
    assert win is not None and win.config == A and win.time_ms == 0.5


def test_bad_status_names_its_line_and_field() -> None:
    text = exported_text().replace('"status": "illegal"', '"status": "fast"')
    msg = rejection(text)
    line = line_of(text, '"fast"')
    assert f"line {line}, entries[0].candidates[1].status: 'fast' is not a status" in msg
    assert msg.startswith("ship.json: not a valid tritune.store/1 file; nothing was imported")


def test_errors_in_two_entries_are_all_reported() -> None:
    text = exported_text()
    text = text.replace('"time_ms": 0.7', '"time_ms": "slow"', 1)
    text = text.replace('"kernel": "gelu"', '"kernel": 5', 1)
    msg = rejection(text)
    slow, kernel = line_of(text, '"slow"'), line_of(text, '"kernel": 5')
    # the first "time_ms": 0.7 is entry 1's winner (key, winner, candidates is the order in an entry)
    assert f"line {slow}, entries[1].winner.time_ms: expected a number or null, got a string" in msg
    assert f"line {kernel}, entries[0].key.kernel: expected a non-empty string" in msg


def test_missing_field_points_at_its_object() -> None:
    doc = json.loads(exported_text())
    del doc["entries"][1]["candidates"][0]["config"]
    text = json.dumps(doc, indent=1)
    msg = rejection(text)
    # the object that lacks the field starts on the line after "candidates": [
    expected = line_of(text, '"candidates"', 1) + 1
    assert f"line {expected}, entries[1].candidates[0]: missing field 'config'" in msg


def test_unknown_field_and_bad_config_and_bucket() -> None:
    text = exported_text()
    text = text.replace('"reason": "r"', '"reason": "r", "speed": 3', 1)
    text = text.replace('"num_warps": 8', '"num_warps": "eight"', 1)
    text = text.replace('"n": "pow2"', '"n": "log2"', 1)
    msg = rejection(text)
    speed, log2 = line_of(text, '"speed"'), line_of(text, '"log2"')
    winner_config = line_of(
        text, '"config"'
    )  # entry 0 lists key, winner, candidates: the winner's comes first
    assert f"line {speed}, entries[0].candidates[1].speed: unknown field" in msg
    assert f"line {winner_config}, entries[0].winner.config: num_warps must be an int, got 'eight'" in msg
    assert f"line {log2}, entries[0].key.buckets.n: unknown bucket name 'log2'" in msg


def test_winner_must_be_a_candidate_and_duplicates_are_rejected() -> None:
    doc = json.loads(exported_text())
    doc["entries"][0]["winner"]["config"] = Config({"BLOCK": 7}).to_json()
    doc["entries"].append(doc["entries"][1])
    text = json.dumps(doc, indent=1)
    msg = rejection(text)
    assert (
        "entries[0].winner.config: winner BLOCK=7,num_warps=4,num_stages=3 is not among this entry's candidates"
        in msg
    )
    assert "entries[2].key: the same key as entries[1]" in msg


def test_syntax_error_gives_line_and_column() -> None:
    text = exported_text()
    lines = text.splitlines()
    assert lines[5].strip() == "{"
    lines[5] = lines[5] + ","  # "{," on line 6: column 4 is where a property name was expected
    msg = rejection("\n".join(lines))
    assert (
        msg == "ship.json: line 6 column 4: not valid JSON: Expecting property name enclosed in double quotes"
    )


def test_wrong_format_and_nan_are_rejected() -> None:
    assert "'tritune.store/9' is not a format this tritune reads" in rejection(
        exported_text().replace(FORMAT, "tritune.store/9")
    )
    assert "NaN is not a JSON number" in rejection(
        exported_text().replace('"time_ms": 0.7', '"time_ms": NaN')
    )


def test_import_from_a_file_reports_its_path(tmp_path: Path) -> None:
    p = tmp_path / "ship.json"
    p.write_bytes(b"\xff\xfe not text")
    with pytest.raises(StoreSchemaError, match=f"{p}: not a text"):
        MemoryStore().import_(p)
    with pytest.raises(StoreSchemaError, match="cannot read"):
        MemoryStore().import_(tmp_path / "missing.json")


def test_located_parser_offsets() -> None:
    text = '{\n "a": [1,\n  {"b": "x"}],\n "c": -2.5e3\n}'
    doc = Located(text)
    assert doc.value == json.loads(text)
    assert doc.line(("a", 1, "b")) == 3 and doc.line(("c",)) == 4 and doc.line(("a", 0)) == 2
    assert doc.line(("a", 1, "missing")) == 3  # falls back to the nearest ancestor
    assert path_text(("entries", 3, "key", "n")) == "entries[3].key.n" and path_text(()) == "(top level)"
