"""The editor's language intelligence over the real server: a client that answers
``lovia/editor/*`` (a tiny language server of its own: every ``BROKEN`` word is an error),
a client that never answers, and a client without the capability."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

from lovia_server.lsp.editor_intel import plain_payload
from tests.server.harness import AGENT_HEADER
from tests.support import fake_openai as oai

_FLAG = re.compile(r"BROKEN\w*")


class EditorLanguageServer:
    """What an editor extension does: answers from its language servers' diagnostics, which
    are re-published a moment after a file changes (here: on the disk)."""

    def __init__(self, harness: Any, *, answer: bool = True, delay: float = 0.1) -> None:
        self.harness = harness
        self.answer = answer
        self.delay = delay
        self.versions: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []
        self.release = asyncio.Event()
        """Set: a client that does not answer answers now, too late (before the test ends,
        so no handler is left pending when the client stops)."""

    def diagnostics_of(self, uri: str) -> list[dict[str, Any]]:
        path = Path(uri.removeprefix("file://"))
        try:
            text = path.read_text()
        except OSError:
            return []
        out = []
        for number, line in enumerate(text.splitlines()):
            for m in _FLAG.finditer(line):
                out.append(
                    {
                        "range": {
                            "start": {"line": number, "character": m.start()},
                            "end": {"line": number, "character": m.end()},
                        },
                        "severity": 1,
                        "code": 2304,
                        "source": "ts",
                        "message": f"Cannot find name '{m.group(0)}'.",
                    }
                )
        return out

    def install(self) -> None:
        client = self.harness.client

        @client.feature("lovia/editor/diagnostics")
        async def diagnostics(params: Any) -> Any:
            params = plain_payload(params)
            self.requests.append(params)
            if not self.answer:
                await self.release.wait()
            after = params.get("after") or {}
            if after:
                await asyncio.sleep(self.delay)  # the language server re-checks, publishes
                for uri in after:
                    self.versions[uri] = self.versions.get(uri, 0) + 1
            return {
                "files": [
                    {
                        "uri": uri,
                        "version": self.versions.setdefault(uri, 0),
                        "diagnostics": self.diagnostics_of(uri),
                    }
                    for uri in params.get("uris") or []
                ]
            }

        @client.feature("lovia/editor/locations")
        async def locations(params: Any) -> Any:
            params = plain_payload(params)
            self.requests.append(params)
            use = (self.harness.root / "use.ts").as_uri()
            spot = {"line": 2, "character": 14}
            return {"locations": [{"uri": use, "range": {"start": spot, "end": spot}}]}


def _tool_texts(request: Any) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"]
        for m in request.json["messages"]
        if m["role"] == "tool" and isinstance(m["content"], str)
    }


def _posts(fake_openai: Any) -> list[Any]:
    return [r for r in fake_openai.requests if r.method == "POST"]


async def test_new_problems_reach_the_model_after_a_breaking_edit(harness, fake_openai):
    (harness.root / "a.ts").write_text("export function foo(): number {\n  return 1;\n}\n")
    (harness.root / "use.ts").write_text("import { foo } from './a';\n\nconst x = 1 + foo();\n")
    (harness.root / "old.ts").write_text("BROKENold\n")  # a stale problem the agent never made
    fake_openai.script(
        oai.tool_calls(
            oai.call(
                "edit_file", {"path": "a.ts", "old": "return 1;", "new": "return BROKEN;"}, id="e1"
            )
        ),
        oai.tool_calls(
            oai.call(
                "edit_file", {"path": "a.ts", "old": "return BROKEN;", "new": "return 2;"}, id="e2"
            )
        ),
        oai.tool_calls(oai.call("find_references", {"path": "a.ts", "symbol": "foo"}, id="f1")),
        oai.text("done"),
    )
    await harness.start(
        settings={"model": "openai:fake-model", "permissions": {"preset": "trusted"}},
        init_options={"editorIntel": {}},
        env=fake_openai.env(),
    )
    editor = EditorLanguageServer(harness)
    editor.install()
    run = await harness.run("change foo")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    posts = _posts(fake_openai)
    first = posts[0].json
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"diagnostics", "find_references", "go_to_definition", "symbols"} <= names
    assert "## Editor" in first["messages"][0]["content"]
    broke = _tool_texts(posts[1])["e1"]
    assert broke.startswith("edited a.ts (1 replacement)\n\nNew problems after this edit")
    assert "a.ts:2:10  error: Cannot find name 'BROKEN'. [ts 2304]" in broke
    assert "old.ts" not in broke
    fixed = _tool_texts(posts[2])["e2"]
    assert fixed == "edited a.ts (1 replacement)\n\nNo new problems."
    refs = _tool_texts(posts[3])["f1"]
    assert refs == "use.ts:3:15  const x = 1 + foo();"
    asked = [r for r in editor.requests if "kind" in r]
    assert asked[0]["position"] == {"line": 0, "character": 16}
    assert asked[0]["kind"] == "references"
    waits = [r for r in editor.requests if r.get("after")]
    assert waits and all(0 < r["waitMs"] <= 2000 for r in waits)


async def test_an_editor_that_never_answers_cannot_stall_the_run(harness, fake_openai):
    (harness.root / "a.ts").write_text("let a = 1;\n")
    fake_openai.script(
        oai.tool_calls(oai.call("edit_file", {"path": "a.ts", "old": "1", "new": "2"}, id="e1")),
        oai.text("done"),
    )
    await harness.start(
        settings={"model": "openai:fake-model", "permissions": {"preset": "trusted"}},
        init_options={"editorIntel": {"locations": False, "symbols": False}},
        env=fake_openai.env(),
    )
    editor = EditorLanguageServer(harness, answer=False)
    editor.install()
    started = time.monotonic()
    run = await harness.run("edit")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed"
    posts = _posts(fake_openai)
    result = _tool_texts(posts[1])["e1"]
    assert result == (
        "edited a.ts (1 replacement)\n\n"
        "The editor did not answer the request for problems; continuing without them."
    )
    assert time.monotonic() - started < 30  # one bounded wait, not a stalled run
    names = {t["function"]["name"] for t in posts[0].json["tools"]}
    assert "diagnostics" in names and "find_references" not in names and "symbols" not in names
    assert (harness.root / "a.ts").read_text() == "let a = 2;\n"
    editor.release.set()
    await asyncio.sleep(0.2)  # the late answers go out; the server drops them


async def test_a_client_without_the_capability_gets_no_editor_tools(harness, fake_openai):
    fake_openai.script(oai.text("hi"))
    await harness.start(settings={"model": "openai:fake-model"}, env=fake_openai.env())
    run = await harness.run("hi")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    first = _posts(fake_openai)[0].json
    names = {t["function"]["name"] for t in first["tools"]}
    assert "edit_file" in names
    assert not names & {"diagnostics", "find_references", "go_to_definition", "symbols"}
    system = first["messages"][0]["content"]
    assert "## Editor" not in system and "find_references" not in system


async def test_the_setting_turns_problems_after_edits_off(harness, fake_openai):
    (harness.root / "a.ts").write_text("let a = 1;\n")
    fake_openai.script(
        oai.tool_calls(
            oai.call("edit_file", {"path": "a.ts", "old": "1", "new": "BROKEN"}, id="e1")
        ),
        oai.text("done"),
    )
    settings = {
        "model": "openai:fake-model",
        "permissions": {"preset": "trusted"},
        "diagnosticsAfterEdits": False,
    }
    await harness.start(settings=settings, init_options={"editorIntel": {}}, env=fake_openai.env())
    editor = EditorLanguageServer(harness)
    editor.install()
    run = await harness.run("edit")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    assert _tool_texts(_posts(fake_openai)[1])["e1"] == "edited a.ts (1 replacement)"
    assert editor.requests == []


async def test_a_reviewed_edit_reports_the_problems_of_the_version_the_user_approved(harness):
    (harness.root / "notes.ts").write_text("let a = 1;\nlet b = 2;\n")
    spec = harness.write_agent(
        AGENT_HEADER
        + """
agent = Agent(
    name="writer",
    model=ScriptedProvider([
        call("write_file", {"path": "notes.ts", "content": "let a = 10;\\nlet b = 2;\\n"},
             call_id="w1"),
        text("done"),
    ]),
)
"""
    )
    await harness.start(
        settings={"agent": spec, "permissions": {"write": "ask"}},
        init_options={"editorIntel": {}},
    )
    EditorLanguageServer(harness).install()
    run = await harness.run("rewrite")
    req = await harness.wait_kind(run["runId"], "approval.requested", toolCallId="w1")
    approved = "let a = 10;\nlet b = BROKENmine;\n"
    await harness.request(
        "lovia/approve",
        {
            "runId": run["runId"],
            "approvalId": req["approvalId"],
            "decision": "allow_once",
            "edits": [{"path": req["diff"][0]["path"], "newText": approved}],
        },
    )
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    result = next(
        e
        for e in harness.of_run(run["runId"])
        if e["kind"] == "tool.result" and e["toolCallId"] == "w1"
    )
    text = result["content"][0]["text"]
    assert "approved a different version" in text
    assert text.endswith("notes.ts:2:9  error: Cannot find name 'BROKENmine'. [ts 2304]")


async def test_an_error_answer_reads_as_no_answer_with_a_way_on(harness, fake_openai):
    """A client that declares ``editorIntel`` but answers a request with an error (an editor
    whose language servers do not handle the file): the model is told the editor could not
    answer and what to use instead, never a bare error name; a timeout names the request."""
    from pygls.exceptions import JsonRpcMethodNotFound

    (harness.root / "a.ts").write_text("export function foo(): number {\n  return 1;\n}\n")
    fake_openai.script(
        oai.tool_calls(oai.call("find_references", {"path": "a.ts", "symbol": "foo"}, id="f1")),
        oai.tool_calls(oai.call("go_to_definition", {"path": "a.ts", "symbol": "foo"}, id="g1")),
        oai.text("done"),
    )
    await harness.start(
        settings={"model": "openai:fake-model", "permissions": {"preset": "trusted"}},
        init_options={"editorIntel": {}},
        env=fake_openai.env(),
    )
    client = harness.client
    release = asyncio.Event()

    @client.feature("lovia/editor/locations")
    async def locations(params: Any) -> Any:
        if plain_payload(params)["kind"] == "references":
            raise JsonRpcMethodNotFound.of("lovia/editor/locations")
        await release.wait()  # the definition request is answered only after the run
        return {"locations": []}

    run = await harness.run("where is foo used")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    posts = _posts(fake_openai)
    refs = _tool_texts(posts[1])["f1"]
    assert "could not answer lovia/editor/locations" in refs and "MethodNotFound" in refs
    assert "grep_files" in refs
    definition = _tool_texts(posts[2])["g1"]
    assert "did not answer the request for the definition." in definition, definition
    release.set()
    await asyncio.sleep(0.2)  # the late answer goes out; the server drops it


async def test_handled_false_tells_the_model_no_language_server_handles_the_file(
    harness, fake_openai
):
    """A client that says no language server in the editor handles the file (``handled:
    false``): the model reads that, not an empty answer that reads like "none found"; an
    answer without ``handled`` (the VS Code extension) is taken as it is."""
    (harness.root / "notes.txt").write_text("foo is described here\n")
    (harness.root / "a.ts").write_text("export function foo(): number {\n  return 1;\n}\n")
    fake_openai.script(
        oai.tool_calls(
            oai.call("find_references", {"path": "notes.txt", "symbol": "foo"}, id="f1")
        ),
        oai.tool_calls(oai.call("symbols", {"path": "notes.txt"}, id="s1")),
        oai.tool_calls(oai.call("symbols", {"query": "foo"}, id="s2")),
        oai.tool_calls(oai.call("find_references", {"path": "a.ts", "symbol": "foo"}, id="f2")),
        oai.text("done"),
    )
    await harness.start(
        settings={"model": "openai:fake-model", "permissions": {"preset": "trusted"}},
        init_options={"editorIntel": {}},
        env=fake_openai.env(),
    )
    client = harness.client

    @client.feature("lovia/editor/locations")
    async def locations(params: Any) -> Any:
        if plain_payload(params)["textDocument"]["uri"].endswith(".txt"):
            return {"locations": [], "handled": False}
        return {"locations": []}

    @client.feature("lovia/editor/symbols")
    async def symbols(params: Any) -> Any:
        return {"symbols": [], "handled": False}

    run = await harness.run("where is foo used")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    posts = _posts(fake_openai)
    unhandled = (
        "No language server in the editor handles notes.txt; use grep_files or read_file instead."
    )
    assert _tool_texts(posts[1])["f1"] == unhandled
    assert _tool_texts(posts[2])["s1"] == unhandled
    assert _tool_texts(posts[3])["s2"] == (
        "No language server in the editor searches workspace symbols; use grep_files instead."
    )
    assert _tool_texts(posts[4])["f2"] == "No references found."
