"""Budgets of a search: a fraction of the space, a number of evaluations, wall-clock seconds, or several.

``Budget.parse`` is the one parser the CLI and the decorator use: ``"25%"``, ``"0.25"``, ``"200"``,
``"90s"``, ``"2m"``, and joined forms such as ``"25%+120s"`` (the first limit reached stops).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tritune.errors import SearchError


@dataclass(frozen=True)
class Budget:
    """How much a search may spend: a number of evaluations, a wall-clock time in seconds, or both.

    A search stops at whichever limit it reaches first. Every evaluation counts, failed ones included:
    a config that failed to compile still cost its compile.
    """

    evaluations: int | None = None
    seconds: float | None = None
    share: float | None = None

    def __post_init__(self) -> None:
        if self.evaluations is None and self.seconds is None and self.share is None:
            raise SearchError("a Budget needs evaluations=N, seconds=S or share=F (a fraction of the space)")
        if self.share is not None and not (0 < self.share <= 1):
            raise SearchError(f"Budget(share={self.share!r}): a fraction of the space must be in (0, 1]")
        if self.evaluations is not None and (isinstance(self.evaluations, bool) or self.evaluations < 1):
            raise SearchError(f"Budget(evaluations={self.evaluations!r}): must be a positive integer")
        if self.seconds is not None and not (self.seconds > 0 and math.isfinite(self.seconds)):
            raise SearchError(f"Budget(seconds={self.seconds!r}): must be a positive finite number")

    @classmethod
    def fraction(cls, fraction: float, n_configs: int) -> Budget:
        """``ceil(fraction * n_configs)`` evaluations (at least one): ``Budget.fraction(0.25, 200)`` is 50."""
        if not 0 < fraction <= 1:
            raise SearchError(f"budget fraction {fraction!r} must be in (0, 1]")
        if n_configs < 1:
            raise SearchError("a budget fraction of an empty space is empty")
        return cls(evaluations=max(1, math.ceil(fraction * n_configs - 1e-9)))

    @classmethod
    def parse(cls, text: str | float | int | Budget) -> Budget:
        """One parser for every budget form the CLI and the decorator accept.

        ``"25%"`` or ``"0.25"`` (or ``0.25``): a fraction of the legal configs, kept as ``share`` until
        :meth:`resolve` knows the space; ``"200"`` (or ``200``): that many evaluations; ``"90s"``,
        ``"1.5m"``: wall-clock seconds. Forms join with ``+`` or ``,`` and the first limit reached stops:
        ``"25%+120s"``.
        """
        if isinstance(text, Budget):
            return text
        if isinstance(text, bool):
            raise SearchError(f"budget {text!r} is not a budget; give '25%', '0.25', '200' or '90s'")
        if isinstance(text, (int, float)):
            text = repr(text)
        if not isinstance(text, str) or not text.strip():
            raise SearchError(f"budget {text!r} is not a budget; give '25%', '0.25', '200' or '90s'")
        fields: dict[str, float] = {}
        for part in text.replace(",", "+").split("+"):
            kind, value = _parse_part(part.strip(), text)
            if kind in fields:
                raise SearchError(f"budget {text!r} gives the {kind} limit twice; give each form once")
            fields[kind] = value
        evals = fields.get("evaluations")
        return cls(
            evaluations=None if evals is None else int(evals),
            seconds=fields.get("seconds"),
            share=fields.get("share"),
        )

    def resolve(self, n_configs: int) -> Budget:
        """This budget with its ``share`` turned into evaluations of a space of ``n_configs`` legal configs."""
        if self.share is None:
            return self
        if n_configs < 1:
            raise SearchError("a budget fraction of an empty space is empty")
        n = max(1, math.ceil(self.share * n_configs - 1e-9))
        evals = n if self.evaluations is None else min(n, self.evaluations)
        return Budget(evaluations=evals, seconds=self.seconds)

    def __str__(self) -> str:
        parts = []
        if self.share is not None:
            parts.append(f"{self.share:.4g} of the space")
        if self.evaluations is not None:
            parts.append(f"{self.evaluations} evaluations")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} s")
        return " or ".join(parts)

    def exhausted(self, evaluations: int, elapsed_s: float) -> bool:
        """True once either limit is reached."""
        if self.share is not None:
            raise SearchError(f"budget '{self}' is a fraction of the space: resolve(n_configs) it first")
        if self.evaluations is not None and evaluations >= self.evaluations:
            return True
        return self.seconds is not None and elapsed_s >= self.seconds

    def remaining(self, evaluations: int) -> int | None:
        """Evaluations left, or ``None`` when only time limits the search."""
        return None if self.evaluations is None else max(0, self.evaluations - evaluations)


_UNITS = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def _parse_part(part: str, whole: str) -> tuple[str, float]:
    """One form of :meth:`Budget.parse`: ``("share" | "evaluations" | "seconds", value)``."""
    hint = "give a fraction ('25%' or '0.25'), a count ('200') or seconds ('90s', '2m')"
    low = part.lower()
    try:
        if low.endswith("%"):
            share = float(low[:-1]) / 100.0
            if not 0 < share <= 1:
                raise SearchError(f"budget {whole!r}: {part!r} must be a percentage in (0, 100]")
            return "share", share
        for unit in sorted(_UNITS, key=len, reverse=True):
            if low.endswith(unit):
                secs = float(low[: -len(unit)]) * _UNITS[unit]
                if not (secs > 0 and math.isfinite(secs)):
                    raise SearchError(f"budget {whole!r}: {part!r} must be a positive time")
                return "seconds", secs
        value = float(low)
    except ValueError:
        raise SearchError(f"budget {whole!r}: cannot read {part!r}; {hint}") from None
    if not (value > 0 and math.isfinite(value)):
        raise SearchError(f"budget {whole!r}: {part!r} must be positive; {hint}")
    if value < 1 or (value == 1 and "." in low):
        return "share", value
    if value != int(value):
        raise SearchError(
            f"budget {whole!r}: {part!r} is neither a fraction (<= 1) nor a whole count; {hint}"
        )
    return "evaluations", value
