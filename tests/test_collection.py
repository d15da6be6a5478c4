"""The test command collects every test folder: pytest skips folders matching ``norecursedirs`` without a word.

pytest's default list holds ``dist`` and ``build``, which is why no test folder (and no tritune package) is named so.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).parent


def test_no_folder_with_tests_is_skipped_by_collection(pytestconfig: pytest.Config) -> None:
    patterns = pytestconfig.getini("norecursedirs")
    with_tests = sorted({p.parent for p in ROOT.rglob("test_*.py") if "__pycache__" not in p.parts})
    assert ROOT / "ranks" in with_tests  # the folder this guards
    skipped = [d for d in with_tests
               if any(fnmatch.fnmatch(part, pat) for part in d.relative_to(ROOT).parts for pat in patterns)]  # fmt: skip
    assert not skipped, f"pytest would not collect {skipped} (norecursedirs {patterns})"
