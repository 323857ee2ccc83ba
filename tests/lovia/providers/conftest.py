"""Provider tests: fresh window memos, and no SDK client left open after a test."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fresh(fresh_providers: None) -> None:
    """Every provider test uses ``fresh_providers`` (see tests/support/fixtures.py)."""
