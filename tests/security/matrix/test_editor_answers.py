"""Attack matrix, row ``editor_answers``: what the editor's language servers answer
(diagnostics, definitions, references, symbols), through the real server with a fake editor
client that answers ``lovia/editor/*`` and a scripted model.

The editor is the user's and knows every file it has open: its answers name files outside the
workspace (a spell checker's problem in ``~/notes``, with the secret in the message), denied
files (``.env``), and the same outside file spelled through ``..`` and through a symlinked
folder inside the workspace. Each test checks what the model received: never the secret, and a
note about what was left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_asyncio

from lovia_server.lsp.editor_intel import plain_payload
from tests.server.harness import Harness
from tests.support import fake_openai as oai

SECRET = "s3cret-9d2e"
DENIED_SECRET = "k3y-from-dotenv-41"
NOTE = "left out; read_file on such a file asks the user"


@pytest_asyncio.fixture
async def harness(tmp_path: Path) -> Any:
    root = tmp_path / "ws"
    root.mkdir()
    h = Harness(root.resolve(), tmp_path / "state")
    yield h
    await h.stop()


def _secret(name: str) -> str:
    return DENIED_SECRET if name == "denied" else SECRET


def _spot(line: int, character: int = 0) -> dict[str, Any]:
    at = {"line": line, "character": character}
    return {"start": at, "end": at}


class Editor:
    """A fake editor: every answer names the workspace's own file, a file in the user's home,
    that file again through ``..`` and through a symlinked folder, and ``.env``."""

    def __init__(self, harness: Harness, tmp_path: Path) -> None:
        self.root = harness.root
        self.home = (tmp_path / "home").resolve()
        notes = self.home / "notes"
        notes.mkdir(parents=True)
        self.outside = notes / "todo.md"
        self.outside.write_text(f"- rotate TOKEN={SECRET}\n")
        self.other = self.home / "other.md"
        self.other.write_text(f"other {SECRET}\n")
        (self.root / ".env").write_text(f"API_KEY={DENIED_SECRET}\n")
        (self.root / "a.ts").write_text("export function foo(): number {\n  return 1;\n}\n")
        (self.root / "use.ts").write_text("import { foo } from './a';\nfoo();\n")
        (self.root / "linked").symlink_to(notes, target_is_directory=True)
        self.harness = harness

    def uris(self) -> dict[str, str]:
        """The same places, spelled every way an editor might."""
        dotdot = f"file://{self.root}/../home/notes/todo.md"
        return {
            "inside": (self.root / "a.ts").as_uri(),
            "outside": self.outside.as_uri(),
            "dotdot": dotdot,
            "symlink": (self.root / "linked" / "todo.md").as_uri(),
            "home": "file:~/notes/todo.md",
            "denied": (self.root / ".env").as_uri(),
            "other": self.other.as_uri(),
        }

    def install(self) -> None:
        client = self.harness.client
        assert client is not None
        uris = self.uris()

        @client.feature("lovia/editor/diagnostics")
        async def diagnostics(params: Any) -> Any:
            params = plain_payload(params)
            asked = params.get("uris")
            files = []
            for name, uri in uris.items():
                if asked and not any(uri == a or name in ("dotdot", "symlink") for a in asked):
                    continue
                message = (
                    "Missing return type." if name == "inside" else f"Unknown word {_secret(name)}"
                )
                files.append(
                    {
                        "uri": uri,
                        "version": 1,
                        "diagnostics": [
                            {
                                "range": _spot(0),
                                "severity": 2,
                                "source": "cspell",
                                "message": message,
                            }
                        ],
                    }
                )
            return {"files": files}

        @client.feature("lovia/editor/locations")
        async def locations(params: Any) -> Any:
            return {"locations": [{"uri": uri, "range": _spot(0, 2)} for uri in uris.values()]}

        @client.feature("lovia/editor/symbols")
        async def symbols(params: Any) -> Any:
            return {
                "symbols": [
                    {
                        "name": "foo" if name == "inside" else f"TOKEN_{_secret(name)}",
                        "kind": 12,
                        "location": {"uri": uri, "range": _spot(0)},
                        "containerName": None if name == "inside" else _secret(name),
                    }
                    for name, uri in uris.items()
                ]
            }


async def _start(harness: Harness, fake_openai: Any, editor: Editor) -> None:
    await harness.start(
        settings={"model": "openai:fake-model"},  # the default preset: outside reads ask
        init_options={"editorIntel": {}},
        env={**fake_openai.env(), "HOME": str(editor.home)},
    )
    editor.install()


def _tool_texts(fake_openai: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for request in fake_openai.requests:
        if request.method != "POST":
            continue
        for m in request.json["messages"]:
            if m["role"] == "tool" and isinstance(m["content"], str):
                out[m["tool_call_id"]] = m["content"]
    return out


def _model_saw(fake_openai: Any) -> str:
    return "".join(str(r.json) for r in fake_openai.requests if r.method == "POST")


_ASK_ALL = [
    oai.call("diagnostics", {}, id="d1"),
    oai.call("go_to_definition", {"path": "use.ts", "symbol": "foo"}, id="l1"),
    oai.call("find_references", {"path": "a.ts", "symbol": "foo"}, id="l2"),
    oai.call("symbols", {"query": "TOKEN"}, id="s1"),
]


async def test_editor_answers__read_denied(harness, fake_openai, tmp_path):
    editor = Editor(harness, tmp_path)
    fake_openai.script(
        *[oai.tool_calls(call) for call in _ASK_ALL],
        oai.tool_calls(oai.call("diagnostics", {"path": ".env"}, id="d2")),
        oai.text("done"),
    )
    await _start(harness, fake_openai, editor)
    run = await harness.run("what is wrong?")
    done = await harness.approve_all(run["runId"], decision="reject_once")
    assert done["status"] == "completed", done
    texts = _tool_texts(fake_openai)
    assert "a.ts:1:1  warning: Missing return type. [cspell]" in texts["d1"]
    assert "a.ts:1:3" in texts["l1"] and "a.ts:1:1  function foo" in texts["s1"]
    assert "denied" in texts["d2"]
    assert ".env" not in "".join(texts[k] for k in ("d1", "l1", "l2", "s1"))
    assert DENIED_SECRET not in _model_saw(fake_openai)


async def test_editor_answers__read_outside(harness, fake_openai, tmp_path):
    editor = Editor(harness, tmp_path)
    fake_openai.script(*[oai.tool_calls(call) for call in _ASK_ALL], oai.text("done"))
    await _start(harness, fake_openai, editor)
    run = await harness.run("what is wrong?")
    done = await harness.approve_all(run["runId"], decision="reject_once")
    assert done["status"] == "completed", done
    assert [e for e in harness.of_run(run["runId"]) if e["kind"] == "approval.requested"] == []
    texts = _tool_texts(fake_openai)
    # the outside file itself, through .. and through the symlinked folder, and another one
    # (the ~ URI names no file); locations at the same spot of the same file count once
    left_out = {"d1": 4, "l1": 2, "l2": 2, "s1": 4}
    for call_id, count in left_out.items():
        text = texts[call_id]
        assert f"\n{count} results in files outside the workspace" in text, text
        assert f"were {NOTE}" in text, text
        assert "todo.md" not in text and "other.md" not in text and "linked" not in text
    assert SECRET not in _model_saw(fake_openai)


async def test_editor_answers__widen_permissions(harness, fake_openai, tmp_path):
    """Approving the problems of one outside file shows that file's, no other's, and only
    for that call."""
    editor = Editor(harness, tmp_path)
    fake_openai.script(
        oai.tool_calls(oai.call("diagnostics", {"path": str(editor.outside)}, id="d1")),
        oai.tool_calls(oai.call("diagnostics", {}, id="d2")),
        oai.text("done"),
    )
    await _start(harness, fake_openai, editor)
    run = await harness.run("what is wrong in my notes?")
    done = await harness.approve_all(run["runId"])  # allow once
    assert done["status"] == "completed", done
    asked = [e for e in harness.of_run(run["runId"]) if e["kind"] == "approval.requested"]
    assert [e["toolCallId"] for e in asked] == ["d1"]
    texts = _tool_texts(fake_openai)
    assert f"{editor.outside}:1:1  warning: Unknown word {SECRET} [cspell]" in texts["d1"]
    assert "other.md" not in texts["d1"]
    assert "todo.md" not in texts["d2"] and f"were {NOTE}" in texts["d2"]
    assert str(editor.other) not in _model_saw(fake_openai)
