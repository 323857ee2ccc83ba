"""``/compact`` in the framework: a run asked to compact its session's conversation now
(``Runner.stream(..., compact=CompactNow(focus))``) with a scripted model and a real session."""

from __future__ import annotations

from typing import Any

from lovia import Agent, Runner
from lovia.context.policy import CompactNow
from lovia.context.prompts import REQUIRED_SECTIONS
from lovia.events import ContextCompacted, InterceptorNotice
from lovia.exceptions import LoviaError
from lovia.plugins.base import PluginInstance
from lovia.run_interceptor import Interception, RunInterceptor
from lovia.stores.memory import InMemorySession
from lovia.testing import ScriptedProvider, text

SUMMARY = "\n".join(f"{s}\nSUMMARY-MARK {s}" for s in REQUIRED_SECTIONS)


def seen(provider: ScriptedProvider, index: int) -> str:
    return "\n".join(str(m.content) for m in provider.calls[index])


class _Recorder(RunInterceptor):
    def __init__(self, block: str | None = None) -> None:
        self.heard: list[dict[str, Any]] = []
        self.block = block

    async def before_compact(self, ctx: Any, **said: Any) -> Interception | None:
        self.heard.append(said)
        return Interception(block=self.block) if self.block else None


class _Plugin:
    name = "recorder"

    def __init__(self, recorder: _Recorder) -> None:
        self.recorder = recorder

    async def setup(self) -> PluginInstance:
        return PluginInstance(interceptors=[self.recorder])


async def test_compact_now_summarises_with_the_focus_and_later_runs_replay_it() -> None:
    provider = ScriptedProvider([text("early answer"), text(SUMMARY), text("later answer")])
    recorder = _Recorder()
    agent = Agent(name="a", model=provider, plugins=[_Plugin(recorder)])
    session = InMemorySession()
    await Runner.run(agent, "EARLY-MESSAGE about the parser", session=session, session_id="s")

    handle = Runner.stream(
        agent, [], session=session, session_id="s", compact=CompactNow("focus-on-parser")
    )
    events = [e async for e in handle]
    result = await handle.result()
    [compacted] = [e for e in events if isinstance(e, ContextCompacted)]
    assert compacted.notice.reason == "manual_summary" and not compacted.notice.reactive
    assert "focus-on-parser" in seen(provider, 1) and "EARLY-MESSAGE" in seen(provider, 1)
    assert result.output.startswith("Compacted the conversation") and result.entries == []
    assert recorder.heard == [{"reactive": False, "trigger": "manual", "focus": "focus-on-parser"}]

    await Runner.run(agent, "what next?", session=session, session_id="s")
    later = seen(provider, 2)
    assert "SUMMARY-MARK" in later and "EARLY-MESSAGE" not in later and "what next?" in later


async def test_compact_now_on_an_empty_conversation_calls_no_model() -> None:
    provider = ScriptedProvider([])
    agent = Agent(name="a", model=provider)
    result = await Runner.run(
        agent, [], session=InMemorySession(), session_id="s", compact=CompactNow()
    )
    assert result.output == "Nothing to compact: the conversation is empty."
    assert provider.calls == []


async def test_a_blocking_interceptor_stops_a_manual_compaction() -> None:
    provider = ScriptedProvider([text("early answer")])
    recorder = _Recorder(block="not now: the review is open")
    agent = Agent(name="a", model=provider, plugins=[_Plugin(recorder)])
    session = InMemorySession()
    await Runner.run(agent, "EARLY-MESSAGE", session=session, session_id="s")
    handle = Runner.stream(agent, [], session=session, session_id="s", compact=CompactNow())
    events = [e async for e in handle]
    try:
        await handle.result()
    except LoviaError as exc:
        assert "not now: the review is open" in str(exc)
    else:
        raise AssertionError("the compaction was not refused")
    assert not any(isinstance(e, ContextCompacted | InterceptorNotice) for e in events)
    assert len(provider.calls) == 1  # no summary call
    segments = await session.segments("s")
    assert len(segments) == 1


async def test_a_second_compact_with_nothing_new_calls_no_model() -> None:
    provider = ScriptedProvider([text("early answer"), text(SUMMARY)])
    agent = Agent(name="a", model=provider)
    session = InMemorySession()
    await Runner.run(agent, "EARLY-MESSAGE", session=session, session_id="s")
    kw: dict[str, Any] = {"session": session, "session_id": "s", "compact": CompactNow()}
    first = await Runner.run(agent, [], **kw)
    assert first.output.startswith("Compacted the conversation")
    again = await Runner.run(agent, [], **kw)
    assert again.output.startswith("Nothing new to compact") and len(provider.calls) == 2


async def test_keep_recent_tokens_keeps_the_latest_exchange_verbatim() -> None:
    from lovia.context.compaction import Compaction

    provider = ScriptedProvider(
        [text("A" * 400), text("RECENT-ANSWER"), text(SUMMARY), text("later answer")]
    )
    agent = Agent(name="a", model=provider, context_policy=Compaction(keep_recent_tokens=20))
    session = InMemorySession()
    await Runner.run(agent, "EARLY-MESSAGE " + "x" * 400, session=session, session_id="s")
    await Runner.run(agent, "RECENT-QUESTION", session=session, session_id="s")
    await Runner.run(agent, [], session=session, session_id="s", compact=CompactNow())
    assert "EARLY-MESSAGE" in seen(provider, 2) and "RECENT-QUESTION" not in seen(provider, 2)
    await Runner.run(agent, "go on", session=session, session_id="s")
    later = seen(provider, 3)
    assert "SUMMARY-MARK" in later and "EARLY-MESSAGE" not in later
    assert "RECENT-QUESTION" in later and "RECENT-ANSWER" in later
