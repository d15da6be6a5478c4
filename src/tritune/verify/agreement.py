"""Verify with no oracle: candidates are compared with each other and labelled by agreement group.

Without an oracle nothing says which output is right, so no candidate is called correct or incorrect for
its values: candidates whose outputs agree within the workload's tolerance form one group, and a key whose
candidates split into several groups is reported as a disagreement (exit 1). An output element that was
never written (still poisoned) is wrong with or without an oracle: that candidate is ``incorrect``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tritune.outcome import Status
from tritune.results import CandidateResult
from tritune.verify.compare import compare

NO_ORACLE = (
    "no oracle: candidates are compared with each other, not checked; the label is the group of candidates "
    "whose outputs agree within atol/rtol, and which group (if any) is right is unknown"
)


@dataclass
class AgreementGroups:
    """Groups of candidates whose outputs agree within tolerance; each group keeps its first member's outputs."""

    atol: float
    rtol: float
    members: list[list[str]] = field(default_factory=list)
    _representatives: list[list[Any]] = field(default_factory=list)

    def add(self, config_id: str, outputs: Sequence[Any]) -> int:
        """Put a candidate into the first group it agrees with (or a new one); returns the group's index."""
        for i, rep in enumerate(self._representatives):
            if all(compare(o, r, atol=self.atol, rtol=self.rtol).ok for o, r in zip(outputs, rep)):
                self.members[i].append(config_id)
                return i
        self.members.append([config_id])
        self._representatives.append([o.clone() for o in outputs])
        return len(self.members) - 1


def label(results: list[CandidateResult], groups: AgreementGroups) -> list[CandidateResult]:
    """``compared`` candidates with a reason naming their agreement group and how the groups split."""
    index = {cid: i for i, g in enumerate(groups.members) for cid in g}
    n = len(groups.members)
    out = []
    for r in results:
        if r.status is not Status.COMPARED:
            out.append(r)
            continue
        i = index[r.config.id]
        size = len(groups.members[i])
        if n == 1:
            why = f"no oracle: agrees with all {size - 1} other candidates that ran (agreement group 1 of 1)"
        else:
            sizes = ", ".join(str(len(g)) for g in groups.members)
            why = (
                f"no oracle: in agreement group {i + 1} of {n} (sizes {sizes}); the candidates disagree, so at "
                "least one group is wrong, and without an oracle which one is unknown: give the workload an oracle"
            )
        out.append(CandidateResult(r.config, r.status, why, {**r.extra, "agreement_group": i + 1}))
    return out
