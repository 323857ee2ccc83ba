"""The offline demo model answers the summariser too, so ``/compact`` can be tried offline."""

from __future__ import annotations

from pathlib import Path

from lovia.context.policy import CompactionRequest
from lovia.context.prompts import REQUIRED_SECTIONS
from lovia.context.summarizer import LLMSummarizer
from lovia.transcript import AssistantTextEntry, InputEntry
from lovia_server.host.demo_model import DemoModel, demo_agent


async def test_the_demo_summarises_with_the_users_focus_and_keeps_its_script(
    tmp_path: Path,
) -> None:
    model = demo_agent(tmp_path).model
    assert isinstance(model, DemoModel)
    script = list(model.script)
    history = [
        InputEntry(role="user", content="Show me around"),
        AssistantTextEntry("I looked around."),
    ]
    summary = await LLMSummarizer(provider=model).summarize(
        history, req=CompactionRequest(entries=history, focus="keep the README facts")
    )
    assert all(section in summary for section in REQUIRED_SECTIONS)
    assert "keep the README facts" in summary
    assert list(model.script) == script  # the scripted run is not consumed
