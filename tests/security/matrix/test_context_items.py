"""Attack matrix, row ``context_items``: files, folders, selections, symbols and Problems the
editor attaches to a prompt (``lovia/run``'s ``context``), through the real language server
and the built-in agent on the fake model. The attacker controls the repository (symlinks,
file names) and what the editor is led to attach; the check is what the model received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.security.matrix._play import secret_file
from tests.security.victim import SECRET, make_env
from tests.server.harness import Harness
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI


def _range(start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": start, "character": 0}, "end": {"line": end, "character": 0}}


def _uri(path: Path) -> str:
    return "file://" + str(path)  # as written: a ".." survives, a symlink is not resolved


async def _server(tmp_path: Path, fake: FakeOpenAI) -> Harness:
    env = make_env(tmp_path)
    env.canary.close()
    harness = Harness(env.root, tmp_path / "state")
    await harness.start(
        settings={"model": "openai:fake-model"},
        env={**fake.env(), "HOME": str(env.home), "XDG_STATE_HOME": str(tmp_path / "xdg")},
    )
    return harness


def _received(fake: FakeOpenAI) -> str:
    return "\n".join(r.body.decode("utf-8", "replace") for r in fake.requests)


async def test_context_items__read_denied(tmp_path: Path) -> None:
    """A denied file attached in every spelling — plain, percent-encoded, ``localhost``, a
    symlink alias, a selection and a symbol in it, a Problems entry quoting it — is named,
    never read."""
    with FakeOpenAI() as fake:
        fake.script(oai.text("seen"))
        harness = await _server(tmp_path, fake)
        root = harness.root
        secret_file(root / ".env")
        secret_file(root / "deploy" / "id_rsa")
        (root / "notes.txt").symlink_to(root / ".env")
        (root / "app.py").write_text("print('hi')\n")
        try:
            run = await harness.run(
                "look at these",
                context=[
                    {"uri": _uri(root / ".env")},
                    {"uri": _uri(root / "%2Eenv")},
                    {"uri": "file://localhost" + str(root / ".env")},
                    {"uri": _uri(root / "notes.txt")},
                    {"uri": _uri(root / ".env"), "kind": "selection", "range": _range(0, 3)},
                    {
                        "uri": _uri(root / "deploy" / "id_rsa"),
                        "kind": "symbol",
                        "label": "key",
                        "range": _range(0, 1),
                    },
                    {
                        "uri": root.as_uri(),
                        "kind": "problems",
                        "problems": [
                            {"uri": _uri(root / ".env"), "message": f"found token={SECRET}"},
                            {"uri": _uri(root / "app.py"), "message": "fine"},
                        ],
                    },
                ],
            )
            done = await harness.finished(run["runId"])
        finally:
            await harness.stop()
    assert done["status"] == "completed", done
    received = _received(fake)
    assert SECRET not in received, "a denied file's text reached the model"
    assert received.count("denied by the workspace policy") >= 6
    assert "app.py" in received and ": fine" in received  # the allowed problem is kept


@pytest.mark.parametrize(
    "item",
    [
        "outside",
        "symlinked-file",
        "symlinked-folder",
        "dotdot",
        "home-key",
        "selection-outside",
    ],
)
async def test_context_items__read_outside(tmp_path: Path, item: str) -> None:
    """An item outside every workspace folder — named, through a symlinked file or folder in
    the workspace, through ``..``, a key in ``~/.ssh``, a selection — fails the prompt
    (naming the item) and nothing of it reaches the model; a Problems entry outside is left
    out."""
    with FakeOpenAI() as fake:
        fake.script(oai.text("seen"), oai.text("seen"))
        harness = await _server(tmp_path, fake)
        root, outside, home = harness.root, tmp_path / "outside", tmp_path / "home"
        secret_file(outside / "notes.txt")
        (root / "link.txt").symlink_to(outside / "notes.txt")
        (root / "shared").symlink_to(outside)
        items: dict[str, dict[str, Any]] = {
            "outside": {"uri": _uri(outside / "notes.txt")},
            "symlinked-file": {"uri": _uri(root / "link.txt")},
            "symlinked-folder": {"uri": _uri(root / "shared"), "kind": "folder"},
            "dotdot": {"uri": _uri(root / ".." / "outside" / "notes.txt")},
            "home-key": {"uri": _uri(home / ".ssh" / "id_rsa")},
            "selection-outside": {
                "uri": _uri(root / "shared" / "notes.txt"),
                "kind": "selection",
                "range": _range(0, 2),
            },
        }
        try:
            with pytest.raises(Exception) as refused:
                await harness.run("look at this", context=[items[item]])
            assert "outside every workspace folder" in str(refused.value)
            run = await harness.run(
                "and the problems",
                context=[
                    {
                        "uri": root.as_uri(),
                        "kind": "problems",
                        "problems": [
                            {"uri": _uri(outside / "notes.txt"), "message": f"t={SECRET}"},
                            {"uri": _uri(root / "link.txt"), "message": f"t={SECRET}"},
                        ],
                    }
                ],
            )
            done = await harness.finished(run["runId"])
        finally:
            await harness.stop()
    assert done["status"] == "completed", done
    received = _received(fake)
    assert SECRET not in received and "notes.txt" not in received
    assert "2 problem(s) in files outside the workspace or denied were left out" in received
