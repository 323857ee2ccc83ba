"""BubblewrapExecutor: the OS sandbox enforces what the lexical guard cannot see."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from lovia.workspace import (
    LocalWorkspaceSession,
    PathRule,
    Workspace,
    WorkspaceLimits,
    WorkspacePolicy,
)
from lovia.workspace.sandbox import BubblewrapExecutor

pytestmark = pytest.mark.skipif(
    not BubblewrapExecutor.available(), reason="bwrap cannot create namespaces on this machine"
)

REAL_PYTHON = os.path.realpath(sys.executable)


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


SNEAKY_READ = "python3 -c \"import sys; sys.stdout.write(open('.e' + 'nv').read())\""


@pytest.fixture
def tree(root: Path) -> Path:
    (root / ".env").write_text("TOKEN=supersecret\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "key.pem").write_text("PRIVATE KEY\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hello')\n")
    return root


def sandboxed(root: Path, policy: WorkspacePolicy, **kw: object) -> LocalWorkspaceSession:
    return LocalWorkspaceSession(root, policy=policy, executor=BubblewrapExecutor(), **kw)  # type: ignore[arg-type]


async def raw(root: Path, policy: WorkspacePolicy, command: str) -> str:
    """Run through the executor directly, as if the lexical guard had missed the command."""
    r = await BubblewrapExecutor().run(
        command,
        cwd=root,
        env={"PATH": os.environ["PATH"], "HOME": "/root"},
        timeout=30,
        policy=policy,
        root=root,
    )
    return r.stdout + r.stderr


def trusted() -> WorkspacePolicy:
    return WorkspacePolicy.trusted(denied_paths=(".env", "secrets"))


class TestDeniedPathsAreMasked:
    async def test_guard_allows_but_the_sandbox_blocks(self, tree: Path) -> None:
        s = sandboxed(tree, trusted())
        assert s.decide_command(SNEAKY_READ) == "allow"  # the lexical guard cannot see it
        r = await s.run(SNEAKY_READ)
        assert "supersecret" not in r.stdout + r.stderr
        assert r.exit_code != 0

    async def test_unsandboxed_control_shows_the_gap(self, tree: Path) -> None:
        s = LocalWorkspaceSession(tree, policy=trusted())
        assert "supersecret" in (await s.run(SNEAKY_READ)).stdout

    async def test_indirect_reads_and_dirs(self, tree: Path) -> None:
        s = sandboxed(tree, trusted())
        r = await s.run("cat $(printf '.e%s' nv)")  # 'ask' is assumed approved at this layer
        assert "supersecret" not in r.stdout
        for command in ("cat secrets/key.pem", "cat .e*", "grep -r KEY .", "cat .env"):
            out = await raw(tree, trusted(), command)
            assert "supersecret" not in out and "PRIVATE" not in out, command
        assert (await raw(tree, trusted(), "ls -A secrets | wc -l")).strip() == "0"
        await raw(tree, trusted(), "echo pwned > .env; echo pwned > secrets/new")
        assert (tree / ".env").read_text() == "TOKEN=supersecret\n"
        assert not (tree / "secrets" / "new").exists()

    async def test_aliases_symlink_and_hard_link(self, tree: Path, outside: Path) -> None:
        (tree / "ln_sym").symlink_to(outside / "secret.txt")
        (outside / "creds").write_text("hardlinked secret\n")
        os.link(outside / "creds", tree / "innocent.txt")
        policy = WorkspacePolicy.trusted(
            denied_paths=(str(outside / "secret.txt"), str(outside / "creds"))
        )
        out = await raw(tree, policy, "cat ln_sym innocent.txt")
        assert "outside secret" not in out and "hardlinked" not in out

    async def test_write_only_deny_rule_is_read_only(self, tree: Path) -> None:
        policy = WorkspacePolicy.trusted(path_rules=(PathRule("src", "deny", ops={"write"}),))
        out = await raw(tree, policy, "cat src/main.py; echo x >> src/main.py")
        assert "hello" in out and "Read-only" in out
        assert (tree / "src" / "main.py").read_text() == "print('hello')\n"


class TestScopes:
    async def test_root_is_writable_under_coding(self, tree: Path) -> None:
        s = sandboxed(tree, WorkspacePolicy.coding())
        r = await s.run("echo made > made.txt && cat made.txt")
        assert r.stdout == "made\n" and (tree / "made.txt").read_text() == "made\n"

    async def test_outside_hidden_when_reads_outside_denied(
        self, tree: Path, outside: Path
    ) -> None:
        command = (
            f"cat {outside}/secret.txt; ls -A ~ | grep -vx -e .gitconfig -e .config | wc -l; "
            "ls -A ~/.config 2>/dev/null | grep -vx git | wc -l; "
            "echo x > /tmp/scratch; cat /tmp/scratch"
        )  # the home is empty but for git's own settings (the user's identity)
        out = await raw(tree, WorkspacePolicy(), command)
        assert "outside secret" not in out
        assert "0\n0\nx\n" in out
        assert _read_or_none(Path("/tmp/scratch")) != "x\n"

    async def test_ask_scopes_open_only_for_approved_commands(
        self, tree: Path, outside: Path
    ) -> None:
        from lovia.workspace import CommandRule

        # reads outside: ask. python3 is allowed without approval, and this one reads a
        # path the guard cannot see (it comes from the environment).
        policy = WorkspacePolicy.coding(command_rules=(CommandRule("python3", "allow"),))
        sneaky = "python3 -c \"print(open(__import__('os').environ['X']).read())\""
        s = sandboxed(tree, policy, env={"X": str(outside / "secret.txt")})
        assert s.decide_command(sneaky) == "allow"
        r = await s.run(sneaky)
        assert "outside secret" not in r.stdout  # ran without approval: outside hidden
        argv = BubblewrapExecutor().wrap_argv(
            "true", cwd=tree, env={}, policy=policy, root=tree, approved=False
        )
        assert "/" not in [argv[i + 1] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind")]
        r = await s.run(f"cat {outside}/secret.txt")  # decision ask → approved → visible
        assert r.stdout == "outside secret\n"

    async def test_outside_read_only_unless_approved(self, tree: Path, outside: Path) -> None:
        policy = trusted()  # reads outside allow, writes outside ask
        sneaky = "python3 -c \"open(__import__('os').environ['X'], 'w').write('x')\""
        s = sandboxed(tree, policy, env={"X": str(outside / "new.txt")})
        assert s.decide_command(sneaky) == "allow"
        r = await s.run(f"cat {outside}/secret.txt")
        assert r.stdout == "outside secret\n"
        r = await s.run(sneaky)
        assert r.exit_code != 0 and not (outside / "new.txt").exists()  # read-only outside
        await s.run(f"echo x > {outside}/new2.txt")  # 'ask' → approved → writable
        assert (outside / "new2.txt").exists()

    async def test_outside_writable_only_when_allowed(self, tree: Path, outside: Path) -> None:
        policy = WorkspacePolicy(read_outside="allow", write_outside="allow")
        s = sandboxed(tree, policy)
        await s.run(f"echo x > {outside}/new.txt")
        assert (outside / "new.txt").read_text() == "x\n"

    async def test_write_ask_needs_an_approved_command(self, tree: Path) -> None:
        policy = WorkspacePolicy(write="ask", read_outside="allow", shell_default="allow")
        s = sandboxed(tree, policy)
        sneaky = "python3 -c \"open(chr(119) + chr(46) + 'txt', 'w').write('x')\""
        assert s.decide_command(sneaky) == "allow"
        await s.run(sneaky)
        assert not (tree / "w.txt").exists()
        assert s.decide_command("echo x > w2.txt") == "ask"
        await s.run("echo x > w2.txt")
        assert (tree / "w2.txt").exists()

    async def test_no_network_and_own_pid_namespace(self, tree: Path) -> None:
        s = sandboxed(tree, WorkspacePolicy.coding())
        code = (
            "import socket\n"
            "try:\n"
            "    socket.create_connection(('1.1.1.1', 53), timeout=2); print('online')\n"
            "except OSError:\n"
            "    print('offline')\n"
        )
        (tree / "net.py").write_text(code)
        assert (await s.run("python3 net.py")).stdout.strip() == "offline"
        r = await s.run("echo $$")
        assert int(r.stdout) < 10

    async def test_venv_interpreter_outside_system_dirs_is_visible(self, tree: Path) -> None:
        (tree / ".venv" / "bin").mkdir(parents=True)
        (tree / ".venv" / "bin" / "python").symlink_to(REAL_PYTHON)
        r = await sandboxed(tree, WorkspacePolicy.coding()).run("python -c 'print(40 + 2)'")
        assert r.stdout.strip() == "42", r.stderr


class TestProcessControl:
    async def test_timeout(self, tree: Path) -> None:
        r = await sandboxed(tree, WorkspacePolicy.coding()).run("sleep 30", timeout=1)
        assert r.timed_out and r.stderr == "[timeout after 1s]"

    async def test_close_kills_the_sandbox(self, tree: Path) -> None:
        s = sandboxed(tree, WorkspacePolicy.coding())
        task = asyncio.create_task(s.run("echo started > started.txt; sleep 60"))
        for _ in range(200):
            if (tree / "started.txt").exists():
                break
            await asyncio.sleep(0.02)
        await s.close()
        r = await asyncio.wait_for(task, 10)
        assert not r.ok

    async def test_output_streams_and_clips(self, tree: Path) -> None:
        chunks: list[str] = []
        s = sandboxed(
            tree,
            WorkspacePolicy.coding(),
            limits=WorkspaceLimits(max_shell_output_chars=40),
            output_listener=lambda cid, st, t: chunks.append(t),
        )
        r = await s.run("seq 1 100")
        assert r.truncated and "[... truncated: showing 40 of 292 chars." in r.stdout
        assert "".join(chunks) == "".join(f"{i}\n" for i in range(1, 101))

    async def test_background_processes_run_sandboxed(self, tree: Path) -> None:
        s = sandboxed(tree, trusted())
        p = await s.spawn(SNEAKY_READ + "; echo done")
        for _ in range(200):
            o = await s.read_process_output(p.process_id)
            if o.status != "running" or "done" in o.output:
                break
            await asyncio.sleep(0.05)
        assert "supersecret" not in o.output
        await s.close()

    async def test_factory_opt_in(self, tree: Path) -> None:
        ws = Workspace.local(str(tree), mode="trusted", denied_paths=(".env",), sandbox=True)
        assert isinstance(ws.executor, BubblewrapExecutor)
        assert "sandbox" in ws.instructions()
        s = await ws.open()
        assert "supersecret" not in (await s.run(SNEAKY_READ)).stdout
        await s.close()


def _git_repo(root: Path) -> None:
    import subprocess

    env = {"PATH": os.environ["PATH"], "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ["init", "-q"],
        ["-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "one"],
    ):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


# runs the code in $C: the guard sees no path, so only the sandbox can stop it
HIDDEN_CODE = 'python3 -c "exec(__import__(chr(111)+chr(115)).environ[chr(67)])"'


class TestServerScopes:
    """The options the language server uses: a command that may run may write inside the
    root; protected paths stay read-only unless the command was approved."""

    def review_first(self, *rules: str) -> WorkspacePolicy:
        from lovia.workspace import CommandRule

        return WorkspacePolicy(
            write="ask",
            read_outside="ask",
            denied_paths=(".env", "secrets"),
            command_rules=tuple(CommandRule(r, "allow") for r in rules),
        )

    async def test_root_writable_lets_an_allowed_command_write_inside_only(
        self, tree: Path, outside: Path
    ) -> None:
        policy = self.review_first("python3")
        sneaky = HIDDEN_CODE
        code = "import os\nopen('made.txt', 'w').write('x')\nopen(os.environ['X'], 'w').write('x')"
        env = {"X": str(outside / "new.txt"), "C": code}
        plain = LocalWorkspaceSession(tree, policy=policy, executor=BubblewrapExecutor(), env=env)
        assert plain.decide_command(sneaky) == "allow"
        await plain.run(sneaky)
        assert not (tree / "made.txt").exists()  # the old scope: read-only root
        executor = BubblewrapExecutor(root_writable=True)
        s = LocalWorkspaceSession(tree, policy=policy, executor=executor, env=env)
        r = await s.run(sneaky)
        assert (tree / "made.txt").read_text() == "x"
        assert r.exit_code != 0 and not (outside / "new.txt").exists()
        assert "supersecret" not in (await s.run(SNEAKY_READ)).stdout  # masks still hold
        deny_all = WorkspacePolicy(write="deny", shell_default="allow")
        s = LocalWorkspaceSession(tree, policy=deny_all, executor=executor, env={"C": code})
        (tree / "made.txt").unlink()
        await s.run(HIDDEN_CODE)
        assert not (tree / "made.txt").exists()  # write=deny still closes the root

    @pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
    async def test_git_works_but_what_runs_code_stays_read_only_unless_named(
        self, tree: Path
    ) -> None:
        _git_repo(tree)
        executor = BubblewrapExecutor(root_writable=True, protected_paths=(".git", "**/.git/**"))
        policy = self.review_first("git status", "git log", "git commit", "python3")
        env = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e"}
        env |= {"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@e"}
        env["C"] = (
            "import pathlib\n"
            "for p in ('.git/hooks/pre-commit', '.git/config', '.git/info/attributes'):\n"
            "    try:\n"
            "        pathlib.Path(p).write_text('evil')\n"
            "    except OSError as e:\n"
            "        print('blocked', p)\n"
        )
        config = (tree / ".git" / "config").read_text()
        s = LocalWorkspaceSession(tree, policy=policy, executor=executor, env=env)
        status = await s.run("git status --short")
        log = await s.run("git log --oneline")
        assert status.exit_code == 0 and "src/" in status.stdout
        assert log.exit_code == 0 and "one" in log.stdout
        assert s.decide_command("git commit --allow-empty -m two") == "allow"
        r = await s.run("git commit --allow-empty -m two")  # allow-listed: ran unasked
        assert r.exit_code == 0, r.stdout + r.stderr  # git writes objects and refs
        assert s.decide_command(HIDDEN_CODE) == "allow"
        out = (await s.run(HIDDEN_CODE)).stdout
        assert out.count("blocked") == 3, out
        assert not (tree / ".git" / "hooks" / "pre-commit").exists()
        assert (tree / ".git" / "config").read_text() == config
        # approved, but naming no protected path: still read-only where code could be planted
        approved = LocalWorkspaceSession(
            tree, policy=self.review_first("git status"), executor=executor, env=env
        )
        assert approved.decide_command(HIDDEN_CODE) == "ask"
        assert (await approved.run(HIDDEN_CODE)).stdout.count("blocked") == 3
        # approved and named on its card: that path opens for this command
        change = "git config core.hooksPath .githooks"
        assert approved.decide_command(change) == "ask"
        r = await approved.run(change)
        assert r.exit_code == 0, r.stderr
        assert "hooksPath = .githooks" in (tree / ".git" / "config").read_text()
        r = await approved.run("git commit --allow-empty -m three")
        assert r.exit_code == 0, r.stderr
        assert "three" in (await approved.run("git log --oneline")).stdout

    async def test_protected_dirs_keep_their_denied_files_masked(self, tree: Path) -> None:
        (tree / ".vscode").mkdir()
        (tree / ".vscode" / "settings.json").write_text("{}")
        (tree / ".vscode" / ".env").write_text("TOKEN=nested\n")
        executor = BubblewrapExecutor(root_writable=True, protected_paths=(".vscode/**",))
        policy = WorkspacePolicy(
            write="ask", shell_default="allow", denied_paths=(".env",), read_outside="ask"
        )
        out = await executor.run(
            "cat .vscode/settings.json; cat .vscode/.env; echo '{\"x\":1}' > .vscode/settings.json",
            cwd=tree,
            env={"PATH": os.environ["PATH"]},
            timeout=30,
            policy=policy,
            root=tree,
        )
        assert out.stdout.startswith("{}") and "nested" not in out.stdout
        assert (tree / ".vscode" / "settings.json").read_text() == "{}"

    async def test_unix_sockets_outside_are_masked_when_the_outside_is_visible(
        self, tree: Path
    ) -> None:
        import socket
        import tempfile

        with tempfile.TemporaryDirectory(dir="/tmp") as d:
            path = os.path.join(d, "agent.sock")
            server = socket.socket(socket.AF_UNIX)
            server.bind(path)
            server.listen(1)
            server.setblocking(False)
            probe = (
                'python3 -c "import socket, os; s = socket.socket(socket.AF_UNIX); '
                "s.connect(os.environ['S']); print('connected')\""
            )
            s = sandboxed(tree, trusted(), env={"S": path})
            r = await s.run(probe)
            ls_run = await s.run("ls -A /run | wc -l")
            await s.close()
            with pytest.raises(BlockingIOError):
                server.accept()
            server.close()
        assert "connected" not in r.stdout and r.exit_code != 0
        assert ls_run.stdout.strip() == "0"  # /run (buses, docker.sock) is a private tmpfs

    async def test_a_masked_path_gone_before_the_command_starts_is_skipped(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Another program removes its socket from /tmp between the scan and bwrap's start."""
        import tempfile

        from lovia.workspace import sandbox as sb

        real = BubblewrapExecutor._mask_plan
        with tempfile.TemporaryDirectory(dir="/tmp") as d:
            gone = os.path.join(d, "agent.sock")
        planned: list[str] = []

        def stale(self: BubblewrapExecutor, *args: object, **kwargs: object) -> sb._MaskPlan:
            found = real(self, *args, **kwargs)  # type: ignore[arg-type]
            planned.append(gone)
            return sb._MaskPlan([*found.masks, sb._Mask(gone, is_dir=False)], found.hide_tmp)

        monkeypatch.setattr(BubblewrapExecutor, "_mask_plan", stale)
        executor = BubblewrapExecutor()
        out = await executor.run(
            "echo ran",
            cwd=tree,
            env={"PATH": os.environ["PATH"]},
            timeout=30,
            policy=trusted(),
            root=tree,
        )
        assert out.exit_code == 0, out.stderr
        assert out.stdout == "ran\n" and planned == [gone]

    async def test_other_folders_opened_by_rules_are_bound(self, tree: Path, outside: Path) -> None:
        policy = WorkspacePolicy(
            write="allow",
            shell_default="allow",
            path_rules=(PathRule(str(outside), "allow"),),
        )
        s = sandboxed(tree, policy)
        r = await s.run(f"cat {outside}/secret.txt && echo more > {outside}/more.txt")
        await s.close()
        assert r.stdout == "outside secret\n" and (outside / "more.txt").read_text() == "more\n"

    def test_the_prompt_says_what_the_sandbox_enforces(self, tree: Path) -> None:
        gated = Workspace.local(
            str(tree), executor=BubblewrapExecutor(allowed_domains=("pypi.org",))
        )
        text = gated.instructions()
        assert "They run inside a sandbox" in text and "to pypi.org" in text
        assert "sandbox" not in Workspace.local(str(tree)).instructions()


class TestScanCache:
    """The mask walk reuses what it found in directories that did not change."""

    def age(self, root: Path) -> None:
        old = 1_000_000_000  # 2001: well before any scan
        for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
            os.utime(d, ns=(old, old))

    def test_unchanged_directories_are_not_walked_again(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from lovia.workspace import sandbox_scan as sb

        calls: list[str] = []
        real = sb._scan_dir

        def counting(
            d: str, mtime_ns: int, classify: sb.Classify, may_hit: sb.MayHit | None = None
        ) -> object:
            calls.append(d)
            return real(d, mtime_ns, classify, may_hit)

        monkeypatch.setattr(sb, "_scan_dir", counting)
        (tree / "deep" / "er").mkdir(parents=True)
        self.age(tree)
        policy = WorkspacePolicy.coding(denied_paths=(".env", "*.key"))
        cache = sb.ScanCache()
        executor = BubblewrapExecutor()

        def masked() -> set[str]:
            masks = executor.masks(policy, tree, scan_cache=cache, approved=False)
            return {m.path for m in masks if not m.read_only_only}

        assert masked() == {str(tree / ".env")}
        first = len(calls)
        assert first >= 4
        assert masked() == {str(tree / ".env")} and len(calls) == first  # all reused
        (tree / "deep" / "er" / "new.key").write_text("k")  # changes er's mtime
        assert masked() == {str(tree / ".env"), str(tree / "deep" / "er" / "new.key")}
        assert calls[first:] == [str(tree / "deep" / "er")]

    def test_a_directory_changed_just_before_its_scan_is_scanned_again(self, tree: Path) -> None:
        from lovia.workspace import sandbox as sb

        policy = WorkspacePolicy.coding(denied_paths=("*.key",))
        cache = sb.ScanCache()
        executor = BubblewrapExecutor()
        assert executor.masks(policy, tree, scan_cache=cache) == []
        now = os.stat(tree).st_mtime_ns
        (tree / "late.key").write_text("k")
        os.utime(tree, ns=(now, now))  # same timestamp tick: the mtime did not move
        assert [m.path for m in executor.masks(policy, tree, scan_cache=cache)] == [
            str(tree / "late.key")
        ]

    def test_folders_removed_since_the_last_walk_are_forgotten(self, tmp_path: Path) -> None:
        """A long day creates and removes folders (checkouts, build dirs under /tmp): the
        cache holds the tree as it is now, not every folder it ever saw."""
        import shutil

        from lovia.workspace import sandbox as sb

        top = tmp_path / "t"
        (top / "keep").mkdir(parents=True)
        self.age(top)
        cache = sb.ScanCache()

        def walk() -> int:
            cache.scan(
                "k",
                str(top),
                lambda p, n, st: None,
                lambda p, h: None,
                lambda p: False,
                budget=10_000,
            )
            return cache.held()

        assert walk() == 2
        for day in range(5):
            build = top / f"build{day}"
            for i in range(20):
                (build / f"d{i}").mkdir(parents=True)
            assert walk() == 2 + 21
            shutil.rmtree(build)
            assert walk() == 2

    def test_tops_walked_under_one_key_keep_their_folders(self, tmp_path: Path) -> None:
        """The root and the extra folders a rule opens are walked under one key."""
        from lovia.workspace import sandbox as sb

        tops = [tmp_path / "root", tmp_path / "extra"]
        for top in tops:
            (top / "a" / "b").mkdir(parents=True)
        self.age(tmp_path)
        cache = sb.ScanCache()
        for _ in range(2):
            for top in tops:
                cache.scan(
                    "k",
                    str(top),
                    lambda p, n, st: None,
                    lambda p, h: None,
                    lambda p: False,
                    budget=10_000,
                )
            assert cache.held() == 6  # both trees, after each round

    def test_shallow_sockets_are_found_before_deep_trees_use_up_the_budget(
        self, tmp_path: Path
    ) -> None:
        """/tmp holds deep trees (other checkouts) beside shallow sockets (ssh-agent, tmux)."""
        import socket
        import stat as st_mod

        from lovia.workspace import sandbox as sb

        top = tmp_path / "t"
        for i in range(12):
            deep = top / f"checkout{i}" / "a" / "b"
            deep.mkdir(parents=True)
            for j in range(30):
                (deep / f"f{j}").write_text("x")
        agent = top / "zz-agent"
        agent.mkdir()
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(agent / "s"))
        hits: list[str] = []

        def classify(path: str, name: str, st: os.stat_result) -> tuple[str, sb.Hit] | None:
            return (path, "deny") if st_mod.S_ISSOCK(st.st_mode) else None

        try:
            sb.ScanCache().scan(
                "k", str(top), classify, lambda p, h: hits.append(p), lambda p: False, budget=60
            )
        finally:
            sock.close()
        assert hits == [str(agent / "s")]


async def test_read_only_mounts_never_reveal_what_the_scope_hides(
    tree: Path, tmp_path: Path
) -> None:
    """``~/.config`` is protected (read-only); when reads outside are closed it stays hidden."""
    home = tmp_path / "home"
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: gho_secret\n")
    policy = WorkspacePolicy(
        write="ask", read_outside="ask", shell_default="allow", protected_paths=("~/.config",)
    )
    executor = BubblewrapExecutor(root_writable=True)
    code = "import os\nprint(open(os.path.expanduser('~/.config/gh/hosts.yml')).read())"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "C": code}
    os.environ["HOME"], old = str(home), os.environ["HOME"]  # ~ in patterns is this HOME
    try:
        from lovia.workspace.command_guard import decide_command as decide
        from lovia.workspace.patterns import _canonical_abs_pattern

        _canonical_abs_pattern.cache_clear()
        assert decide(policy, tree, HIDDEN_CODE) == "allow"  # runs unasked: outside hidden
        r = await executor.run(HIDDEN_CODE, cwd=tree, env=env, timeout=30, policy=policy, root=tree)
    finally:
        os.environ["HOME"] = old
        _canonical_abs_pattern.cache_clear()
    assert "gho_secret" not in r.stdout and r.exit_code != 0


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
async def test_a_git_worktree_sees_its_git_dir_read_only_unless_approved(
    tmp_path: Path,
) -> None:
    """A worktree's ``.git`` is a file pointing outside the root; git still works inside."""
    import subprocess

    main, wt = tmp_path / "main", tmp_path / "wt"
    main.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (
        ["init", "-q"],
        ["commit", "-q", "--allow-empty", "-m", "one"],
        ["worktree", "add", "-q", str(wt)],
    ):
        subprocess.run(["git", *args], cwd=main, env=env, check=True, capture_output=True)  # noqa: ASYNC221
    from lovia.workspace import CommandRule

    policy = WorkspacePolicy(
        write="ask",
        read_outside="ask",
        command_rules=(CommandRule("git log", "allow"), CommandRule("python3", "allow")),
    )
    # a script the agent wrote commits behind the guard's back
    env["C"] = "import subprocess\nsubprocess.run(['git', 'commit', '-qm', 'x', '--allow-empty'])"
    s = LocalWorkspaceSession(
        wt.resolve(), policy=policy, executor=BubblewrapExecutor(root_writable=True), env=env
    )
    log = await s.run("git log --oneline")
    assert s.decide_command(HIDDEN_CODE) == "allow"
    unasked = await s.run(HIDDEN_CODE)
    assert s.decide_command("git commit -qm y --allow-empty") == "ask"
    approved = await s.run("git commit -qm y --allow-empty")
    await s.close()
    assert log.exit_code == 0 and "one" in log.stdout
    assert "Read-only" in unasked.stderr
    assert approved.exit_code == 0, approved.stderr
    history = subprocess.run(  # noqa: ASYNC221
        ["git", "log", "--format=%s"], cwd=main, env=env, capture_output=True, text=True
    )
    assert history.stdout.split() == ["one"]  # the worktree's branch got y, not x
    branch = subprocess.run(  # noqa: ASYNC221
        ["git", "log", "--format=%s", "wt"], cwd=main, env=env, capture_output=True, text=True
    )
    assert branch.stdout.split() == ["y", "one"]


def test_a_planted_git_file_does_not_open_other_folders(tree: Path, outside: Path) -> None:
    from lovia.workspace.sandbox import _external_git_dirs

    (outside / "HEAD").write_text("ref: refs/heads/main\n")
    (outside / "commondir").write_text(".\n")
    (tree / ".git").write_text(f"gitdir: {outside}\n")
    assert _external_git_dirs(tree) == []  # outside does not name this root back
    (outside / "gitdir").write_text(f"{tree / '.git'}\n")
    assert _external_git_dirs(tree) == [str(outside)]


class TestMissingProtectedPaths:
    """bubblewrap mounts only over what exists: a missing protected path is held by an empty
    read-only directory while an unapproved command runs, and removed afterwards."""

    def policy(self) -> WorkspacePolicy:
        from lovia.workspace import CommandRule

        return WorkspacePolicy(
            write="ask",
            read_outside="ask",
            command_rules=(CommandRule("python3", "allow"), CommandRule("sleep", "allow")),
            protected_paths=(".vscode", ".lovia", ".github/workflows", ".nvim.lua"),
        )

    async def test_an_unapproved_command_cannot_create_them(self, tree: Path) -> None:
        code = (
            "import os\n"
            "for path in ('.vscode/settings.json', '.lovia/skills/x.md', '.github/workflows/x.yml'):\n"
            "    try:\n"
            "        os.makedirs(os.path.dirname(path) or '.', exist_ok=True)\n"
            "        open(path, 'w').write('{}')\n"
            "        print('wrote', path)\n"
            "    except OSError as exc:\n"
            "        print('refused', path, exc.strerror)\n"
            "open('ok.txt', 'w').write('fine')\n"
            "print('listed', sorted(os.listdir('.')))\n"
        )
        executor = BubblewrapExecutor(root_writable=True)
        s = LocalWorkspaceSession(tree, policy=self.policy(), executor=executor, env={"C": code})
        r = await s.run(HIDDEN_CODE)
        await s.close()
        assert "wrote" not in r.stdout, r.stdout
        assert (tree / "ok.txt").read_text() == "fine"  # other writes inside still land
        # only what tools obey while the agent works is held: fewer empty dirs for `ls`
        assert "'.nvim.lua'" not in r.stdout and "'.vscode'" in r.stdout
        for name in (".vscode", ".lovia", ".github"):
            assert not (tree / name).exists(), name  # no placeholder is left behind

    async def test_an_approved_command_may(self, tree: Path) -> None:
        executor = BubblewrapExecutor(root_writable=True)
        s = LocalWorkspaceSession(tree, policy=self.policy(), executor=executor)
        assert s.decide_command("mkdir .vscode") == "ask"
        await s.run("mkdir .vscode")
        await s.close()
        assert (tree / ".vscode").is_dir()

    async def test_a_placeholder_lives_as_long_as_any_command_holds_it(self, tree: Path) -> None:
        code = "open('.vscode', 'w')"
        executor = BubblewrapExecutor(root_writable=True)
        s = LocalWorkspaceSession(tree, policy=self.policy(), executor=executor, env={"C": code})
        bg = await s.spawn("sleep 30")
        for _ in range(100):  # bubblewrap makes the mount point as it starts
            if (tree / ".vscode").is_dir():
                break
            await asyncio.sleep(0.02)
        assert (tree / ".vscode").is_dir()  # held (empty) while the background command runs
        r = await s.run(HIDDEN_CODE)
        assert r.exit_code != 0 and (tree / ".vscode").is_dir()  # still held for the sleeper
        await s.kill_process(bg.process_id)
        for _ in range(100):
            if not (tree / ".vscode").exists():
                break
            await asyncio.sleep(0.02)
        await s.close()
        assert not (tree / ".vscode").exists()

    @pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
    async def test_git_still_finds_the_parent_repository(self, tmp_path: Path) -> None:
        import subprocess

        parent = tmp_path / "mono"
        (parent / "pkg").mkdir(parents=True)
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["git", "init", "-q"], cwd=parent, env=env, check=True)  # noqa: ASYNC221
        (parent / "pkg" / "a.txt").write_text("a\n")
        from lovia.workspace import CommandRule

        policy = WorkspacePolicy(
            write="ask", read_outside="allow", command_rules=(CommandRule("git status", "allow"),)
        )  # the default protected paths: .git among them
        root = (parent / "pkg").resolve()
        s = LocalWorkspaceSession(
            root, policy=policy, executor=BubblewrapExecutor(root_writable=True), env=env
        )
        r = await s.run("git status --short -uall")
        await s.close()
        assert r.exit_code == 0 and "a.txt" in r.stdout, r.stderr
        assert not (root / ".git").exists()


def _user_worktree(tmp_path: Path, *, hooks: bool = True) -> tuple[Path, Path, dict[str, str]]:
    """A repository and a worktree the user made of it by hand (``git worktree add``)."""
    import subprocess

    main, wt = tmp_path / "main", tmp_path / "wt"
    main.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (
        ["init", "-q"] if hooks else ["init", "-q", "--template="],
        ["commit", "-q", "--allow-empty", "-m", "one"],
        ["worktree", "add", "-q", str(wt)],
    ):
        subprocess.run(["git", *args], cwd=main, env=env, check=True, capture_output=True)
    return main.resolve(), wt.resolve(), env


GIT_DIR_ATTACK = """
common=$(git rev-parse --git-common-dir); own=$(git rev-parse --git-dir)
try() { if (eval "$1") 2>/dev/null; then echo "wrote $2"; else echo "refused $2"; fi; }
try 'mkdir -p "$common/hooks" && echo "touch pwned" > "$common/hooks/post-checkout"' hook
try 'printf "[core]\\n\\tfsmonitor = touch pwned\\n" >> "$common/config"' config
try 'mkdir -p "$common/info" && echo "* filter=x" > "$common/info/attributes"' info
try 'echo "$PWD/elsewhere" > "$own/gitdir"' gitdir
try 'echo /tmp > "$own/commondir"' commondir
try 'echo "[core]" > "$own/config.worktree"' own-config
try 'echo x > "$common/worktrees/planted"' worktrees
echo change > notes.txt && git add notes.txt && git commit -qm from-sandbox && echo committed
git status --short && echo status-ok
"""


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("hooks", [True, False], ids=["hooks-dir", "no-hooks-dir"])
async def test_a_user_made_worktree_root_keeps_its_git_dirs_guarded_when_approved(
    tmp_path: Path, hooks: bool
) -> None:
    """An approved command in a worktree (the root's ``.git`` is a file) commits, but writes
    neither the common dir's hooks, config, info and worktrees nor its own git dir's
    pointers: the masks of an in-tree ``.git``, under every approval."""
    import subprocess

    main, wt, env = _user_worktree(tmp_path, hooks=hooks)
    common = main / ".git"
    own = common / "worktrees" / "wt"
    before = {p: p.read_bytes() for p in (common / "config", own / "gitdir", own / "commondir")}
    policy = WorkspacePolicy(write="ask", read_outside="ask")
    s = LocalWorkspaceSession(
        wt, policy=policy, executor=BubblewrapExecutor(root_writable=True), env=env
    )
    command = "sh -c " + shlex.quote(GIT_DIR_ATTACK)
    assert s.decide_command(command) == "ask"  # so it runs as approved
    out = await s.run(command)
    await s.close()
    text = out.stdout + out.stderr
    for what in ("hook", "config", "info", "gitdir", "commondir", "own-config", "worktrees"):
        assert f"refused {what}" in text, text
    assert "committed" in text and "status-ok" in text, text
    assert {p: p.read_bytes() for p in before} == before
    assert not (common / "hooks" / "post-checkout").exists()
    assert not (common / "info" / "attributes").exists()
    assert not (common / "worktrees" / "planted").exists()
    assert not (own / "config.worktree").exists()
    assert (common / "hooks").exists() is hooks  # a placeholder held it, and went
    log = subprocess.run(  # noqa: ASYNC221
        ["git", "log", "--format=%s", "wt"], cwd=main, env=env, capture_output=True, text=True
    )
    assert log.stdout.split() == ["from-sandbox", "one"]
