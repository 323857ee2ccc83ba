"""Provider tests: every test starts with fresh window memos and leaves no open SDK client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from lovia.providers._clients import aclose_shared_clients
from lovia.providers._windows import clear_endpoint_cache


@pytest.fixture(autouse=True)
async def _isolated_providers() -> AsyncIterator[None]:
    clear_endpoint_cache()
    yield
    await aclose_shared_clients()
    clear_endpoint_cache()
