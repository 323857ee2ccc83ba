"""``BubblewrapExecutor``: run shell commands inside a bubblewrap (``bwrap``) sandbox.

The command guard is lexical and advisory; this executor is the hard boundary. Its
mount scopes are derived from the :class:`WorkspacePolicy`:

* an ``ask`` scope counts as open only for a command that went through approval
  (its decision was ``ask``); a command that ran without approval gets the closed scope;
* the workspace root is mounted read-write, or read-only when writes inside are closed;
* outside the root: when reads outside are closed only system directories (``/usr``,
  ``/bin``, ``/lib*``, ``/etc``, ``/opt``, ``/nix``) are visible, read-only, plus a
  private ``/tmp`` and an empty ``$HOME``; otherwise the whole file system is visible
  read-only (read-write only when writes outside are open) and ``TMPDIR`` is a
  private ``/var/tmp``;
* every existing path matched by ``denied_paths`` or by a read-``deny`` path rule is
  masked (files by an unreadable device node, directories by an empty read-only
  tmpfs) — including symlink targets and hard links found in the root; write-only
  ``deny`` rules make the path read-only;
* new pid/ipc/uts namespaces, no network unless ``network=True``, ``--die-with-parent``.

Opt in with ``Workspace.local(..., sandbox=True)`` or ``executor=BubblewrapExecutor()``.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from lovia.exceptions import UserError
from lovia.workspace._process import OutputCallback, run_argv
from lovia.workspace.decision import Decision
from lovia.workspace.decision import normalize as _normalize
from lovia.workspace.paths import relative_to_root
from lovia.workspace.patterns import _canonical_abs_pattern
from lovia.workspace.policy import WorkspacePolicy
from lovia.workspace.types import CommandResult
from lovia.workspace.venv_shims import shim_dirs

SYSTEM_PATHS: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix",
)
_available_cache: dict[str, bool] = {}


@dataclass(frozen=True)
class _Mask:
    path: str
    is_dir: bool
    read_only_only: bool = False


@dataclass(frozen=True)
class BubblewrapExecutor:
    """A :class:`~lovia.workspace.protocol.ShellExecutor` that runs commands under ``bwrap``."""

    network: bool = False
    bwrap: str = "bwrap"
    system_paths: tuple[str, ...] = SYSTEM_PATHS
    extra_ro_paths: tuple[str, ...] = ()
    scan_budget: int = 100_000

    # ------------------------------------------------------------------ availability

    @staticmethod
    def available(bwrap: str = "bwrap") -> bool:
        """True when ``bwrap`` exists and can create namespaces on this machine."""
        cached = _available_cache.get(bwrap)
        if cached is not None:
            return cached
        exe = shutil.which(bwrap)
        ok = False
        if exe is not None:
            try:
                probe = subprocess.run(
                    [exe, "--ro-bind", "/", "/", "--unshare-pid", "--dev", "/dev", "true"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=10,
                    check=False,
                )
                ok = probe.returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
        _available_cache[bwrap] = ok
        return ok

    @classmethod
    def if_available(cls, **kwargs: object) -> BubblewrapExecutor | None:
        """An executor when ``bwrap`` works here, else None."""
        executor = cls(**kwargs)  # type: ignore[arg-type]
        return executor if cls.available(executor.bwrap) else None

    @classmethod
    def require(cls, **kwargs: object) -> BubblewrapExecutor:
        executor = cls(**kwargs)  # type: ignore[arg-type]
        if not cls.available(executor.bwrap):
            raise UserError(
                "The bubblewrap sandbox is not available on this machine.",
                hint="Install it (Debian/Ubuntu: apt-get install bubblewrap) and make sure "
                "unprivileged user namespaces are enabled, or run without sandbox=True.",
            )
        return executor

    # ------------------------------------------------------------------ argv

    def wrap_argv(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        policy: WorkspacePolicy,
        root: Path,
        approved: bool | None = None,
    ) -> list[str]:
        """The full ``bwrap ... /bin/sh -c command`` argv for ``command``.

        ``approved`` says whether the command went through an ``ask`` approval; it only
        matters under ``write="ask"`` (unapproved commands get a read-only root).
        Computed from the policy when None.
        """
        if approved is None:
            from lovia.workspace.command_guard import decide_command

            approved = decide_command(policy, root, command, cwd, env=env) == "ask"
        exe = shutil.which(self.bwrap) or self.bwrap
        args: list[str] = [
            exe,
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        if not self.network:
            args.append("--unshare-net")
        # an 'ask' scope is open only for a command that went through approval
        read_outside = _open_if_approved(policy.read_outside, approved)
        write_outside = _open_if_approved(policy.write_outside, approved)
        if read_outside == "deny":
            for p in (*self.system_paths, *self._interpreter_paths(root)):
                args += _bind_system(p)
            if self.network:
                args += ["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
        else:
            args += ["--bind" if write_outside == "allow" else "--ro-bind", "/", "/"]
        args += ["--dev", "/dev", "--proc", "/proc"]
        if read_outside == "deny":
            args += ["--tmpfs", "/tmp"]  # a private /tmp; the host's stays hidden
        else:
            # the host's /tmp is part of the (read-only) outside; a private TMPDIR instead
            args += ["--tmpfs", "/var/tmp", "--setenv", "TMPDIR", "/var/tmp"]
        home = env.get("HOME")
        if read_outside == "deny" and home and relative_to_root(root, Path(home)) is None:
            args += ["--tmpfs", home]
        for p in self.extra_ro_paths:
            args += ["--ro-bind-try", p, p]
        # the venv wrappers that lead PATH (lovia.workspace.venv_shims) live outside the root
        for p in shim_dirs(env.get("PATH")):
            args += ["--ro-bind-try", p, p]
        root_rw = _open_if_approved(policy.write, approved) == "allow"
        args += ["--bind" if root_rw else "--ro-bind", str(root), str(root)]
        for mask in self.masks(policy, root, home=home):
            if mask.read_only_only:
                args += ["--ro-bind", mask.path, mask.path]
            elif mask.is_dir:
                args += ["--tmpfs", mask.path, "--remount-ro", mask.path]
            else:
                args += ["--ro-bind", "/dev/null", mask.path]
        args += ["--chdir", str(cwd), "--", "/bin/sh", "-c", command]
        return args

    @staticmethod
    def _interpreter_paths(root: Path) -> list[str]:
        """Prefixes of the root venv's interpreter that live outside the system dirs."""
        out: list[str] = []
        for name in (".venv", "venv"):
            python = root / name / "bin" / "python"
            if python.exists():
                real = Path(os.path.realpath(python))
                prefix = real.parent.parent
                if (
                    not any(prefix == Path(s) or Path(s) in prefix.parents for s in SYSTEM_PATHS)
                    and relative_to_root(root, prefix) is None
                ):
                    out.append(str(prefix))
        return out

    # ------------------------------------------------------------------ masks

    def masks(self, policy: WorkspacePolicy, root: Path, *, home: str | None = None) -> list[_Mask]:
        """Existing paths to hide (denied) or make read-only (write-only deny rules)."""
        found: dict[str, _Mask] = {}
        denied_inodes: set[tuple[int, int]] = set()

        def add(path: Path, *, read_only_only: bool = False) -> None:
            try:
                st = os.lstat(path)
            except OSError:
                return
            if stat.S_ISLNK(st.st_mode):
                try:
                    real = Path(os.path.realpath(path))
                    st = os.stat(real)
                except OSError:
                    return
                path = real
            key = str(path)
            if key in found and not found[key].read_only_only:
                return
            found[key] = _Mask(key, stat.S_ISDIR(st.st_mode), read_only_only)
            if not read_only_only and stat.S_ISREG(st.st_mode):
                denied_inodes.add((st.st_dev, st.st_ino))

        deny_read = list(policy.denied_paths) + [
            r.pattern
            for r in policy.path_rules
            if _normalize(r.action) == "deny" and "read" in r.ops
        ]
        deny_write_only = [
            r.pattern
            for r in policy.path_rules
            if _normalize(r.action) == "deny" and "read" not in r.ops and "write" in r.ops
        ]
        bare: list[str] = []
        for pattern in deny_read:
            for p in _pattern_paths(pattern, root):
                add(p)
            if "/" not in pattern.rstrip("/") and pattern.rstrip("/"):
                bare.append(pattern.rstrip("/"))
        for pattern in deny_write_only:
            for p in _pattern_paths(pattern, root):
                add(p, read_only_only=True)

        def judge(abs_path: Path) -> Decision:
            return policy.decide_path(
                rel=relative_to_root(root, abs_path), abs_posix=abs_path.as_posix(), op="read"
            )

        def judge_write(abs_path: Path) -> Decision:
            return policy.decide_path(
                rel=relative_to_root(root, abs_path), abs_posix=abs_path.as_posix(), op="write"
            )

        writes_possible = _normalize(policy.write) != "deny"

        def masked(path: Path) -> bool:
            return str(path) in found

        # walk the root: bare patterns, symlinks to denied targets, hard links to denied files
        for path, _st, is_link in _walk(root, self.scan_budget, skip_dir=masked):
            if is_link:
                try:
                    real = Path(os.path.realpath(path))
                except OSError:
                    continue
                if judge(real) == "deny":
                    add(real)
                continue
            if any(fnmatchcase(path.name, b) for b in bare) or judge(path) == "deny":
                add(path)
            elif writes_possible and judge_write(path) == "deny":
                add(path, read_only_only=True)
        if bare and home and _normalize(policy.read_outside) != "deny":
            for path, _, _ in _walk(Path(home), 20_000, max_depth=3):
                if any(fnmatchcase(path.name, b) for b in bare):
                    add(path)
        if denied_inodes:
            for path, st, is_link in _walk(root, self.scan_budget):
                if not is_link and st.st_nlink > 1 and (st.st_dev, st.st_ino) in denied_inodes:
                    add(path)
        ordered = sorted(found.values(), key=lambda m: (m.path.count("/"), m.path))
        kept: list[_Mask] = []
        hidden_dirs: list[str] = []
        for m in ordered:
            if any(m.path == d or m.path.startswith(d + "/") for d in hidden_dirs):
                continue
            kept.append(m)
            if m.is_dir and not m.read_only_only:
                hidden_dirs.append(m.path)
        return kept

    # ------------------------------------------------------------------ run

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float | None,  # noqa: ASYNC109 - ShellExecutor API
        policy: WorkspacePolicy,
        root: Path,
        on_output: OutputCallback | None = None,
        max_output_chars: int | None = None,
    ) -> CommandResult:
        argv = self.wrap_argv(command, cwd=cwd, env=env, policy=policy, root=root)
        return await run_argv(
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            limit=max_output_chars if max_output_chars is not None else 1 << 40,
            on_output=on_output,
        )


def _open_if_approved(decision: Decision, approved: bool) -> Decision:
    """``ask`` is open (allow) for an approved command and closed (deny) otherwise."""
    d = _normalize(decision)
    if d == "ask":
        return "allow" if approved else "deny"
    return d


def _bind_system(path: str) -> list[str]:
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    if os.path.exists(path):
        return ["--ro-bind", path, path]
    return []


def _pattern_paths(pattern: str, root: Path) -> Iterator[Path]:
    """Existing paths an absolute or root-relative deny pattern names (globs expanded)."""
    pat = pattern.rstrip("/")
    if not pat:
        return
    if pat.startswith(("/", "~")):
        canon = _canonical_abs_pattern(pat)
        if not canon:
            return
        for m in _safe_glob(canon):
            yield Path(m)
        return
    if "/" in pat:
        for m in _safe_glob(pat, root_dir=str(root)):
            yield root / m


def _safe_glob(pattern: str, *, root_dir: str | None = None) -> list[str]:
    if not any(c in pattern for c in "*?["):
        full = os.path.join(root_dir, pattern) if root_dir else pattern
        return [pattern] if os.path.lexists(full) else []
    with contextlib.suppress(OSError, ValueError, RecursionError):
        return _glob.glob(pattern, root_dir=root_dir, recursive=True, include_hidden=True)[:10_000]
    return []


def _walk(
    top: Path,
    budget: int,
    *,
    max_depth: int | None = None,
    skip_dir: Callable[[Path], bool] | None = None,
) -> Iterator[tuple[Path, os.stat_result, bool]]:
    """``(path, lstat, is_symlink)`` under ``top``; symlinked dirs are not followed."""
    stack: list[tuple[Path, int]] = [(top, 0)]
    seen = 0
    while stack:
        d, depth = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for entry in it:
                seen += 1
                if seen > budget:
                    return
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                is_link = stat.S_ISLNK(st.st_mode)
                p = Path(entry.path)
                yield p, st, is_link
                if (
                    stat.S_ISDIR(st.st_mode)
                    and (max_depth is None or depth + 1 < max_depth)
                    and not (skip_dir is not None and skip_dir(p))
                ):
                    stack.append((p, depth + 1))


__all__ = ["SYSTEM_PATHS", "BubblewrapExecutor"]
