import pytest_asyncio

from tests.server.harness import Harness


@pytest_asyncio.fixture
async def harness(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    h = Harness(root.resolve(), tmp_path / "state")
    yield h
    await h.stop()
