"""Context items (the editor's @-mentions) reach the model: files through the ACL and the
unsaved-buffer overlay, folders as a listing, symbols and the selection as line ranges,
Problems as a list, each cut to its limits with a note; the prompt's user.message carries
their summaries. The real server process, a scripted agent."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from lovia.workspace.paths import resolve_path
from lovia.workspace.policy import WorkspacePolicy
from lovia_server import protocol as p
from lovia_server.host.context_items import (
    MAX_FOLDER_ENTRIES,
    MAX_ITEM_CHARS,
    ContextWorkspace,
    build_context,
)
from tests.server.harness import AGENT_HEADER

ECHO = AGENT_HEADER + '\nagent = Agent(name="echo", model=ScriptedProvider([text("seen")]))\n'


def _range(start: int, end: int) -> dict:
    return {"start": {"line": start, "character": 0}, "end": {"line": end, "character": 0}}


async def _seen(harness, context: list[dict]) -> tuple[str, dict]:
    run = await harness.run("look at these", context=context)
    await harness.finished(run["runId"])
    view = await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    user = next(e for e in harness.of_run(run["runId"]) if e["kind"] == "user.message")
    return view["entries"][0]["content"], user


async def test_mentions_reach_the_model_with_summaries_for_the_chips(harness):
    root = harness.root
    (root / "lib.py").write_text("on disk\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "a.py").write_text(
        "def alpha():\n    return 1\n\n\ndef beta():\n    return 2\n"
    )
    (root / "pkg" / "b.txt").write_text("bee\n")
    (root / "pkg" / ".env").write_text("SECRET=1\n")
    (root / "pkg" / "settings").symlink_to(root / "pkg" / ".env")  # judged by its target
    (root / "big.txt").write_text("x" * 70 + "\n" * 1 + ("y" * 99 + "\n") * 1500)
    await harness.start(settings={"agent": harness.write_agent(ECHO)})
    # An unsaved buffer wins over the disk.
    harness.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=(root / "lib.py").as_uri(), language_id="python", version=1, text="unsaved!\n"
            )
        )
    )
    a_py = (root / "pkg" / "a.py").as_uri()
    text, user = await _seen(
        harness,
        [
            {"uri": (root / "lib.py").as_uri()},
            {"uri": (root / "pkg").as_uri()},
            {"uri": a_py, "kind": "symbol", "label": "beta", "range": _range(4, 5)},
            {"uri": (root / "big.txt").as_uri()},
            {"uri": (root / "pkg" / ".env").as_uri()},
            {
                "uri": root.as_uri(),
                "kind": "problems",
                "problems": [
                    {
                        "uri": a_py,
                        "range": _range(1, 1),
                        "severity": "warning",
                        "message": "unused value",
                        "source": "pyright",
                    },
                    {"uri": (root / "pkg" / ".env").as_uri(), "message": "secret problem"},
                ],
            },
        ],
    )
    assert text.startswith("look at these")
    assert "unsaved!" in text and "on disk" not in text
    assert 'kind="folder" path="pkg/"' in text and "a.py" in text and "b.txt" in text
    listing = text.split('kind="folder" path="pkg/">')[1].split("</context>")[0]
    assert listing.split() == ["a.py", "b.txt"]  # not .env, nor the link to it
    assert "def beta():\n    return 2" in text and "alpha" not in text
    assert "SECRET" not in text and "denied by the workspace policy" in text
    assert "pkg/a.py:2:1: warning: unused value [pyright]" in text
    assert "secret problem" not in text
    assert "[lovia: cut to the first" in text and len(text) < 100_000
    chips = {c["label"]: c for c in user["context"]}
    assert chips["lib.py"]["kind"] == "file" and chips["lib.py"]["truncated"] is False
    assert chips["pkg/"]["kind"] == "folder"
    assert chips["beta"]["kind"] == "symbol" and chips["beta"]["line"] == 5
    assert chips["big.txt"]["truncated"] is True and "read_file" in chips["big.txt"]["note"]
    assert chips["big.txt"]["chars"] <= MAX_ITEM_CHARS
    env = next(c for c in user["context"] if c["uri"].endswith(".env"))
    assert env["truncated"] is False and env["note"].startswith("denied")
    assert chips["Problems"]["kind"] == "problems" and "left out" in chips["Problems"]["note"]


async def test_the_selection_is_its_line_range(harness):
    (harness.root / "s.py").write_text("one\ntwo\nthree\nfour\n")
    await harness.start(settings={"agent": harness.write_agent(ECHO)})
    uri = (harness.root / "s.py").as_uri()
    text, user = await _seen(harness, [{"uri": uri, "kind": "selection", "range": _range(1, 2)}])
    assert 'kind="selection" path="s.py:2-3"' in text and "two\nthree" in text
    assert "one" not in text.split("look at these", 1)[1] and "four" not in text
    assert user["context"][0]["label"] == "s.py:2-3"


async def test_a_range_past_the_end_is_labelled_with_the_lines_there_are(harness):
    """*Fix this problem* asks for 30 lines around the problem; in a 3-line file the chip and
    the model's context say lines 1-3, not 1-34."""
    (harness.root / "s.json").write_text('{\n  "size":\n}\n')
    await harness.start(settings={"agent": harness.write_agent(ECHO)})
    uri = (harness.root / "s.json").as_uri()
    text, user = await _seen(harness, [{"uri": uri, "kind": "file", "range": _range(0, 33)}])
    assert 'path="s.json:1-3"' in text and '"size":' in text
    assert user["context"][0]["label"] == "s.json:1-3"


async def test_a_folder_mention_judges_nothing_past_the_listing_cap(tmp_path):
    """A mention of a big tree costs what its listing shows: the walk stops at the cap
    instead of judging every entry three levels deep (17.9 s at 150,000 files)."""
    for i in range(30):
        folder = tmp_path / f"m{i:02d}"
        folder.mkdir()
        for j in range(100):
            (folder / f"f{j:03d}.py").write_text("")
    (tmp_path / "m00" / ".env").write_text("SECRET=1\n")
    (tmp_path / "m29" / ".env").write_text("SECRET=1\n")
    policy = WorkspacePolicy.trusted(denied_paths=[".env"])
    judged: list[Path] = []

    def readable(root: Path, path: Path) -> str | None:
        judged.append(path)
        resolved = resolve_path(root, str(path))
        decision = policy.decide_path(rel=resolved.rel, abs_posix=resolved.abs_posix, op="read")
        return None if decision == "deny" else resolved.display()

    async def read(root: Path, path: Path) -> str | None:
        return None  # a folder's listing reads no file

    workspace = ContextWorkspace(root_of=lambda path: tmp_path, readable=readable, read=read)
    item = p.ContextItem(uri=tmp_path.as_uri(), kind="folder")
    built = await build_context([item], workspace)
    body = built.text.split("\n")[1:-2]  # between the <context> tags and the note
    assert len(body) == MAX_FOLDER_ENTRIES
    assert body[:2] == ["m00/", "m01/"] and body[30:32] == ["  f000.py", "  f001.py"]
    assert ".env" not in built.text
    assert f"listing cut after {MAX_FOLDER_ENTRIES} entries" in built.text
    assert built.summaries[0].truncated
    # the root, its 30 folders, then files until the cap (the denied .env among them)
    assert len(judged) <= MAX_FOLDER_ENTRIES + 2


async def test_a_mention_of_a_fifo_is_refused_at_once_not_waited_on(harness):
    """``lovia/run`` builds its context before it answers: reading a mentioned FIFO waited
    for a writer that never comes, and the request never answered."""
    fifo = harness.root / "pipe"
    os.mkfifo(fifo)
    await harness.start(settings={"agent": harness.write_agent(ECHO)})
    with pytest.raises(Exception) as raised:
        await asyncio.wait_for(harness.run("look", context=[{"uri": fifo.as_uri()}]), 20)
    assert getattr(raised.value, "code", None) == -32602, raised.value
    run = await harness.run("still here")  # the server goes on
    assert (await harness.finished(run["runId"]))["status"] == "completed"
