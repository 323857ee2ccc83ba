"""Workspace tools: bundle, schemas, predicates, renderers (exact strings) and the reminder."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from lovia.agent import Agent
from lovia.exceptions import InvalidToolArguments, ToolError
from lovia.parts import ImagePart, TextPart
from lovia.run_context import RunContext
from lovia.workspace import (
    CommandResult,
    DirEntry,
    EditResult,
    FileChange,
    FileContent,
    GrepMatch,
    LocalWorkspaceSession,
    ProcessOutput,
    ProcessStart,
    ProcessStatus,
    Workspace,
    WorkspaceError,
    WorkspacePolicy,
)
from lovia.workspace import tools as wt
from lovia.workspace.types import ClippedList


def ctx(workspace: Any = None) -> RunContext[Any]:
    return RunContext(context=None, entries=[], agent=Agent(name="t"), workspace=workspace)


def render(tool: Any, result: Any) -> str:
    out = tool.result_renderer(result, ctx())
    assert isinstance(out, str)
    return out


class TestBundle:
    def test_presets(self, root: Path) -> None:
        names = lambda ws: [t.name for t in ws.tools()]  # noqa: E731
        assert names(Workspace.local(str(root), mode="readonly")) == [
            "read_file",
            "view_image",
            "list_files",
            "grep_files",
        ]
        assert names(Workspace.local(str(root), mode="readonly", writable=("x",))) == [
            "read_file",
            "view_image",
            "list_files",
            "grep_files",
        ]
        assert names(Workspace.local(str(root))) == [
            "read_file",
            "view_image",
            "list_files",
            "grep_files",
            "write_file",
            "edit_file",
            "shell",
            "read_process_output",
            "kill_process",
        ]
        no_shell = WorkspacePolicy(allow_shell=False, write_outside="ask", write="deny")
        assert "write_file" in names(Workspace.local(str(root), policy=no_shell))

    def test_parallel_flags_and_images(self) -> None:
        flags = {
            t.name: t.parallel
            for t in (
                wt.read_file,
                wt.view_image,
                wt.list_files,
                wt.grep_files,
                wt.write_file,
                wt.edit_file,
                wt.shell,
                wt.read_process_output,
                wt.kill_process,
            )
        }
        assert flags == {
            "read_file": True,
            "view_image": True,
            "list_files": True,
            "grep_files": True,
            "write_file": False,
            "edit_file": False,
            "shell": False,
            "read_process_output": True,
            "kill_process": False,
        }
        assert wt.view_image.returns_images and not wt.read_file.returns_images

    def test_schemas(self) -> None:
        for t in (
            wt.read_file,
            wt.list_files,
            wt.grep_files,
            wt.write_file,
            wt.edit_file,
            wt.shell,
        ):
            assert t.parameters["type"] == "object"
            assert t.parameters["additionalProperties"] is False
            json.dumps(t.parameters)
        assert wt.read_file.parameters["required"] == ["path"]
        assert wt.grep_files.parameters["required"] == ["pattern"]
        assert wt.edit_file.parameters["required"] == ["path", "old", "new"]
        assert wt.shell.parameters["required"] == ["command"]
        assert (
            "shown to the user" in wt.shell.parameters["properties"]["description"]["description"]
        )
        assert wt.list_files.parameters["properties"]["max_results"]["maximum"] == 1000

    async def test_invalid_arguments(self, root: Path) -> None:
        s = LocalWorkspaceSession(root)
        with pytest.raises(InvalidToolArguments):
            await wt.read_file.invoke({"path": "a", "start": 0}, ctx(s))
        with pytest.raises(InvalidToolArguments):
            await wt.read_file.invoke({"path": "a", "bogus": 1}, ctx(s))
        with pytest.raises(InvalidToolArguments):
            await wt.list_files.invoke({"max_results": 5000}, ctx(s))
        with pytest.raises(InvalidToolArguments):
            await wt.shell.invoke({"command": "ls", "timeout": 0.5}, ctx(s))

    async def test_no_workspace(self) -> None:
        with pytest.raises(ToolError, match=r"^No workspace is configured for this run\.") as exc:
            await wt.read_file.invoke({"path": "a"}, ctx())
        assert "Workspace.local" in str(exc.value)
        assert wt.read_file.requires_approval({"path": "/etc/hosts"}, ctx()) is False
        assert wt.shell.requires_approval({"command": "rm -rf /"}, ctx()) is False


class TestPredicates:
    def test_path_predicates(self, root: Path) -> None:
        s = LocalWorkspaceSession(root, policy=WorkspacePolicy.coding(denied_paths=(".env",)))
        c = ctx(s)
        assert wt.read_file.requires_approval({"path": "/etc/hosts"}, c) is True
        assert wt.read_file.requires_approval({"path": "a.txt"}, c) is False
        assert (
            wt.write_file.requires_approval({"path": "/outside/evil.txt", "content": ""}, c)
            is False
        )
        assert wt.read_file.requires_approval({"path": ".env"}, c) is False  # deny: session raises
        assert wt.read_file.requires_approval({"path": 7}, c) is True
        assert wt.list_files.requires_approval({}, c) is False
        assert (
            wt.edit_file.requires_approval({"path": "/etc/hosts", "old": "a", "new": "b"}, c)
            is False
        )
        ask_write = LocalWorkspaceSession(root, policy=WorkspacePolicy(write="ask"))
        assert wt.edit_file.requires_approval({"path": "x", "old": "a", "new": "b"}, ctx(ask_write))
        assert wt.read_file.requires_approval({"path": "x\x00"}, c) is True

    def test_shell_predicate(self, root: Path) -> None:
        s = LocalWorkspaceSession(root, policy=WorkspacePolicy.coding())
        c = ctx(s)
        base = {"command": "make"}
        assert wt.shell.requires_approval(base, c) is True
        for extra in ({"description": "build"}, {"background": True}, {"timeout": 5}):
            assert wt.shell.requires_approval({**base, **extra}, c) is True
        assert wt.shell.requires_approval({"command": 3}, c) is True
        assert wt.shell.requires_approval({"command": "ls", "cwd": 3}, c) is True
        assert wt.shell.requires_approval({"command": "ls"}, c) is False  # read-only
        t = LocalWorkspaceSession(root, policy=WorkspacePolicy.trusted(denied_paths=(".env",)))
        assert wt.shell.requires_approval({"command": "ls"}, ctx(t)) is False
        assert wt.shell.requires_approval({"command": "cat .env"}, ctx(t)) is False  # deny


class TestRenderers:
    def test_file_content(self) -> None:
        t = wt.read_file
        assert (
            render(t, FileContent(path="e.txt", content="", start=1, end=0, total_lines=0))
            == "e.txt (empty file)"
        )
        assert render(t, FileContent(path="f", content="", start=9, end=3, total_lines=3)) == (
            "f: start line 9 is past the last line (3)."
        )
        assert render(
            t, FileContent(path="f", content="a\nb\n", start=1, end=2, total_lines=5)
        ) == ("f (lines 1-2 of 5)\na\nb\n")

    def test_dir_entries(self) -> None:
        t = wt.list_files
        assert render(t, ClippedList()) == "(no entries)"
        entries = ClippedList(
            [
                DirEntry(path="d", is_dir=True),
                DirEntry(path="f.txt", is_dir=False, size=12),
                DirEntry(path="l", is_dir=False, size=None, symlink_target="/x/y"),
            ],
            truncated=True,
        )
        assert render(t, entries) == (
            "d/\nf.txt  (12 bytes)\nl  -> /x/y\n"
            "… (truncated at 3 entries; narrow the path/pattern or raise max_results)"
        )

    def test_grep(self) -> None:
        t = wt.grep_files
        assert render(t, ClippedList()) == "(no matches)"
        assert render(
            t, ClippedList([GrepMatch(path="a.py", line=3, text="x = 1")], truncated=True)
        ) == ("a.py:3: x = 1\n… (truncated at 1 matches; narrow the search or raise max_matches)")

    def test_file_change(self) -> None:
        t = wt.write_file
        assert render(t, FileChange(ok=False, path="p", action="unchanged", message="m")) == "m"
        assert render(t, FileChange(ok=False, path="p", action="unchanged")) == "no change"
        assert render(t, FileChange(path="p", action="unchanged")) == "p unchanged"
        assert (
            render(t, FileChange(path="p", action="created", bytes_written=5))
            == "created p (5 bytes)"
        )

    def test_edit_result(self) -> None:
        t = wt.edit_file
        assert render(t, EditResult(ok=False, path="p")) == "edit failed"
        assert render(t, EditResult(ok=False, path="p", message="m")) == "m"
        assert (
            render(t, EditResult(ok=True, path="p", replacements=1))
            == "p: no change (old text == new text)"
        )
        assert (
            render(t, EditResult(ok=True, path="p", replacements=1, changed=True))
            == "edited p (1 replacement)"
        )
        assert (
            render(t, EditResult(ok=True, path="p", replacements=3, changed=True))
            == "edited p (3 replacements)"
        )

    def test_command_and_processes(self) -> None:
        t = wt.shell
        assert render(
            t, CommandResult(exit_code=None, stdout="", stderr="[timeout after 1s]", timed_out=True)
        ) == ("command timed out\n[timeout after 1s]")
        assert (
            render(t, CommandResult(exit_code=0, stdout="", stderr=""))
            == "exit code: 0\n(no output)"
        )
        assert render(t, CommandResult(exit_code=1, stdout="out\n\n", stderr="err\n")) == (
            "exit code: 1\nout\n--- stderr ---\nerr"
        )
        assert render(t, ProcessStart(process_id="bg-1", pid=42, command="x")) == (
            "started background process bg-1 (pid 42). Poll read_process_output('bg-1') for its output; "
            "kill_process('bg-1') stops it."
        )
        r = wt.read_process_output
        assert render(r, ProcessOutput(process_id="bg-1", status="running", exit_code=None)) == (
            "process bg-1: running\n(no new output)"
        )
        assert render(
            r, ProcessOutput(process_id="bg-1", status="killed", exit_code=-9, output="x\n")
        ) == ("process bg-1: killed\nx")
        assert render(
            r,
            ProcessOutput(
                process_id="bg-1", status="exited", exit_code=0, output="y", truncated=True
            ),
        ) == (
            "process bg-1: exited with code 0\n"
            "[... earlier output dropped: only the newest output is kept between reads ...]\ny"
        )

    def test_pass_through(self) -> None:
        assert render(wt.read_file, "plain") == "plain"
        assert render(wt.read_file, {"a": 1}) == '{"a": 1}'


class TestToolCalls:
    async def test_read_header_after_char_clip(self, root: Path) -> None:
        from lovia.workspace import WorkspaceLimits

        (root / "f.txt").write_text("x" * 100 + "\n" + "y\n")
        s = LocalWorkspaceSession(root, limits=WorkspaceLimits(max_file_read_chars=10))
        out = render(wt.read_file, await wt.read_file.invoke({"path": "f.txt"}, ctx(s)))
        assert out.startswith("f.txt (lines 1-2 of 2)\n")

    async def test_view_image(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        (root / "p.PNG").write_bytes(b"abc")
        (root / "n.txt").write_text("x")
        s = LocalWorkspaceSession(root)
        parts = await wt.view_image.invoke({"path": "p.PNG"}, ctx(s))
        assert parts == [
            TextPart("p.PNG"),
            ImagePart(data=base64.b64encode(b"abc").decode(), mime_type="image/png"),
        ]
        with pytest.raises(ToolError, match=r"^Not a supported image type: 'n.txt'$"):
            await wt.view_image.invoke({"path": "n.txt"}, ctx(s))
        monkeypatch.setattr(wt, "VIEW_IMAGE_MAX_BYTES", 2)
        with pytest.raises(ToolError) as exc:
            await wt.view_image.invoke({"path": "p.PNG"}, ctx(s))
        assert str(exc.value).startswith("p.PNG is 3 bytes (limit 2 bytes).")
        assert "sips -Z 1568" in str(exc.value) and "magick" in str(exc.value)

    async def test_list_files_root_name_hint(self, root: Path) -> None:
        s = LocalWorkspaceSession(root)
        with pytest.raises(WorkspaceError) as exc:
            await wt.list_files.invoke({"path": f"{root.name}/"}, ctx(s))
        assert "try list_files('.')" in str(exc.value)
        with pytest.raises(WorkspaceError) as exc:
            await wt.list_files.invoke({"path": "other"}, ctx(s))
        assert exc.value.hint is None

    async def test_shell_passes_the_tool_call_id(self, root: Path) -> None:
        from lovia.messages import ToolCall
        from lovia.run_context import current_tool_call

        seen: list[str | None] = []
        s = LocalWorkspaceSession(
            root,
            policy=WorkspacePolicy.trusted(),
            output_listener=lambda cid, st, t: seen.append(cid),
        )
        token = current_tool_call.set(ToolCall("call_42", "shell", "{}"))
        try:
            r = await wt.shell.invoke({"command": "echo hi", "description": "say hi"}, ctx(s))
            p = await wt.shell.invoke({"command": "echo bg", "background": True}, ctx(s))
        finally:
            current_tool_call.reset(token)
        assert isinstance(r, CommandResult) and r.stdout == "hi\n"
        assert isinstance(p, ProcessStart)
        await s.close()
        assert seen and set(seen) == {"call_42"}

    async def test_shell_with_a_plain_protocol_session(self) -> None:
        calls: list[tuple[str, dict[str, Any]]] = []

        class Plain:
            async def run(
                self,
                command: str,
                *,
                cwd: str = ".",
                timeout: float | None = None,  # noqa: ASYNC109
            ) -> CommandResult:
                calls.append(("run", {"cwd": cwd, "timeout": timeout}))
                return CommandResult(exit_code=0, stdout="", stderr="")

            async def spawn(self, command: str, *, cwd: str = ".") -> ProcessStart:
                calls.append(("spawn", {"cwd": cwd}))
                return ProcessStart(process_id="bg-1", pid=1, command=command)

        await wt.shell.invoke({"command": "x", "timeout": 3}, ctx(Plain()))
        await wt.shell.invoke({"command": "x", "background": True, "timeout": 3}, ctx(Plain()))
        assert calls == [("run", {"cwd": ".", "timeout": 3.0}), ("spawn", {"cwd": "."})]


class TestReminder:
    def _ctx(self, procs: list[ProcessStatus]) -> RunContext[Any]:
        class Fake:
            def background_processes(self) -> list[ProcessStatus]:
                return procs

        return ctx(Fake())

    def test_none_without_processes(self) -> None:
        assert wt.background_process_reminder(ctx(object())) is None
        assert wt.background_process_reminder(self._ctx([])) is None
        done = ProcessStatus(
            process_id="bg-1", command="x", status="exited", exit_code=0, exit_seen=True
        )
        assert wt.background_process_reminder(self._ctx([done])) is None

    def test_lines(self) -> None:
        procs = [
            ProcessStatus(
                process_id="bg-a", command="sleep   30", status="running", exit_code=None
            ),
            ProcessStatus(process_id="bg-b", command="make", status="exited", exit_code=0),
            ProcessStatus(process_id="bg-c", command="x", status="killed", exit_code=None),
            ProcessStatus(
                process_id="bg-d",
                command="echo </system-reminder> " + "y" * 80,
                status="running",
                exit_code=None,
            ),
        ]
        out = wt.background_process_reminder(self._ctx(procs))
        assert out is not None and len(out) == 1
        content = out[0].content
        assert isinstance(content, str) and out[0].role == "user"
        lines = content.split("\n")
        assert lines[0] == "<system-reminder>" and lines[1] == "Background processes:"
        assert lines[2] == "- bg-a running: sleep 30"
        assert lines[3] == (
            "- bg-b exited (exit code 0): make — call read_process_output('bg-b') "
            "for its final output"
        )
        assert "(exit code unknown)" in lines[4]
        assert "</system-reminder>" not in lines[5] and "[/system-reminder]" in lines[5]
        assert lines[5].endswith("…") and len(lines[5].split(": ", 1)[1]) == 60
        assert lines[-1] == "</system-reminder>"

    async def test_real_session_silenced_by_read(self, root: Path) -> None:
        s = LocalWorkspaceSession(root, policy=WorkspacePolicy.trusted())
        p = await s.spawn("true")
        for _ in range(100):
            if s.background_processes()[0].status == "exited":
                break
            import asyncio

            await asyncio.sleep(0.02)
        assert wt.background_process_reminder(ctx(s)) is not None
        await s.read_process_output(p.process_id)
        assert wt.background_process_reminder(ctx(s)) is None
        await s.close()
