"""Conformance: the Python SDK's client side drives `lovia acp` as a real subprocess."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from acp import schema as a

from tests.acp.harness import AcpProcess, dump, message_text
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI


def todos(*items: tuple[str, str]) -> oai.Call:
    return oai.call(
        "todo_write", {"todos": [{"content": c, "status": s} for c, s in items]}, id=None
    )


async def test_prompt_tools_diffs_permissions_plan_and_cancel(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    fake_openai.script(
        oai.tool_calls(
            oai.call(
                "todo_write",
                {
                    "todos": [
                        {"content": "Edit a.txt", "status": "in_progress"},
                        {"content": "Write b.txt", "status": "pending"},
                    ]
                },
                id="t1",
            )
        ),
        oai.tool_calls(
            oai.call("edit_file", {"path": "a.txt", "old": "one", "new": "uno"}, id="e1")
        ),
        oai.tool_calls(oai.call("write_file", {"path": "b.txt", "content": "bee\n"}, id="w1")),
        oai.tool_calls(
            oai.call(
                "todo_write",
                {
                    "todos": [
                        {"content": "Edit a.txt", "status": "completed"},
                        {"content": "Write b.txt", "status": "completed"},
                    ]
                },
                id="t2",
            )
        ),
        oai.text("Edited a.txt; ", "b.txt was declined."),
        oai.tool_calls(oai.call("shell", {"command": "sleep 30"}, id="s1")),
    )
    init = await agent.start(fs=False)
    assert init.protocol_version == 1
    assert init.agent_capabilities.load_session is True
    assert init.agent_capabilities.prompt_capabilities.embedded_context is True
    assert init.agent_info.name == "lovia"

    new = await agent.new_session(ws)
    sid = new.session_id
    assert new.modes.current_mode_id == "coding"
    c = agent.client
    c.answer("allow_once", "reject_once")
    done = await agent.prompt(sid, "tidy up")
    assert done.stop_reason == "end_turn"

    # two permission requests: the edit (with its diff) allowed, the write rejected
    (edit_call, edit_opts), (write_call, _) = c.permissions
    assert edit_call.tool_call_id == "e1" and write_call.tool_call_id == "w1"
    assert {o.kind for o in edit_opts} == {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    }
    diff = edit_call.content[0]
    assert diff.type == "diff" and diff.old_text == "one\ntwo\n" and diff.new_text == "uno\ntwo\n"
    assert (ws / "a.txt").read_text() == "uno\ntwo\n"
    assert not (ws / "b.txt").exists()

    calls = {u.tool_call_id: u for u in c.of(sid, "tool_call")}
    assert calls["e1"].kind == "edit" and calls["e1"].locations[0].path == str(ws / "a.txt")
    assert calls["e1"].raw_input == {"path": "a.txt", "old": "one", "new": "uno"}
    ends = {
        u.tool_call_id: u
        for u in c.of(sid, "tool_call_update")
        if u.status in ("completed", "failed")
    }
    assert ends["e1"].status == "completed"
    assert any(x.type == "diff" and x.new_text == "uno\ntwo\n" for x in ends["e1"].content)
    assert ends["w1"].status == "failed"
    plans = c.of(sid, "plan")
    assert [[(e.content, e.status) for e in p.entries] for p in plans] == [
        [("Edit a.txt", "in_progress"), ("Write b.txt", "pending")],
        [("Edit a.txt", "completed"), ("Write b.txt", "completed")],
    ]
    assert message_text(c.of(sid)) == "Edited a.txt; b.txt was declined."

    # cancel while a command runs: the prompt ends `cancelled`
    c.answer("allow_once")
    turn = asyncio.ensure_future(agent.prompt(sid, "run it"))
    await c.wait_for(
        lambda: any(
            u.session_update == "tool_call_update"
            and u.tool_call_id == "s1"
            and u.status == "in_progress"
            for _, u in c.updates
        )
    )
    await agent.conn.cancel(session_id=sid)
    cancelled = await turn
    assert cancelled.stop_reason == "cancelled"
    assert [u for u in c.of(sid, "tool_call_update") if u.tool_call_id == "s1"][
        -1
    ].status == "failed"
    agent.frames()  # stdout held nothing but JSON-RPC frames


MCP_SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "mcp_stdio_server.py")


def _requests(fake: FakeOpenAI) -> list[dict]:
    return [r.json for r in fake.requests if r.path.endswith("/chat/completions")]


def _tool_messages(request: dict) -> list[str]:
    return [str(m.get("content")) for m in request["messages"] if m.get("role") == "tool"]


async def test_reads_see_the_unsaved_buffer_and_writes_go_to_the_client(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    path = ws / "notes.md"
    path.write_text("saved on disk\n")
    fake_openai.script(
        oai.tool_calls(oai.call("read_file", {"path": "notes.md"}, id="r1")),
        oai.tool_calls(
            oai.call("edit_file", {"path": "notes.md", "old": "unsaved", "new": "edited"}, id="e1")
        ),
        oai.text("ok"),
    )
    await agent.start(fs=True)
    sid = (await agent.new_session(ws)).session_id
    c = agent.client
    c.buffers[str(path)] = "unsaved in the editor\n"
    c.answer("allow_once")
    assert (await agent.prompt(sid, "edit the notes")).stop_reason == "end_turn"
    assert str(path) in c.reads
    second = _requests(fake_openai)[1]
    assert any("unsaved in the editor" in t for t in _tool_messages(second))
    assert not any("saved on disk" in t for t in _tool_messages(second))
    ((permission, _),) = c.permissions
    assert permission.content[0].old_text == "unsaved in the editor\n"
    assert c.writes == [(str(path), "edited in the editor\n")]


async def test_a_write_the_client_never_confirms_fails_the_call_and_the_turn_goes_on(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI
) -> None:
    (ws / "notes.md").write_text("draft\n")
    fake_openai.script(
        oai.tool_calls(
            oai.call("edit_file", {"path": "notes.md", "old": "draft", "new": "final"}, id="e1")
        ),
        oai.text("the editor did not confirm"),
    )
    agent = AcpProcess(
        tmp_path / "state",
        env={
            **fake_openai.env(),
            "LOVIA_MODEL": "openai:model-a",
            "LOVIA_EDITOR_FILE_TIMEOUT": "1",
        },
    )
    try:
        await agent.start(fs=True)
        sid = (await agent.new_session(ws)).session_id
        c = agent.client
        c.hold_writes = True
        c.answer("allow_once")
        assert (await agent.prompt(sid, "finish the notes")).stop_reason == "end_turn"
        (result,) = _tool_messages(_requests(fake_openai)[1])
        assert "did not confirm the edit" in result and "read the file again" in result
        c.release_writes.set()  # the late answer arrives: the agent shrugs it off
    finally:
        await agent.stop()
    assert (ws / "notes.md").read_text() == "draft\n"


async def test_readonly_mode_refuses_a_write_through_the_acl(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        oai.tool_calls(oai.call("write_file", {"path": "x.txt", "content": "x"}, id="w1")),
        oai.text("could not write"),
        oai.tool_calls(oai.call("write_file", {"path": "y.txt", "content": "y"}, id="w2")),
        oai.text("still cannot"),
    )
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    c = agent.client
    # switched while the write waits for approval: the ACL of the live run changes at once
    turn = asyncio.ensure_future(agent.prompt(sid, "write x"))
    await c.wait_for(lambda: c.permissions)
    await agent.conn.set_session_mode(session_id=sid, mode_id="readonly")
    c.answer("allow_once")
    assert (await turn).stop_reason == "end_turn"
    end = [u for u in c.of(sid, "tool_call_update") if u.tool_call_id == "w1"][-1]
    assert end.status == "failed"
    assert "policy denies writing" in end.raw_output["output"], end.raw_output
    assert not (ws / "x.txt").exists()
    # the next prompt runs read-only from the start: no write tool, nothing asked
    assert (await agent.prompt(sid, "write y")).stop_reason == "end_turn"
    assert len(c.permissions) == 1
    end = [u for u in c.of(sid, "tool_call_update") if u.tool_call_id == "w2"][-1]
    assert end.status == "failed" and not (ws / "y.txt").exists()
    # an unknown mode names the field
    try:
        await agent.conn.set_session_mode(session_id=sid, mode_id="yolo")
    except Exception as exc:  # RequestError
        assert exc.code == -32602 and exc.data["field"] == "modeId"
    else:
        raise AssertionError("unknown mode accepted")


async def test_set_config_option_switches_the_model(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(oai.text("from a"), oai.text("from b"))
    await agent.start()
    new = await agent.new_session(ws)
    sid = new.session_id
    model = next(o for o in new.config_options if o.id == "model")
    assert model.category == "model" and model.current_value == "openai:model-a"
    assert [o.value for o in model.options][:2] == ["openai:model-a", "openai:model-b"]
    await agent.prompt(sid, "one")
    changed = await agent.conn.set_config_option(
        config_id="model", session_id=sid, value="openai:model-b"
    )
    assert (
        next(o for o in changed.config_options if o.id == "model").current_value == "openai:model-b"
    )
    await agent.prompt(sid, "two")
    assert [r["model"] for r in _requests(fake_openai)] == ["model-a", "model-b"]


async def test_a_prompt_during_a_turn_steers_it(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        oai.tool_calls(oai.call("shell", {"command": "echo hi | tee /dev/null"}, id="s1")),
        oai.text("noted: use tabs"),
    )
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    c = agent.client
    first = asyncio.ensure_future(agent.prompt(sid, "format the code"))
    await c.wait_for(lambda: c.permissions)  # the turn waits on the command's approval
    second = asyncio.ensure_future(agent.prompt(sid, "use tabs, not spaces"))
    await asyncio.sleep(0.5)
    assert not second.done()  # not an error, not a second run
    c.answer("allow_once")
    one, two = await asyncio.gather(first, second)
    assert one.stop_reason == two.stop_reason == "end_turn"
    assert one.field_meta["lovia"]["runId"] == two.field_meta["lovia"]["runId"]
    echoed = c.of(sid, "user_message_chunk")
    assert [u.content.text for u in echoed] == ["use tabs, not spaces"]
    last = _requests(fake_openai)[-1]["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    assert users[-1] == "use tabs, not spaces" and "format the code" in users[0]
    # the steer sits after the tool result: delivered at the turn boundary
    roles = [m["role"] for m in last]
    assert roles.index("tool") < len(roles) - 1 - roles[::-1].index("user")


async def test_a_steer_the_run_never_took_in_starts_the_next_run(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI
) -> None:
    """The turn's run stops at its turn limit before the next turn takes the steer in: the
    steering prompt is not lost, it runs as the session's next run."""
    settings = tmp_path / "settings.json"
    settings.write_text('{"maxTurns": 1}')
    fake_openai.script(
        oai.tool_calls(oai.call("shell", {"command": "echo hi | tee /dev/null"}, id="s1")),
        oai.text("noted: use tabs"),
    )
    env = {**fake_openai.env(), "LOVIA_MODEL": "openai:model-a", "LOVIA_SETTINGS": str(settings)}
    agent = AcpProcess(tmp_path / "state", env=env)
    try:
        await agent.start()
        sid = (await agent.new_session(ws)).session_id
        c = agent.client
        first = asyncio.ensure_future(agent.prompt(sid, "format the code"))
        await c.wait_for(lambda: c.permissions)
        second = asyncio.ensure_future(agent.prompt(sid, "use tabs, not spaces"))
        await asyncio.sleep(0.5)
        c.answer("allow_once")
        one, two = await asyncio.gather(first, second)
        assert one.stop_reason == "max_turn_requests"
        assert two.stop_reason == "end_turn"
        assert one.field_meta["lovia"]["runId"] != two.field_meta["lovia"]["runId"]
        last = _requests(fake_openai)[-1]["messages"]
        assert [m["content"] for m in last if m["role"] == "user"][-1] == "use tabs, not spaces"
    finally:
        await agent.stop()


async def test_session_load_replays_what_was_streamed(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI
) -> None:
    env = {**fake_openai.env(), "LOVIA_MODEL": "openai:model-a"}
    (ws / "a.txt").write_text("one\n")
    fake_openai.script(
        oai.text("Looking.", reasoning=["Let me think."]),
        oai.tool_calls(
            oai.call("edit_file", {"path": "a.txt", "old": "one", "new": "two"}, id="e1")
        ),
        oai.tool_calls(
            oai.call("todo_write", {"todos": [{"content": "x", "status": "completed"}]}, id="t1")
        ),
        oai.text("Done."),
    )
    first = AcpProcess(tmp_path / "state", env=env)
    try:
        await first.start()
        sid = (await first.new_session(ws)).session_id
        await first.prompt(sid, "hello")
        first.client.answer("allow_once")
        await first.prompt(sid, "edit a")
        # the commands are announced on every session/new and session/load, not replayed
        streamed = [
            dump(u) for u in first.client.of(sid) if u.session_update != "available_commands_update"
        ]
    finally:
        await first.stop()
    second = AcpProcess(tmp_path / "state", env=env)
    try:
        await second.start()
        listed = await second.conn.list_sessions(cwd=str(ws))
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].title == "hello"
        await second.conn.load_session(session_id=sid, cwd=str(ws), mcp_servers=[])
        replayed = [
            dump(u)
            for u in second.client.of(sid)
            if u.session_update != "available_commands_update"
        ]
        prompts = [u for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"]["text"] for u in prompts] == ["hello", "edit a"]
        assert [u for u in replayed if u["sessionUpdate"] != "user_message_chunk"] == streamed
        kinds = {u["sessionUpdate"] for u in streamed}
        assert {
            "agent_message_chunk",
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "plan",
        } <= kinds
        # the loaded session takes prompts again
        fake_openai.script(oai.text("again"))
        assert (await second.prompt(sid, "more")).stop_reason == "end_turn"
        second.frames()
    finally:
        await second.stop()


async def test_skills_are_slash_commands(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    skill = ws / ".lovia" / "skills" / "careful-review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: careful-review\ndescription: Review a change line by line.\n---\nBe careful.\n"
    )
    fake_openai.script(oai.text("reviewed"))
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    c = agent.client
    (update,) = await c.wait_for(lambda: c.of(sid, "available_commands_update"))
    listed = [(x.name, x.description) for x in update.available_commands]
    assert listed[-1] == ("careful-review", "Review a change line by line.")  # after lovia's
    assert (await agent.prompt(sid, "/careful-review the parser")).stop_reason == "end_turn"
    request = _requests(fake_openai)[0]
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    assert user.startswith(
        "Use the skill `careful-review`: load it with load_skill, then apply it to: the parser"
    )
    assert "load_skill" in {t["function"]["name"] for t in request["tools"]}


async def test_cancel_while_a_permission_is_pending(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        oai.tool_calls(oai.call("write_file", {"path": "x.txt", "content": "x"}, id="w1"))
    )
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    c = agent.client
    c.hold_permissions = True
    turn = asyncio.ensure_future(agent.prompt(sid, "write x"))
    await c.wait_for(lambda: c.permissions)
    await agent.conn.cancel(session_id=sid)
    assert (await turn).stop_reason == "cancelled"
    assert [u for u in c.of(sid, "tool_call_update") if u.tool_call_id == "w1"][
        -1
    ].status == "failed"
    assert not (ws / "x.txt").exists()


async def test_the_clients_mcp_servers_reach_the_agent(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    script = MCP_SCRIPT
    fake_openai.script(
        oai.tool_calls(oai.call("probe__echo", {"text": "hello mcp"}, id="m1")),
        oai.text("echoed"),
    )
    await agent.start()
    server = a.McpServerStdio(name="probe", command=sys.executable, args=[script], env=[])
    sid = (await agent.conn.new_session(cwd=str(ws), mcp_servers=[server])).session_id
    agent.client.answer("allow_once", "allow_once")
    assert (await agent.prompt(sid, "echo it")).stop_reason == "end_turn"
    first, second = _requests(fake_openai)
    assert "probe__echo" in {t["function"]["name"] for t in first["tools"]}
    assert any("hello mcp" in t for t in _tool_messages(second))
    # SSE servers are refused, naming the entry
    sse = a.SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])
    try:
        await agent.conn.new_session(cwd=str(ws), mcp_servers=[sse])
    except Exception as exc:
        assert exc.code == -32602 and exc.data["field"] == "mcpServers.0"
    else:
        raise AssertionError("an SSE server was accepted")


async def test_authenticate_with_a_key_from_the_state_dir(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    # no key anywhere, and the vendor's own endpoint: nothing to authenticate with
    proc = AcpProcess(
        state, env={"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "LOVIA_MODEL": "openai:model-a"}
    )
    try:
        init = await proc.start()
        assert [m.id for m in init.auth_methods] == ["lovia-api-key"]
        try:
            await proc.conn.authenticate(method_id="lovia-api-key")
        except Exception as exc:
            assert exc.code == -32000 and exc.data["hint"]
        else:
            raise AssertionError("authenticated without a key")
    finally:
        await proc.stop()
    (state / "credentials.json").write_text('{"OPENAI_API_KEY": "from-the-state-dir"}')
    proc = AcpProcess(
        state,
        env={
            "OPENAI_BASE_URL": fake_openai.base_url,
            "OPENAI_API_KEY": "",
            "LOVIA_MODEL": "openai:model-a",
        },
    )
    try:
        await proc.start()
        await proc.conn.authenticate(method_id="lovia-api-key")
        fake_openai.script(oai.text("hi"))
        sid = (await proc.new_session(ws)).session_id
        assert (await proc.prompt(sid, "hello")).stop_reason == "end_turn"
        assert fake_openai.requests[-1].headers.get("authorization") == "Bearer from-the-state-dir"
    finally:
        await proc.stop()


async def test_two_prompts_at_once_make_one_run_that_takes_both(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(oai.text("first"), oai.text("second"))
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    one, two = await asyncio.gather(agent.prompt(sid, "one"), agent.prompt(sid, "two"))
    assert one.stop_reason == two.stop_reason == "end_turn"
    assert one.field_meta["lovia"]["runId"] == two.field_meta["lovia"]["runId"]
    # the second arrived at the run's first turn boundary: the model saw both in one turn
    last = _requests(fake_openai)[-1]["messages"]
    said = "\n".join(m["content"] for m in last if m["role"] == "user")
    assert said.index("one") < said.index("two")
    assert [u.content.text for u in agent.client.of(sid, "user_message_chunk")] == ["two"]
    assert message_text(agent.client.of(sid)).startswith("first")


async def test_embedded_context_usage_close_and_delete(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        oai.text("seen"), oai.tool_calls(oai.call("shell", {"command": "sleep 30"}, id="s1"))
    )
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    blocks = [
        a.TextContentBlock(type="text", text="what does this do?"),
        a.EmbeddedResourceContentBlock(
            type="resource",
            resource=a.TextResourceContents(uri=(ws / "x.py").as_uri(), text="print('embedded')"),
        ),
    ]
    done = await agent.conn.prompt(session_id=sid, prompt=blocks)
    assert done.stop_reason == "end_turn"
    assert done.usage is not None and done.usage.total_tokens > 0
    user = next(m["content"] for m in _requests(fake_openai)[0]["messages"] if m["role"] == "user")
    assert user.startswith("what does this do?") and "print('embedded')" in user
    listed = await agent.conn.list_sessions(cwd=str(ws))
    assert [s.title for s in listed.sessions] == ["what does this do?"]

    # close while a command runs: the run stops, the prompt ends cancelled
    agent.client.answer("allow_once")
    turn = asyncio.ensure_future(agent.prompt(sid, "run it"))
    c = agent.client
    await c.wait_for(
        lambda: any(
            u.session_update == "tool_call_update"
            and u.tool_call_id == "s1"
            and u.status == "in_progress"
            for _, u in c.updates
        )
    )
    await agent.conn.close_session(session_id=sid)
    assert (await turn).stop_reason == "cancelled"
    try:
        await agent.prompt(sid, "again")
    except Exception as exc:
        assert exc.code == -32002
    else:
        raise AssertionError("a closed session took a prompt")

    # the SDK's client (0.12) has no method for session/delete yet: the raw request
    await agent.conn._conn.send_request("session/delete", {"sessionId": sid})
    assert (await agent.conn.list_sessions(cwd=str(ws))).sessions == []
    try:
        await agent.conn._conn.send_request("session/delete", {"sessionId": sid})
    except Exception as exc:
        assert exc.code == -32002 and exc.data["field"] == "sessionId"
    else:
        raise AssertionError("deleted twice")


async def test_max_turns_ends_with_max_turn_requests(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI
) -> None:
    settings = tmp_path / "acp.json"
    settings.write_text('{"lovia": {"maxTurns": 2, "permissions": {"write": "allow"}}}')
    proc = AcpProcess(tmp_path / "state", env={**fake_openai.env(), "LOVIA_MODEL": "openai:m"})
    fake_openai.responder = lambda request: oai.tool_calls(oai.call("list_files", {"path": "."}))
    try:
        await proc.start("--settings", str(settings))
        sid = (await proc.new_session(ws)).session_id
        assert (await proc.prompt(sid, "loop forever")).stop_reason == "max_turn_requests"
    finally:
        await proc.stop()


async def test_questions_with_choices_are_asked_as_permission_options(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    ask = {"question": "Tabs or spaces?", "options": [{"label": "tabs"}, {"label": "spaces"}]}
    fake_openai.script(
        oai.tool_calls(oai.call("ask_human", ask, id="q1")),
        oai.tool_calls(oai.call("ask_human", {"question": "What name?"}, id="q2")),
        oai.text("spaces it is"),
    )
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    agent.client.answer("choice-1")
    assert (await agent.prompt(sid, "format")).stop_reason == "end_turn"
    ((asked, options),) = agent.client.permissions
    assert asked.tool_call_id == "q1" and asked.title == "Tabs or spaces?"
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("choice-0", "tabs", "allow_once"),
        ("choice-1", "spaces", "allow_once"),
        ("skip", "Skip", "reject_once"),
    ]
    second, third = _requests(fake_openai)[1:]
    assert _tool_messages(second)[-1] == "spaces"
    assert "cannot take a typed answer" in _tool_messages(third)[-1]
