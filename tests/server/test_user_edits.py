"""The user edits a file while the agent works on it (issue 36): the agent's change never
reverts the user's text. The real server; the client plays VS Code's buffers (versioned
``workspace/applyEdit``, refusing stale versions) in ``workspaceEdit`` mode, or the server
writes the disk (``server`` mode) while another program changes the file."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.server.harness import AGENT_HEADER
from tests.server.vscode_client import VsCodeBuffers

OLD = "".join(f"line {i}\n" for i in range(1, 13))
AGENT_LINE_3 = OLD.replace("line 3\n", "line three\n")  # the agent's change
USER_LINE_10 = OLD.replace("line 10\n", "line 10 typed by the user\n")  # the user's
USER_LINE_3 = OLD.replace("line 3\n", "line 3 typed by the user\n")


def _agent(*calls: str) -> str:
    script = ",\n        ".join(calls)
    return (
        AGENT_HEADER
        + f"""
@tool
async def pause() -> str:
    "Wait until the test has changed the file."
    await wait_for_file("go.flag")
    return "ok"


agent = Agent(
    name="editor",
    model=ScriptedProvider([
        {script},
        text("done"),
    ]),
    tools=[pause],
)
"""
    )


READ = 'call("read_file", {"path": "app.py"}, call_id="r1")'
PAUSE = 'call("pause", {}, call_id="p1")'
WRITE = f'call("write_file", {{"path": "app.py", "content": {AGENT_LINE_3!r}}}, call_id="w1")'
EDIT = 'call("edit_file", {"path": "app.py", "old": "line 3\\n", "new": "line three\\n"}, call_id="w1")'


async def _start(harness, agent: str, *, edit_mode: str = "workspaceEdit"):
    (harness.root / "app.py").write_text(OLD)
    spec = harness.write_agent(agent)
    await harness.start(
        settings={"agent": spec, "permissions": {"write": "ask"}},
        init_options={"editMode": edit_mode},
    )
    assert (await harness.request("lovia/status", {}))["editMode"] == edit_mode


async def _card(harness, after_read=None):
    """Run the agent up to the write's approval card; ``after_read`` changes the file after
    the agent's read and before the card is computed."""
    run = await harness.run("change line 3")
    if after_read is not None:
        await harness.wait_kind(run["runId"], "tool.result", toolCallId="r1")
        after_read()
        (harness.root / "go.flag").write_text("1")
    card = await harness.wait_kind(run["runId"], "approval.requested", toolCallId="w1")
    return run, card


async def _answer(harness, run, card, edits: list[dict] | None = None):
    params = {"runId": run["runId"], "approvalId": card["approvalId"], "decision": "allow_once"}
    if edits is not None:
        params["edits"] = edits
    await harness.request("lovia/approve", params)
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    return next(
        e
        for e in harness.of_run(run["runId"])
        if e["kind"] == "tool.result" and e["toolCallId"] == "w1"
    )


async def _told_model(harness, run) -> str:
    """What the model received for the write call."""
    view = await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    (entry,) = [e for e in view["entries"] if e["role"] == "tool" and e.get("toolCallId") == "w1"]
    return str(entry["content"])


def _assert_nothing_done(result, told: str) -> None:
    """An edit that did not apply is never reported as done."""
    assert result["status"] == "failed", result
    assert not [c for c in result["content"] if c["type"] == "diff"]
    for word in ("updated app.py", "created app.py", "edited app.py", "applied (the file"):
        assert word not in told, told


async def test_a_write_from_an_earlier_read_is_refused_after_the_user_typed_on_another_line(
    harness,
):
    await _start(harness, _agent(READ, PAUSE, WRITE))
    editor = VsCodeBuffers(harness)
    app = harness.root / "app.py"
    editor.open(app, OLD)
    run, card = await _card(harness, lambda: editor.type(app, USER_LINE_10))
    result = await _answer(harness, run, card)
    told = await _told_model(harness, run)
    assert "app.py changed since you last read it" in told
    assert "Read app.py again" in told
    _assert_nothing_done(result, told)
    assert editor.text(app) == USER_LINE_10  # the user's line is there, nothing reverted
    assert harness.apply_edits == []
    assert app.read_text() == OLD


async def test_accept_after_editing_merges_the_accepted_change_into_the_users_newer_text(harness):
    await _start(harness, _agent(READ, EDIT))
    editor = VsCodeBuffers(harness)
    app = harness.root / "app.py"
    editor.open(app, OLD)
    run, card = await _card(harness)
    (diff,) = card["diff"]
    assert diff["oldText"] == OLD and diff["newText"] == AGENT_LINE_3
    editor.type(app, USER_LINE_10)
    # The user edits the proposal in the card, then accepts it.
    accepted = OLD.replace("line 3\n", "line THREE\n")
    result = await _answer(harness, run, card, [{"path": diff["path"], "newText": accepted}])
    assert result["status"] == "completed", result
    # Only the accepted change landed; the user's line 10 is kept; one undoable edit.
    assert editor.text(app) == USER_LINE_10.replace("line 3\n", "line THREE\n")
    (edit,) = harness.apply_edits
    (change,) = edit.edit.document_changes
    assert [e.new_text for e in change.edits] == ["line THREE\n"]
    told = await _told_model(harness, run)
    assert "merged into it and those changes were kept" in told


@pytest.mark.parametrize("how", ["edit_file accepted after editing", "write_file accepted"])
async def test_an_accepted_change_over_the_line_the_user_changed_is_a_conflict(harness, how):
    await _start(harness, _agent(READ, EDIT if how.startswith("edit") else WRITE))
    editor = VsCodeBuffers(harness)
    app = harness.root / "app.py"
    editor.open(app, OLD)
    run, card = await _card(harness)
    editor.type(app, USER_LINE_3)  # the same line the card changes, while it is showing
    accepted = OLD.replace("line 3\n", "line THREE\n")
    edits = [{"path": card["diff"][0]["path"], "newText": accepted}]
    result = await _answer(harness, run, card, edits if how.startswith("edit") else None)
    told = await _told_model(harness, run)
    assert "overlaps a change made to the same lines" in told
    _assert_nothing_done(result, told)
    assert editor.text(app) == USER_LINE_3
    assert harness.apply_edits == []


async def test_a_write_over_the_line_the_user_changed_is_refused(harness):
    await _start(harness, _agent(READ, PAUSE, WRITE))
    editor = VsCodeBuffers(harness)
    app = harness.root / "app.py"
    editor.open(app, OLD)
    run, card = await _card(harness, lambda: editor.type(app, USER_LINE_3))
    result = await _answer(harness, run, card)
    told = await _told_model(harness, run)
    assert "app.py changed since you last read it" in told
    _assert_nothing_done(result, told)
    assert editor.text(app) == USER_LINE_3
    assert harness.apply_edits == []


@pytest.mark.parametrize("watched", [False, True], ids=["unannounced", "didChangeWatchedFiles"])
async def test_a_change_on_disk_by_another_program_after_the_read_is_not_reverted(harness, watched):
    await _start(harness, _agent(READ, PAUSE, WRITE), edit_mode="server")
    app = harness.root / "app.py"

    def another_program() -> None:  # a formatter, git checkout, another editor...
        app.write_text(USER_LINE_10)
        if watched:
            harness.client.workspace_did_change_watched_files(
                lsp.DidChangeWatchedFilesParams(
                    changes=[lsp.FileEvent(uri=app.as_uri(), type=lsp.FileChangeType.Changed)]
                )
            )

    run, card = await _card(harness, another_program)
    result = await _answer(harness, run, card)
    told = await _told_model(harness, run)
    assert "app.py changed since you last read it" in told
    _assert_nothing_done(result, told)
    assert app.read_text() == USER_LINE_10


async def test_a_write_accepted_after_the_user_typed_on_another_line_keeps_their_line(harness):
    """The card showed the agent's change of line 3; the user typed on line 10 while it was
    showing: what was accepted (line 3) is what lands, merged into the user's newer text."""
    await _start(harness, _agent(READ, WRITE))
    editor = VsCodeBuffers(harness)
    app = harness.root / "app.py"
    editor.open(app, OLD)
    run, card = await _card(harness)
    editor.type(app, USER_LINE_10)
    result = await _answer(harness, run, card)
    assert result["status"] == "completed", result
    assert editor.text(app) == USER_LINE_10.replace("line 3\n", "line three\n")
    (edit,) = harness.apply_edits  # one undoable step, only the accepted line
    (change,) = edit.edit.document_changes
    assert [e.new_text for e in change.edits] == ["line three\n"]
    told = await _told_model(harness, run)
    assert "updated app.py" in told and "their changes were kept" in told


async def test_an_edit_after_a_change_on_disk_keeps_the_other_change_and_says_so(harness):
    """``edit_file`` touches only its own lines: applied to the current text it keeps the
    other program's change, and the model is told to read the file before rewriting it."""
    await _start(harness, _agent(READ, PAUSE, EDIT), edit_mode="server")
    app = harness.root / "app.py"
    run, card = await _card(harness, lambda: app.write_text(USER_LINE_10))
    result = await _answer(harness, run, card)
    assert result["status"] == "completed", result
    assert app.read_text() == USER_LINE_10.replace("line 3\n", "line three\n")
    told = await _told_model(harness, run)
    assert "edited app.py" in told and "had changed since you last read it" in told


async def test_reads_after_a_write_see_it_while_the_editor_buffer_is_not_reloaded(harness):
    """Server mode writes the disk; the editor's (clean) buffer still shows the old text until
    it reloads. The agent's next read and edit start from what it wrote, never the older
    buffer, so its second edit does not revert its first."""
    second = 'call("read_file", {"path": "app.py"}, call_id="r2")'
    edit = 'call("edit_file", {"path": "app.py", "old": "line 5\\n", "new": "line five\\n"}, call_id="e2")'
    await _start(harness, _agent(READ, WRITE, second, edit), edit_mode="server")
    app = harness.root / "app.py"
    harness.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=app.as_uri(), language_id="python", version=1, text=OLD
            )
        )
    )
    run = await harness.run("change lines 3 and 5")
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed"
    results = {
        e["toolCallId"]: e for e in harness.of_run(run["runId"]) if e["kind"] == "tool.result"
    }
    assert "line three" in results["r2"]["content"][0]["text"]
    assert results["e2"]["status"] == "completed"
    assert app.read_text() == AGENT_LINE_3.replace("line 5\n", "line five\n")
