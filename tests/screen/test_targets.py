"""The architecture table, target names, and (on a GPU) the table against the device."""

from __future__ import annotations

import dataclasses

import pytest

from tritune.errors import UnknownTargetError
from tritune.screen.targets import TARGETS, get_target, known_targets, target_from_device


def test_table_has_the_issue_targets_with_every_limit() -> None:
    for name in ("sm80", "sm86", "sm89", "sm90", "sm100"):
        t = TARGETS[name]
        for f in dataclasses.fields(t):
            if f.name not in ("tensor_memory_columns",):
                assert getattr(t, f.name) is not None, (name, f.name)
        assert t.shared_per_block < t.shared_per_sm
        assert t.threads_per_block <= t.threads_per_sm


def test_sm90_numbers_match_the_hopper_guide() -> None:
    t = get_target("sm90")
    assert (t.shared_per_block, t.shared_per_sm) == (232448, 233472)
    assert (t.registers_per_sm, t.registers_per_thread, t.threads_per_block, t.blocks_per_sm) == (
        65536,
        255,
        1024,
        32,
    )
    assert t.sm == "sm_90" and t.arch == 90


@pytest.mark.parametrize("alias", ["sm90", "sm_90", "SM90", "90", "9.0"])
def test_aliases(alias: str) -> None:
    assert get_target(alias) is TARGETS["sm90"]


def test_unknown_target_lists_the_known_ones() -> None:
    with pytest.raises(UnknownTargetError) as e:
        get_target("sm75")
    for name in known_targets():
        assert name in str(e.value)


def test_auto_without_gpu_says_why() -> None:
    from tritune.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is present: test_table_matches_device covers auto")
    with pytest.raises(UnknownTargetError, match="needs a GPU"):
        get_target("auto")


@pytest.mark.gpu
def test_table_matches_device() -> None:
    from tritune.device import gpu_unavailable_reason

    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(why)
    dev = target_from_device()
    table = TARGETS.get(dev.name)
    if table is None:
        pytest.skip(f"{dev.name} is not in the table")
    for field in (
        "shared_per_block",
        "shared_per_sm",
        "registers_per_sm",
        "registers_per_block",
        "threads_per_sm",
        "warp_size",
    ):
        assert getattr(dev, field) == getattr(table, field), field
