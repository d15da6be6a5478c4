"""Paths and loaders of the report samples (labelled samples, see fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_json(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())
