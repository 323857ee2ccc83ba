"""Commands that cannot run hidden code: git's injected configuration, PATH and the venv.

Real git (the machine's, 2.39 here), real repositories planted inside the project, and a
marker file that the planted program would write.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy
from lovia.workspace.git_env import HARDENED_GIT_CONFIG, hardened_git_config
from lovia.workspace.sandbox import BubblewrapExecutor

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True, capture_output=True
    )


def plain_git_status(cwd: Path) -> None:
    """Run ``git status`` without the workspace: the attack works with plain git."""
    subprocess.run(["git", "status"], cwd=cwd, capture_output=True, check=False)


def plain_git_log(cwd: Path) -> None:
    subprocess.run(["git", "log"], cwd=cwd, capture_output=True, check=False)


def ran(marker: Path) -> bool:
    """Whether the planted program ran (and forget that it did)."""
    if marker.exists():
        marker.unlink()
        return True
    return False


def exists(path: Path) -> bool:
    return path.exists()


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "MARKER"


@pytest.fixture
def evil(tmp_path: Path, marker: Path) -> Path:
    """A program that leaves a marker when something runs it."""
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat >/dev/null 2>&1\nexit 0\n')
    script.chmod(0o755)
    return script


def trusted(root: Path, **kw: object) -> LocalWorkspaceSession:
    return LocalWorkspaceSession(root, policy=WorkspacePolicy.trusted(), **kw)  # type: ignore[arg-type]


def test_the_configuration_is_appended_and_wins() -> None:
    env = hardened_git_config(
        {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "core.fsmonitor",
            "GIT_CONFIG_VALUE_0": "/tmp/evil",
            "GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='/tmp/evil'",
        }
    )
    n = len(HARDENED_GIT_CONFIG)
    assert env["GIT_CONFIG_COUNT"] == str(1 + n)
    assert env["GIT_CONFIG_KEY_0"] == "core.fsmonitor"  # the user's entry is kept...
    assert env[f"GIT_CONFIG_KEY_{n}"] == "protocol.ext.allow"  # ...and ours come after it
    assert env["GIT_CONFIG_KEY_2"] == "core.fsmonitor" and env["GIT_CONFIG_VALUE_2"] == "false"
    assert "GIT_CONFIG_PARAMETERS" not in env
    assert hardened_git_config(env) == env  # idempotent
    broken = hardened_git_config({"GIT_CONFIG_COUNT": "3", "GIT_CONFIG_KEY_0": "a.b"})
    assert (
        broken["GIT_CONFIG_COUNT"] == str(n) and broken["GIT_CONFIG_KEY_0"] == "safe.bareRepository"
    )
    assert hardened_git_config({"GIT_CONFIG_COUNT": "x"})["GIT_CONFIG_COUNT"] == str(n)


async def test_every_shell_command_gets_it(root: Path) -> None:
    s = trusted(root, env={"GIT_CONFIG_COUNT": "0"})
    out = (
        await s.run(
            "git config --get core.fsmonitor; git config --get safe.bareRepository",
            env={"GIT_CONFIG_COUNT": "0", "GIT_CONFIG_PARAMETERS": "'a.b'='c'"},
        )
    ).stdout
    assert out.split() == ["false", "explicit"]
    bg = await s.spawn("git config --get core.pager")
    for _ in range(50):
        got = await s.read_process_output(bg.process_id)
        if got.status != "running":
            break
        await asyncio.sleep(0.05)
    assert "cat" in got.output


async def test_a_bare_repository_fixture_does_not_run_its_fsmonitor(
    root: Path, evil: Path, marker: Path
) -> None:
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "a")
    fixture = root / "tests" / "fixture.git"
    fixture.parent.mkdir()
    git(root, "init", "-q", "--bare", str(fixture))
    git(fixture, "config", "core.bare", "false")
    git(fixture, "config", "core.worktree", str(root))
    git(fixture, "config", "core.fsmonitor", str(evil))
    plain_git_status(fixture)
    assert ran(marker)
    s = trusted(root)
    result = await s.run("git status", cwd="tests/fixture.git")
    assert not ran(marker)
    assert result.exit_code != 0 and "safe.bareRepository" in result.stderr
    result = await s.run("cd tests/fixture.git && git log --oneline")
    assert not ran(marker)


async def test_a_nested_repository_does_not_run_its_fsmonitor(
    root: Path, evil: Path, marker: Path
) -> None:
    nested = root / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "x.txt").write_text("x\n")
    git(nested, "add", "x.txt")
    git(nested, "commit", "-qm", "x")
    git(nested, "config", "core.fsmonitor", str(evil))
    plain_git_status(nested)
    assert ran(marker)
    s = trusted(
        root,
        env={
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "core.fsmonitor",
            "GIT_CONFIG_VALUE_0": str(evil),
        },
    )
    for command in ("git status", "git -C vendor/lib status", "cd vendor/lib && git diff"):
        result = await s.run(command, cwd="vendor/lib" if command == "git status" else ".")
        assert result.exit_code == 0, result.stderr
        assert not ran(marker), command
    # a call's environment cannot take the configuration away either
    await s.run("git status", cwd="vendor/lib", env={"GIT_CONFIG_COUNT": "0"})
    assert not ran(marker)


def signed_commit(root: Path) -> None:
    """A commit with a (fake) signature: showing its signature runs ``gpg.program``."""
    tree = subprocess.run(
        ["git", "rev-parse", "HEAD^{tree}"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    body = (
        f"tree {tree}\nauthor t <t@t> 1700000000 +0000\ncommitter t <t@t> 1700000000 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n"
        " -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    commit = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=root,
        input=body,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(root, "update-ref", "HEAD", commit)


async def test_no_signature_program_and_no_pager(root: Path, evil: Path, marker: Path) -> None:
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "a")
    signed_commit(root)
    git(root, "config", "log.showSignature", "true")
    git(root, "config", "gpg.program", str(evil))
    plain_git_log(root)
    assert ran(marker)  # plain git runs it for every signed commit it shows
    git(root, "config", "core.pager", str(evil))
    git(root, "config", "pager.log", str(evil))
    s = trusted(root)
    for command in ("git log", "git show", "git -p log", "git --paginate status"):
        result = await s.run(command)
        assert result.exit_code == 0, result.stderr
        assert not ran(marker), command


def test_the_sandbox_mounts_the_venv_wrappers(root: Path) -> None:
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(os.path.realpath(sys.executable))
    s = trusted(root)
    env = s._env_for(root, None)
    shims = env["PATH"].split(os.pathsep)[0]
    argv = BubblewrapExecutor().wrap_argv(
        "true", cwd=root, env=env, policy=WorkspacePolicy.coding(), root=root
    )
    assert ["--ro-bind-try", shims, shims] == argv[argv.index(shims) - 1 : argv.index(shims) + 2]


# ----------------------------------------------------------------------------- PATH


@pytest.fixture
def venv_root(root: Path, marker: Path) -> Path:
    """A root venv that ships its own ``git`` (and a tool of its own)."""
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(os.path.realpath(sys.executable))
    (bin_dir / "python3").symlink_to("python")
    (root / ".venv" / "pyvenv.cfg").write_text(
        f"home = {Path(os.path.realpath(sys.executable)).parent}\ninclude-system-site-packages"
        " = false\n"
    )
    for name in ("git", "ls"):
        fake = bin_dir / name
        fake.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        fake.chmod(0o755)
    tool = bin_dir / "project-tool"
    tool.write_text("#!/bin/sh\necho project-tool ran\n")
    tool.chmod(0o755)
    return root


async def test_the_venv_never_shadows_system_programs(venv_root: Path, marker: Path) -> None:
    s = trusted(venv_root)
    result = await s.run("git --version; ls >/dev/null; echo $PATH")
    assert not ran(marker)
    assert result.stdout.startswith("git version")
    path = result.stdout.strip().splitlines()[-1].split(":")
    assert not path[0].startswith(str(venv_root))
    assert path[-1] == str(venv_root / ".venv" / "bin")
    assert not any(p.startswith(str(venv_root)) for p in path[:-1])


async def test_python_pip_and_venv_tools_still_mean_the_venv(venv_root: Path) -> None:
    s = trusted(venv_root)
    out = (await s.run("python -c 'import sys; print(sys.prefix)'")).stdout.strip()
    assert out == str(venv_root / ".venv")
    out = (await s.run("python3 -c 'import sys; print(sys.prefix)'")).stdout.strip()
    assert out == str(venv_root / ".venv")
    assert (await s.run("project-tool")).stdout.strip() == "project-tool ran"
    assert "VIRTUAL_ENV=" + str(venv_root / ".venv") in (await s.run("env")).stdout
    # a user-configured PATH wins, as the spec says
    mine = trusted(venv_root, env={"PATH": f"{venv_root / '.venv' / 'bin'}:/usr/bin:/bin"})
    assert (await mine.run("echo $PATH")).stdout.strip().startswith(str(venv_root))


async def test_the_wrappers_follow_the_venv(venv_root: Path) -> None:
    s = trusted(venv_root)
    await s.run("true")
    new = venv_root / ".venv" / "bin" / "later-tool"
    new.write_text("#!/bin/sh\necho later\n")
    new.chmod(0o755)
    assert (await s.run("later-tool")).stdout.strip() == "later"
    shims = s._env_for(venv_root, None)["PATH"].split(":")[0]
    assert not exists(Path(shims, "git")) and exists(Path(shims, "python"))
    new.unlink()
    s._env_for(venv_root, None)
    assert not exists(Path(shims, "later-tool"))


@pytest.mark.skipif(not BubblewrapExecutor.available(), reason="bubblewrap is not usable here")
async def test_the_venv_works_in_the_sandbox(venv_root: Path, marker: Path) -> None:
    s = LocalWorkspaceSession(
        venv_root, policy=WorkspacePolicy.coding(), executor=BubblewrapExecutor()
    )
    out = await s.run("python -c 'import sys; print(sys.prefix)'; git --version")
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == str(venv_root / ".venv") and lines[1].startswith("git version")
    assert not ran(marker)


def test_wrappers_of_a_removed_venv_are_pruned(tmp_path: Path) -> None:
    def project(name: str) -> LocalWorkspaceSession:
        root = tmp_path / name
        (root / ".venv" / "bin").mkdir(parents=True)
        (root / ".venv" / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
        return trusted(root.resolve())

    first = project("one")
    shims = Path(first._env_for(first.root, None)["PATH"].split(os.pathsep)[0])
    assert exists(shims / "python")
    shutil.rmtree(first.root / ".venv")
    second = project("two")
    other = Path(second._env_for(second.root, None)["PATH"].split(os.pathsep)[0])
    assert other != shims and exists(other / "python")
    assert not exists(shims)
