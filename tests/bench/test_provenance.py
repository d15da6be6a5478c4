"""tritune.bench.provenance.gpu_and_driver: the GPU's name and the driver, read from nvidia-smi without torch.

nvidia-smi here is a FAKE: a shell script of this test's own on PATH, printing what the real one prints for the
query, so that the parsing and the absent-tool answers are under test on a machine with no GPU.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tritune.bench import provenance


def _fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    exe = tmp_path / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    provenance.gpu_and_driver.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_cache():
    provenance.gpu_and_driver.cache_clear()
    yield
    provenance.gpu_and_driver.cache_clear()


def test_the_first_gpus_name_and_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one line per GPU: the first one's name and the driver (the last field) are read, the second GPU's line is not
    _fake_smi(tmp_path, monkeypatch, 'printf "NVIDIA H100 80GB HBM3, 580.159.04\\nNVIDIA H100, 580.159.04\\n"')
    assert provenance.gpu_and_driver() == ("NVIDIA H100 80GB HBM3", "580.159.04")
    assert provenance.driver_version() == "580.159.04"


def test_asked_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    count = tmp_path / "count"
    _fake_smi(tmp_path, monkeypatch, f'echo x >> {count}; echo "NVIDIA H200, 580.159.04"')
    assert provenance.gpu_and_driver() == provenance.gpu_and_driver() == ("NVIDIA H200", "580.159.04")
    assert count.read_text().count("x") == 1


def test_no_gpu_tool_or_no_answer_gives_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert provenance.gpu_and_driver() == (None, None)
    _fake_smi(tmp_path, monkeypatch, 'echo "NVIDIA-SMI has failed because it could not communicate with the driver"; exit 9')
    assert provenance.gpu_and_driver() == (None, None)


def test_machine_differences_name_each_field_that_differs() -> None:
    here = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "torch": "2.11.0", "triton": "3.6.0", "date": "x"}
    assert provenance.machine_differences({**here, "date": "y"}, here) == []  # the date is not the machine
    there = {**here, "gpu": "NVIDIA H200", "triton": "3.5.1"}
    assert provenance.machine_differences(there, here) == [
        "gpu 'NVIDIA H200' there, 'NVIDIA H100 80GB HBM3' here", "triton '3.5.1' there, '3.6.0' here"]
    assert provenance.machine_differences({}, here)[0] == "gpu None there, 'NVIDIA H100 80GB HBM3' here"
