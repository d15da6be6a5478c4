"""tritune.engine.imports: Triton's lazy compiler imports started on a thread, joined before compiling."""

from __future__ import annotations

import sys

from tritune.engine.imports import import_ahead


def test_imports_the_modules_on_a_thread_and_join_waits_for_them():
    name = "json.tool"  # a real module rarely imported: the thread must bring it in
    sys.modules.pop(name, None)
    join = import_ahead((name,))
    waited = join()
    assert name in sys.modules
    assert waited >= 0.0


def test_nothing_started_when_already_imported_and_missing_modules_are_skipped():
    join = import_ahead(("json",))
    assert join() == 0.0
    join = import_ahead(("tritune_no_such_module_xyz",))
    assert join() >= 0.0  # an ImportError on the thread is swallowed: the JIT imports what it needs itself
    assert "tritune_no_such_module_xyz" not in sys.modules
