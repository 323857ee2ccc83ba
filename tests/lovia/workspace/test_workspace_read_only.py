"""Read-only commands run without asking; everything else keeps its decision.

Through a real ``LocalWorkspaceSession`` on a real git repository, with the language
server's default deny list and its review-first writes (``write="ask"``).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lovia.workspace import CommandRule, LocalWorkspaceSession, WorkspacePolicy
from lovia.workspace.command_guard.judge import read_only_reason
from lovia.workspace.command_guard.readonly_docs import main as docs_main
from lovia.workspace.command_guard.readonly_table import TABLE

from .read_only_corpus import NOT_READ_ONLY, READ_ONLY

# the language server's default deny list (lovia_server.protocol.settings.DEFAULT_DENIED_PATHS)
DENIED = (
    ".env",
    ".env.*",
    "**/.git/**",
    ".git",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.netrc",
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def make_project(root: Path) -> None:
    """A small Python/JS project: sources, tests, node_modules, an untracked .env."""
    (root / "src" / "app").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "src" / "app" / "main.py").write_text("import os\n\nprint('hi')  # TODO\n")
    (root / "src" / "app" / "util.py").write_text("def main():\n    return 1\n")
    (root / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    (root / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    (root / "README.md").write_text("# project\nsome,words here\n")
    (root / "package.json").write_text('{"name": "x", "scripts": {"test": "jest"}}\n')
    (root / ".gitignore").write_text("node_modules\n.env\n")
    (root / ".env").write_text("TOKEN=secret\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (root / "src" / "app" / "main.py").write_text("import os\n\nprint('hello')  # TODO\n")
    git(root, "commit", "-qam", "hello")


def stub_bin(base: Path) -> Path:
    """Programs this machine may lack (rg, tree), outside the workspace; never run."""
    bin_dir = base / "stub-bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("rg", "tree"):
        tool = bin_dir / name
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
    return bin_dir


def server_like(root: Path, **kw: object) -> LocalWorkspaceSession:
    """``coding`` as the language server sets it up: its deny list, review-first writes."""
    policy = dataclasses.replace(WorkspacePolicy.coding(denied_paths=DENIED), write="ask")
    if kw.pop("read_only", True) is False:
        policy = dataclasses.replace(policy, allow_read_only_commands=False)
    return LocalWorkspaceSession(root, policy=policy, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> LocalWorkspaceSession:
    base = tmp_path_factory.mktemp("ro").resolve()
    root = base / "proj"
    root.mkdir()
    make_project(root)
    path = os.environ.get("PATH", os.defpath) + os.pathsep + str(stub_bin(base))
    return server_like(root, env={"PATH": path})


def reason(s: LocalWorkspaceSession, command: str) -> str | None:
    return read_only_reason(s.policy, s.root, command, env=s._env_for(s.root, None))


# ----------------------------------------------------------------------------- both ways


def test_most_realistic_read_only_commands_run_without_asking(
    project: LocalWorkspaceSession,
) -> None:
    decisions = {c: project.decide_command(c) for c in READ_ONLY}
    misses = {c: (d, reason(project, c)) for c, d in decisions.items() if d != "allow"}
    ratio = 1 - len(misses) / len(READ_ONLY)
    assert len(READ_ONLY) >= 100
    assert ratio >= 0.9, f"{ratio:.0%} ran unasked; misses: {misses}"
    # the misses are the expected ones: a tree with a denied path below, a glob that
    # could match a denied pattern (id_rsa*)
    assert set(misses) <= {
        "grep -rn foo .",
        "find . -maxdepth 2 -type d",
        "wc -l src/app/*.py",
    }, misses


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_writing_executing_and_networking_commands_still_ask(
    project: LocalWorkspaceSession, command: str
) -> None:
    assert project.decide_command(command) in ("ask", "deny"), (command, reason(project, command))


def test_the_switch_and_the_spec_defaults(project: LocalWorkspaceSession) -> None:
    root = project.root
    off = server_like(root, read_only=False, env=project.env)
    assert off.decide_command("ls") == "ask"
    assert LocalWorkspaceSession(root).decide_command("ls") == "ask"  # bare WorkspacePolicy()
    # the static rules keep the spec's exact behaviour: unmatched -> shell_default
    assert WorkspacePolicy.coding().decide_command("ls") == "ask"
    assert WorkspacePolicy.coding().allow_read_only_commands is True
    assert WorkspacePolicy().allow_read_only_commands is False


def test_a_users_rules_win(project: LocalWorkspaceSession) -> None:
    def with_policy(**kw: object) -> LocalWorkspaceSession:
        policy = dataclasses.replace(project.policy, **kw)  # type: ignore[arg-type]
        return LocalWorkspaceSession(project.root, policy=policy, env=project.env)

    deny_cat = with_policy(command_rules=(CommandRule("cat", "deny"),))
    assert deny_cat.decide_command("cat README.md") == "deny"
    assert deny_cat.decide_command("ls | cat") == "deny"
    ask_ls = with_policy(command_rules=(CommandRule("ls", "ask"),))
    assert ask_ls.decide_command("ls") == "ask"
    assert ask_ls.decide_command("cd src && ls") == "ask"
    assert ask_ls.decide_command("pwd") == "allow"
    asks = with_policy(command_decider=lambda seg: "ask" if "git" in seg else None)
    assert asks.decide_command("git status") == "ask"
    assert asks.decide_command("ls") == "allow"
    allow_git = with_policy(command_rules=(CommandRule("git status", "allow"),))
    assert allow_git.decide_command("git status && ls") == "allow"


def test_paths_are_judged_as_before(project: LocalWorkspaceSession) -> None:
    s = project
    assert s.decide_command("cat .env") == "deny"
    assert s.decide_command("grep TOKEN .env") == "deny"
    assert s.decide_command("cat /etc/passwd") == "ask"
    assert s.decide_command("ls ..") == "ask"
    assert s.decide_command("cat README.md", cwd="src") == "allow"
    assert s.decide_command("ls", cwd="..") in ("ask", "deny")


def test_echo_prints_words_it_does_not_read(project: LocalWorkspaceSession) -> None:
    # the lexical claims would ask for /etc/passwd; echo reads nothing
    assert project.decide_command("echo /etc/passwd") == "allow"
    assert project.decide_command("echo .env") == "deny"  # the spec's lexical deny stays


def test_the_docs_table_is_current() -> None:
    assert docs_main(["--check"]) == 0, "run python -m lovia.workspace.command_guard.readonly_docs"


# ----------------------------------------------------------------------------- spellings

# program, a harmless prefix of options, and the forbidden option's spellings
FORBIDDEN_SPELLINGS: list[tuple[str, list[str]]] = [
    ("sort {o} README.md", ["-o out", "-oout", "-uo out", "-uoout", "--output=out"]),
    ("sort {o} README.md", ["--output out", "'-o' out", "-o'out'", "--outp=out", "--out out"]),
    ("sort {o} README.md", ["--compress-program=gzip", "--compress-program gzip", "-T /tmp"]),
    ("sort {o} README.md", ["--files0-from=l", "--files0-from l", "--temporary-directory=/t"]),
    ("wc {o}", ["--files0-from=l", "--files0-from l", "--files0-fr=l", "--files0=l"]),
    ("rg {o} x", ["--pre=./d", "--pre ./d", "--pre-glob=*.gz", "-z", "-iz", "-zi", "-niz"]),
    ("rg {o} x", ["--search-zip", "--search=x", "--pr=./d", "--hostname-bin=./h", "-L"]),
    ("find . {o}", ["-exec id ;", "-name x -exec id ;", "( -exec id ; )", "! -exec id ;"]),
    ("find . {o}", ["-execdir id ;", "-ok id ;", "-okdir id ;", "-delete", "-fprint f"]),
    ("find . {o}", ["-fprintf f %p", "-fls f", "-fprint0 f", "-files0-from f", "-L"]),
    ("find . {o}", ["-type f -o -delete", "-name x -or -exec id +", "-follow"]),
    ("git {o} status", ["-c a=b", "-ca=b", "--config-env=a=B", "--exec-path=/t", "-C /t"]),
    ("git {o} log", ["--git-dir=/t", "--work-tree /t", "-p", "--paginate", "--namespace=x"]),
    ("git log {o}", ["--output=f", "--output f", "--ext-diff", "--textconv", "--show-signature"]),
    ("git log {o}", ["-p --output=f", "--out=f", "--ext", "--textc", "-L1,2:f"]),
    ("git diff {o}", ["--output=f", "--ext-diff", "--textconv", "--outp=f", "--ext"]),
    ("git show {o}", ["--output=f", "--show-signature", "--ext-diff", "--textconv"]),
    ("git branch {o}", ["-d x", "-D x", "--delete x", "-m a b", "-M a b", "-c a b", "x"]),
    ("git branch {o}", ["-f x y", "--set-upstream-to=o", "-u o", "--edit-description", "-dx"]),
    ("git grep {o} x", ["-O", "-Ovim", "--open-files-in-pager", "--textconv", "--no-index"]),
    ("ls {o}", ["-L", "--dereference", "-lL", "--deref", "--color=always -L", "-la -L"]),
    ("tail {o} README.md", ["-fx", "--files0-from=l", "--pi=1"]),
    ("diff {o} a b", ["-l", "--paginate", "-ul", "--pag"]),
    ("sed {o} README.md", ["-i s/a/b/", "-i.bak s/a/b/", "-ni p", "--in-place=.b p"]),
    ("sed {o} README.md", ["-f s.sed", "--file=s.sed", "-e 'w out'", "'s/a/b/w out'"]),
    ("sed {o} README.md", ["'1r /etc/passwd'", "-e e", "'s/a/b/e'", "-e 's/a/b/ge'"]),
    ("awk {o} README.md", ["-f p.awk", "--file=p.awk", "-l ext", "--load=ext", "-E p.awk"]),
    ("awk {o} README.md", ["'{system(1)}'", "'{print > 1}'", "'{print | 1}'", "'@load 1'"]),
    ("jq {o} package.json", ["-f p.jq", "--from-file p.jq", "-L dir .", "env", "'$ENV'"]),
    ("jq {o} package.json", ["--arg a b env", "'import \"a\" as a; .'", "--rawfile a .env ."]),
    ("uniq {o}", ["README.md out", "-c README.md out"]),
    ("xxd {o}", ["README.md out", "-r README.md"]),
    ("file {o} README.md", ["-z", "-Z", "--uncompress", "-C", "-f list", "-p"]),
    ("tree {o}", ["-o out", "-R", "--fromfile", "-l", "-ao out"]),
    ("du {o}", ["--files0-from=l", "-L", "--dereference", "-sL"]),
    ("date {o}", ["-s 2020-01-01", "--set=2020-01-01", "-f dates"]),
    ("sha256sum {o}", ["-c sums", "--check sums", "-bc sums"]),
    ("cat {o} README.md", ["--version-x", "-Z", "--number=1"]),
]
NOISE = {
    "sort": ["-r", "-n", "-u"],
    "wc": ["-l", "-w"],
    "rg": ["-n", "-i", "--hidden"],
    "find": ["-name x", "-type f", "-maxdepth 2"],
    "git": [],
    "ls": ["-l", "-a"],
    "tail": ["-n 5"],
    "diff": ["-u"],
    "sed": ["-n"],
    "awk": ["-F,"],
    "jq": ["-r"],
    "uniq": ["-c"],
    "xxd": ["-p"],
    "file": ["-b"],
    "tree": ["-a"],
    "du": ["-h"],
    "date": ["-u"],
    "sha256sum": ["-b"],
    "cat": ["-n"],
}


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    entry=st.sampled_from(FORBIDDEN_SPELLINGS),
    index=st.integers(min_value=0, max_value=20),
    noise=st.lists(st.integers(min_value=0, max_value=5), max_size=2),
    quote=st.booleans(),
    before=st.booleans(),
)
def test_forbidden_options_in_any_spelling_still_ask(
    project: LocalWorkspaceSession,
    entry: tuple[str, list[str]],
    index: int,
    noise: list[int],
    quote: bool,
    before: bool,
) -> None:
    template, spellings = entry
    option = spellings[index % len(spellings)]
    program = template.split()[0]
    pool = NOISE.get(program, [])
    extra = [pool[n % len(pool)] for n in noise] if pool else []
    if quote:
        words = shlex.split(option)
        option = " ".join(shlex.quote(w) for w in words)
    parts = [*extra, option] if before else [option, *extra]
    command = template.format(o=" ".join(parts))
    decision = project.decide_command(command)
    assert decision in ("ask", "deny"), (command, decision)


@st.composite
def allowed_spellings(draw: st.DrawFn) -> str:
    """``head``/``grep``/``git log`` with their value options in every spelling."""
    form = draw(st.sampled_from(["sep", "glued", "eq", "cluster"]))
    n = draw(st.integers(min_value=1, max_value=40))
    choice = draw(st.sampled_from(["head", "grep", "log", "sort"]))
    if choice == "head":
        opt = {"sep": f"-n {n}", "glued": f"-n{n}", "eq": f"--lines={n}", "cluster": f"-qn{n}"}
        return f"head {opt[form]} README.md"
    if choice == "grep":
        opt = {"sep": f"-m {n}", "glued": f"-m{n}", "eq": f"--max-count={n}", "cluster": "-in"}
        return f"grep {opt[form]} import src/app/main.py"
    if choice == "sort":
        opt = {"sep": "-k 2", "glued": "-k2", "eq": "--key=2", "cluster": "-rnk2"}
        return f"sort {opt[form]} README.md"
    opt = {"sep": f"-n {n}", "glued": f"-n{n}", "eq": f"--max-count={n}", "cluster": f"-{n}"}
    return f"git log --oneline {opt[form]}"


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(command=allowed_spellings())
def test_listed_options_run_in_every_spelling(project: LocalWorkspaceSession, command: str) -> None:
    assert project.decide_command(command) == "allow", (command, reason(project, command))


# ----------------------------------------------------------------------------- walks


@pytest.fixture
def tree_ws(root: Path) -> LocalWorkspaceSession:
    """A tree (no git) with a denied directory, a denied file and hidden entries."""
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x = 1\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "k.txt").write_text("key\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "k.txt").write_text("key\n")
    (root / "server.pem").write_text("pem\n")
    return LocalWorkspaceSession(
        root,
        policy=WorkspacePolicy.coding(denied_paths=("secrets", ".hidden", "*.pem")),
        env={"PATH": os.environ.get("PATH", "") + os.pathsep + str(stub_bin(root.parent))},
    )


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # names of denied entries in allowed directories are printed, as ls prints them
        ("find . -name '*.py'", "allow"),
        ("find . -name 'server*'", "allow"),
        ("ls -R src", "allow"),
        # but nothing from inside a denied directory
        ("find . -name '*.txt'", "ask"),
        ("find . -type f", "ask"),
        ("find .", "ask"),
        ("find . -path '*/secr*' -prune -o -name '*.txt' -print", "ask"),  # .hidden/k.txt
        ("find . -path '*/secr*' -prune -o -path './.hid*' -prune -o -type f -print", "allow"),
        ("find . -not -path '*/secr*' -not -path '*/.hid*'", "allow"),
        ("find . -maxdepth 1", "allow"),
        ("find . -maxdepth 2", "ask"),
        ("find . -type d", "allow"),
        ("find . -name '*.txt' -o -name '*.py'", "ask"),
        ("find . ! -name '*.txt'", "allow"),
        ("find . -size +1k", "ask"),  # not modelled: may print anything
        ("ls -R", "ask"),  # lists secrets/
        ("tree", "ask"),
        ("tree -L 1", "allow"),
        ("du -sh .", "allow"),
        ("du -h --max-depth=1 .", "allow"),
        ("du -a .", "ask"),
        # searchers read every file they reach
        ("grep -rn key .", "ask"),
        ("grep -rn key . --exclude-dir=secrets --exclude-dir='.hid*'", "ask"),  # server.pem
        ("grep -rn key . --exclude-dir='secr*' --exclude-dir='.hid*'", "ask"),
        ("grep -rn key src --exclude-dir=x", "allow"),
        ("grep -rn key src", "allow"),
        ("rg key src", "allow"),
        ("rg key", "ask"),  # server.pem is not hidden
    ],
)
def test_walks_are_judged_as_the_program_walks(
    tree_ws: LocalWorkspaceSession, command: str, expected: str
) -> None:
    assert tree_ws.decide_command(command) == expected, (command, reason(tree_ws, command))


def test_hidden_entries_skipped_by_default(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".env").write_text("T=1\n")
    s = LocalWorkspaceSession(
        root,
        policy=WorkspacePolicy.coding(denied_paths=DENIED),
        env={"PATH": os.environ.get("PATH", "") + os.pathsep + str(stub_bin(root.parent))},
    )
    for command in ("rg x", "ls -R", "tree", "rg --files", "ls -la"):
        assert s.decide_command(command) == "allow", (command, reason(s, command))
    for command in ("rg --hidden x", "rg -uu x", "rg -u -u x", "ls -Ra", "tree -a", "rg -. x"):
        assert s.decide_command(command) == "ask", command
    # the strict general judgement of the same walks is unchanged (trusted has no rule)
    assert s.decide_command("grep -rn x .") == "ask"


# ----------------------------------------------------------------------------- PATH


def test_a_program_inside_the_workspace_is_never_read_only(root: Path) -> None:
    (root / "README.md").write_text("x\n")
    (root / "bin").mkdir()
    fake = root / "bin" / "ls"
    fake.write_text("#!/bin/sh\necho pwned\n")
    fake.chmod(0o755)
    policy = WorkspacePolicy.coding()
    path = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    s = LocalWorkspaceSession(root, policy=policy, env={"PATH": path})
    assert s.decide_command("ls") == "ask"
    assert "inside the workspace" in (reason(s, "ls") or "")
    assert s.decide_command("cat README.md") == "allow"  # the host's cat
    rel = LocalWorkspaceSession(root, policy=policy, env={"PATH": "bin:/usr/bin:/bin"})
    assert rel.decide_command("cat README.md") == "ask"  # a relative PATH entry
    linked = root / "linkbin"
    linked.symlink_to(root / "bin")
    via_link = LocalWorkspaceSession(root, policy=policy, env={"PATH": f"{linked}:/usr/bin:/bin"})
    assert via_link.decide_command("ls") == "ask"


def test_a_venv_tool_named_like_a_table_program_is_not_read_only(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = tmp_path / "host-bin"
    host.mkdir()
    for name in ("sh", "cat", "git"):
        real = subprocess.run(["sh", "-c", f"command -v {name}"], capture_output=True, text=True)
        (host / name).symlink_to(real.stdout.strip())
    monkeypatch.setenv("PATH", str(host))
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(os.path.realpath(os.sys.executable))  # type: ignore[attr-defined]
    (venv_bin / "ls").write_text("#!/bin/sh\necho pwned\n")
    (venv_bin / "ls").chmod(0o755)
    (root / "a.txt").write_text("a\n")
    s = LocalWorkspaceSession(root, policy=WorkspacePolicy.coding())
    assert s.decide_command("cat a.txt") == "allow"
    assert s.decide_command("ls") == "ask"  # only the venv has an ls: it is a workspace file
    assert "inside the workspace" in (reason(s, "ls") or "")


# ----------------------------------------------------------------------------- git


@pytest.fixture
def leaky_repo(root: Path) -> Path:
    """A repository whose history holds a denied file that the work tree no longer has."""
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / ".env").write_text("TOKEN=secret\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "oops")
    git(root, "rm", "-q", "--cached", ".env")
    (root / ".gitignore").write_text(".env\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-qm", "forget .env")
    (root / "src" / "a.py").write_text("a = 2\n")
    git(root, "commit", "-qam", "two")
    return root


@pytest.mark.parametrize(
    ("command", "coding", "trusted"),
    [
        ("git log -p", "ask", "ask"),
        ("git log --patch --all", "ask", "ask"),
        ("git log -u -3", "ask", "ask"),
        ("git log --cc", "ask", "ask"),
        ("git log -Stoken", "ask", "ask"),
        ("git show HEAD~2", "ask", "ask"),
        ("git show", "ask", "ask"),
        ("git diff HEAD~2", "ask", "ask"),
        ("git diff HEAD~2 HEAD", "ask", "ask"),
        ("git format-patch --stdout HEAD~2", "ask", "ask"),
        ("git archive HEAD~2", "ask", "ask"),
        ("git grep TOKEN HEAD~2", "ask", "ask"),
        ("git cat-file -p HEAD~2:.env", "deny", "deny"),
        ("git show HEAD~2:.env", "deny", "deny"),
        ("git show HEAD~2:./.env", "deny", "deny"),
        ("git show :.env", "deny", "deny"),
        ("git log -p -- .env", "deny", "deny"),
        # pathspecs that exclude the denied file
        ("git log -p -- src", "allow", "allow"),
        ("git log -p src", "allow", "allow"),
        ("git diff HEAD~2 -- src", "allow", "allow"),
        ("git show HEAD~2 -- src", "allow", "allow"),
        ("git show HEAD:src/a.py", "allow", "allow"),
        # no contents
        ("git log --oneline", "allow", "allow"),
        ("git log --stat", "allow", "allow"),
        ("git status", "allow", "allow"),
        ("git diff", "allow", "allow"),  # the index no longer has .env
    ],
)
def test_history_commands_are_judged_against_denied_paths(
    leaky_repo: Path, command: str, coding: str, trusted: str
) -> None:
    c = LocalWorkspaceSession(leaky_repo, policy=WorkspacePolicy.coding(denied_paths=DENIED))
    t = LocalWorkspaceSession(leaky_repo, policy=WorkspacePolicy.trusted(denied_paths=DENIED))
    assert (c.decide_command(command), t.decide_command(command)) == (coding, trusted), command


def test_history_follows_new_commits_stashes_and_the_index(root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    git(root, "init", "-q")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "a")
    s = LocalWorkspaceSession(root, policy=WorkspacePolicy.coding(denied_paths=DENIED))
    assert s.decide_command("git log -p") == "allow"
    (root / ".env").write_text("T=1\n")
    git(root, "add", "-f", ".env")  # staged: the index holds it
    assert s.decide_command("git diff --cached") == "ask"
    git(root, "stash", "-q")  # now only the stash holds it
    assert not (root / ".env").exists()
    assert s.decide_command("git stash show -p") == "ask"
    assert s.decide_command("git log -p") == "ask"  # refs/stash is a ref like any other
    git(root, "stash", "drop", "-q")
    assert s.decide_command("git log -p") == "allow"  # nothing reaches it any more


def test_a_repository_that_configures_programs_is_not_read_only(root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    git(root, "init", "-q")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "a")
    s = LocalWorkspaceSession(root, policy=WorkspacePolicy.coding(denied_paths=DENIED))
    assert s.decide_command("git diff") == "allow"
    for key in ("diff.external", "diff.x.textconv", "filter.f.clean", "gpg.program"):
        git(root, "config", key, "/tmp/whatever")
        # the cache is keyed by the config file's stat; a fresh change is never cached
        assert s.decide_command("git diff") == "ask", key
        assert key in (reason(s, "git diff") or "")
        git(root, "config", "--unset", key)
    inc = root.parent / "included.cfg"
    inc.write_text("[core]\n\tworktree = /\n")
    git(root, "config", "include.path", str(inc))
    assert s.decide_command("git status") == "ask"
    git(root, "config", "--unset", "include.path")
    # an included file that changes later (even one in the work tree) is read again
    tools = root / "tools"
    tools.mkdir()
    (tools / "git.cfg").write_text("[color]\n\tui = auto\n")
    git(root, "config", "include.path", "../tools/git.cfg")
    time.sleep(0.6)  # old enough to be cacheable
    assert s.decide_command("git diff") == "allow"
    (tools / "git.cfg").write_text('[diff "x"]\n\ttextconv = /tmp/evil\n')
    assert s.decide_command("git diff") == "ask"
    git(root, "config", "--unset", "include.path")
    s_env = LocalWorkspaceSession(
        root,
        policy=WorkspacePolicy.coding(denied_paths=DENIED),
        env={"GIT_EXTERNAL_DIFF": "/tmp/x"},
    )
    assert s_env.decide_command("git diff") == "ask"


def test_every_table_program_claims_its_paths(root: Path) -> None:
    """A denied or outside operand of any table program is never allowed."""
    (root / ".env").write_text("T=1\n")
    (root / "a.txt").write_text("a\n")
    s = LocalWorkspaceSession(root, policy=WorkspacePolicy.coding(denied_paths=(".env",)))
    operands = {
        "echo": None,
        "printf": None,
        "true": None,
        "false": None,
        "which": None,
        "type": None,
        "basename": None,
        "dirname": None,
        "date": None,
        "pwd": None,
        "tr": None,
        "git": None,
    }
    for name, spec in TABLE.items():
        if name in operands:
            continue
        first = {"grep": "x ", "egrep": "x ", "fgrep": "x ", "rg": "x ", "sed": "p ", "jq": ". "}
        first |= {"awk": "1 ", "gawk": "1 ", "mawk": "1 "}
        prefix = first.get(name, "")
        assert s.decide_command(f"{name} {prefix}.env") == "deny", name
        assert s.decide_command(f"{name} {prefix}/etc/hostname") == "ask", name
        for opt in sorted(spec.paths):
            if opt in spec.pairs:
                continue
            assert s.decide_command(f"{name} {opt} .env a.txt") == "deny", (name, opt)
            assert s.decide_command(f"{name} {opt} /etc/hostname a.txt") != "allow", (name, opt)
