"""The measurement policy value, its resolution (run > kernel > environment > default) and the batching rule."""

from __future__ import annotations

import pytest

from tritune.bench import DEFAULT_POLICY, MeasurePolicy, launches_per_sample, resolve_policy
from tritune.errors import ConfigError
from tritune.measure import ENV_VAR, MAX_LAUNCHES_PER_SAMPLE, SHORT_KERNEL_MS


def test_policy_settings() -> None:
    assert DEFAULT_POLICY is MeasurePolicy.COLD
    assert (MeasurePolicy.COLD.flush_l2, MeasurePolicy.COLD.graph) == (True, False)
    assert (MeasurePolicy.WARM.flush_l2, MeasurePolicy.WARM.graph) == (False, False)
    assert (MeasurePolicy.GRAPH.flush_l2, MeasurePolicy.GRAPH.graph) == (False, True)
    assert MeasurePolicy.parse(" Warm ") is MeasurePolicy.WARM and str(MeasurePolicy.GRAPH) == "graph"
    assert all(p.describe for p in MeasurePolicy)


def test_resolution_order() -> None:
    env = {ENV_VAR: "graph"}
    assert resolve_policy(environ={}) is DEFAULT_POLICY
    assert resolve_policy(environ={ENV_VAR: "  "}) is DEFAULT_POLICY
    assert resolve_policy(environ=env) is MeasurePolicy.GRAPH
    assert resolve_policy(kernel="warm", environ=env) is MeasurePolicy.WARM
    assert resolve_policy("cold", kernel="warm", environ=env) is MeasurePolicy.COLD


def test_resolution_reads_the_real_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "WARM")
    assert resolve_policy() is MeasurePolicy.WARM


def test_bad_names_say_where_and_what_is_valid() -> None:
    with pytest.raises(ConfigError, match=r"rmsnorm: \$TRITUNE_MEASURE='hot'.*'cold', 'warm', 'graph'"):
        resolve_policy(environ={ENV_VAR: "hot"}, kernel_name="rmsnorm")
    with pytest.raises(ConfigError, match=r"rmsnorm: @autotune\(measure=...\)=3"):
        resolve_policy(kernel=3, kernel_name="rmsnorm")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="this run"):
        resolve_policy("eager")


@pytest.mark.parametrize(
    ("est_ms", "expected"),
    [
        (1.0, 1),  # long: one launch per sample
        (SHORT_KERNEL_MS, 1),  # at the threshold: not short
        (0.049, 2),  # just below: ceil(0.05 / 0.049) = 2
        (0.005, 10),  # a 5 us RMSNorm: 10 launches hold 50 us
        (0.002, 25),
        (0.00001, MAX_LAUNCHES_PER_SAMPLE),  # capped
        (0.0, MAX_LAUNCHES_PER_SAMPLE),  # too short to see
        (float("nan"), MAX_LAUNCHES_PER_SAMPLE),
    ],
)
def test_launches_per_sample(est_ms: float, expected: int) -> None:
    assert launches_per_sample(est_ms) == expected


def test_launches_per_sample_options() -> None:
    assert launches_per_sample(0.01, short_ms=0.005) == 1
    assert launches_per_sample(0.001, sample_ms=0.1) == 100
    assert launches_per_sample(0.001, max_launches=1) == 1
    with pytest.raises(ValueError):
        launches_per_sample(0.001, sample_ms=0)
