"""Shared fixtures of the screen tests: the test workload file and a fresh Triton cache per test."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent
WORKLOADS = HERE / "workloads.py"
EXAMPLES = HERE.parents[1] / "examples"


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Triton cache, so a compile really runs its stages (and ptxas) instead of hitting the cache."""
    d = tmp_path / "triton-cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(d))
    return d


@pytest.fixture(scope="module")
def wl():
    from tritune.workload import load_workloads

    return {w.name: w for w in load_workloads(WORKLOADS)}
