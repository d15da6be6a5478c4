"""The security suite: each attack of a second user on a shared machine, replayed for real (see attacks.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from attacks import remove, shared_dir


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder like /tmp: world-writable with the sticky bit, where the attacker can create files."""
    d = shared_dir()
    yield d
    remove(d)
