import pytest_asyncio

from lovia_server.host.store import ServerStore
from tests.server.harness import Harness


@pytest_asyncio.fixture
async def harness(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    h = Harness(root.resolve(), tmp_path / "state")
    yield h
    await h.stop()


@pytest_asyncio.fixture
async def store(tmp_path):
    """An open server store in a fresh state.db."""
    s = ServerStore(tmp_path / "state.db")
    await s.open()
    yield s
    await s.close()
