"""Run the ``git`` CLI against a *shadow* repository (internal, used by restore points).

The shadow repository has its own ``GIT_DIR`` and index and uses the workspace as its
work tree. Nothing of the user's git set-up takes part: no system or global config,
no hooks, no fsmonitor, no inherited ``GIT_*`` variables, a fixed author. Children get
``stdin`` from ``/dev/null`` unless input is passed, and inherit the store's lock fd so
the lock is held until every git child has exited (even when the host is killed).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lovia.exceptions import LoviaError
from lovia.workspace.git_env import hardened_git_config

# ``-c`` settings applied to every command (they win over any config file).
_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "true"),
    ("status.showUntrackedFiles", "all"),  # lets the untracked cache serve "all" listings
    ("core.splitIndex", "true"),  # small index writes: only changed entries are rewritten
    ("splitIndex.maxPercentChange", "20"),
    ("splitIndex.sharedIndexExpire", "now"),  # only our processes use this index
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.eol", "lf"),
    ("core.fileMode", "true"),
    ("core.symlinks", "true"),
    ("core.quotePath", "false"),
    ("core.logAllRefUpdates", "false"),
    ("core.compression", "1"),
    ("core.fsync", "none"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("safe.directory", "*"),
    ("status.relativePaths", "false"),
    ("diff.noprefix", "false"),
    ("diff.mnemonicPrefix", "false"),
    ("commit.gpgSign", "false"),
    ("advice.detachedHead", "false"),
)

# Variables copied from the host environment; every ``GIT_*`` variable is dropped.
_KEEP_ENV = ("PATH", "TMPDIR", "SYSTEMROOT", "LANG")

AUTHOR = ("lovia restore points", "restore-points@lovia.invalid")


class GitError(LoviaError):
    """A git command of the shadow repository failed."""

    returncode: int | None = None
    stderr: str = ""


def find_git(path: str | None = None) -> str | None:
    """Absolute path of the ``git`` executable on ``path`` (default ``$PATH``), or None."""
    return shutil.which("git", path=path if path is not None else os.environ.get("PATH", ""))


@dataclass
class GitRunner:
    """Runs git with the shadow repository's environment."""

    git: str
    git_dir: Path
    work_tree: Path
    index_file: Path
    home: Path
    pass_fds: tuple[int, ...] = ()
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        env.update(
            {
                "GIT_DIR": str(self.git_dir),
                "GIT_WORK_TREE": str(self.work_tree),
                "GIT_INDEX_FILE": str(self.index_file),
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": os.devnull,
                "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home),
                "GIT_TERMINAL_PROMPT": "0",
                "GIT_AUTHOR_NAME": AUTHOR[0],
                "GIT_AUTHOR_EMAIL": AUTHOR[1],
                "GIT_COMMITTER_NAME": AUTHOR[0],
                "GIT_COMMITTER_EMAIL": AUTHOR[1],
                "LC_ALL": "C",
            }
        )
        env.update(self.extra_env)
        return hardened_git_config(env)  # lovia's own git, as every git lovia starts

    def argv(self, args: Sequence[str], config: Sequence[tuple[str, str]] = ()) -> list[str]:
        argv = [self.git]
        for key, value in (*_CONFIG, *config):
            argv += ["-c", f"{key}={value}"]
        return [*argv, *args]

    async def run(
        self,
        *args: str,
        input: bytes | None = None,
        config: Sequence[tuple[str, str]] = (),
        check: bool = True,
        ok_codes: tuple[int, ...] = (0,),
    ) -> bytes:
        """Run ``git args``; return stdout. Raises :class:`GitError` on an unexpected exit."""
        code, out, err = await self.run_full(*args, input=input, config=config)
        if check and code not in ok_codes:
            text = err.decode("utf-8", "replace").strip()
            raise GitError(
                f"git {args[0] if args else ''} failed (exit {code}): {text[:2000]}",
                hint="The restore-point store may be damaged; deleting it loses only "
                "restore points.",
                returncode=code,
                stderr=text,
            )
        return out

    async def run_full(
        self,
        *args: str,
        input: bytes | None = None,
        config: Sequence[tuple[str, str]] = (),
    ) -> tuple[int, bytes, bytes]:
        proc = await asyncio.create_subprocess_exec(
            *self.argv(args, config),
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(self.work_tree),
            env=self.env(),
            pass_fds=self.pass_fds,
        )
        try:
            out, err = await proc.communicate(input)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await proc.wait()
            raise
        return proc.returncode if proc.returncode is not None else -1, out, err

    async def cat_blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        """Contents of the given blobs (one ``cat-file --batch`` process)."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        out = await self.run(
            "cat-file", "--batch", input="".join(f"{s}\n" for s in wanted).encode()
        )
        result: dict[str, bytes] = {}
        pos = 0
        for sha in wanted:
            nl = out.index(b"\n", pos)
            header = out[pos:nl].decode()
            pos = nl + 1
            parts = header.split()
            if len(parts) == 2 and parts[1] == "missing":
                raise GitError(f"object {sha} is missing from the restore-point store")
            size = int(parts[2])
            result[sha] = out[pos : pos + size]
            pos += size + 1
        return result


__all__ = ["AUTHOR", "GitError", "GitRunner", "find_git"]
