"""The editor side: unsaved buffers, both edit modes, approval diffs, shell output, ACL."""

import asyncio
import json

from lsprotocol import types as lsp

from lovia_server.protocol import MODEL_NOT_CONFIGURED
from lovia_server.protocol.settings import DEFAULT_DENIED_PATHS
from tests.server.harness import AGENT_HEADER
from tests.support import fake_openai as oai

EDITOR_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="editor",
    model=ScriptedProvider([
        call("read_file", {"path": "app.py"}, call_id="r1"),
        call("edit_file", {"path": "app.py", "old": "old_name", "new": "new_name"}, call_id="e1"),
        call("write_file", {"path": "new.txt", "content": "created\\n"}, call_id="w1"),
        text("done"),
    ]),
)
"""
)


def _open(harness, path, text, version=1):
    harness.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=path.as_uri(), language_id="python", version=version, text=text
            )
        )
    )


async def test_reads_see_unsaved_buffer_and_server_mode_writes_disk(harness):
    (harness.root / "app.py").write_text("old_name = 1  # on disk\n")
    spec = harness.write_agent(EDITOR_AGENT)
    await harness.start(settings={"agent": spec, "permissions": {"write": "ask"}})
    _open(harness, harness.root / "app.py", "old_name = 2  # unsaved\n")
    run = await harness.run("rename")
    rid = run["runId"]
    first = await harness.wait_kind(rid, "approval.requested", toolCallId="e1")
    assert first["action"] == "file.write" and first["title"] == "Edit app.py"
    (diff,) = first["diff"]
    assert diff["path"] == str(harness.root / "app.py")
    assert diff["uri"] == (harness.root / "app.py").as_uri()
    assert diff["oldText"] == "old_name = 2  # unsaved\n"
    assert diff["newText"] == "new_name = 2  # unsaved\n"
    done = await harness.approve_all(rid)
    assert done["status"] == "completed"
    events = harness.of_run(rid)
    read = next(e for e in events if e["kind"] == "tool.result" and e["toolCallId"] == "r1")
    assert "# unsaved" in read["content"][0]["text"]
    create = next(
        e for e in events if e["kind"] == "approval.requested" and e["toolCallId"] == "w1"
    )
    assert create["action"] == "file.create" and create["diff"][0]["oldText"] is None
    edit_result = next(e for e in events if e["kind"] == "tool.result" and e["toolCallId"] == "e1")
    diffs = [c for c in edit_result["content"] if c["type"] == "diff"]
    assert diffs and diffs[0]["newText"] == "new_name = 2  # unsaved\n"
    assert (harness.root / "app.py").read_text() == "new_name = 2  # unsaved\n"
    assert (harness.root / "new.txt").read_text() == "created\n"
    assert harness.apply_edits == []
    call = next(e for e in events if e["kind"] == "tool.call" and e["toolCallId"] == "e1")
    assert call["toolKind"] == "edit" and call["locations"][0]["path"] == str(
        harness.root / "app.py"
    )


async def test_workspace_edit_mode_applies_through_the_editor(harness):
    (harness.root / "app.py").write_text("old_name = 1\n")
    spec = harness.write_agent(EDITOR_AGENT)
    await harness.start(settings={"agent": spec}, init_options={"editMode": "workspaceEdit"})
    _open(harness, harness.root / "app.py", "old_name = 1\n", version=7)
    run = await harness.run("rename")
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed"
    assert len(harness.apply_edits) == 2
    edit = harness.apply_edits[0]
    assert edit.label.startswith("lovia: ")
    (change,) = edit.edit.document_changes
    assert change.text_document.version == 7
    assert change.edits[0].new_text == "new_name = 1\n"
    assert change.edits[0].annotation_id == "e1"
    assert "e1" in edit.edit.change_annotations
    create = harness.apply_edits[1].edit.document_changes
    assert isinstance(create[0], lsp.CreateFile) and create[0].options is None
    assert (harness.root / "app.py").read_text() == "old_name = 1\n"  # the editor owns it now
    assert not (harness.root / "new.txt").exists()


async def test_workspace_edit_declined_maps_to_declined(harness):
    (harness.root / "app.py").write_text("old_name = 1\n")
    spec = harness.write_agent(EDITOR_AGENT)
    harness.apply_edit_result = False
    await harness.start(settings={"agent": spec}, init_options={"editMode": "workspaceEdit"})
    run = await harness.run("rename")
    await harness.approve_all(run["runId"])
    result = next(
        e
        for e in harness.of_run(run["runId"])
        if e["kind"] == "tool.result" and e["toolCallId"] == "e1"
    )
    assert result["status"] == "declined"


async def test_an_edit_the_editor_never_confirms_ends_in_a_clear_error_and_the_run_goes_on(
    harness,
):
    """An editor stuck on a prompt of its own (Neovim's "file changed since reading it") does
    not hold the run: the wait for ``workspace/applyEdit`` is bounded, the call fails with a
    tool error that says the edit may still land, and the run finishes."""
    (harness.root / "app.py").write_text("old_name = 1\n")
    spec = harness.write_agent(EDITOR_AGENT)
    harness.apply_edit_delay = 3600
    await harness.start(
        settings={"agent": spec},
        init_options={"editMode": "workspaceEdit"},
        env={"LOVIA_EDITOR_FILE_TIMEOUT": "1"},
    )
    run = await harness.run("rename")
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed"
    results = {
        e["toolCallId"]: e for e in harness.of_run(run["runId"]) if e["kind"] == "tool.result"
    }
    edit = results["e1"]
    assert edit["status"] == "failed"
    text = edit["content"][0]["text"]
    assert "did not confirm the edit" in text and "within 1 s" in text
    assert "read the file again" in text
    assert len(harness.apply_edits) == 2  # the run went on to its next call
    harness.apply_edit_release.set()  # the late answers arrive: the server shrugs them off
    await asyncio.sleep(0.5)
    assert (await harness.request("lovia/status", {}))["editMode"] == "workspaceEdit"


async def test_neovim_gets_plain_changes_for_open_documents_and_the_server_writes_the_rest(
    harness,
):
    """Neovim 0.7 declares applyEdit but not documentChanges: its open buffers get plain
    ``changes`` (their undo and unsaved text stay in charge); a file it has not open, which has
    no buffer to keep in step, is written by the server."""
    (harness.root / "app.py").write_text("old_name = 1\n")
    spec = harness.write_agent(EDITOR_AGENT)
    await harness.start(
        settings={"agent": spec}, init_options={"editMode": None}, capabilities="neovim@0.7"
    )
    assert (await harness.request("lovia/status", {}))["editMode"] == "workspaceEdit"
    _open(harness, harness.root / "app.py", "old_name = 1\n", version=2)
    run = await harness.run("rename")
    assert (await harness.approve_all(run["runId"]))["status"] == "completed"
    (edit,) = harness.apply_edits
    assert edit.edit.document_changes is None
    ((uri, edits),) = edit.edit.changes.items()
    assert uri == (harness.root / "app.py").as_uri()
    assert [e.new_text for e in edits] == ["new_name = 1\n"]
    assert (harness.root / "app.py").read_text() == "old_name = 1\n"  # the buffer owns it
    assert (harness.root / "new.txt").read_text() == "created\n"  # not open: the server wrote


SHELL_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="sheller",
    model=ScriptedProvider([
        call("shell", {"command": "echo one; echo two >&2; cat | tee /dev/null", "description": "Say things"}, call_id="s1"),
        call("read_file", {"path": ".env"}, call_id="r2"),
        text("ok"),
    ]),
)
"""
)


async def test_shell_output_streams_and_denied_paths_hold(harness):
    (harness.root / ".env").write_text("SECRET=1\n")
    spec = harness.write_agent(SHELL_AGENT)
    await harness.start(settings={"agent": spec})
    run = await harness.run("run it")
    rid = run["runId"]
    req = await harness.wait_kind(rid, "approval.requested", toolCallId="s1")
    assert req["action"] == "shell" and req["command"].startswith("echo one")
    await harness.request(
        "lovia/approve", {"runId": rid, "approvalId": req["approvalId"], "decision": "allow_once"}
    )
    done = await harness.finished(rid)
    assert done["status"] == "completed"
    events = harness.of_run(rid)
    updates = [e for e in events if e["kind"] == "tool.update" and e["toolCallId"] == "s1"]
    streams = {u["output"]["stream"] for u in updates}
    text = "".join(u["output"]["text"] for u in updates)
    assert "one" in text and "two" in text and streams == {"stdout", "stderr"}
    result = next(e for e in events if e["kind"] == "tool.result" and e["toolCallId"] == "s1")
    assert result["status"] == "completed" and "exit code: 0" in result["content"][0]["text"]
    denied = next(e for e in events if e["kind"] == "tool.result" and e["toolCallId"] == "r2")
    assert denied["status"] == "failed" and "SECRET" not in denied["content"][0]["text"]
    call = next(e for e in events if e["kind"] == "tool.call" and e["toolCallId"] == "s1")
    assert call["toolKind"] == "execute" and call["title"] == "Say things"


async def test_context_items_attach_file_text(harness):
    (harness.root / "lib.py").write_text("line1\nline2\nline3\n")
    echo = (
        AGENT_HEADER
        + """
agent = Agent(name="echo", model=ScriptedProvider([text("seen")]))
"""
    )
    spec = harness.write_agent(echo)
    await harness.start(settings={"agent": spec})
    run = await harness.run(
        "explain",
        context=[
            {
                "uri": (harness.root / "lib.py").as_uri(),
                "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}},
            }
        ],
    )
    await harness.finished(run["runId"])
    view = await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    first = view["entries"][0]["content"]
    assert first.startswith("explain") and "line2\nline3" in first and "line1" not in first


async def test_untrusted_workspace_is_readonly_and_ignores_agent_files(harness):
    spec = harness.write_agent(EDITOR_AGENT)
    await harness.start(settings={"agent": spec}, init_options={"trusted": False})
    status = await harness.request("lovia/status", {})
    assert status["folders"][0]["preset"] == "readonly"
    assert status["folders"][0]["write"] == "deny"
    # The setting is ignored: the built-in agent would run (it has no model here).
    try:
        await harness.run("x")
    except Exception as exc:
        assert exc.code == MODEL_NOT_CONFIGURED, exc
    else:  # pragma: no cover - must not load the file
        raise AssertionError("an untrusted workspace loaded a user agent")
    # Asked for by name, it is refused.
    try:
        await harness.run("x", agent=spec)
    except Exception as exc:
        assert exc.code == -32602 and exc.data["field"] == "agent"
    else:  # pragma: no cover - must not load the file
        raise AssertionError("an untrusted workspace loaded a user agent")
    await asyncio.sleep(0)


async def test_an_untrusted_clients_settings_cannot_open_the_users_keys(
    harness, fake_openai, tmp_path
):
    """Restricted Mode's settings as a repository would write them, sent by a client that says
    it is untrusted: the server keeps its default denied paths and only the deny parts of the
    rules, so the read-only agent cannot read ~/.ssh/id_rsa (issue 23, class 2)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- sk-secret-42\n")
    (harness.root / "secrets").mkdir()
    (harness.root / "secrets" / "token.txt").write_text("tok-secret-43\n")
    fake_openai.script(
        oai.tool_calls(
            oai.call("read_file", {"path": str(home / ".ssh" / "id_rsa")}, id="r1"),
            oai.call("read_file", {"path": "secrets/token.txt"}, id="r2"),
        ),
        oai.text("done"),
    )
    await harness.start(
        settings={
            "model": "openai:fake-model",
            "permissions": {
                "preset": "trusted",
                "write": "allow",
                "deniedPaths": [],
                "pathRules": [
                    {"pattern": "~/.ssh/**", "read": "allow", "write": "deny"},
                    {"pattern": "secrets/**", "read": "deny"},
                ],
                "commandRules": [{"pattern": "cat", "decision": "allow"}],
            },
        },
        init_options={"trusted": False},
        env={**fake_openai.env(), "HOME": str(home)},
    )
    (folder,) = (await harness.request("lovia/status", {}))["folders"]
    assert folder["preset"] == "readonly" and folder["shell"] == "deny"
    assert set(DEFAULT_DENIED_PATHS) <= set(folder["deniedPaths"])
    assert {r["action"] for r in folder["pathRules"]} == {"deny"}
    assert folder["commandRules"] == []

    run = await harness.run("read the keys")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    events = harness.of_run(run["runId"])
    assert not [e for e in events if e["kind"] == "approval.requested"]
    results = {e["toolCallId"]: e for e in events if e["kind"] == "tool.result"}
    assert results["r1"]["isError"] and results["r2"]["isError"], results
    model_input = json.dumps([r.json for r in fake_openai.requests if r.method == "POST"])
    assert "sk-secret-42" not in model_input and "tok-secret-43" not in model_input


WRITER_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="writer",
    model=ScriptedProvider([
        call("write_file", {"path": "a.txt", "content": "one\\n"}, call_id="w1"),
        text("done"),
    ], record=False),
)
"""
)


async def _asked(harness, run_id):
    done = await harness.approve_all(run_id)
    assert done["status"] == "completed", done
    return [e for e in harness.of_run(run_id) if e["kind"] == "approval.requested"]


async def test_writes_are_reviewed_first_by_default_and_the_setting_turns_it_off(harness):
    spec = harness.write_agent(WRITER_AGENT)
    await harness.start(settings={"agent": spec})
    status = await harness.request("lovia/status", {})
    assert status["folders"][0]["preset"] == "coding" and status["folders"][0]["write"] == "ask"
    run = await harness.run("write")
    (asked,) = await _asked(harness, run["runId"])
    assert asked["action"] == "file.create" and asked["diff"][0]["newText"] == "one\n"
    # a changed setting applies to the next run, without a restart
    harness.client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(
            settings={"lovia": {"agent": spec, "permissions": {"write": "allow"}}}
        )
    )
    for _ in range(100):
        if (await harness.request("lovia/status", {}))["folders"][0]["write"] == "allow":
            break
        await asyncio.sleep(0.05)
    run = await harness.run("write again", sessionId=run["sessionId"])
    assert await _asked(harness, run["runId"]) == []


async def test_the_trusted_preset_writes_without_asking(harness):
    spec = harness.write_agent(WRITER_AGENT)
    await harness.start(settings={"agent": spec, "permissions": {"preset": "trusted"}})
    run = await harness.run("write")
    assert await _asked(harness, run["runId"]) == []
    assert (harness.root / "a.txt").read_text() == "one\n"


async def test_edits_go_through_the_editor_by_default_when_it_can_apply_them(harness):
    (harness.root / "app.py").write_text("old_name = 1\nkeep = 2\n")
    spec = harness.write_agent(EDITOR_AGENT)
    await harness.start(settings={"agent": spec}, init_options={"editMode": None})
    assert (await harness.request("lovia/status", {}))["editMode"] == "workspaceEdit"
    _open(harness, harness.root / "app.py", "old_name = 1\nkeep = 2\n", version=3)
    run = await harness.run("rename")
    assert (await harness.approve_all(run["runId"]))["status"] == "completed"
    (change,) = harness.apply_edits[0].edit.document_changes
    (edit,) = change.edits  # only the changed line, not the whole document
    assert (edit.range.start.line, edit.range.end.line) == (0, 1)
    assert edit.new_text == "new_name = 1\n"
    assert (harness.root / "app.py").read_text() == "old_name = 1\nkeep = 2\n"


async def test_the_edit_mode_setting_wins_and_applies_to_the_next_run(harness):
    (harness.root / "app.py").write_text("old_name = 1\n")
    spec = harness.write_agent(EDITOR_AGENT)
    await harness.start(
        settings={"agent": spec, "editMode": "server"}, init_options={"editMode": "workspaceEdit"}
    )
    assert (await harness.request("lovia/status", {}))["editMode"] == "server"
    run = await harness.run("rename")
    await harness.approve_all(run["runId"])
    assert harness.apply_edits == []
    assert (harness.root / "app.py").read_text() == "new_name = 1\n"
    harness.client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"lovia": {"agent": spec, "editMode": "auto"}})
    )
    for _ in range(100):
        if (await harness.request("lovia/status", {}))["editMode"] == "workspaceEdit":
            break
        await asyncio.sleep(0.05)
    (harness.root / "app.py").write_text("old_name = 1\n")
    run = await harness.run("rename again", sessionId=run["sessionId"])
    await harness.approve_all(run["runId"])
    assert harness.apply_edits  # the editor got this run's edits
