"""The server shows a user tool's own presentation: kind, title, locations, edit preview and
command approvals come from the tool's declaration, never from its name."""

from __future__ import annotations

from tests.server.harness import AGENT_HEADER

PRESENTED_AGENT = (
    AGENT_HEADER
    + """
from lovia.tools.presentation import FileDiff, ToolLocation


async def stamp_preview(args, workspace):
    current = await workspace.current_text(args["file"])
    return [FileDiff(path=str(ROOT / args["file"]), oldText=current, newText=args["text"])]


@tool(
    needs_approval=True,
    kind="edit",
    title=lambda a: f"Stamp {a['file']}",
    locations=lambda a: [ToolLocation(a["file"], line=2)],
    preview=stamp_preview,
)
async def stamp(file: str, text: str) -> str:
    "Write a stamp."
    (ROOT / file).write_text(text + "!")
    return "stamped"


@tool(needs_approval=True, kind="execute", title="Launch")
async def launch(command: str) -> str:
    "Launch something."
    return "launched " + command


@tool(needs_approval=True, kind="delete", locations=lambda a: [ToolLocation(a["target"])])
async def shred(target: str) -> str:
    "Delete a file."
    (ROOT / target).unlink()
    return "gone"


agent = Agent(
    name="presenter",
    model=ScriptedProvider([
        call("stamp", {"file": "notes.txt", "text": "hi"}, call_id="s1"),
        call("launch", {"command": "rocket   go"}, call_id="l1"),
        call("shred", {"target": "notes.txt"}, call_id="x1"),
        text("done"),
    ]),
    tools=[stamp, launch, shred],
)
"""
)


async def test_a_user_tool_is_shown_as_it_presents_itself(harness):
    spec = harness.write_agent(PRESENTED_AGENT)
    await harness.start(settings={"agent": spec})
    run = await harness.run("stamp it")
    rid = run["runId"]
    done = await harness.approve_all(rid)
    assert done["status"] == "completed"
    events = harness.of_run(rid)
    notes = harness.root / "notes.txt"

    call = next(e for e in events if e["kind"] == "tool.call" and e["toolCallId"] == "s1")
    assert (call["toolKind"], call["title"]) == ("edit", "Stamp notes.txt")
    assert call["locations"] == [{"path": str(notes), "uri": notes.as_uri(), "line": 2}]

    asked = next(e for e in events if e["kind"] == "approval.requested" and e["toolCallId"] == "s1")
    assert asked["action"] == "file.create" and asked["title"] == "Stamp notes.txt"
    assert asked["diff"] == [
        {"path": str(notes), "uri": notes.as_uri(), "oldText": None, "newText": "hi"}
    ]
    result = next(e for e in events if e["kind"] == "tool.result" and e["toolCallId"] == "s1")
    (diff,) = [c for c in result["content"] if c["type"] == "diff"]
    assert diff["newText"] == "hi!"  # read back from disk after the write

    launch = next(
        e for e in events if e["kind"] == "approval.requested" and e["toolCallId"] == "l1"
    )
    assert launch["action"] == "shell" and launch["command"] == "rocket   go"
    assert launch["title"] == "Launch" and "rocket   go" in launch["detail"]
    shred = next(e for e in events if e["kind"] == "approval.requested" and e["toolCallId"] == "x1")
    assert shred["action"] == "file.delete" and shred["paths"] == [str(notes)]
    assert shred["title"] == "shred: notes.txt" and not notes.exists()
    status = await harness.request("lovia/status", {})
    assert status["sessionRules"] == []

    view = await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    calls = [c for m in view["entries"] if m["role"] == "assistant" for c in m["toolCalls"]]
    assert [(c["title"], c["toolKind"]) for c in calls] == [
        ("Stamp notes.txt", "edit"),
        ("Launch", "execute"),
        ("shred: notes.txt", "delete"),
    ]


async def test_always_allowing_a_command_remembers_that_command(harness):
    spec = harness.write_agent(PRESENTED_AGENT)
    await harness.start(settings={"agent": spec})
    run = await harness.run("stamp it")
    done = await harness.approve_all(run["runId"], decision="allow_always")
    assert done["status"] == "completed"
    status = await harness.request("lovia/status", {})
    subjects = {r["subject"] for r in status["sessionRules"]}
    notes = harness.root / "notes.txt"
    launch = f'launch:["{harness.root.resolve()}", "rocket   go"]'  # exact, with its cwd
    assert subjects == {launch, f"stamp:{notes}", f"shred:{notes}"}


OWN_WORKSPACE_AGENT = (
    AGENT_HEADER
    + """
from lovia.workspace import Workspace

agent = Agent(
    name="own-workspace",
    model=ScriptedProvider([
        call("edit_file", {"path": "a.txt", "old": "one", "new": "two"}, call_id="e1"),
        text("done"),
    ]),
    workspace=Workspace.local(str(ROOT)),
)
"""
)


async def test_an_agent_with_its_own_workspace_gets_edit_diffs_from_it(harness):
    (harness.root / "a.txt").write_text("one\n")
    spec = harness.write_agent(OWN_WORKSPACE_AGENT)
    await harness.start(settings={"agent": spec})
    run = await harness.run("edit")
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed"
    events = harness.of_run(run["runId"])
    result = next(e for e in events if e["kind"] == "tool.result" and e["toolCallId"] == "e1")
    (diff,) = [c for c in result["content"] if c["type"] == "diff"]
    assert (diff["oldText"], diff["newText"]) == ("one\n", "two\n")
    assert diff["path"] == str(harness.root / "a.txt")
