"""Every example verifies on a CPU, as a new user runs it, in under a minute, or says in one line what to run.

Two forms per file in examples/: the README's ``tritune verify examples/X.py`` (finishes, or stops with one line
naming a workload, a key, a GPU or ``tritune screen``), and each ``tritune verify`` command the example's own
docstring gives for any machine (finishes, exit 0). Each runs in a fresh process, as a user's does.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
#: The limit a new user's check on a 2-core machine is held to.
MINUTE = 60.0


def _tritune(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITUNE_INTERPRET_REASON")}
    env["PYTHONPATH"] = str(ROOT / "src")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "tritune", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=4 * MINUTE, check=False)  # fmt: skip
    return p, time.monotonic() - t0


def documented(example: str) -> list[list[str]]:
    """The ``tritune verify`` commands of the example's docstring that are not marked for a GPU machine."""
    text = (ROOT / "examples" / example).read_text()
    doc = text.split('"""')[1] if '"""' in text else ""
    out = []
    for line in doc.splitlines():
        m = re.match(r"\s*tritune (verify \S+.*?)\s*(#.*)?$", line)
        if m and "GPU" not in (m.group(2) or ""):
            out.append(m.group(1).split())
    return out


@pytest.mark.long
@pytest.mark.parametrize("example", EXAMPLES)
def test_the_readme_form_finishes_within_a_minute_or_says_what_to_run(example):
    p, took = _tritune(["verify", f"examples/{example}", "--quiet"])
    assert took < MINUTE, (example, took)
    assert "Traceback" not in p.stderr, p.stderr
    if p.returncode == 2:
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tritune: error:"), lines
        assert re.search(r"--workload \w+|--key \S+|on a GPU", lines[0]), lines[0]
    else:
        assert p.returncode in (0, 1), p.stderr


@pytest.mark.long
@pytest.mark.parametrize("example", [e for e in EXAMPLES if documented(e)])
def test_each_documented_check_for_any_machine_passes_within_a_minute(example):
    for argv in documented(example):
        p, took = _tritune([*argv, "--quiet"])
        assert p.returncode == 0, (argv, p.stderr[-2000:])
        assert took < MINUTE, (argv, took)


def test_the_examples_document_a_check_for_any_machine():
    assert {e for e in EXAMPLES if documented(e)} >= {
        "attention.py", "gelu.py", "layernorm.py", "matmul.py", "matmul_tma.py", "rmsnorm.py", "rowsum.py",
    }  # fmt: skip
