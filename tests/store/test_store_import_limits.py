"""Hostile or damaged import files: one clear error from the CLI, nothing imported (all or nothing)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tritune.cli.main import main
from tritune.config import Config
from tritune.outcome import Status
from tritune.store import CandidateRecord, MemoryStore, SQLiteStore
from tritune.store.exchange import export_doc
from tritune.testing.store_contract import make_test_key

A = Config({"BLOCK": 1024}, num_warps=8)
PRESENT = make_test_key("kept")


def _doc() -> dict[str, Any]:
    s = MemoryStore()
    s.record(make_test_key("gelu"), [CandidateRecord(A, Status.MEASURED, 0.5)], winner=A)
    s.record(make_test_key("mm"), [CandidateRecord(A, Status.MEASURED, 0.7)], winner=A)
    return export_doc(s.snapshot())


def _cand(d: dict[str, Any]) -> dict[str, Any]:
    return d["entries"][1]["candidates"][0]  # type: ignore[no-any-return]


def _set(
    path: Callable[[dict[str, Any]], dict[str, Any]], field: str, value: Any
) -> Callable[[dict[str, Any]], str]:
    def make(d: dict[str, Any]) -> str:
        path(d)[field] = value
        return json.dumps(d)

    return make


def _time_ms(d: dict[str, Any], literal: str) -> str:
    """The document with mm's times (0.7 ms) written as ``literal``: only the ``time_ms`` fields (a textual "0.7"
    can also stand inside a timestamp)."""
    text = json.dumps(d)
    assert '"time_ms": 0.7' in text
    return text.replace('"time_ms": 0.7', f'"time_ms": {literal}')


CASES: dict[str, tuple[Callable[[dict[str, Any]], str], str]] = {
    "num_warps -5": (lambda d: json.dumps(d).replace('"num_warps": 8', '"num_warps": -5'), "num_warps: -5 is not a power of two"),
    "num_stages 10**6": (_set(lambda d: _cand(d)["config"], "num_stages", 10**6), "num_stages: 1000000 is outside 0..32"),
    "time 1e308 ms": (lambda d: _time_ms(d, "1e308"), "time_ms: a measured candidate needs 0 <= time_ms <= 3.6e+06"),
    "time 10**400": (lambda d: _time_ms(d, str(10**400)), "time_ms: an integer of 401 digits out of range"),
    "time 1e400 (inf)": (lambda d: _time_ms(d, "1e400"), "time_ms: a number out of range"),
    "recorded_at -1e300": (_set(_cand, "recorded_at", -1e300), "recorded_at: -1e+300 is not a unix time between 1970 and 2100"),
    "10 MB reason": (_set(_cand, "reason", "x" * 10_000_000), "reason: a string of 10000000 characters"),
    "10 MB provenance": (_set(_cand, "provenance", {"who": "y" * 10_000_000}), "provenance.who: a string of 10000000"),
    "500-deep nesting": (_set(_cand, "measurement", json.loads("[" * 500 + "]" * 500)), "nested deeper than 64 levels"),
    "100000-deep nesting": (lambda d: json.dumps(d)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_import_refuses_with_one_clear_error_and_imports_nothing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, expected = CASES[case]
    store = tmp_path / "s.sqlite"
    with SQLiteStore(store) as s:
        s.record(PRESENT, [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    bad = tmp_path / "bad.json"
    bad.write_text(make(_doc()))
    assert main(["cache", "import", str(bad), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert expected in err, err[:2000]
    assert "Traceback" not in err and len(err) < 4000 and str(bad) in err
    with SQLiteStore(store) as s:
        assert [e.key for e in s.entries()] == [PRESENT]  # atomic: nothing of the bad file went in


def test_plausible_file_still_imports(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_doc()))
    store = tmp_path / "s.sqlite"
    assert main(["cache", "import", str(good), "--store", str(store)]) == 0
    with SQLiteStore(store) as s:
        assert sorted(k.kernel for k in s.kernels()) == ["gelu", "mm"]
