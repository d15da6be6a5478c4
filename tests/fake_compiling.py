"""FAKE compile workers for the orchestration tests: no process, no timer, no race between threads.

``configs`` not in ``late`` or ``failed`` compile "at once"; the ``late`` ones (the stragglers, each with
its error or None for success) finish only when a caller waits for fewer compiles than are pending, which
is exactly when the pipeline goes on from its first race. ``failed`` ones failed before any worker took them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tritune.config import Config


class FakeCompiling:
    """FAKE :class:`tritune.engine.precompile.Compiling` (module docstring): deterministic, event-free."""

    def __init__(self, configs: Sequence[Config], late: Mapping[Config, str | None],
                 failed: Mapping[Config, str] | None = None, workers: int = 4) -> None:  # fmt: skip
        self.failed: dict[Config, str] = dict(failed or {})
        self.timed_out: set[Config] = set()
        self.workers = workers
        self.pending: dict[Config, None] = {c: None for c in configs if c not in self.failed}
        self._late = dict(late)
        self.waits: list[int] = []  #: every ``max_pending`` the caller waited for, in order
        self.closed = False

    def wait(self, max_pending: int = 0) -> list[Config]:
        self.waits.append(max_pending)
        done = [c for c in list(self.pending) if c not in self._late]
        for c in done:
            del self.pending[c]
        if len(self.pending) > max_pending:
            for c, why in self._late.items():
                if c in self.pending:
                    del self.pending[c]
                    if why is None:
                        done.append(c)
                    else:
                        self.failed[c] = why
        return done

    def close(self) -> None:
        self.closed = True
