"""The verify figure: the correctness matrix (candidate x key) and the groups of bit-identical outputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tritune.outcome import Status
from tritune.report.data import bitwise_sentence, group_letters, key_label
from tritune.report.mpl import STATUS_COLORS, new_figure, wrap
from tritune.results import WorkloadResult


def verify_figure(name: str, keys: Sequence[WorkloadResult]) -> Any:
    """Rows: candidates; columns: keys; cell: the status (coloured), max error, unwritten count, group."""
    ids: list[str] = []
    for w in keys:
        for c in w.candidates:
            if c.config.id not in ids:
                ids.append(c.config.id)
    cells = {(c.config.id, j): c for j, w in enumerate(keys) for c in w.candidates}
    letters = [group_letters(w) for w in keys]

    from matplotlib.colors import to_rgb
    from matplotlib.patches import Patch

    blank = to_rgb("#f1f3f5")
    rgb = [
        [to_rgb(STATUS_COLORS[cells[(i, j)].status]) if (i, j) in cells else blank for j in range(len(keys))]
        for i in ids
    ]
    height = 0.45 * len(ids) + 2.8 + 0.5 * len(keys)
    fig = new_figure(max(8.0, 2.6 * len(keys) + 5.5), height)
    ax, side = fig.subplots(1, 2, width_ratios=[max(2, len(keys)) * 1.2, 2.4])
    ax.imshow(rgb, aspect="auto")
    for i, cid in enumerate(ids):
        for j in range(len(keys)):
            cand = cells.get((cid, j))
            if cand is None:
                ax.text(j, i, "— not run", ha="center", va="center", fontsize=7, color="#666666")
                continue
            parts = [cand.status.value]
            err = cand.extra.get("max_abs_error")
            if isinstance(err, (int, float)):
                parts.append(f"err {err:.2g}")
            unw = cand.extra.get("unwritten")
            if isinstance(unw, int) and unw:
                parts.append(f"{unw} unwritten")
            if cid in letters[j]:
                parts.append(f"group {letters[j][cid]}")
            ax.text(
                j,
                i,
                "\n".join(parts),
                ha="center",
                va="center",
                fontsize=7,
                fontweight="bold" if cand.status is Status.INCORRECT else "normal",
            )
    ax.set_xticks([x + 0.5 for x in range(len(keys) - 1)], minor=True)
    ax.set_yticks([y + 0.5 for y in range(len(ids) - 1)], minor=True)
    ax.grid(which="minor", color="white", lw=2)
    ax.tick_params(which="minor", length=0)
    ax.set_xticks(range(len(keys)), [key_label(w.key) for w in keys], fontsize=8)
    ax.set_yticks(range(len(ids)), ids, fontsize=8)
    ax.set_title(f"{name}: correctness per candidate and key", fontsize=10)
    used = sorted({c.status for c in cells.values()})
    ax.legend(
        handles=[Patch(color=STATUS_COLORS[s], label=s.value) for s in used],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.08),
        ncol=min(4, len(used)),
        fontsize=8,
    )

    side.axis("off")
    side.set_title("bit-identical output groups", fontsize=10, loc="left")
    lines = []
    for j, w in enumerate(keys):
        lines.append(wrap(f"{key_label(w.key)}: {bitwise_sentence(w)}", 60))
        inv: dict[str, list[str]] = {}
        for cid, tag in letters[j].items():
            inv.setdefault(tag, []).append(cid)
        for tag, members in inv.items():
            lines.append(f"  group {tag} ({len(members)}):")
            lines += [wrap(f"    {m}", 60) for m in members]
        lines.append("")
    side.text(
        0.0,
        1.0,
        "\n".join(lines),
        va="top",
        ha="left",
        fontsize=7.5,
        transform=side.transAxes,
        family="monospace",
    )
    return fig
