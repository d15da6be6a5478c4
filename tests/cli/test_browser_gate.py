"""The browser tests skip on a machine without Chromium, saying how to run them, and fail under CI=true."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BROWSER_TESTS = ROOT / "tests" / "report" / "test_report_browser.py"


def _run_without_browser(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    # A PATH holding only the Python interpreter's directory: no chromium can be found on it.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = str(bindir)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "-m", "long",
         f"{BROWSER_TESTS}::test_page_without_figures_is_the_control"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600, check=False,
    )


@pytest.mark.slow
@pytest.mark.long  # the browser renders they run are in the long group
def test_no_browser_skips_with_the_install_command(tmp_path):
    run = _run_without_browser(tmp_path, None)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    assert "1 skipped" in out and "bash .ci/install-chromium" in out, out[-3000:]


@pytest.mark.slow
@pytest.mark.long  # the browser renders they run are in the long group
def test_no_browser_under_ci_fails(tmp_path):
    run = _run_without_browser(tmp_path, "true")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    assert ("1 failed" in out or "1 error" in out) and "CI=true" in out, out[-3000:]
