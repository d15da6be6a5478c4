"""import_cost.py on CPU: its paired rounds, counts and verdict, on a small stand-in library.

The stand-in is a package of this test's own (two modules, one ``triton.autotune`` site each), so the rounds are
quick; only the script's steps and bookkeeping are under test, not the figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import import_cost  # noqa: E402

KERNEL = '''
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def k{i}(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    pkg = tmp_path / "standin_lib"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    for i in range(2):
        (pkg / "ops" / f"op{i}.py").write_text(KERNEL.replace("{i}", str(i)))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setitem(import_cost.LIBS, "standin_lib", ("standin_lib", ("standin_lib.ops",)))
    return "standin_lib"


def test_rounds_pair_the_engines_and_count_the_autotuners_each_import_made(standin: str) -> None:
    res = import_cost.run_lib(standin, rounds=2, src=ROOT / "src")
    assert "error" not in res, res
    assert len(res["ratios"]) == 2 and len(res["samples"]["triton"]) == len(res["samples"]["tritune"]) == 2
    assert res["modules"] == 2 and res["autotuners"] == {"triton": 2, "tritune": 2}
    first = res["samples"]["tritune"][0]
    assert res["ratios"][0] == pytest.approx(first["s"] / res["samples"]["triton"][0]["s"])
    assert min(res["ratios"]) <= res["ratio_median"] <= max(res["ratios"])


def test_a_library_that_does_not_import_is_reported_with_its_reason(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(import_cost.LIBS, "absent_lib", ("absent_lib_xyz", ()))
    res = import_cost.run_lib("absent_lib", rounds=1, src=ROOT / "src")
    assert "absent_lib did not import under triton" in res["error"] and "absent_lib_xyz" in res["error"]


def test_provenance_is_the_projects_with_the_libraries_versions() -> None:
    prov = import_cost.provenance(["--libs", "fla"])
    assert prov["command"] == "python benchmarks/import_cost.py --libs fla" and prov["torch"] and prov["triton"]
    assert set(prov["libraries"]) == {"fla-core", "liger-kernel", "flag-gems"} and prov["cores"] >= 1
