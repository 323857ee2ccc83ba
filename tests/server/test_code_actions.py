"""Code actions, and the standard-LSP conversation of a client with no lovia handlers (eglot,
Neovim's own client): the real server, driven as such a client drives it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from lovia_server.lsp.code_actions import LiveState, code_actions
from tests.server.harness import AGENT_HEADER, Harness
from tests.server.vscode_client import VsCodeBuffers

FIX_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="fixer",
    model=ScriptedProvider([
        call("edit_file", {"path": "app.py", "old": "undefined_name", "new": "1"}, call_id="e1"),
        call("write_file", {"path": "new_mod.py", "content": "X = 1\\n"}, call_id="w1"),
        text("Fixed the undefined name and added new_mod.py."),
    ]),
)
"""
)

TITLES = {
    "lovia: Fix this problem",
    "lovia: Explain this",
    "lovia: Write tests for this",
    "lovia: Ask about this…",
}


def _diagnostic(line: int, message: str = "undefined name 'undefined_name'") -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=lsp.Range(
            start=lsp.Position(line=line, character=4), end=lsp.Position(line=line, character=18)
        ),
        message=message,
        severity=lsp.DiagnosticSeverity.Error,
        source="pyflakes",
    )


async def menu(
    harness: Harness, path: Path, diagnostics: list[lsp.Diagnostic], line: int = 0
) -> list[Any]:
    assert harness.client is not None
    result = await harness.client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()),
            range=lsp.Range(
                start=lsp.Position(line=line, character=4),
                end=lsp.Position(line=line, character=4),
            ),
            context=lsp.CodeActionContext(diagnostics=diagnostics),
        )
    )
    return list(result or [])


async def execute(harness: Harness, action: Any) -> Any:
    assert harness.client is not None
    command = action.command
    return await harness.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )


def _read(uri: str) -> str:
    return Path(uri.removeprefix("file://")).read_text()


async def until(predicate: Any, within: float = 60) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def plain_client(
    *, show_document: bool = False, progress: bool = False
) -> Any:  # eglot 1.9 declares neither
    def adjust(caps: lsp.ClientCapabilities) -> None:
        window = caps.window or lsp.WindowClientCapabilities()
        window.work_done_progress = progress
        window.show_document = (
            lsp.ShowDocumentClientCapabilities(support=True) if show_document else None
        )
        caps.window = window

    return adjust


async def test_the_menu_offers_the_agent_and_nothing_on_denied_or_protected_files(harness):
    (harness.root / "app.py").write_text("x = undefined_name\n")
    (harness.root / ".env").write_text("KEY=1\n")
    (harness.root / ".vscode").mkdir()
    (harness.root / ".vscode" / "settings.json").write_text("{}\n")
    await harness.start()
    actions = await menu(harness, harness.root / "app.py", [_diagnostic(0), _diagnostic(9)])
    assert {a.title for a in actions} == TITLES
    (fix,) = [a for a in actions if a.title == "lovia: Fix this problem"]
    assert fix.kind == lsp.CodeActionKind.QuickFix
    assert [d.range.start.line for d in fix.diagnostics] == [0]  # only the one at the cursor
    (problem,) = fix.command.arguments[0]["problems"]
    assert problem["message"] == "undefined name 'undefined_name'"
    assert problem["source"] == "pyflakes"
    assert await menu(harness, harness.root / ".env", [_diagnostic(0)]) == []
    settings = harness.root / ".vscode" / "settings.json"
    assert await menu(harness, settings, [_diagnostic(0)]) == []
    assert await menu(harness, harness.root.parent / "elsewhere.py", []) == []
    # the command refuses such a file too (a client may send it without the menu)
    assert harness.client is not None
    try:
        await harness.client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(
                command="lovia.action.fix", arguments=[{"uri": settings.as_uri()}]
            )
        )
    except Exception as exc:
        assert "protected" in str(exc)
    else:
        raise AssertionError("a fix of a protected file was started")


async def test_a_plain_client_fixes_a_problem_end_to_end(harness, tmp_path):
    """eglot-like: no lovia options, no showDocument, no work-done progress, no resource
    operations or annotations; the prompt is dismissed once and answered from the menu."""
    app = harness.root / "app.py"
    app.write_text("x = undefined_name\n")
    spec = harness.write_agent(FIX_AGENT)
    await harness.start(
        settings={"agent": spec},
        init_options=False,
        capabilities="emacs",
        env={"XDG_STATE_HOME": str(tmp_path / "xdg")},
        adjust=plain_client(),
    )
    buffers = VsCodeBuffers(harness)
    buffers.open(app)
    answers: list[str | None] = [None]  # the first prompt is dismissed (C-g)
    harness.message_choice = lambda params: answers.pop(0) if answers else "Accept"

    actions = await menu(harness, app, [_diagnostic(0)])
    fix = next(a for a in actions if a.title == "lovia: Fix this problem")
    started = await execute(harness, fix)
    run_id = started["runId"]
    user = await harness.wait_kind(run_id, "user.message")
    assert "undefined name 'undefined_name'" in user["text"]

    await until(lambda: len(harness.message_requests) == 1)
    first = harness.message_requests[0]
    assert first.actions[0].title == "Reject"  # never a pre-filled Accept
    assert "-x = undefined_name" in first.message and "+x = 1" in first.message
    # dismissed: the run waits (not rejected, not hung), and the menu offers the approval again
    await asyncio.sleep(0.5)
    assert harness.kinds(run_id).count("approval.resolved") == 0
    again = await menu(harness, app, [])
    titles = [a.title for a in again]
    assert "lovia: Show pending approvals" in titles and "lovia: Cancel" in titles
    assert "lovia: Tell the agent…" in titles
    show = next(a for a in again if a.title == "lovia: Show pending approvals")
    assert await execute(harness, show) == {"asked": 1}

    done = await harness.finished(run_id)
    assert done["status"] == "completed"
    assert buffers.text(app) == "x = 1\n"  # the edit landed in the buffer
    assert app.read_text() == "x = undefined_name\n"  # the editor owns the unsaved text
    assert (harness.root / "new_mod.py").read_text() == "X = 1\n"  # written on disk
    for request in harness.apply_edits:  # only what the client declared
        assert request.edit.change_annotations is None
        assert all(isinstance(c, lsp.TextDocumentEdit) for c in request.edit.document_changes)
    messages = [m.message for m in harness.client.messages]
    assert any(m.startswith("lovia: working on") for m in messages)
    assert any("still waiting" in m for m in messages)
    created = f"lovia: created {harness.root / 'new_mod.py'}"
    await until(lambda: created in [m.message for m in harness.client.messages])
    await until(
        lambda: (
            "lovia: Fixed the undefined name and added new_mod.py."
            in [m.message for m in harness.client.messages]
        )
    )
    assert harness.client.shown_documents == []


async def test_a_prompt_the_editor_never_answers_can_be_asked_again(harness, tmp_path):
    """eglot 1.9 sends no reply at all when the user quits the prompt with C-g."""
    app = harness.root / "app.py"
    app.write_text("x = undefined_name\n")
    spec = harness.write_agent(FIX_AGENT)
    await harness.start(
        settings={"agent": spec},
        init_options=False,
        capabilities="emacs",
        env={"XDG_STATE_HOME": str(tmp_path / "xdg")},
        adjust=plain_client(),
    )
    buffers = VsCodeBuffers(harness)
    buffers.open(app)
    harness.message_unanswered = lambda params: len(harness.message_requests) == 1
    harness.message_choice = lambda params: "Accept"
    fix = next(a for a in await menu(harness, app, [_diagnostic(0)]) if "Fix" in a.title)
    run_id = (await execute(harness, fix))["runId"]
    await until(lambda: len(harness.message_requests) == 1)
    await asyncio.sleep(0.5)
    assert harness.kinds(run_id).count("approval.resolved") == 0  # waiting, not decided
    show = next(a for a in await menu(harness, app, []) if "approvals" in a.title)
    assert await execute(harness, show) == {"asked": 1}  # answered at once
    done = await harness.finished(run_id)
    assert done["status"] == "completed"
    assert buffers.text(app) == "x = 1\n"


async def test_an_editor_with_no_prompt_answers_the_approval_in_the_menu(harness, tmp_path):
    """Helix has no ``window/showMessageRequest``: the approval waits (never decided, never
    hung), the editor is told where to answer, and the code-action menu answers it."""
    app = harness.root / "app.py"
    app.write_text("x = undefined_name\n")
    spec = harness.write_agent(FIX_AGENT)
    await harness.start(
        settings={"agent": spec},
        init_options=False,
        capabilities="emacs",
        env={"XDG_STATE_HOME": str(tmp_path / "xdg")},
        adjust=plain_client(),
    )
    harness.message_request_unsupported = True
    buffers = VsCodeBuffers(harness)
    buffers.open(app)
    fix = next(a for a in await menu(harness, app, [_diagnostic(0)]) if "Fix" in a.title)
    run_id = (await execute(harness, fix))["runId"]
    await harness.wait_kind(run_id, "approval.requested")
    assert harness.client is not None
    await until(lambda: any("in the code actions" in m.message for m in harness.client.messages))
    await asyncio.sleep(0.3)
    assert harness.kinds(run_id).count("approval.resolved") == 0  # waiting, not decided
    titles = [a.title for a in await menu(harness, app, [])]
    answers = [t for t in titles if " — " in t]
    assert answers[0].startswith("lovia: Reject")  # the safe choice first, as in a prompt
    assert any(t.startswith("lovia: Accept") or t.startswith("lovia: Allow") for t in answers)
    assert all(t.endswith("app.py") for t in answers), answers
    allow = next(
        a
        for a in await menu(harness, app, [])
        if " — " in a.title
        and not a.title.startswith("lovia: Reject")
        and "always" not in a.title.lower()
    )
    assert (await execute(harness, allow))["outcome"] == "allowed"
    # the next approval (the new file) is answerable the same way
    await until(lambda: harness.kinds(run_id).count("approval.requested") == 2)
    second = [a for a in await menu(harness, app, []) if " — " in a.title]
    assert all("new_mod.py" in a.title for a in second), [a.title for a in second]
    reject = next(a for a in second if a.title.startswith("lovia: Reject"))
    assert (await execute(harness, reject))["outcome"] == "rejected"
    done = await harness.finished(run_id)
    assert done["status"] == "completed"
    assert buffers.text(app) == "x = 1\n"
    assert not (harness.root / "new_mod.py").exists()


async def test_a_client_that_opens_documents_sees_the_diff_and_the_transcript(harness, tmp_path):
    app = harness.root / "app.py"
    app.write_text("x = undefined_name\n")
    spec = harness.write_agent(FIX_AGENT)
    await harness.start(
        settings={"agent": spec},
        init_options=False,
        capabilities="emacs",
        env={"XDG_STATE_HOME": str(tmp_path / "xdg")},
        adjust=plain_client(show_document=True, progress=True),
    )
    buffers = VsCodeBuffers(harness)
    buffers.open(app)
    seen: list[str] = []

    def choose(params: lsp.ShowMessageRequestParams) -> str:
        titles = [a.title for a in params.actions]
        seen.append(titles[0])
        return "Show diff" if titles[0] == "Show diff" else "Accept"

    harness.message_choice = choose
    fix = next(a for a in await menu(harness, app, [_diagnostic(0)]) if "Fix" in a.title)
    run_id = (await execute(harness, fix))["runId"]
    done = await harness.finished(run_id)
    assert done["status"] == "completed"
    assert seen[:2] == ["Show diff", "Reject"]
    assert buffers.text(app) == "x = 1\n"
    await until(lambda: any(d.uri.endswith(".md") for d in harness.client.shown_documents))
    shown = [d.uri for d in harness.client.shown_documents]
    assert "+x = 1" in _read(next(u for u in shown if u.endswith(".diff")))
    assert "Fixed the undefined name" in _read(next(u for u in shown if u.endswith(".md")))
    assert f"lovia/{run_id}" in harness.client.progress_reports


def _plain_diagnostic(line: int) -> dict[str, Any]:
    start, end = {"line": line, "character": 0}, {"line": line, "character": 5}
    return {"range": {"start": start, "end": end}, "message": "problem", "severity": 1}


def test_an_automatic_request_gets_only_a_fix_and_only_on_a_problem() -> None:
    uri = "file:///ws/app.py"
    at = {"start": {"line": 7, "character": 1}, "end": {"line": 7, "character": 1}}
    automatic = {"diagnostics": [_plain_diagnostic(7)], "triggerKind": 2}
    live = LiveState("r1", 1)
    request = {"textDocument": {"uri": uri}, "range": at, "context": automatic}
    (fix,) = code_actions(request, allowed=lambda _: True, live=live)
    assert fix["title"] == "lovia: Fix this problem"
    elsewhere = {**request, "range": {"start": {"line": 70}, "end": {"line": 70}}}
    assert code_actions(elsewhere, allowed=lambda _: True, live=live) == []
    invoked = {**elsewhere, "context": {**automatic, "triggerKind": 1}}
    titles = [a["title"] for a in code_actions(invoked, allowed=lambda _: True, live=live)]
    assert titles == [
        "lovia: Fix this problem",
        "lovia: Explain this",
        "lovia: Write tests for this",
        "lovia: Ask about this…",
        "lovia: Tell the agent…",
        "lovia: Show pending approvals",
        "lovia: Cancel",
    ]
