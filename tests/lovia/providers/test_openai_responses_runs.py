"""OpenAIResponsesProvider in agent runs: reasoning carried across turns, checkpoints and
resumes; the registry and the provider's configuration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, Runner, tool
from lovia import events as ev
from lovia.checkpointer import CheckpointOptions
from lovia.exceptions import ProviderError, UserError
from lovia.providers import provider_from_string
from lovia.providers.openai import OpenAIChatProvider
from lovia.providers.openai_responses import OpenAIResponsesProvider
from lovia.reliability import RetryPolicy
from lovia.stores import SQLiteCheckpointer
from lovia.transcript import InputEntry, ReasoningEntry, TranscriptEntry
from tests.lovia.providers.helpers import run
from tests.support import fake_openai_responses as rsp
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_responses import FakeOpenAIResponses, assert_sdk_accepts

HI: list[TranscriptEntry] = [InputEntry("user", "hi")]


def provider(server: FakeOpenAIResponses) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(
        "fake-model", base_url=server.base_url, api_key="test-key", timeout=5.0
    )


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def two_turns() -> tuple[Any, Any]:
    return (
        rsp.response(
            rsp.reasoning("Use the tool.", encrypted="enc-turn-1", id="rs_t1"),
            rsp.function_call("add", '{"a":2,"b":3}', call_id="call_1"),
            usage=rsp.usage(input=1500, output=20, cached=0),
        ),
        rsp.response(
            rsp.reasoning("Answer.", encrypted="enc-turn-2", id="rs_t2"),
            rsp.message("The sum is 5."),
            usage=rsp.usage(input=1600, output=8, cached=1408),
        ),
    )


def reasoning_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [i for i in items if i.get("type") == "reasoning"]


async def test_encrypted_reasoning_round_trips_across_turns_of_a_run(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(*two_turns())
    agent: Agent[Any] = Agent(
        name="calc", instructions="Add.", model=provider(fake_responses), tools=[add]
    )
    result = await Runner.run(agent, "2+3?")
    assert result.output == "The sum is 5."
    assert result.usage.cache_read_tokens == 1408
    first, second = fake_responses.inputs()
    assert second[: len(first)] == first
    assert second[len(first) :] == [
        {
            "type": "reasoning",
            "id": "rs_t1",
            "summary": [{"type": "summary_text", "text": "Use the tool."}],
            "encrypted_content": "enc-turn-1",
        },
        {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": '{"a":2,"b":3}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "5"},
    ]
    keys = {r.json.get("prompt_cache_key") for r in fake_responses.stream_requests()}
    assert len(keys) == 1 and None not in keys
    for request in fake_responses.stream_requests():
        assert_sdk_accepts(request)


async def test_encrypted_reasoning_survives_a_checkpoint_and_a_resume(
    fake_responses: FakeOpenAIResponses, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in fake_responses.env().items():
        monkeypatch.setenv(key, value)
    first_turn, answer = two_turns()
    # turn 2 fails with a passing fault and the one attempt allowed: the run is interrupted
    fake_responses.script(first_turn, rsp.error(503, "Service Unavailable", type="server_error"))
    db = tmp_path / "runs.db"

    def agent() -> Agent[Any]:
        return Agent(
            name="calc",
            instructions="Add.",
            model="openai-responses:fake-model",  # a fresh provider per run: nothing cached
            tools=[add],
            retry=RetryPolicy(max_attempts=1),
        )

    async with SQLiteCheckpointer(db) as store:
        with pytest.raises(ProviderError):
            await Runner.run(
                agent(), "2+3?", checkpoint=CheckpointOptions(checkpointer=store, run_id="r1")
            )
    async with SQLiteCheckpointer(db) as store:  # as after a restart
        snapshot = await store.load("r1")
        assert snapshot is not None and snapshot.status == "interrupted"
        saved = [e for e in snapshot.entries if isinstance(e, ReasoningEntry)]
        assert saved[0].metadata["encrypted_content"] == "enc-turn-1"
        fake_responses.script(answer)
        result = await Runner.run(
            agent(), "2+3?", checkpoint=CheckpointOptions(checkpointer=store, run_id="r1")
        )
    assert result.output == "The sum is 5."
    interrupted, resumed = fake_responses.inputs()[1:]
    assert resumed == interrupted
    assert reasoning_items(resumed) == [
        {
            "type": "reasoning",
            "id": "rs_t1",
            "summary": [{"type": "summary_text", "text": "Use the tool."}],
            "encrypted_content": "enc-turn-1",
        }
    ]
    keys = [r.json["prompt_cache_key"] for r in fake_responses.stream_requests()]
    assert len(set(keys)) == 1  # the resumed run keeps its conversation's cache


@tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy to a target."""
    return f"deployed to {target}"


async def test_encrypted_reasoning_survives_a_run_parked_at_an_approval(
    fake_responses: FakeOpenAIResponses, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in fake_responses.env().items():
        monkeypatch.setenv(key, value)
    fake_responses.script(
        rsp.response(
            rsp.reasoning("Deploy needs approval.", encrypted="enc-deploy", id="rs_d"),
            rsp.function_call("deploy", '{"target":"prod"}', call_id="call_d"),
        )
    )
    db = tmp_path / "runs.db"

    def agent() -> Agent[Any]:
        return Agent(name="ops", model="openai-responses:fake-model", tools=[deploy])

    async with SQLiteCheckpointer(db) as store:
        handle = Runner.stream(
            agent(), "ship it", checkpoint=CheckpointOptions(checkpointer=store, run_id="r2")
        )
        events = handle.__aiter__()
        async for event in events:
            if isinstance(event, ev.ApprovalRequired):
                break  # parked: the consumer goes away, as a closed editor would
        await events.aclose()
    fake_responses.script(rsp.text("Deployed."))
    async with SQLiteCheckpointer(db) as store:  # as after a restart
        resumed = Runner.stream(
            agent(), "ship it", checkpoint=CheckpointOptions(checkpointer=store, run_id="r2")
        )
        async for event in resumed:
            if isinstance(event, ev.ApprovalRequired):
                event.approve()
        result = await resumed
    assert result.output == "Deployed."
    assert len(fake_responses.stream_requests()) == 2  # the model was not asked again to park
    last = fake_responses.inputs()[-1]
    assert reasoning_items(last) == [
        {
            "type": "reasoning",
            "id": "rs_d",
            "summary": [{"type": "summary_text", "text": "Deploy needs approval."}],
            "encrypted_content": "enc-deploy",
        }
    ]
    assert last[-1] == {
        "type": "function_call_output",
        "call_id": "call_d",
        "output": "deployed to prod",
    }
    assert_sdk_accepts(fake_responses.last_request)


# --------------------------------------------------------------------------- configuration


def test_registry_prefix_builds_the_responses_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    p = provider_from_string("openai-responses:gpt-5.5")
    assert isinstance(p, OpenAIResponsesProvider)
    assert p.model == "gpt-5.5" and p.name == "openai-responses"
    assert isinstance(provider_from_string("openai:gpt-5.5"), OpenAIChatProvider)
    import lovia.providers

    assert lovia.providers.OpenAIResponsesProvider is OpenAIResponsesProvider


def test_building_it_imports_no_sdk() -> None:
    code = (
        "import sys, lovia\n"
        "from lovia.providers import provider_from_string\n"
        "provider_from_string('openai-responses:m', base_url='http://localhost:1/v1')\n"
        "print(','.join(m for m in ('openai', 'httpx2') if m in sys.modules) or 'none')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "none"


def test_capabilities_and_windows_follow_the_host() -> None:
    official = OpenAIResponsesProvider("gpt-5.5", api_key="k")
    assert official.context_window() == 1_050_000
    assert official.supports_vision and official.supports_json_schema
    assert official.system_role == "developer"
    local = OpenAIResponsesProvider("gpt-oss", base_url="http://localhost:8000/v1")
    assert local.context_window() is None
    assert not local.supports_vision and local.system_role == "system"


async def test_missing_key_for_the_official_host_is_a_user_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UserError, match="requires an API key"):
        await run(OpenAIResponsesProvider("gpt-5.5"), HI)


async def test_a_chat_completions_fake_is_not_mistaken_for_it(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(ProviderError) as info:
        await run(OpenAIResponsesProvider("m", base_url=fake_openai.base_url, api_key="k"), HI)
    assert info.value.status_code == 404 and info.value.retryable is False
