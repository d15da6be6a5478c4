"""The chapter's four worked steps, redone with tritune: their printed output is checked exactly."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "examples" / "chapter"


@pytest.mark.parametrize("script", sorted(p.name for p in CHAPTER.glob("step*.py")))
def test_chapter_step_output(script):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "examples"), TRITON_INTERPRET="1", TRITON_DEFAULT_FP_FUSION="1")
    p = subprocess.run([sys.executable, str(CHAPTER / script)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    expected = (CHAPTER / "expected" / script.replace(".py", ".txt")).read_text()
    assert p.stdout == expected
