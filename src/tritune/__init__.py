"""tritune: autotuning for Triton kernels that screens, verifies, times, searches, stores and dispatches."""

from __future__ import annotations

__version__ = "0.1.0"

from tritune.config import Config
from tritune.errors import (
    ConfigError,
    IllegalConfigError,
    KernelSpecError,
    NoLegalConfigError,
    TimingUnavailableError,
    TrituneError,
    WorkloadError,
)
from tritune.outcome import Status
from tritune.results import CandidateResult, RunResult, WorkloadResult
from tritune.space import Constraint, Space, constraint, pow2, values
from tritune.workload import Workload, load_workloads

__all__ = [
    "CandidateResult",
    "Config",
    "ConfigError",
    "Constraint",
    "IllegalConfigError",
    "KernelSpecError",
    "NoLegalConfigError",
    "RunResult",
    "Space",
    "Status",
    "TimingUnavailableError",
    "TrituneError",
    "Workload",
    "WorkloadError",
    "WorkloadResult",
    "__version__",
    "constraint",
    "load_workloads",
    "pow2",
    "values",
]
