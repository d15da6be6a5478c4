"""tritune: autotuning for Triton kernels that screens, verifies, times, searches, stores and dispatches."""

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
from tritune.tune.autotune import Autotuned, Choice, PretunedIgnoredWarning, UntunedWarning, autotune
from tritune.tune.patch import patch_from_environment as _patch_from_environment
from tritune.tune.patch import patch_triton, patched_triton, unpatch_triton
from tritune.tune.triton_api import TritonAutotuner
from tritune.verify import VerifyReport, verify
from tritune.workload import Workload, load_workloads

_snapshot_language()  # before any interpreter run patches triton.language

from tritune import bench  # noqa: E402  (a callable module: tritune.bench(fn, ...))

_patch_from_environment()  # TRITUNE_PATCH_TRITON=1

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
    "PretunedIgnoredWarning",
    "RunResult",
    "Space",
    "Status",
    "StoreCorruptError",
    "StoreError",
    "StoreSchemaError",
    "TimingUnavailableError",
    "TritonAutotuner",
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
    "patch_triton",
    "patched_triton",
    "pow2",
    "unpatch_triton",
    "values",
    "verify",
]
