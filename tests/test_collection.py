"""The test command collects every test folder: pytest skips folders matching ``norecursedirs`` without a word.

Its default list holds ``dist``, and ``tests/dist`` (the multi-rank tests) would go uncollected by ``python -m pytest``;
``pyproject.toml`` sets the list without it.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).parent


def test_no_folder_with_tests_is_skipped_by_collection(pytestconfig: pytest.Config) -> None:
    patterns = pytestconfig.getini("norecursedirs")
    with_tests = sorted({p.parent for p in ROOT.rglob("test_*.py") if "__pycache__" not in p.parts})
    assert ROOT / "dist" in with_tests  # the folder this guards
    skipped = [d for d in with_tests
               if any(fnmatch.fnmatch(part, pat) for part in d.relative_to(ROOT).parts for pat in patterns)]  # fmt: skip
    assert not skipped, f"pytest would not collect {skipped} (norecursedirs {patterns})"
