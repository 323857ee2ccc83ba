"""What the guard needs to know about a git repository, found and cached cheaply.

* :func:`find_repo` — the repository ``git`` would use in a directory (``.git`` dir or
  ``gitdir:`` file, walking up), without running git.
* :func:`program_config` — keys of the repository's *own* configuration (local and
  worktree scope, includes followed) that make read commands run a program:
  ``diff.external``, diff drivers' ``command``/``textconv``, filters, ``gpg.program``,
  ``core.worktree``. The user's global and system configuration are the user's choice
  and not looked at.
* :func:`history_paths` — every path the repository's objects hold under a name: all
  refs, reflogs, the index and the special heads (``FETCH_HEAD``, ``ORIG_HEAD``...),
  from one ``git rev-list --objects``; bounded in time and size (over budget: unknown).

Results are cached per repository and keyed by the ``stat`` of the files that change
when they could (refs, reflogs, index, config); a key taken within half a second of a
change is not cached (coarse time stamps). git is run with the hardened configuration,
never from a directory inside the workspace, with a minimal environment.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lovia.workspace.git_env import hardened_git_config

HISTORY_SECONDS = 3.0
HISTORY_MAX_OBJECTS = 1_000_000
_CONFIG_SECONDS = 2.0
_SPECIAL_HEADS = ("FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD")
_PROGRAM_KEY_RE = re.compile(
    r"^(?:diff\.external|diff\..+\.(?:command|textconv)|filter\..+\.(?:clean|smudge|process)"
    r"|gpg\.program|gpg\..+\.program|core\.worktree)$",
    re.IGNORECASE,
)
_CACHE_MAX = 64
# a file changed this recently may change again within the file system's time stamp
# granularity without its stat changing: such a key is not cached
_RECENT_NS = 500_000_000


@dataclass(frozen=True)
class Repo:
    top: Path
    git_dir: Path
    common_dir: Path


def _valid_git_dir(git_dir: Path) -> Path | None:
    """``git_dir``'s common directory when it looks like a repository, else None."""
    common = git_dir
    try:
        text = (git_dir / "commondir").read_text().strip()
    except OSError:
        text = ""
    if text:
        common = (git_dir / text).resolve()
    if (
        (git_dir / "HEAD").is_file()
        and (common / "objects").is_dir()
        and (common / "refs").is_dir()
    ):
        return common
    return None


def find_repo(start: Path) -> Repo | None:
    """The repository whose work tree holds ``start`` (as git discovers it), if any."""
    d = Path(os.path.realpath(start))
    while True:
        dotgit = d / ".git"
        git_dir: Path | None = None
        if dotgit.is_dir():
            git_dir = dotgit
        elif dotgit.is_file():
            try:
                line = dotgit.read_text().strip()
            except OSError:
                line = ""
            if line.startswith("gitdir:"):
                git_dir = (d / line[len("gitdir:") :].strip()).resolve()
        if git_dir is not None:
            common = _valid_git_dir(git_dir)
            if common is not None:
                return Repo(top=d, git_dir=git_dir, common_dir=common)
        if d.parent == d:
            return None
        d = d.parent


def git_program(path: str | None, root: Path) -> str | None:
    """The ``git`` on ``path`` outside the workspace (the guard never runs workspace code)."""
    for entry in (path or os.defpath).split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        candidate = os.path.join(entry, "git")
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        real = Path(os.path.realpath(candidate))
        if real == root or root in real.parents:
            continue
        return candidate
    return None


def _env(path: str | None) -> dict[str, str]:
    env = {"PATH": path or os.defpath, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
    if "HOME" in os.environ:
        env["HOME"] = os.environ["HOME"]
    return hardened_git_config(env)


def _stat_key(paths: Iterable[Path]) -> tuple[tuple[str, int, int, int], ...] | None:
    """``(path, mtime_ns, size, inode)`` of each path; None when one changed just now."""
    now = time.time_ns()
    out = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append((str(p), -1, -1, -1))
            continue
        if now - st.st_mtime_ns < _RECENT_NS:
            return None
        out.append((str(p), st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)


def _tree_dirs(top: Path, limit: int = 2_000) -> list[Path]:
    out = [top]
    stack = [top]
    while stack and len(out) < limit:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        out.append(Path(entry.path))
                        stack.append(Path(entry.path))
        except OSError:
            continue
    return out


class _Cache:
    """A small thread-safe LRU of computed results, keyed by stat tuples."""

    def __init__(self) -> None:
        self._data: dict[object, object] = {}
        self._lock = threading.Lock()

    def get(self, key: object) -> object | None:
        with self._lock:
            value = self._data.pop(key, None)
            if value is not None:
                self._data[key] = value
            return value

    def put(self, key: object, value: object) -> None:
        with self._lock:
            self._data[key] = value
            while len(self._data) > _CACHE_MAX:
                self._data.pop(next(iter(self._data)))


_config_cache = _Cache()
_history_cache = _Cache()
_MISSING = ("",)


def program_config(repo: Repo, git: str, path: str | None) -> tuple[str, ...] | None:
    """Repository-scope config keys that run programs on reads; None when git failed.

    Cached by the config files' stat only when they include no other file (an included
    file may live anywhere, even in the work tree, and may not exist yet).
    """
    files = [repo.common_dir / "config", repo.git_dir / "config.worktree"]
    key = _stat_key(files)
    if key is not None:
        cached = _config_cache.get(("config", repo, key))
        if isinstance(cached, tuple):
            return None if cached == _MISSING else cached
    try:
        proc = subprocess.run(
            [git, "config", "--list", "--show-scope", "--includes", "-z"],
            cwd=repo.top,
            env=_env(path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_CONFIG_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode not in (0, 1):
        result: tuple[str, ...] = _MISSING
    else:
        fields = proc.stdout.decode("utf-8", "replace").split("\0")
        found: list[str] = []
        for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
            name = entry.split("\n", 1)[0]
            if scope not in ("local", "worktree"):
                continue
            if _PROGRAM_KEY_RE.match(name):
                found.append(name)
            if name.lower().startswith(("include.", "includeif.")):
                key = None  # the included file's changes are not in the key
        result = tuple(found)
    if key is not None:
        _config_cache.put(("config", repo, key), result)
    return None if result == _MISSING else result


def _history_key(repo: Repo) -> tuple[object, ...] | None:
    g, c = repo.git_dir, repo.common_dir
    files = [g / "HEAD", g / "index", g / "logs" / "HEAD", c / "packed-refs", c / "config"]
    files += [g / h for h in _SPECIAL_HEADS]
    files += _tree_dirs(c / "refs") + _tree_dirs(c / "logs") + _tree_dirs(c / "worktrees", 200)
    return _stat_key(files)


def history_paths(repo: Repo, git: str, path: str | None) -> frozenset[str] | None:
    """Every path the repository's reachable objects and index hold; None when unknown."""
    key = _history_key(repo)
    if key is not None:
        cached = _history_cache.get(("history", repo, key))
        if isinstance(cached, frozenset):
            return cached
    heads = [h for h in _SPECIAL_HEADS if (repo.git_dir / h).is_file()]
    argv = [git, "rev-list", "--objects", "--all", "--reflog", "--indexed-objects", *heads]
    try:
        proc = subprocess.Popen(
            argv,
            cwd=repo.top,
            env=_env(path),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None
    paths: set[str] = set()
    deadline = time.monotonic() + HISTORY_SECONDS
    timer = threading.Timer(HISTORY_SECONDS, proc.kill)
    timer.start()
    count = 0
    complete = True
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            count += 1
            if count > HISTORY_MAX_OBJECTS or time.monotonic() > deadline:
                complete = False
                proc.kill()
                break
            _sha, sep, name = raw.rstrip(b"\n").partition(b" ")
            if sep and name:
                paths.add(name.decode("utf-8", "surrogateescape"))
        rc = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if not complete or rc != 0:
        return None
    result = frozenset(paths)
    if key is not None:
        _history_cache.put(("history", repo, key), result)
    return result


_index_cache = _Cache()


def index_paths(repo: Repo, git: str, path: str | None) -> frozenset[str] | None:
    """The paths the index holds (what ``git diff``/``git grep`` without revisions print)."""
    key = _stat_key([repo.git_dir / "index"])
    if key is not None:
        cached = _index_cache.get(("index", repo, key))
        if isinstance(cached, frozenset):
            return cached
    try:
        proc = subprocess.run(
            [git, "ls-files", "-z", "--cached", "--full-name"],
            cwd=repo.top,
            env=_env(path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=HISTORY_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    result = frozenset(p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p)
    if key is not None:
        _index_cache.put(("index", repo, key), result)
    return result


def unsafe_git_env(env: Mapping[str, str]) -> str | None:
    """A variable in ``env`` that points git at other code or another repository."""
    for name in (
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_EXTERNAL_DIFF",
        "GIT_EXEC_PATH",
        "GIT_CONFIG_PARAMETERS",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_INDEX_FILE",
        "GIT_NAMESPACE",
    ):
        if env.get(name):
            return name
    return None


__all__ = [
    "HISTORY_MAX_OBJECTS",
    "HISTORY_SECONDS",
    "Repo",
    "find_repo",
    "git_program",
    "history_paths",
    "index_paths",
    "program_config",
    "unsafe_git_env",
]
