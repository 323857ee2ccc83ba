"""An approval pending when the server goes away is the user's still: asked again on resume.

Whatever ends the server — an editor's ``shutdown``/``exit``, SIGTERM, the client closing the
pipe, SIGHUP or SIGKILL — no decision is recorded for the waiting call, the model never
receives a refusal nobody gave, and ``lovia/resume`` on a new process asks the same call again.
"""

from __future__ import annotations

import asyncio
import signal

import pytest

from tests.server.harness import Harness
from tests.server.test_crash_resume import POSITIONAL


async def _leave(first: Harness, how: str) -> None:
    assert first.client is not None
    proc = first.client._server
    if how == "shutdown":
        await first.stop()
        return
    if how == "sigkill":
        await first.kill()
        return
    if how == "eof":
        assert proc.stdin is not None
        proc.stdin.close()
    else:
        proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGHUP)
    await asyncio.wait_for(proc.wait(), 30)
    try:
        await asyncio.wait_for(first.client.stop(), 5)
    except Exception:
        pass
    first.client = None


@pytest.mark.parametrize("how", ["shutdown", "sigterm", "eof", "sighup", "sigkill"])
async def test_a_pending_approval_is_asked_again_after_the_server_went_away(tmp_path, how):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "release-1").write_text("go")  # the build step finishes at once
    state = tmp_path / "state"
    first = Harness(root, state)
    spec = first.write_agent(POSITIONAL)
    await first.start(settings={"agent": spec})
    run = await first.run("build and deploy")
    rid, sid = run["runId"], run["sessionId"]
    await first.wait_kind(rid, "approval.requested", toolCallId="d1")
    await _leave(first, how)

    second = Harness(root, state)
    try:
        await second.start(settings={"agent": spec})
        listing = await second.request("lovia/sessions", {})
        (item,) = listing["sessions"]
        assert item["resumable"] is True and item["lastRunStatus"] == "interrupted"
        replay = await second.request("lovia/replay", {"runId": rid})
        resolved = [e for e in replay["events"] if e["kind"] == "approval.resolved"]
        assert all(e["outcome"] != "rejected" for e in resolved), resolved
        last_seq = replay["lastSeq"]
        await second.request("lovia/resume", {"runId": rid})
        request = await second.wait_for(
            lambda e: (
                e["runId"] == rid
                and e["kind"] == "approval.requested"
                and e["toolCallId"] == "d1"
                and e["seq"] > last_seq
            )
        )
        await second.request(
            "lovia/approve",
            {"runId": rid, "approvalId": request["approvalId"], "decision": "allow_once"},
        )
        done = await second.wait_for(
            lambda e: e["runId"] == rid and e["kind"] == "run.finished" and e["seq"] > last_seq
        )
        assert done["status"] == "completed" and done["output"] == "shipped"
        assert (root / "deploys.log").read_text() == "prod\n"
        view = await second.request("lovia/session", {"sessionId": sid})
        results = [m for m in view["entries"] if m["role"] == "tool"]
        assert [m["toolCallId"] for m in results] == ["b1", "d1"]
        assert all("not approved" not in str(m["content"]) for m in results), results
    finally:
        if second.client is not None:
            await second.stop()
