"""Shared fixtures for the workspace tests: real temporary trees, real sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    r.mkdir()
    return r.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    o = tmp_path / "outside"
    o.mkdir()
    (o / "secret.txt").write_text("outside secret\n")
    return o.resolve()


@pytest.fixture
async def coding(root: Path) -> AsyncIterator[LocalWorkspaceSession]:
    s = LocalWorkspaceSession(
        root, policy=WorkspacePolicy.coding(denied_paths=(".env*", "secrets"))
    )
    yield s
    await s.close()


@pytest.fixture
async def trusted(root: Path) -> AsyncIterator[LocalWorkspaceSession]:
    s = LocalWorkspaceSession(
        root, policy=WorkspacePolicy.trusted(denied_paths=(".env*", "secrets"))
    )
    yield s
    await s.close()
