"""Compile every candidate for a target GPU without the GPU: resources, occupancy and a verdict per config.

``screen(workload, target="sm90")`` is the library call behind ``tritune screen``; ``specialize`` builds
exactly what the JIT would compile; ``TARGETS``/``get_target`` hold each architecture's limits.
"""

from tritune.screen.occupancy import Occupancy, Resources, Violation, occupancy, violations
from tritune.screen.run import screen, summary_counts
from tritune.screen.specialize import (
    Specialization,
    cuda_target,
    frontend_rejection,
    launch_kwargs,
    specialize,
)
from tritune.screen.targets import TARGETS, Target, get_target, known_targets, target_from_device

__all__ = [
    "TARGETS",
    "Occupancy",
    "Resources",
    "Specialization",
    "Target",
    "Violation",
    "cuda_target",
    "frontend_rejection",
    "get_target",
    "known_targets",
    "launch_kwargs",
    "occupancy",
    "screen",
    "specialize",
    "summary_counts",
    "target_from_device",
    "violations",
]
