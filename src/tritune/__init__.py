"""tritune: autotuning for Triton kernels that screens, verifies, times, searches, stores and dispatches."""

from __future__ import annotations

from tritune import bucket
from tritune._version import __version__
from tritune.bench import Measurement
from tritune.config import Config
from tritune.errors import (
    CaptureMissError,
    ConfigError,
    IllegalConfigError,
    KernelSpecError,
    NoLegalConfigError,
    StoreCorruptError,
    StoreError,
    StoreSchemaError,
    TimingUnavailableError,
    TrituneError,
    WorkloadError,
)
from tritune.outcome import Status
from tritune.results import CandidateResult, RunResult, WorkloadResult
from tritune.screen.langguard import snapshot as _snapshot_language
from tritune.space import Constraint, Space, constraint, pow2, values
from tritune.tune.autotune import Autotuned, Choice, UntunedWarning, autotune
from tritune.verify import VerifyReport, verify
from tritune.workload import Workload, load_workloads

_snapshot_language()  # before any interpreter run patches triton.language

from tritune import bench  # noqa: E402  (a callable module: tritune.bench(fn, ...))

__all__ = [
    "Autotuned",
    "CandidateResult",
    "CaptureMissError",
    "Choice",
    "Config",
    "ConfigError",
    "Constraint",
    "IllegalConfigError",
    "KernelSpecError",
    "Measurement",
    "NoLegalConfigError",
    "RunResult",
    "Space",
    "Status",
    "StoreCorruptError",
    "StoreError",
    "StoreSchemaError",
    "TimingUnavailableError",
    "TrituneError",
    "UntunedWarning",
    "VerifyReport",
    "Workload",
    "WorkloadError",
    "WorkloadResult",
    "__version__",
    "autotune",
    "bench",
    "bucket",
    "constraint",
    "load_workloads",
    "pow2",
    "values",
    "verify",
]
