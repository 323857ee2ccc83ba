"""Shell and background processes with real subprocesses."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lovia.tools.base import clip_text
from lovia.workspace import (
    LocalWorkspaceSession,
    PermissionDeniedError,
    WorkspaceClosedError,
    WorkspaceError,
    WorkspaceLimits,
    WorkspacePolicy,
)
from lovia.workspace._process import TailBuffer

HINT = "Re-run with a filter (e.g. pipe through grep/head) for more."


def make(root: Path, **kw: object) -> LocalWorkspaceSession:
    kw.setdefault("policy", WorkspacePolicy.trusted(denied_paths=(".env",)))
    return LocalWorkspaceSession(root, **kw)  # type: ignore[arg-type]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _ready(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text or None


async def wait_for_file(path: Path, within: float = 10.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = _ready(path)
        if text is not None:
            return text
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


async def wait_dead(*pids: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        await asyncio.sleep(0.02)
    return False


class TestRun:
    async def test_output_and_exit_code(self, root: Path) -> None:
        r = await make(root).run("echo out; echo err >&2; exit 3")
        assert (r.exit_code, r.stdout, r.stderr, r.ok) == (3, "out\n", "err\n", False)
        assert (await make(root).run("true")).ok

    async def test_gate_and_cwd(self, root: Path) -> None:
        (root / "sub").mkdir()
        (root / "f").write_text("x")
        s = make(root)
        with pytest.raises(PermissionDeniedError, match=r"^Command denied by workspace policy\."):
            await s.run("cat .env")
        with pytest.raises(WorkspaceError, match="^Not a directory: f$"):
            await s.run("ls", cwd="f")
        assert (await s.run("pwd", cwd="sub")).stdout.strip() == str(root / "sub")

    async def test_stdin_is_dev_null(self, root: Path) -> None:
        s = make(root)
        r = await asyncio.wait_for(s.run('cat; read x; echo "got:$x"'), 10)
        assert r.stdout == "got:\n" and r.exit_code == 0
        r = await s.run("readlink /proc/self/fd/0")
        assert r.stdout.strip() == "/dev/null"

    def test_host_stdin_pipe_is_never_read(self, root: Path, tmp_path: Path) -> None:
        script = tmp_path / "host.py"
        script.write_text(
            textwrap.dedent(
                f"""
                import asyncio
                from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy
                async def main():
                    s = LocalWorkspaceSession({str(root)!r}, policy=WorkspacePolicy.trusted())
                    r = await s.run("cat; head -c 100 /dev/stdin", timeout=20)
                    print("RESULT", repr(r.stdout), r.exit_code, flush=True)
                asyncio.run(main())
                """
            )
        )
        proc = subprocess.Popen(
            [sys.executable, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("Content-Length: 2\r\n\r\n{}")  # a JSON-RPC frame on the host's stdin
        proc.stdin.flush()
        start = time.monotonic()
        line = proc.stdout.readline()
        elapsed = time.monotonic() - start
        proc.stdin.close()
        proc.wait(10)
        assert line.startswith("RESULT ''"), line
        assert elapsed < 15

    async def test_timeout_kills_the_whole_group(self, root: Path) -> None:
        s = make(root)
        r = await s.run(
            "sleep 60 & echo $! > bg.pid; setsid sleep 61 & echo $! > sid.pid; sleep 62",
            timeout=1,
        )
        assert r.timed_out and r.exit_code is None and r.stdout == ""
        assert r.stderr == "[timeout after 1s]"
        pids = [int((root / n).read_text()) for n in ("bg.pid", "sid.pid")]
        assert await wait_dead(*pids)

    async def test_timeout_formatting(self, root: Path) -> None:
        r = await make(root).run("sleep 5", timeout=0.2)
        assert r.stderr == "[timeout after 0.2s]"
        r = await make(root, shell_timeout=0.3).run("sleep 5")
        assert r.stderr == "[timeout after 0.3s]"

    async def test_cancel_kills_grandchildren(self, root: Path) -> None:
        s = make(root)
        task = asyncio.create_task(s.run("sleep 60 & echo $! > gc.pid; wait"))
        pid = int(await wait_for_file(root / "gc.pid"))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await wait_dead(pid)

    async def test_close_during_run_returns_non_ok(self, root: Path) -> None:
        s = make(root)
        task = asyncio.create_task(s.run("sleep 60 & echo $! > gc.pid; wait"))
        pid = int(await wait_for_file(root / "gc.pid"))
        for _ in range(500):  # adopted (a close before that is the spawn race)
            if s._foreground:
                break
            await asyncio.sleep(0.01)
        await s.close()
        r = await asyncio.wait_for(task, 10)
        assert not r.ok and r.exit_code == -9
        assert await wait_dead(pid)

    async def test_leftovers_are_killed_after_exit(self, root: Path) -> None:
        r = await make(root).run("sleep 60 > /dev/null 2>&1 & echo $!")
        assert await wait_dead(int(r.stdout.strip()))

    async def test_close_spawn_race(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        import lovia.workspace._local_processes as local_mod
        import lovia.workspace._process as proc_mod

        s = make(root)
        spawned: list[int] = []
        original = proc_mod.spawn_exec

        async def racing(*args: object, **kwargs: object) -> asyncio.subprocess.Process:
            p = await original(*args, **kwargs)  # type: ignore[arg-type]
            spawned.append(p.pid)
            await s.close()
            return p

        monkeypatch.setattr(proc_mod, "spawn_exec", racing)
        with pytest.raises(WorkspaceClosedError):
            await s.run("sleep 60")
        s2 = make(root)

        async def racing2(*args: object, **kwargs: object) -> asyncio.subprocess.Process:
            p = await original(*args, **kwargs)  # type: ignore[arg-type]
            spawned.append(p.pid)
            await s2.close()
            return p

        monkeypatch.setattr(local_mod, "spawn_exec", racing2)
        with pytest.raises(WorkspaceClosedError):
            await s2.spawn("sleep 60")
        assert await wait_dead(*spawned)

    async def test_signal_death_is_negative(self, root: Path) -> None:
        r = await make(root).run("kill -9 $$")
        assert r.exit_code == -9

    async def test_output_clipped_per_stream_keeping_head_and_tail(self, root: Path) -> None:
        s = make(root, limits=WorkspaceLimits(max_shell_output_chars=100))
        r = await s.run("seq 1 200; seq 1 5 >&2")
        full = "".join(f"{i}\n" for i in range(1, 201))
        assert r.truncated
        assert r.stdout == clip_text(full, 100, hint=HINT, keep_tail=True)[0]
        assert r.stderr == "1\n2\n3\n4\n5\n"

    async def test_huge_output_is_clipped_identically(self, root: Path) -> None:
        s = make(root, limits=WorkspaceLimits(max_shell_output_chars=50))
        r = await s.run("seq 1 100000")
        full = "".join(f"{i}\n" for i in range(1, 100001))
        assert r.stdout == clip_text(full, 50, hint=HINT, keep_tail=True)[0]

    async def test_invalid_utf8_is_replaced(self, root: Path) -> None:
        r = await make(root).run("printf 'a\\377b'")
        assert r.stdout == "a\ufffdb"


class TestEnvironment:
    async def test_secrets_absent_unless_inherited(
        self, root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("MY_API_KEY", "sk-123")
        monkeypatch.setenv("LC_ALL", "C.UTF-8")
        out = (await make(root).run("env")).stdout
        assert "MY_API_KEY" not in out and "LC_ALL=C.UTF-8" in out and f"PWD={root}" in out
        out = (await make(root, inherit_env=True).run("env")).stdout
        assert "MY_API_KEY=sk-123" in out

    def _venv(self, root: Path, name: str, *, interpreter: bool = True) -> Path:
        bin_dir = root / name / "bin"
        bin_dir.mkdir(parents=True)
        if interpreter:
            (bin_dir / "python").symlink_to(sys.executable)
        return root / name

    async def test_venv_activation(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("PYTHONHOME", "/nowhere")
        self._venv(root, "venv")
        dot = self._venv(root, ".venv")
        out = (await make(root).run("env")).stdout
        assert f"VIRTUAL_ENV={dot}" in out
        path = next(line for line in out.splitlines() if line.startswith("PATH="))[5:].split(":")
        # no workspace directory first: wrappers outside the root, the host's PATH, the venv
        assert path[-1] == f"{dot}/bin" and not path[0].startswith(str(root))
        assert "PYTHONHOME" not in out
        r = await make(root, env={"VIRTUAL_ENV": "/mine", "PATH": "/usr/bin:/bin"}).run("env")
        assert "VIRTUAL_ENV=/mine" in r.stdout and "PATH=/usr/bin:/bin\n" in r.stdout
        r = await make(root).run("env", env={"VIRTUAL_ENV": "/call"})
        assert "VIRTUAL_ENV=/call" in r.stdout

    async def test_interpreterless_venv_ignored(self, root: Path) -> None:
        self._venv(root, ".venv", interpreter=False)
        (root / ".venv" / "Scripts").mkdir()
        (root / ".venv" / "Scripts" / "python.exe").write_text("")
        assert "VIRTUAL_ENV" not in (await make(root).run("env")).stdout


class TestOutputListener:
    async def test_streams_chunks_with_call_id(self, root: Path) -> None:
        chunks: list[tuple[str | None, str, str]] = []
        s = make(root, output_listener=lambda cid, stream, text: chunks.append((cid, stream, text)))
        r = await s.run("echo one; sleep 0.2; echo two >&2; echo three", call_id="call_7")
        assert {c[0] for c in chunks} == {"call_7"}
        assert "".join(t for _, st, t in chunks if st == "stdout") == r.stdout == "one\nthree\n"
        assert "".join(t for _, st, t in chunks if st == "stderr") == r.stderr == "two\n"

    async def test_streams_before_the_command_ends(self, root: Path) -> None:
        got = asyncio.Event()
        s = make(root, output_listener=lambda cid, stream, text: got.set())
        task = asyncio.create_task(s.run("echo early; sleep 30"))
        await asyncio.wait_for(got.wait(), 10)
        assert not task.done()
        await s.close()
        await task

    async def test_call_id_from_context_and_broken_listener(self, root: Path) -> None:
        from lovia.messages import ToolCall
        from lovia.run_context import current_tool_call

        seen: list[str | None] = []

        def listener(cid: str | None, stream: str, text: str) -> None:
            seen.append(cid)
            raise RuntimeError("listener bug")

        s = make(root, output_listener=listener)
        token = current_tool_call.set(ToolCall("ctx_call", "shell", "{}"))
        try:
            r = await s.run("echo hi")
        finally:
            current_tool_call.reset(token)
        assert r.stdout == "hi\n" and seen == ["ctx_call"]

    async def test_background_output_is_streamed(self, root: Path) -> None:
        chunks: list[tuple[str | None, str, str]] = []
        s = make(root, output_listener=lambda *a: chunks.append(a))
        p = await s.spawn("echo bg; echo err >&2", call_id="c1")
        for _ in range(100):
            if "".join(c[2] for c in chunks).count("\n") >= 2:
                break
            await asyncio.sleep(0.02)
        assert {c[0] for c in chunks} == {"c1"} and {c[1] for c in chunks} == {"stdout"}
        assert "bg" in "".join(c[2] for c in chunks)
        await s.kill_process(p.process_id)
        await s.close()


class TestBackground:
    async def test_lifecycle(self, root: Path) -> None:
        s = make(root)
        p = await s.spawn("echo first; sleep 0.3; echo second")
        assert p.process_id.startswith("bg-") and len(p.process_id) == 9 and p.pid > 0
        assert [b.status for b in s.background_processes()] == ["running"]
        await asyncio.sleep(0.15)
        o = await s.read_process_output(p.process_id)
        assert o.status == "running" and o.output == "first\n"
        for _ in range(100):
            if s.background_processes()[0].status == "exited":
                break
            await asyncio.sleep(0.05)
        listed = s.background_processes()[0]
        assert (listed.status, listed.exit_code, listed.exit_seen) == ("exited", 0, False)
        o = await s.read_process_output(p.process_id)
        assert (o.status, o.exit_code, o.output) == ("exited", 0, "second\n")
        assert s.background_processes()[0].exit_seen
        o = await s.read_process_output(p.process_id)
        assert (o.status, o.output) == ("exited", "")
        k = await s.kill_process(p.process_id)
        assert (k.status, k.exit_code) == ("exited", 0)
        await s.close()

    async def test_kill_and_close(self, root: Path) -> None:
        s = make(root)
        p = await s.spawn("sleep 60 & echo $! > gc.pid; sleep 61")
        pid = int(await wait_for_file(root / "gc.pid"))
        k = await s.kill_process(p.process_id)
        assert (k.status, k.exit_code) == ("killed", -9)
        assert await wait_dead(pid, p.pid)
        assert (await s.kill_process(p.process_id)).status == "killed"
        assert s.background_processes()[0].exit_seen
        p2 = await s.spawn("sleep 60 & echo $! > gc2.pid; sleep 61")
        pid2 = int(await wait_for_file(root / "gc2.pid"))
        await s.close()
        assert await wait_dead(pid2, p2.pid)
        assert s.background_processes() == []

    async def test_cat_exits_zero_and_stderr_is_merged(self, root: Path) -> None:
        s = make(root)
        p = await s.spawn("cat; echo done >&2")
        for _ in range(100):
            o = await s.read_process_output(p.process_id)
            if o.status != "running":
                break
            await asyncio.sleep(0.02)
        assert o.exit_code == 0
        await s.close()

    async def test_unknown_ids(self, root: Path) -> None:
        s = make(root)
        with pytest.raises(WorkspaceError) as exc:
            await s.read_process_output("bg-nope")
        assert str(exc.value).startswith(
            "Unknown process id: 'bg-nope' — no background processes exist in this session."
        )
        assert "background=true" in str(exc.value)
        p = await s.spawn("sleep   30   # a   long   comment that goes on and on")
        with pytest.raises(WorkspaceError) as exc:
            await s.kill_process("bg-nope")
        assert exc.value.message == "Unknown process id: 'bg-nope'."
        assert (
            exc.value.hint
            == f"Known processes: {p.process_id} (running: sleep 30 # a long comment that goes on …)"
        )
        await s.close()

    async def test_tail_buffer_drops_oldest(self, root: Path) -> None:
        s = make(root, limits=WorkspaceLimits(max_shell_output_chars=10))
        p = await s.spawn("seq 1 100")
        for _ in range(100):
            if s.background_processes()[0].status == "exited":
                break
            await asyncio.sleep(0.02)
        o = await s.read_process_output(p.process_id)
        assert o.truncated and o.output == "\n98\n99\n100\n"[-10:]
        await s.close()

    async def test_executor_refuses_background(self, root: Path) -> None:
        class Exec:
            async def run(self, command: str, **kw: object) -> object:
                raise AssertionError

        s = make(root, executor=Exec(), policy=WorkspacePolicy.trusted(denied_paths=(".env",)))
        with pytest.raises(
            WorkspaceError,
            match="^Background execution is not supported with a custom shell executor.$",
        ):
            await s.spawn("cat .env")  # checked before the gate


def test_tail_buffer_unit() -> None:
    b = TailBuffer(10)
    b.append("abcde")
    assert b.take() == ("abcde", False)
    b.append("0123456789ABCDE")
    assert b.take() == ("56789ABCDE", True)
    assert b.take() == ("", False)


class TestCustomExecutor:
    async def test_executor_gets_context_and_output_is_clipped(self, root: Path) -> None:
        from lovia.workspace import CommandResult

        calls: list[dict[str, object]] = []

        class Exec:
            async def run(self, command: str, **kw: object) -> CommandResult:
                calls.append({"command": command, **kw})
                return CommandResult(exit_code=0, stdout="x" * 50, stderr="")

        s = make(root, executor=Exec(), limits=WorkspaceLimits(max_shell_output_chars=20))
        r = await s.run("echo hi", timeout=7)
        assert r.truncated and r.stdout == clip_text("x" * 50, 20, hint=HINT, keep_tail=True)[0]
        c = calls[0]
        assert (
            c["cwd"] == root and c["root"] == root and c["timeout"] == 7 and c["policy"] is s.policy
        )
        with pytest.raises(PermissionDeniedError):
            await s.run("cat .env")
        assert len(calls) == 1
        assert os.environ is not None
