"""Pytest fixtures for the fake vendor servers (registered by ``tests/conftest.py``).

- ``fake_openai``: a started :class:`~tests.support.fake_openai.FakeOpenAI`, stopped after
  the test. ``base_url`` ends in ``/v1``.
- ``fake_anthropic``: a started :class:`~tests.support.fake_anthropic.FakeAnthropic`.
- ``fake_responses``: a started
  :class:`~tests.support.fake_openai_responses.FakeOpenAIResponses` (OpenAI's Responses API).
- ``openai_env`` / ``anthropic_env``: the same servers with ``OPENAI_BASE_URL`` /
  ``OPENAI_API_KEY`` (resp. ``ANTHROPIC_*``) set in ``os.environ`` for the test, so
  ``Agent(model="openai:<name>")`` reaches the fake. They also use ``fresh_providers``.
- ``fresh_providers``: forgets learned context windows before the test and closes lovia's
  shared SDK clients of the test's event loop after it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from lovia.providers._clients import aclose_shared_clients
from lovia.providers._windows import clear_endpoint_cache
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_responses import FakeOpenAIResponses


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def fake_responses() -> Iterator[FakeOpenAIResponses]:
    server = FakeOpenAIResponses()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def fresh_providers() -> AsyncIterator[None]:
    clear_endpoint_cache()
    yield
    await aclose_shared_clients()
    clear_endpoint_cache()


@pytest.fixture
def openai_env(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, fresh_providers: None
) -> FakeOpenAI:
    for key, value in fake_openai.env().items():
        monkeypatch.setenv(key, value)
    return fake_openai


@pytest.fixture
def anthropic_env(
    fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, fresh_providers: None
) -> FakeAnthropic:
    for key, value in fake_anthropic.env().items():
        monkeypatch.setenv(key, value)
    return fake_anthropic
