"""benchmarks/derivable.py on a package of its own: the autotuners it finds, the derived spaces, the reasons."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest


def test_derivable_lists_each_autotuner_with_its_derived_space_or_why_none(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A block size only the configs set is free to derive; a kernel whose every constexpr the caller passes has no
    space, and the row says why; a module that does not import is skipped; each autotuner counts once."""
    pkg = tmp_path / "libx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        @triton.autotune([triton.Config({"BLOCK": b}) for b in (64, 128)], key=["n"])
        @triton.jit
        def free_block(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

        @triton.autotune([triton.Config({}, num_warps=w) for w in (2, 4)], key=["n"])
        @triton.jit
        def passed_block(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

        again = free_block
    '''))
    (pkg / "broken.py").write_text("import a_module_nobody_has\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import derivable

    assert derivable.main(["libx"]) == 0
    out = capsys.readouterr()
    rows = [line for line in out.out.splitlines() if line.startswith("| libx.")]
    assert len(rows) == 2
    free = next(r for r in rows if ".free_block |" in r)
    passed = next(r for r in rows if ".passed_block |" in r)
    assert int(free.split("|")[3]) > 2 and free.split("|")[2].strip() == "2"
    assert passed.split("|")[3].strip() == "-" and "passed by the caller" in passed
    assert out.out.strip().endswith("1 of 2 autotuners have a derived space (" + free.split("|")[3].strip() + "-"
                                    + free.split("|")[3].strip() + " configs)")  # fmt: skip
    assert "libx.broken: not imported (ModuleNotFoundError)" in out.err
    sys.modules.pop("libx", None)
