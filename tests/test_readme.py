"""The README is the front door: its first Python block runs as written on a CPU, and it stays short.

The block is run in a fresh interpreter under ``TRITON_INTERPRET=1`` (no GPU: Triton's interpreter runs the kernel),
with a store in a temporary folder, exactly as a reader would paste it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: The first two commands, which CI and users run verbatim.
COMMANDS = [
    "pip install torch==2.13.0 && pip install -e . && tritune verify examples/gelu.py    # main job, CPU machine "
    "(on a GPU machine: tritune tune examples/gelu.py)",
    'pip install torch==2.13.0 && pip install -e ".[test]" && python -m pytest -q       # the tests (CI: bash .ci/run)',
]


def first_python_block(text: str) -> str:
    m = re.search(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert m is not None, "the README has no ```python block"
    return m.group(1)


def test_the_first_python_block_runs_as_written_on_a_cpu(tmp_path: Path) -> None:
    script = tmp_path / "quickstart.py"
    script.write_text(first_python_block(README.read_text()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITUNE_")}
    env.update(TRITON_INTERPRET="1", TRITON_DEFAULT_FP_FUSION="1", TRITUNE_STORE=str(tmp_path / "store.sqlite"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    assert "BLOCK" in p.stdout and "untuned" in p.stdout, p.stdout


def test_the_readme_keeps_its_first_commands_and_stays_short() -> None:
    lines = README.read_text().splitlines()
    start = lines.index("```bash")
    assert lines[start + 1 : start + 3] == COMMANDS
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; the user guide in docs/ takes the depth"
