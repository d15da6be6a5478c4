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


def test_the_long_group_is_left_out_of_the_test_command_and_ci_runs_it(pytestconfig: pytest.Config) -> None:
    """``long`` tests are deselected by the test command (addopts) and run by .ci/run in a second invocation."""
    addopts = pytestconfig.getini("addopts")
    assert addopts[addopts.index("-m") + 1] == "not long", addopts
    ci = (ROOT.parent / ".ci" / "run").read_text().splitlines()
    runs = [ln.split("#")[0].split() for ln in ci if ln.startswith("python3 -m pytest")]
    assert ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"] in runs
    assert any(r[-2:] == ["-m", "long"] for r in runs), runs
