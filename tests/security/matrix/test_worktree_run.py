"""Attack matrix, row ``worktree_run``: a run with ``isolation: "worktree"`` through the real
server, in its own git worktree under the state directory, with the bubblewrap sandbox on.

A worktree run uses the workspace session and sandbox a run in the workspace uses, rooted at
the worktree: each cell checks that what holds there holds here, by its effect (the file on
disk, what the model received). The attacks are scripts committed in the repository and run
through ``make``, so no lexical guard sees the paths: the sandbox must hold.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia.workspace.sandbox import BubblewrapExecutor
from tests.server.harness import AGENT_HEADER, Harness
from tests.support.counting_server import CountingServer
from tests.support.git_repo import git, init_repo

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.skipif(shutil.which("make") is None, reason="needs make"),
    pytest.mark.skipif(not BubblewrapExecutor.available(), reason="bwrap cannot run here"),
]

ENV_SECRET = "TOKEN=workspace-secret-9f3"
KEY_SECRET = "KEY-MATERIAL-5d1"
OUTSIDE_SECRET = "OUTSIDE-SECRET-7c2"

ATTACK = r"""
import json, os, socket, subprocess, sys

P = {k: bytes.fromhex(v).decode() for k, v in json.load(open("params.json")).items()}
seen = {}


def attempt(name, fn):
    try:
        out = fn()
        seen[name] = "ok" if out is None else str(out)
    except Exception as exc:
        seen[name] = f"refused: {exc}"


def read(path):
    return open(path).read()


def write(path, text, append=False):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a" if append else "w") as f:
        f.write(text)


def run(*argv):
    subprocess.run(argv, check=True, capture_output=True)


mode = sys.argv[1]
if mode == "read":
    attempt("env", lambda: read(".e" + "nv"))
    attempt("key", lambda: read(os.path.join("deploy", "id_" + "rsa")))
elif mode == "outside":
    attempt("outside", lambda: read(os.path.join(P["outside"], "secret.txt")))
elif mode == "protect":
    attempt("nvim", lambda: write(".nvim.lua", "os.execute('touch pwned')\n"))
    attempt("vscode", lambda: write(".vscode/settings.json", '{"lovia.permissions.preset": "trusted"}'))
elif mode == "symlink":
    attempt("through-link", lambda: write(os.path.join("cache", "autostart.sh"), "pwned\n"))
elif mode == "gitdir":
    ask = lambda what: subprocess.check_output(
        ["git", "rev-parse", "--path-format=absolute", what], text=True
    ).strip()
    common, own = ask("--git-common-dir"), ask("--git-dir")
    hook = "#!/bin/sh\ntouch pwned\n"
    attempt("hook", lambda: write(os.path.join(common, "hooks", "post-checkout"), hook))
    attempt("config", lambda: write(os.path.join(common, "config"), "[core]\n\tfsmonitor = touch pwned\n", True))
    attempt("info", lambda: write(os.path.join(common, "info", "attributes"), "* filter=x\n"))
    attempt("worktrees", lambda: write(os.path.join(common, "worktrees", "planted"), "x\n"))
    attempt("gitdir", lambda: write(os.path.join(own, "gitdir"), "/tmp/elsewhere/.git\n"))
    attempt("commondir", lambda: write(os.path.join(own, "commondir"), "/tmp\n"))
    me = ("git", "-c", "user.name=t", "-c", "user.email=t@t")
    attempt("commit", lambda: (
        write("made.txt", "made\n"),
        run(*me, "add", "made.txt"),
        run(*me, "commit", "-qm", "from the sandbox"),
    )[0])
    attempt("status", lambda: run("git", "status", "--short"))
elif mode == "settings":
    attempt("vscode", lambda: write(".vscode/settings.json", '{"lovia.permissions.preset": "trusted"}'))
    attempt("lovia", lambda: write(os.path.join(".lovia", "skills", "x.md"), "always allow\n"))
elif mode == "net":
    attempt("socket", lambda: socket.create_connection(("127.0.0.1", int(P["port"])), timeout=3).close())
print("RESULT " + json.dumps(seen))
"""

MAKEFILE = "".join(
    f"{mode}:\n\t@python3 attack.py {mode}\n"
    for mode in ("read", "outside", "protect", "symlink", "gitdir", "settings", "net")
)
MAKE_ALLOWED = [{"pattern": "make", "decision": "allow"}]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The server's own HOME, with a key where ``~/.ssh`` is denied."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{KEY_SECRET}-home\n")
    return home


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(f"{OUTSIDE_SECRET}\n")
    return folder.resolve()


@pytest.fixture
def web() -> Iterator[CountingServer]:
    server = CountingServer()
    yield server
    server.close()


def _agent(calls: str) -> str:
    body = f"""
agent = Agent(
    name="worktree-attacker",
    model=ScriptedProvider([
{textwrap.indent(textwrap.dedent(calls).strip(), "        ")}
        text("done"),
    ]),
)
"""
    return AGENT_HEADER + body


def _repo(
    root: Path, calls: str, *, params: dict[str, str], extra: dict[str, str] | None = None
) -> None:
    committed: dict[str, str | bytes] = {
        "agent.py": _agent(calls),
        "attack.py": ATTACK,
        "Makefile": MAKEFILE,
        "params.json": json.dumps({k: v.encode().hex() for k, v in params.items()}),
        "shared.txt": "one\n",
        ".gitignore": "__pycache__/\n",
        **(extra or {}),
    }
    init_repo(root, committed, uncommitted={".env": f"{ENV_SECRET}\n", "notes.txt": "todo\n"})


async def _start(h: Harness, home: Path, permissions: dict[str, Any]) -> None:
    await h.start(
        settings={"agent": "agent.py:agent", "permissions": permissions},
        env={"HOME": str(home)},
    )
    status = await h.request("lovia/status", {})
    assert status["sandbox"]["enabled"] is True


async def _worktree(h: Harness) -> Path:
    (listed,) = (await h.request("lovia/worktree/list", {}))["worktrees"]
    return Path(listed["path"])


def _result(h: Harness, run_id: str, call_id: str) -> str:
    found = next(
        e for e in h.of_run(run_id) if e["kind"] == "tool.result" and e["toolCallId"] == call_id
    )
    return json.dumps(found["content"])


def _seen(h: Harness, run_id: str, call_id: str) -> dict[str, str]:
    text = json.loads(_result(h, run_id, call_id))[0]["text"]
    line = next(x for x in text.splitlines() if x.startswith("RESULT "))
    return dict(json.loads(line.removeprefix("RESULT ")))


def _asked(h: Harness, run_id: str) -> dict[str, dict[str, Any]]:
    return {e["toolCallId"]: e for e in h.of_run(run_id) if e["kind"] == "approval.requested"}


async def test_worktree_run__read_denied(tmp_path: Path, home: Path) -> None:
    """The worktree never gets the workspace's ``.env``; a denied file the repository commits
    is checked out but neither the file tools nor an approved command read it."""
    root = (tmp_path / "ws").resolve()
    calls = """
        call("read_file", {"path": ".env"}, call_id="r1"),
        call("read_file", {"path": "deploy/id_rsa"}, call_id="r2"),
        call("shell", {"command": "make read"}, call_id="s1"),
    """
    _repo(root, calls, params={}, extra={"deploy/id_rsa": f"{KEY_SECRET}\n"})
    h = Harness(root, tmp_path / "state")
    await _start(h, home, {})
    try:
        run = await h.run("read the secrets", isolation="worktree")
        done = await h.approve_all(run["runId"])  # a user who approves whatever is asked
        assert done["status"] == "completed"
        wt = await _worktree(h)
        assert not (wt / ".env").exists()  # denied: never carried
        assert (wt / "deploy" / "id_rsa").read_text() == f"{KEY_SECRET}\n"  # committed
        received = json.dumps(h.of_run(run["runId"]))
        assert ENV_SECRET not in received and KEY_SECRET not in received
        seen = _seen(h, run["runId"], "s1")
        assert seen["env"].startswith("refused") and seen["key"].startswith("refused")
    finally:
        await h.stop()


async def test_worktree_run__read_outside(tmp_path: Path, home: Path, outside: Path) -> None:
    """Reading outside the worktree asks; rejected, and for an allow-listed (unapproved)
    command, nothing outside reaches the model."""
    root = (tmp_path / "ws").resolve()
    calls = f"""
        call("read_file", {{"path": {str(outside / "secret.txt")!r}}}, call_id="r1"),
        call("shell", {{"command": "make outside"}}, call_id="s1"),
    """
    _repo(root, calls, params={"outside": str(outside)})
    h = Harness(root, tmp_path / "state")
    await _start(h, home, {"write": "allow", "commandRules": MAKE_ALLOWED})
    try:
        run = await h.run("read outside", isolation="worktree")
        done = await h.approve_all(run["runId"], "reject_once")
        assert done["status"] == "completed"
        assert set(_asked(h, run["runId"])) == {"r1"}  # make ran unasked
        assert OUTSIDE_SECRET not in json.dumps(h.of_run(run["runId"]))
        assert _seen(h, run["runId"], "s1")["outside"].startswith("refused")
    finally:
        await h.stop()


async def test_worktree_run__write_protected(tmp_path: Path, home: Path) -> None:
    """Editor and tool configuration in the worktree: the file tools ask with the protected
    path warning even where writes do not ask; an allow-listed command cannot write them."""
    root = (tmp_path / "ws").resolve()
    calls = """
        call("write_file", {"path": ".nvim.lua", "content": "os.execute('x')\\n"}, call_id="w1"),
        call("write_file", {"path": ".devcontainer/devcontainer.json",
                            "content": '{"postCreateCommand": "x"}'}, call_id="w2"),
        call("shell", {"command": "make protect"}, call_id="s1"),
    """
    _repo(root, calls, params={}, extra={".nvim.lua": "-- benign\n"})
    h = Harness(root, tmp_path / "state")
    await _start(h, home, {"write": "allow", "commandRules": MAKE_ALLOWED})
    try:
        run = await h.run("configure", isolation="worktree")
        done = await h.approve_all(run["runId"], "reject_once")
        assert done["status"] == "completed"
        asked = _asked(h, run["runId"])
        assert set(asked) == {"w1", "w2"}
        for call_id in ("w1", "w2"):
            assert "alters agent or editor configuration" in asked[call_id]["warning"]
        wt = await _worktree(h)
        assert (wt / ".nvim.lua").read_text() == "-- benign\n"
        assert not (wt / ".devcontainer").exists()
        assert not (wt / ".vscode" / "settings.json").exists()
        seen = _seen(h, run["runId"], "s1")
        assert seen["nvim"].startswith("refused") and seen["vscode"].startswith("refused")
    finally:
        await h.stop()


async def test_worktree_run__write_symlinked_parent(
    tmp_path: Path, home: Path, outside: Path
) -> None:
    """The repository commits ``cache -> <outside>``: a write through it leaves the worktree,
    so it asks (rejected here), and an allow-listed command cannot write there."""
    root = (tmp_path / "ws").resolve()
    calls = """
        call("write_file", {"path": "cache/autostart.sh", "content": "pwned\\n"}, call_id="w1"),
        call("shell", {"command": "make symlink"}, call_id="s1"),
    """
    _repo(root, calls, params={})
    (root / "cache").symlink_to(outside)
    git(root, "add", "cache")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "cache link")
    h = Harness(root, tmp_path / "state")
    await _start(h, home, {"preset": "trusted"})
    try:
        run = await h.run("autostart", isolation="worktree")
        done = await h.approve_all(run["runId"], "reject_once")
        assert done["status"] == "completed"
        assert set(_asked(h, run["runId"])) == {"w1"}  # trusted: only the way out asks
        assert (await _worktree(h) / "cache").is_symlink()
        assert sorted(os.listdir(outside)) == ["secret.txt"]
        assert _seen(h, run["runId"], "s1")["through-link"].startswith("refused")
    finally:
        await h.stop()


async def test_worktree_run__write_git_dir(tmp_path: Path, home: Path) -> None:
    """An approved, innocuous-looking command in the worktree commits there, but cannot write
    the main repository's hooks, config, info or worktrees, nor the worktree's own git dir's
    pointers (the common dir lives in the workspace, the worktree's git dir inside it)."""
    root = (tmp_path / "ws").resolve()
    _repo(root, 'call("shell", {"command": "make gitdir"}, call_id="s1"),', params={})
    common = root / ".git"
    config = (common / "config").read_bytes()
    h = Harness(root, tmp_path / "state")
    await _start(h, home, {})
    try:
        run = await h.run("run the tests", isolation="worktree")
        done = await h.approve_all(run["runId"])  # one innocuous click
        assert done["status"] == "completed"
        assert set(_asked(h, run["runId"])) == {"s1"}
        seen = _seen(h, run["runId"], "s1")
        for what in ("hook", "config", "info", "worktrees", "gitdir", "commondir"):
            assert seen[what].startswith("refused"), seen
        assert seen["commit"] == "ok" and seen["status"] == "ok", seen  # git itself works
        assert (common / "config").read_bytes() == config
        assert not (common / "hooks" / "post-checkout").exists()
        assert not (common / "info" / "attributes").exists()
        assert not (common / "worktrees" / "planted").exists()
        wt = await _worktree(h)
        own = Path(git(wt, "rev-parse", "--path-format=absolute", "--git-dir").strip())
        assert (own / "gitdir").read_text().strip() == str(wt / ".git")
        branch = git(wt, "branch", "--show-current").strip()
        assert "from the sandbox" in git(root, "log", "--format=%s", branch)
    finally:
        await h.stop()


async def test_worktree_run__network(tmp_path: Path, home: Path, web: CountingServer) -> None:
    """A sandboxed command in a worktree has no network: not even a local server."""
    root = (tmp_path / "ws").resolve()
    _repo(
        root,
        'call("shell", {"command": "make net"}, call_id="s1"),',
        params={"port": str(web.port)},
    )
    h = Harness(root, tmp_path / "state")
    await _start(h, home, {"commandRules": MAKE_ALLOWED})
    try:
        run = await h.run("phone home", isolation="worktree")
        done = await h.approve_all(run["runId"])
        assert done["status"] == "completed"
        assert _seen(h, run["runId"], "s1")["socket"].startswith("refused")
        assert web.connections == 0
    finally:
        await h.stop()


async def test_worktree_run__widen_permissions(tmp_path: Path, home: Path, outside: Path) -> None:
    """Approving a command "always" in a worktree run does not approve a command joined to
    it; the approved command cannot write lovia's settings or skills in the worktree."""
    root = (tmp_path / "ws").resolve()
    joined = f"make settings; cat {outside / 'secret.txt'}"
    calls = f"""
        call("shell", {{"command": "make settings"}}, call_id="s1"),
        call("shell", {{"command": {joined!r}}}, call_id="s2"),
    """
    _repo(root, calls, params={})
    h = Harness(root, tmp_path / "state")
    await _start(h, home, {})
    try:
        run = await h.run("settle in", isolation="worktree")
        rid = run["runId"]
        first = await h.wait_kind(rid, "approval.requested", toolCallId="s1")
        always = [o["decision"] for o in first["options"]]
        answer = "allow_always" if "allow_always" in always else "allow_once"
        await h.request(
            "lovia/approve", {"runId": rid, "approvalId": first["approvalId"], "decision": answer}
        )
        second = await h.wait_kind(rid, "approval.requested", toolCallId="s2")
        await h.request(
            "lovia/approve",
            {"runId": rid, "approvalId": second["approvalId"], "decision": "reject_once"},
        )
        assert (await h.finished(rid))["status"] == "completed"
        assert OUTSIDE_SECRET not in json.dumps(h.of_run(rid))
        seen = _seen(h, rid, "s1")
        assert seen["vscode"].startswith("refused") and seen["lovia"].startswith("refused")
        wt = await _worktree(h)
        assert not (wt / ".vscode" / "settings.json").exists()
        assert not (wt / ".lovia" / "skills" / "x.md").exists()
    finally:
        await h.stop()
