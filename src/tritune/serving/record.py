"""Writing an incremental promotion to the store: every candidate's outcome at the key, and the winner."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tritune.device import gpu_unavailable_reason
from tritune.measure import MeasurePolicy
from tritune.outcome import Status

if TYPE_CHECKING:
    from tritune.decorator.autotuned import Autotuned
    from tritune.serving.state import KeyState, Proposal


def record_promotion(tuned: Autotuned, key: tuple[Any, ...], st: KeyState, p: Proposal) -> None:
    """Record the racers' measurements (taken on real calls), the disagreeing and failed candidates, and
    the promoted winner with its ties. With ``distributed`` only rank 0 writes. Nothing without a store."""
    from tritune.store import CandidateRecord

    tuner = tuned.tuner
    store = tuner.open_store()
    if store is None or (tuner.distributed and _rank() != 0):
        return
    recs = []
    for c in st.configs:
        if c in p.disagreed:
            recs.append(CandidateRecord(c, Status.INCORRECT, None, f"incremental check: {p.disagreed[c]}"))
        elif c in p.failed:
            recs.append(CandidateRecord(c, Status.COMPILE_FAILED, None, p.failed[c]))
        else:
            m = st.measurement(c)
            if m is not None:
                recs.append(CandidateRecord(c, Status.MEASURED, m.median_ms, None, m.to_json(),
                                            provenance={"how": "incremental: timed on real calls"}))  # fmt: skip
    # Under the served policy: times taken on real calls are never read as a timer's (cold, warm, graph) times.
    tkey = tuner.tuning_key(tuned, key, interpreter=gpu_unavailable_reason() is not None, measure=MeasurePolicy.SERVED)
    store.record(tkey, recs, p.promoted, ties=p.ties)


def _rank() -> int:
    try:
        import torch.distributed as dist

        return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
    except Exception:  # pragma: no cover
        return 0
