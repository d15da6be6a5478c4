"""The import layering of ``pyproject.toml`` (``[tool.importlinter]``) holds: imports run one way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_layers_contract_is_kept() -> None:
    # import-linter is in the test extra (the README's install line); run it as CI does.
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "2 kept, 0 broken" in out.stdout
