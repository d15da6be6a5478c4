"""Proof: report.html renders in a real headless Chromium, with every figure embedded and drawn.

Needs Debian's chromium (``bash .ci/install-chromium``). Without it these tests skip at run time with
that command, so the README's plain ``pytest`` passes on a fresh machine; under ``CI=true`` (``.ci/run``
sets it, after installing Chromium) a missing browser FAILS, so CI's coverage is real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from report_checks import assert_nontrivial_png, embedded_pngs, png_stats, saturated_fraction

#: A browser start and two renders take ~14 s on 2 cores: the long group (which CI runs as well).
pytestmark = pytest.mark.long

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def find_chromium() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    message = (
        "no Chromium found (looked for " + ", ".join(BROWSERS) + "); run these tests with "
        "`bash .ci/install-chromium && python -m pytest tests/report/test_report_browser.py`"
    )
    if in_ci():
        pytest.fail(message + " (CI=true: a missing browser is a failure here)")
    pytest.skip(message)


@pytest.fixture
def browser() -> str:
    """The Chromium to use; requested first so a missing browser skips before any report is built."""
    return find_chromium()


def chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # --no-sandbox: CI runs as root; a private profile dir so runs do not share state.
    cmd = [
        find_chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={cwd / 'profile'}",
        *args,
    ]
    env = {**os.environ, "HOME": str(cwd)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=cwd, env=env, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["tune_report", "verify_report"])
def test_report_renders_in_headless_chromium(which, request, tmp_path):
    find_chromium()  # skip (or, under CI=true, fail) before building the report
    report = request.getfixturevalue(which)
    url = report.html.resolve().as_uri()

    dom = chromium("--dump-dom", url, cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # The browser parsed the whole page (the last element is there) with every figure as an <img>.
    assert '<main id="tritune-report">' in html and 'id="tritune-report-end"' in html
    pngs = embedded_pngs(html)
    assert len(pngs) == len(report.figures) >= 1
    for png, fig in zip(pngs, report.figures, strict=True):
        assert png == fig.path.read_bytes()
        assert_nontrivial_png(png, fig.path.name)
    assert "ERR_" not in dom.stderr  # no failed loads (the page has nothing to load)

    shot = screenshot(url, tmp_path)
    size, std, _ = png_stats(shot.read_bytes())
    assert size == (1280, 3000) and std > 10
    # The figures are drawn in the page: a page of text and tables alone (the control below) stays
    # under 2% coloured pixels; here the first 3000 px hold at least one figure.
    assert saturated_fraction(shot.read_bytes()) > 0.03, "screenshot shows no drawn figure"
    keep = os.environ.get("TRITUNE_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, Path(keep) / f"{which}.png")


def screenshot(url: str, tmp_path: Path) -> Path:
    shot = tmp_path / "screenshot.png"
    run = chromium(f"--screenshot={shot}", "--window-size=1280,3000", url, cwd=tmp_path)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    return shot


@pytest.mark.slow
def test_page_without_figures_is_the_control(browser, screen_report, tmp_path):
    """The coloured-pixel check can fail: a report with no figures does not pass it."""
    assert screen_report.figures == ()
    shot = screenshot(screen_report.html.resolve().as_uri(), tmp_path)
    assert saturated_fraction(shot.read_bytes()) < 0.02
