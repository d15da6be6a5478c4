"""matplotlib, imported lazily behind the ``report`` extra, and the colours every figure shares.

Figures are built on :class:`matplotlib.figure.Figure` directly (Agg canvas, no pyplot), so making a report
never touches the global backend or opens a window.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Literal

from tritune.outcome import Status

#: One colour per outcome, the same in every figure and in the HTML tables.
STATUS_COLORS: dict[Status, str] = {
    Status.MEASURED: "#4e79a7",
    Status.CORRECT: "#59a14f",
    Status.COMPARED: "#a0cbe8",
    Status.FITS: "#76b7b2",
    Status.INCORRECT: "#e15759",
    Status.ILLEGAL: "#bab0ac",
    Status.ERROR: "#f28e2b",
    Status.COMPILE_FAILED: "#b07aa1",
    Status.COMPILE_TIMEOUT: "#9c755f",
    Status.LAUNCH_FAILED: "#ff9da7",
    Status.NOT_TIMED: "#d3d3d3",
}
WINNER_COLOR = "#2f9e44"
TIE_COLOR = "#8ce99a"

MISSING_EXTRA = (
    "tritune report draws its figures with matplotlib, which is not installed: "
    "pip install 'tritune[report]' (or pip install matplotlib)"
)


def new_figure(width: float, height: float, *, layout: Literal["constrained"] | None = "constrained") -> Any:
    """A matplotlib Figure on an Agg canvas; a clear error naming the extra when matplotlib is missing."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(MISSING_EXTRA, name="matplotlib") from e
    fig = Figure(figsize=(width, height), dpi=100, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def save(fig: Any, path: Path) -> Path:
    """Render ``fig`` as a PNG and write it to ``path`` (:func:`tritune.paths.write_output`)."""
    import io

    from tritune.paths import write_output

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return write_output(path, buf.getvalue())


def wrap(text: str, width: int = 70) -> str:
    """Wrapped text, nothing dropped (reasons are shown in full)."""
    return "\n".join(textwrap.fill(line, width) or "" for line in str(text).splitlines()) or str(text)


def require_matplotlib() -> None:
    """Fail early, before any work, when the ``report`` extra is missing."""
    new_figure(1, 1)
