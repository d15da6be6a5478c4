"""libtests.py on CPU: which suites ``--suites`` picks, and the outcomes it reads from a library's own pytest run.

The suite here is a stand-in of this test's own (two tests, one failing, in a folder whose ``pyproject.toml`` turns
pytest's live logging on, as fla's does); only the harness's reading of the run is under test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import libtests  # noqa: E402


def test_a_library_folder_selects_its_own_suites_only() -> None:
    fla = {s.name for s in libtests.SUITES if libtests.selected(s, ["fla"])}
    assert fla and all(name.startswith("fla ") for name in fla)  # not flag_gems' suites
    gems = {s.name for s in libtests.SUITES if libtests.selected(s, ["flag_gems"])}
    assert gems and all(name.startswith("flag_gems ") for name in gems)
    norms = {s.name for s in libtests.SUITES if libtests.selected(s, ["norms"])}
    assert norms == {s.name for s in libtests.SUITES if "norms" in s.name} and len(norms) >= 2


def test_outcomes_are_read_when_the_suite_turns_live_logging_on(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\nlog_cli = true\nlog_cli_level = "INFO"\n')
    (root / "tests" / "test_standin.py").write_text(
        "import logging\n\n\n"
        "def test_logs_and_passes():\n    logging.getLogger('standin').info('diff: 0.0')\n\n\n"
        "def test_logs_and_fails():\n    logging.getLogger('standin').info('diff: 1.0')\n    assert False\n"
    )
    suite = libtests.Suite("standin", "lib", ("tests/test_standin.py",), ())
    out = tmp_path / "out"
    out.mkdir()
    r = libtests.run_engine("triton", [suite], tmp_path, out, time.time() + 120)["standin"]
    assert r["outcomes"] == {"tests/test_standin.py::test_logs_and_passes": "PASSED",
                             "tests/test_standin.py::test_logs_and_fails": "FAILED"}  # fmt: skip
    assert r["counts"]["PASSED"] == 1 and r["counts"]["FAILED"] == 1 and r["rc"] == 1
