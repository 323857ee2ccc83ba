"""Fixtures for the ACP host tests: a workspace folder, a state directory, the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.acp.harness import AcpProcess
from tests.support.fake_openai import FakeOpenAI


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    return root


@pytest.fixture
async def agent(tmp_path: Path, fake_openai: FakeOpenAI) -> AsyncIterator[AcpProcess]:
    proc = AcpProcess(
        tmp_path / "state",
        env={
            **fake_openai.env(),
            "LOVIA_MODEL": "openai:model-a",
            "LOVIA_MODELS": "openai:model-b",
        },
    )
    try:
        yield proc
    finally:
        await proc.stop()
