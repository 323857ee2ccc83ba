"""The built-in coding agent on a real model endpoint (a local OpenAI-format server), and the
event kinds that need special agents: questions, todos, handoffs, compaction, discarded output.
"""

import asyncio
import json

from tests.server.harness import AGENT_HEADER
from tests.support import fake_openai as oai


async def test_builtin_coding_agent_over_openai_wire(harness, fake_openai):
    (harness.root / "main.py").write_text("print('hi')\n")
    todos = {
        "todos": [
            {"content": "Read main.py", "status": "in_progress", "active_form": "Reading main.py"}
        ]
    }
    fake_openai.script(
        oai.tool_calls(
            oai.call(
                "ask_human",
                {"question": "Which greeting?", "options": [{"label": "hello"}, {"label": "hey"}]},
                id="q1",
            )
        ),
        oai.tool_calls(oai.call("todo_write", todos, id="t1")),
        oai.tool_calls(oai.call("read_file", {"path": "main.py"}, id="r1"), chunk_size=4),
        oai.tool_calls(
            oai.call("edit_file", {"path": "main.py", "old": "hi", "new": "hello"}, id="e1")
        ),
        oai.text("Changed the ", "greeting to **hello**."),
    )
    await harness.start(
        settings={"model": "openai:fake-model", "permissions": {"write": "ask"}},
        env=fake_openai.env(),
    )
    run = await harness.run("change the greeting")
    rid = run["runId"]
    question = await harness.wait_kind(rid, "question.requested")
    assert question["text"] == "Which greeting?" and question["choices"] == ["hello", "hey"]
    reply = await harness.request(
        "lovia/answer", {"runId": rid, "questionId": question["questionId"], "answer": "hello"}
    )
    assert reply == {"questionId": question["questionId"]}
    done = await harness.approve_all(rid)
    assert done["status"] == "completed", done
    assert done["output"] == "Changed the greeting to **hello**."
    events = harness.of_run(rid)
    answered = next(e for e in events if e["kind"] == "question.answered")
    assert answered["answer"] == "hello"
    todo = next(e for e in events if e["kind"] == "todo.updated")
    assert todo["items"] == [
        {"content": "Read main.py", "status": "in_progress", "activeForm": "Reading main.py"}
    ]
    assert (harness.root / "main.py").read_text() == "print('hello')\n"
    usage = [e for e in events if e["kind"] == "usage.updated"][-1]
    assert usage["inputTokens"] == 50 and usage["contextTokens"] == 10
    posts = [r for r in fake_openai.requests if r.method == "POST"]
    first = posts[0].json
    assert first["model"] == "fake-model"
    system = first["messages"][0]
    assert system["role"] == "system" and "coding agent" in system["content"]
    assert "## Workspace" in system["content"] and "## Todo" in system["content"]
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"read_file", "edit_file", "write_file", "shell", "ask_human", "todo_write"} <= names
    last = posts[-1].json["messages"]
    tool_msgs = [m for m in last if m["role"] == "tool"]
    assert json.loads(json.dumps(tool_msgs[0]["content"])) == "hello"
    with_reminder = posts[2].json["messages"][-1]
    assert "system-reminder" in with_reminder["content"]


async def test_answer_errors(harness, fake_openai):
    fake_openai.script(oai.text("nothing to ask"))
    await harness.start(settings={"model": "openai:fake-model"}, env=fake_openai.env())
    run = await harness.run("hi")
    await harness.finished(run["runId"])
    try:
        await harness.request(
            "lovia/answer", {"runId": run["runId"], "questionId": "q_x", "answer": "a"}
        )
    except Exception as exc:
        assert exc.code == -32011
    else:  # pragma: no cover
        raise AssertionError("answering a finished run must fail")


SPECIAL_AGENT = (
    AGENT_HEADER
    + """
from lovia import Handoff, RetryPolicy
from lovia.context import ContextResult
from lovia.exceptions import ProviderError
from lovia.messages import Usage
from lovia.transcript import FinishDelta, TextDelta, UsageDelta


class OneCompaction:
    def __init__(self):
        self.done = False

    async def compact(self, req):
        if self.done:
            return ContextResult(entries=req.entries)
        self.done = True
        req.usage.add(Usage(40, 7))  # what its summary call cost: the run's usage counts it
        return ContextResult(
            entries=req.entries, changed=True, compacted=True, reason="clear+summary",
            tokens_before=900, tokens_after=300, detail=["cleared 2 tool results"],
        )


class FlakyOnce:
    name = "flaky"
    model = "flaky"
    supports_json_schema = False

    def __init__(self):
        self.calls = 0

    async def stream(self, entries, **kw):
        self.calls += 1
        if self.calls == 1:
            yield TextDelta("partial answer")
            raise ProviderError("connection reset", retryable=True)
        yield TextDelta("clean answer")
        yield UsageDelta(Usage(3, 2))
        yield FinishDelta("stop")


async def no_sleep(delay):
    return None


expert = Agent(name="expert", model=FlakyOnce(), retry=RetryPolicy(sleep=no_sleep))
agent = Agent(
    name="router",
    model=ScriptedProvider([call("transfer_to_expert", {"reason": "needs an expert"})]),
    handoffs=[expert],
    context_policy=OneCompaction(),
    retry=RetryPolicy(sleep=no_sleep),
)
"""
)


async def test_handoff_compaction_and_discarded_output_events(harness):
    spec = harness.write_agent(SPECIAL_AGENT)
    await harness.start(settings={"agent": spec})
    run = await harness.run("route me")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed" and done["output"] == "clean answer"
    events = harness.of_run(run["runId"])
    handoff = next(e for e in events if e["kind"] == "handoff")
    assert handoff == {
        **handoff,
        "fromAgent": "router",
        "toAgent": "expert",
        "reason": "needs an expert",
    }
    compaction = next(e for e in events if e["kind"] == "compaction")
    assert compaction["tokensBefore"] == 900 and compaction["tokensAfter"] == 300
    assert compaction["stages"] == ["clear", "summary"]
    # the summary's 40 + 7 tokens beside the router's call (1 + 1) and the expert's (3 + 2)
    assert done["usage"]["inputTokens"] == 44 and done["usage"]["outputTokens"] == 10
    discarded = next(e for e in events if e["kind"] == "output.discarded")
    deltas = [
        e
        for e in events
        if e["kind"] == "message.delta" and e["messageId"] == discarded["messageId"]
    ]
    assert deltas[0]["seq"] < discarded["seq"] < deltas[-1]["seq"]
    completed = next(e for e in events if e["kind"] == "message.completed")
    assert completed["text"] == "clean answer" and completed["messageId"] == discarded["messageId"]
    kinds = [e["kind"] for e in events]
    assert kinds.index("handoff") < kinds.index("output.discarded")


async def test_the_connection_is_warm_before_the_first_run(harness, fake_openai):
    fake_openai.models = [{"id": "fake-model", "object": "model", "max_model_len": 65536}]
    fake_openai.script(oai.text("ready"))
    await harness.start(settings={"model": "openai:fake-model"}, env=fake_openai.env())
    for _ in range(500):  # the server warms up on its own, before any run
        if fake_openai.requests:
            break
        await asyncio.sleep(0.02)
    assert [(r.method, r.path) for r in fake_openai.requests] == [("GET", "/v1/models")]
    assert fake_openai.connections == 1
    run = await harness.run("hello")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed"
    # The run reused the warm connection and the window it probed.
    assert [r.method for r in fake_openai.requests] == ["GET", "POST"]
    assert fake_openai.connections == 1
