"""Progress while a command works: rich bars on a terminal, plain log lines elsewhere, nothing when quiet.

Commands (``verify``, ``screen``, ``tune``, ``simulate``) report through one small interface::

    with make_progress(quiet=args.quiet) as p:
        p.stage("compiling", total=len(configs))
        for c in configs:
            ...
            p.step(c.id, Status.FITS)              # failures are counted from the status
        p.stage("timing", total=len(legal))
        ...
        p.best(c.id, median_ms, ci_low_ms, ci_high_ms)

On a terminal the bars show the stage, done/total, what is left, the failures so far, elapsed time, an
ETA and the current best with its interval. When the stream is not a terminal (a log file, CI, a pipe)
each stage and each candidate is one plain line with no control characters at all, so logs stay greppable.
Progress goes to stderr by default, so the command's result on stdout stays machine-readable.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from types import TracebackType
from typing import IO, Any

from tritune.outcome import Status

__all__ = ["PlainProgress", "Progress", "QuietProgress", "RichProgress", "make_progress"]

# Every C0 control character, DEL and the C1 range: none of them may reach a log line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class Laps:
    """``laps(name)`` adds the time since the previous lap (or since it was made), times ``scale``, to
    ``parts[name]``; nothing without ``parts``. Where a step's host time goes: a candidate's check by step, in
    seconds (``verify.run.check_candidate``), a key's first incremental call by part, in ms (``scale=1e3``)."""

    def __init__(self, parts: dict[str, float] | None, scale: float = 1.0) -> None:
        self.parts, self.scale = parts, scale
        self.t = time.perf_counter()

    def __call__(self, name: str) -> None:
        if self.parts is not None:
            t = time.perf_counter()
            self.parts[name] = self.parts.get(name, 0.0) + (t - self.t) * self.scale
            self.t = t


def _clean(text: str) -> str:
    """``text`` on one line with every control character replaced by a space."""
    return _CONTROL.sub(" ", str(text))


def _status(status: Status | str) -> Status:
    try:
        return Status(status)
    except ValueError:
        known = ", ".join(s.value for s in Status)
        raise ValueError(
            f"progress step status {status!r} is not a tritune Status; use one of: {known}"
        ) from None


def _fmt_seconds(s: float) -> str:
    s = max(0.0, s)
    if s < 60:
        return f"{s:.0f}s"
    m, sec = divmod(round(s), 60)
    if m < 60:
        return f"{m}m{sec:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def _fmt_best(label: str, median_ms: float, ci_low_ms: float, ci_high_ms: float) -> str:
    return f"{_clean(label)} {median_ms:.4g} ms [{ci_low_ms:.4g}, {ci_high_ms:.4g}]"


class Progress:
    """What a command calls while it works. This base class does nothing (it is the quiet behaviour).

    ``stage(name, total, unit=...)`` starts a stage of ``total`` candidates, or of another ``unit`` (the
    previous stage ends; ``None`` while the number is not known yet, then ``set_total(n)``);
    ``step(label, status, detail)`` marks one candidate done, counting it as a failure when
    ``Status(status).is_failure``; ``best(...)`` shows the current best with its confidence interval;
    ``note(text)`` prints one line of commentary; ``close()`` ends the display (idempotent).
    """

    def __init__(self) -> None:
        self.stage_name: str | None = None
        #: What the stage counts, in the plural ("candidates", "seeds").
        self.unit = "candidates"
        self.total: int | None = None
        self.done = 0
        self.failures = 0  # in the current stage
        self.total_failures = 0  # over all stages
        self.best_text: str | None = None
        self.closed = False
        self._lock = threading.Lock()

    # -- the interface --------------------------------------------------------------------------
    def stage(self, name: str, total: int | None, *, unit: str = "candidates") -> None:
        if total is not None and total < 0:
            raise ValueError(f"progress stage {name!r}: total must be >= 0, got {total}")
        with self._lock:
            self._end_stage()
            self.stage_name, self.done, self.failures, self.unit = _clean(name), 0, 0, _clean(unit)
            self.total = None if total is None else int(total)
            self._on_stage()

    def set_total(self, total: int) -> None:
        """The current stage's total, once it is known (a stage started with ``total=None``)."""
        if total < 0:
            raise ValueError(f"progress total must be >= 0, got {total}")
        with self._lock:
            if self.stage_name is None or self.total == total:
                return
            self.total = max(int(total), self.done)
            self._on_total()

    def step(self, label: str, status: Status | str, detail: str = "") -> None:
        st = _status(status)
        with self._lock:
            if self.stage_name is None:
                self.stage_name, self.total, self.done, self.failures = "working", None, 0, 0
                self._on_stage()
            self.done += 1
            if self.total is not None and self.done > self.total:
                self.total = self.done  # a command that found more work than it announced
            if st.is_failure:
                self.failures += 1
                self.total_failures += 1
            self._on_step(_clean(label), st, _clean(detail))

    def best(self, label: str, median_ms: float, ci_low_ms: float, ci_high_ms: float) -> None:
        with self._lock:
            self.best_text = _fmt_best(label, median_ms, ci_low_ms, ci_high_ms)
            self._on_best()

    def note(self, text: str) -> None:
        with self._lock:
            self._on_note(_clean(text))

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self._end_stage()
            self.closed = True
            self._on_close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- hooks for the displays (called with the lock held) -------------------------------------
    def _end_stage(self) -> None:
        if self.stage_name is not None:
            self._on_stage_end()
        self.stage_name = None

    def _on_stage(self) -> None: ...
    def _on_total(self) -> None: ...
    def _on_stage_end(self) -> None: ...
    def _on_step(self, label: str, status: Status, detail: str) -> None: ...
    def _on_best(self) -> None: ...
    def _on_note(self, text: str) -> None: ...
    def _on_close(self) -> None: ...


class QuietProgress(Progress):
    """``--quiet``: shows nothing at all; the command prints only its final result."""


class PlainProgress(Progress):
    """One plain line per stage and per candidate, for logs and pipes: no ESC, no carriage returns."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream = stream
        self._t0 = time.monotonic()
        self._stage_t0 = self._t0

    def _line(self, text: str) -> None:
        self.stream.write("tritune: " + _clean(text) + "\n")
        self.stream.flush()

    def _on_stage(self) -> None:
        """The stage's first line, when its total is known; else ``_on_total`` says it once it is (and each step
        names the stage all the same)."""
        self._stage_t0 = time.monotonic()
        if self.total is not None:
            self._line(f"{self.stage_name}: {self.total} {self.unit}")

    def _on_total(self) -> None:
        self._line(f"{self.stage_name}: {self.total} {self.unit}")

    def _on_step(self, label: str, status: Status, detail: str) -> None:
        elapsed = time.monotonic() - self._stage_t0
        if self.total is None:
            pos = f"{self.done}"
            eta = ""
        else:
            pos = f"{self.done}/{self.total}"
            left = self.total - self.done
            eta = f", {left} left, eta {_fmt_seconds(elapsed / self.done * left)}" if left else ""
        text = f"{self.stage_name} {pos} {label}: {status.value}"
        if detail:
            text += f" ({detail})"
        self._line(f"{text} [failures {self.failures}{eta}]")

    def _on_best(self) -> None:
        self._line(f"best so far: {self.best_text}")

    def _on_note(self, text: str) -> None:
        self._line(text)

    def _on_stage_end(self) -> None:
        took = _fmt_seconds(time.monotonic() - self._stage_t0)
        self._line(f"{self.stage_name} done: {self.done} {self.unit}, {self.failures} failed, {took}")


class RichProgress(Progress):
    """Rich progress bars with ETA for a terminal; the finished stages stay on screen as a record."""

    def __init__(self, console: Any) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as _RichBars
        from rich.text import Text

        class _Bars(_RichBars):
            """The bars, then the current best on its own line (it is long: a config id and an interval)."""

            best_line = ""

            def get_renderables(self) -> Any:
                yield self.make_tasks_table(self.tasks)
                if self.best_line:
                    yield Text(self.best_line, style="bold green")

        super().__init__()
        self.console = console
        self._bars = _Bars(
            SpinnerColumn(finished_text="✓"),
            TextColumn("[bold]{task.description:<10}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("{task.fields[left]} left"),
            TextColumn("[red]{task.fields[failures]} failed"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._bars.start()
        self._task: Any = None

    def _fields(self) -> dict[str, Any]:
        left = "?" if self.total is None else str(self.total - self.done)
        return {"left": left, "failures": self.failures}

    def _on_stage(self) -> None:
        self._task = self._bars.add_task(self.stage_name or "", total=self.total, **self._fields())

    def _on_total(self) -> None:
        self._bars.update(self._task, total=self.total, **self._fields())

    def _on_step(self, label: str, status: Status, detail: str) -> None:
        self._bars.update(self._task, completed=self.done, total=self.total, **self._fields())

    def _on_best(self) -> None:
        self._bars.best_line = f"best so far: {self.best_text}"
        self._bars.refresh()

    def _on_note(self, text: str) -> None:
        self._bars.console.print(text, markup=False, highlight=False)

    def _on_stage_end(self) -> None:
        if self._task is not None:
            # A stage that ends early (candidates pruned) is shown as finished at what was done.
            self._bars.update(self._task, total=self.done, completed=self.done, **self._fields())
            self._bars.stop_task(self._task)
            self._task = None

    def _on_close(self) -> None:
        self._bars.stop()


def make_progress(
    *, quiet: bool = False, stream: IO[str] | None = None, terminal: bool | None = None
) -> Progress:
    """The right progress display for ``stream`` (default ``sys.stderr``).

    ``quiet`` shows nothing. Otherwise a terminal gets rich bars and anything else plain lines;
    ``terminal`` overrides the detection (``None``: ask ``stream.isatty()``).
    """
    if quiet:
        return QuietProgress()
    out: IO[str] = sys.stderr if stream is None else stream
    if terminal is None:
        isatty = getattr(out, "isatty", None)
        terminal = bool(isatty()) if callable(isatty) else False
    if not terminal:
        return PlainProgress(out)
    from rich.console import Console

    return RichProgress(Console(file=out, force_terminal=True))
