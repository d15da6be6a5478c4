"""Shared report fixtures: the sample results (labelled samples, see fixtures/README.md) and built reports."""

from __future__ import annotations

import pytest
from report_samples import FIXTURES

from tritune.report import build_report
from tritune.report.build import Report


@pytest.fixture(scope="session")
def tune_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The 80-config, 3-key synthetic tune sample, built once (it is the slowest thing here)."""
    return build_report(FIXTURES / "tune_gelu_space.json", tmp_path_factory.mktemp("tune_report"))


@pytest.fixture(scope="session")
def verify_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return build_report(FIXTURES / "verify_gelu.json", tmp_path_factory.mktemp("verify_report"))


@pytest.fixture(scope="session")
def screen_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """A report with no figures: the browser test's negative control."""
    return build_report(FIXTURES / "screen_gelu.json", tmp_path_factory.mktemp("screen_report"))
