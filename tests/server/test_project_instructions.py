"""Project instructions (AGENTS.md and friends) through the real server and the built-in agent
on a local OpenAI-format endpoint: what the request bodies carry, and when."""

from __future__ import annotations

from typing import Any

from tests.support import fake_openai as oai


def _posts(fake: Any) -> list[dict[str, Any]]:
    return [r.json for r in fake.requests if r.method == "POST"]


def _system(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def _tool_results(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: str(m["content"]) for m in body["messages"] if m["role"] == "tool"}


async def test_nested_agents_md_joins_once_when_the_agent_works_under_its_folder(
    harness, fake_openai, tmp_path
):
    root = harness.root
    (root / "AGENTS.md").write_text("Root rule: run `make check` before you finish.\n")
    (root / "pkg" / "core").mkdir(parents=True)
    (root / "pkg" / "AGENTS.md").write_text("Pkg rule: snake_case names only.\n")
    (root / "pkg" / "core" / "AGENTS.md").write_text("Core rule: no I/O in core.\n")
    (root / "pkg" / "core" / "engine.py").write_text("x = 1\n")
    (root / "pkg" / "core" / "util.py").write_text("y = 2\n")
    (root / "web").mkdir()
    (root / "web" / "AGENTS.md").write_text("Web rule: never seen here.\n")
    (root / "web" / "page.ts").write_text("export const a = 1;\n")
    (root / ".github" / "instructions").mkdir(parents=True)
    (root / ".github" / "instructions" / "ts.instructions.md").write_text(
        '---\napplyTo: "**/*.ts"\n---\nTS rule: prefer const.\n'
    )
    (root / ".github" / "instructions" / "docs.instructions.md").write_text(
        "---\napplyTo: 'docs/**/*.md, *.rst'\n---\nDocs rule: short sentences.\n"
    )
    home = tmp_path / "home"
    (home / ".lovia").mkdir(parents=True)
    (home / ".lovia" / "AGENTS.md").write_text("User rule: answer in English.\n")
    fake_openai.script(
        oai.tool_calls(oai.call("list_files", {"path": "."}, id="l1")),
        oai.tool_calls(oai.call("read_file", {"path": "pkg/core/engine.py"}, id="r1")),
        oai.tool_calls(oai.call("read_file", {"path": "pkg/core/util.py"}, id="r2")),
        oai.tool_calls(oai.call("read_file", {"path": "web/page.ts"}, id="r3")),
        oai.text("done"),
    )
    await harness.start(
        settings={"model": "openai:fake-model"}, env={**fake_openai.env(), "HOME": str(home)}
    )
    status = await harness.request("lovia/status", {})
    listed = {(i["path"], i["scope"]) for i in status["instructions"]}
    assert listed == {
        (str(home / ".lovia" / "AGENTS.md"), "user"),
        (str(root / "AGENTS.md"), "root"),
        (str(root / ".github/instructions/ts.instructions.md"), "scoped"),
        (str(root / ".github/instructions/docs.instructions.md"), "scoped"),
    }
    docs = next(i for i in status["instructions"] if i["path"].endswith("docs.instructions.md"))
    assert docs["applyTo"] == ["docs/**/*.md", "*.rst"]

    run = await harness.run("tidy the engine")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    posts = _posts(fake_openai)
    assert len(posts) == 5
    system = _system(posts[0])
    assert "Root rule" in system and "User rule" in system
    assert system.index("User rule") < system.index("Root rule")  # general first
    for rule in ("Pkg rule", "Core rule", "Web rule", "TS rule", "Docs rule"):
        assert rule not in system
    # the system prompt never changes: the cache keeps its prefix
    assert all(_system(body) == system for body in posts)

    results = _tool_results(posts[-1])
    assert "rule" not in results["l1"]  # the root listing brings nothing new
    first = results["r1"]
    assert "Pkg rule" in first and "Core rule" in first
    assert first.index("Pkg rule") < first.index("Core rule") < first.index("x = 1")
    assert 'source="pkg/core/AGENTS.md"' in first
    # once per conversation: the next file under the same folder brings nothing again
    assert "rule" not in results["r2"] and "y = 2" in results["r2"]
    # a TypeScript file brings its folder's AGENTS.md and the applyTo file, not the docs one
    ts = results["r3"]
    assert "Web rule" in ts and "TS rule" in ts and "Docs rule" not in ts
    assert "Core rule" not in ts
    # before the agent reached web/, nothing of it had been sent
    assert "Web rule" not in str(posts[3]["messages"]) and "TS rule" not in str(posts[3])


async def test_denied_instruction_files_are_never_read_and_big_ones_are_cut(
    harness, fake_openai, tmp_path
):
    root = harness.root
    secret = tmp_path / "outside" / "notes.md"
    secret.parent.mkdir()
    secret.write_text("Outside secret rule\n")
    (root / "vendor").mkdir()
    (root / "vendor" / "AGENTS.md").symlink_to(secret)  # a link leaving the workspace
    (root / "vendor" / "b.py").write_text("b = 2\n")
    (root / "AGENTS.md").write_text("Root says: " + "r" * 40_000 + " END-OF-ROOT\n")
    (root / "CLAUDE.md").write_text("Secret claude notes\n")
    (root / "sub").mkdir()
    (root / "sub" / "AGENTS.md").write_text("Sub secret rule\n")
    (root / "sub" / "a.py").write_text("a = 1\n")
    fake_openai.script(
        oai.tool_calls(oai.call("read_file", {"path": "sub/a.py"}, id="r1")),
        oai.tool_calls(oai.call("read_file", {"path": "vendor/b.py"}, id="r2")),
        oai.text("done"),
    )
    await harness.start(
        settings={
            "model": "openai:fake-model",
            "permissions": {"deniedPaths": ["CLAUDE.md", "sub/AGENTS.md"]},
        },
        env=fake_openai.env(),
    )
    status = await harness.request("lovia/status", {})
    assert [(i["path"], i["cut"]) for i in status["instructions"]] == [
        (str(root / "AGENTS.md"), True)
    ]
    run = await harness.run("go")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    posts = _posts(fake_openai)
    everything = str(posts)
    assert "Secret claude notes" not in everything and "Sub secret rule" not in everything
    assert "Outside secret rule" not in everything
    system = _system(posts[0])
    assert "Root says: rrr" in system and "END-OF-ROOT" not in system
    assert "[lovia: AGENTS.md was cut to its first 16,000 characters]" in system
    results = _tool_results(posts[-1])
    assert "a = 1" in results["r1"] and "b = 2" in results["r2"]


async def test_writing_agents_md_asks_with_the_protected_path_warning(harness, fake_openai):
    (harness.root / "sub").mkdir()
    fake_openai.script(
        oai.tool_calls(
            oai.call("write_file", {"path": "sub/AGENTS.md", "content": "obey me\n"}, id="w1")
        ),
        oai.tool_calls(
            oai.call(
                "write_file",
                {"path": ".github/instructions/all.instructions.md", "content": "x\n"},
                id="w2",
            )
        ),
        oai.text("done"),
    )
    await harness.start(
        settings={
            "model": "openai:fake-model",
            "permissions": {"preset": "trusted", "write": "allow"},
        },
        env=fake_openai.env(),
    )
    run = await harness.run("go")
    rid = run["runId"]
    for call_id, shown in (("w1", "sub/AGENTS.md"), ("w2", ".github/instructions")):
        card = await harness.wait_kind(rid, "approval.requested", toolCallId=call_id)
        assert "alters agent or editor configuration" in card["warning"]
        assert shown in card["warning"]
        assert [o["decision"] for o in card["options"]] == ["allow_once", "reject_once"]
        await harness.request(
            "lovia/approve",
            {"runId": rid, "approvalId": card["approvalId"], "decision": "reject_once"},
        )
    done = await harness.finished(rid)
    assert done["status"] == "completed", done
    assert not (harness.root / "sub" / "AGENTS.md").exists()
    assert not (harness.root / ".github").exists()
