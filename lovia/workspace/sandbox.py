"""``BubblewrapExecutor``: run shell commands inside a bubblewrap (``bwrap``) sandbox.

The command guard is lexical and advisory; this executor is the hard boundary. Its
mount scopes are derived from the :class:`WorkspacePolicy`:

* an ``ask`` scope counts as open only for a command that went through approval
  (its decision was ``ask``); a command that ran without approval gets the closed scope;
* the workspace root is mounted read-write, or read-only when writes inside are closed;
  ``root_writable=True`` opens it for every command that may run (unless ``write`` is
  ``deny``): running a command is then permission to write inside the root, never outside;
* outside the root: when reads outside are closed only system directories (``/usr``,
  ``/bin``, ``/lib*``, ``/etc``, ``/opt``, ``/nix``) are visible, read-only, plus a
  private ``/tmp`` and an empty ``$HOME``; otherwise the whole file system is visible
  read-only (read-write only when writes outside are open), ``TMPDIR`` is a private
  ``/var/tmp`` and unix sockets outside the root are masked (the kernel's table of bound
  sockets, plus a walk of ``/tmp`` and ``$HOME`` that fails closed when the table is not
  whole); ``/run`` (the session bus, the docker socket...) is always an empty tmpfs;
* every existing path matched by ``denied_paths`` or by a read-``deny`` path rule is
  masked (files by an unreadable device node, directories by an empty read-only
  tmpfs) — including symlink targets and hard links found in the root; write-only
  ``deny`` rules make the path read-only; so do ``protected_paths`` (and the policy's
  own ``protected_paths``) for a command that ran without approval;
* new pid/ipc/uts namespaces, ``--die-with-parent``;
* network: ``network=True`` gives every command the host's network; otherwise a command
  runs in its own network namespace and reaches only ``allowed_domains``, through the
  proxy of :mod:`lovia.workspace.sandbox_proxy`. ``approved_network=True`` gives a
  command the guard classifies as a network command (:mod:`.command_guard.network`) the
  host's network when it went through approval.

Opt in with ``Workspace.local(..., sandbox=True)`` or ``executor=BubblewrapExecutor()``.
The proxy needs a live object: a workspace session calls :meth:`BubblewrapExecutor.session`
and closes it with the session (a bare :meth:`run` starts and stops one per command).

Long because the mount plan is one decision: every scope above is derived from the same
policy into one ordered ``bwrap`` argument list, and splitting it would scatter the boundary's
reasoning over several files.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import glob as _glob
import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from lovia.exceptions import UserError
from lovia.workspace._process import OutputCallback, run_argv
from lovia.workspace.allowed_hosts import AllowedHost, parse_allowlist
from lovia.workspace.decision import Decision, FileOp
from lovia.workspace.decision import normalize as _normalize
from lovia.workspace.paths import relative_to_root
from lovia.workspace.patterns import (
    _canonical_abs_pattern,
    _pattern_matches,
    may_cover_below,
    name_matcher,
    names_matcher,
    pattern_prefix,
)
from lovia.workspace.policy import WorkspacePolicy
from lovia.workspace.protected import DEFAULT_PROTECTED_PATHS
from lovia.workspace.sandbox_proxy import (
    BRIDGE,
    BRIDGE_PORT,
    ProxyServer,
    bridge_python,
    proxy_env,
)
from lovia.workspace.sandbox_scan import (
    SHARED_SCANS,
    Classify,
    Hit,
    ScanCache,
    bound_unix_sockets,
    linked_inodes,
)
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
PRIVATE_MOUNTS = ("/run", "/dev", "/proc")
"""Always the sandbox's own (a tmpfs, a minimal /dev, its own /proc): nothing to mask there."""
SANDBOX_PROXY_SOCKET = "/run/lovia/proxy.sock"
"""Where the host's proxy socket appears inside the sandbox (``/run`` is a private tmpfs)."""
_available_cache: dict[str, bool] = {}

Network = Literal["host", "proxy", "none"]
"""How one command reaches the network: the host's, the allowlist proxy, or not at all."""


@dataclass(frozen=True)
class _Mask:
    path: str
    is_dir: bool
    read_only_only: bool = False


@dataclass(frozen=True)
class _MaskPlan:
    masks: list[_Mask]
    hide_tmp: bool
    """The ``/tmp`` walk was cut short: the sandbox gets a private ``/tmp`` (fail closed)."""


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def _under(path: str, top: str) -> bool:
    top = top.rstrip("/") or "/"
    return path == top or path.startswith(top + "/") or top == "/"


@dataclass(frozen=True)
class BubblewrapExecutor:
    """A :class:`~lovia.workspace.protocol.ShellExecutor` that runs commands under ``bwrap``."""

    sandboxed: ClassVar[bool] = True
    """Commands are confined (what the generated system prompt says)."""
    kind: ClassVar[str] = "bubblewrap"

    network: bool = False
    """Every command gets the host's network (no allowlist)."""
    bwrap: str = "bwrap"
    system_paths: tuple[str, ...] = SYSTEM_PATHS
    extra_ro_paths: tuple[str, ...] = ()
    scan_budget: int = 100_000
    """Entries of the root's walk searched for hard links (a ``stat`` each); every entry is
    judged by name (denied, read-only, protected), past it too."""
    root_writable: bool = False
    """Every command that may run may write inside the root (not its denied, protected or
    write-denied paths) even when ``policy.write`` is ``ask``; ``deny`` still closes it."""
    protected_paths: tuple[str, ...] = ()
    """Patterns (as ``denied_paths``) mounted read-only for a command that ran without
    approval, on top of the policy's own ``protected_paths`` when it has them."""
    allowed_domains: tuple[str, ...] = ()
    """Hosts reachable through the proxy (:mod:`lovia.workspace.allowed_hosts` forms)."""
    approved_network: bool = False
    """An approved network command (``pip install``, ``git fetch``...) gets the host's network."""
    network_gate: bool = False
    """Run the proxy even with no allowed domains, so a refused request says how to allow it."""
    network_hint: str = "add it to allowed_domains"
    """The end of the proxy's refusal message."""
    home_scan_budget: int = 20_000
    home_scan_depth: int = 4
    """How far the ``$HOME`` walk looks for unix sockets; denied names in a visible home are
    found at any depth."""
    tmp_dir: str = "/tmp"
    """The host's shared temporary directory, walked for sockets when the outside is visible."""
    tmp_scan_budget: int = 20_000
    tmp_scan_depth: int = 4
    """How far the ``/tmp`` socket walk reads (outside visible); directories past it are
    hidden, and all of ``/tmp`` when more than ``max_unwalked_masks`` are."""
    max_unwalked_masks: int = 64
    _allowlist: tuple[AllowedHost, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("system_paths", "extra_ro_paths", "protected_paths", "allowed_domains"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        try:
            allowlist = parse_allowlist(self.allowed_domains)
        except ValueError as exc:
            raise UserError(
                f"Invalid allowed domain: {exc}",
                hint="Use example.com, *.example.com, host:port or an IP address.",
            ) from None
        object.__setattr__(self, "_allowlist", allowlist)

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

    @staticmethod
    def unavailable_reason(bwrap: str = "bwrap") -> str | None:
        """Why the sandbox cannot run here (None when it can)."""
        if BubblewrapExecutor.available(bwrap):
            return None
        if shutil.which(bwrap) is None:
            return f"bubblewrap ({bwrap}) is not installed"
        return f"bubblewrap ({bwrap}) cannot create namespaces here (user namespaces disabled?)"

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

    # ------------------------------------------------------------------ network

    @property
    def allowlist(self) -> tuple[AllowedHost, ...]:
        return self._allowlist

    def network_for(self, command: str, *, approved: bool) -> Network:
        """How ``command`` reaches the network when it runs (``approved``: through approval)."""
        if self.network:
            return "host"
        if approved and self.approved_network:
            from lovia.workspace.command_guard.network import uses_network

            if uses_network(command):
                return "host"
        if (self._allowlist or self.network_gate) and bridge_python() is not None:
            return "proxy"
        return "none"

    def approval_note(self, command: str) -> str:
        """What approving ``command`` means for its confinement (for an approval card)."""
        network = self.network_for(command, approved=True)
        if network == "host":
            if self.network:
                return "It runs in the sandbox, with network access."
            return "It runs in the sandbox; as a network command it gets network access once."
        if self._allowlist and network == "proxy":
            hosts = ", ".join(str(h) for h in self._allowlist)
            return f"It runs in the sandbox without network access, except to {hosts}."
        return "It runs in the sandbox without network access."

    def summary(self) -> str:
        """One sentence for the system prompt: what the sandbox enforces."""
        if self.network:
            net = "they have network access"
        elif self._allowlist:
            hosts = ", ".join(str(h) for h in self._allowlist)
            net = f"they reach the network only through an HTTP proxy, to {hosts}"
        else:
            net = "they have no network access"
        if self.approved_network and not self.network:
            net += " (a network command the user approves gets the network for that run)"
        return (
            "They run inside a sandbox: writes only inside the workspace, denied paths "
            f"hidden, {net}."
        )

    def session(self) -> BubblewrapSession:
        """A live executor for one workspace session: it owns the commands' proxies."""
        return BubblewrapSession(self)

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
        proxy_socket: str | None = None,
        scan_cache: ScanCache | None = None,
        placeholders: tuple[str, ...] = (),
        opened: tuple[str, ...] | None = None,
    ) -> list[str]:
        """The full ``bwrap ... /bin/sh -c command`` argv for ``command``.

        ``approved`` says whether the command went through an ``ask`` approval: it opens
        ``ask`` scopes, makes protected paths writable and, with ``approved_network``,
        gives a network command the network. Computed from the policy when None.
        ``proxy_socket`` is the host path of a started :class:`ProxyServer`; without one a
        command whose network is the proxy runs offline. ``placeholders`` are missing
        protected paths to hold with an empty read-only directory (see
        :meth:`missing_protected`; the caller removes them afterwards). ``opened`` are the
        protected paths an approved command may write (:func:`approved_targets`; computed
        when None).
        """
        if approved is None:
            approved = _approved(policy, root, command, cwd, env)
        network = self.network_for(command, approved=approved)
        if network == "proxy" and proxy_socket is None:
            network = "none"
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
        if network != "host":
            args.append("--unshare-net")
        # an 'ask' scope is open only for a command that went through approval
        read_outside = _open_if_approved(policy.read_outside, approved)
        write_outside = _open_if_approved(policy.write_outside, approved)
        if read_outside == "deny":
            for p in (*self.system_paths, *self._interpreter_paths(root)):
                args += _bind_system(p)
        else:
            args += ["--bind" if write_outside == "allow" else "--ro-bind", "/", "/"]
        args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"]
        if network == "host":
            for p in _resolver_dirs():
                args += ["--ro-bind-try", p, p]
        home = env.get("HOME")
        extra = self._rule_binds(policy, root, approved=approved)
        plan = self._mask_plan(
            policy,
            root,
            home=home,
            approved=approved,
            exempt=(
                (opened if opened is not None else approved_targets(policy, root, command, cwd))
                if approved
                else ()
            ),
            outside_visible=read_outside != "deny",
            extra_roots=tuple(Path(p) for p, _ in extra),
            scan_cache=scan_cache,
        )
        if read_outside == "deny":
            args += ["--tmpfs", "/tmp"]  # a private /tmp; the host's stays hidden
        elif plan.hide_tmp:
            # the walk was cut short, so what the host's /tmp holds is unknown: hide it
            args += ["--tmpfs", self.tmp_dir]
        if read_outside != "deny":
            # the host's /tmp is part of the (read-only) outside; a private TMPDIR instead
            args += ["--tmpfs", "/var/tmp", "--setenv", "TMPDIR", "/var/tmp"]
        rebound: list[str] = []
        if plan.hide_tmp and home and _under(home, self.tmp_dir):
            args += ["--bind" if write_outside == "allow" else "--ro-bind", home, home]
            rebound.append(home)
        if read_outside == "deny" and home and relative_to_root(root, Path(home)) is None:
            args += ["--tmpfs", home]
            # git's identity and settings (the user's own, read-only; protected besides)
            for name in USER_GIT_CONFIG:
                args += ["--ro-bind-try", os.path.join(home, name), os.path.join(home, name)]
        for p in self.extra_ro_paths:
            args += ["--ro-bind-try", p, p]
        # the venv wrappers that lead PATH (lovia.workspace.venv_shims) live outside the root
        shims = shim_dirs(env.get("PATH"))
        for p in shims:
            args += ["--ro-bind-try", p, p]
        rebound += [*self.extra_ro_paths, *shims]
        root_rw = self.root_is_writable(policy, approved=approved)
        args += ["--bind" if root_rw else "--ro-bind", str(root), str(root)]
        # a worktree's git dir and its common dir live outside the root: git needs them,
        # read-only unless the command was approved, and what can run code or point git
        # elsewhere stays read-only under every approval, as in a protected in-tree .git
        bound = {p for p, _ in extra}
        external = _external_git_dirs(root)
        git_dirs = [(d, approved and root_rw) for d in external if d not in bound]
        for path, writable in sorted([*extra, *git_dirs], key=lambda b: b[0].count("/")):
            args += ["--bind" if writable else "--ro-bind", path, path]
            if (path, writable) in git_dirs:
                # after the dir itself, before a deeper one: the worktree's own git dir lies in
                # its common dir's masked worktrees/ and is bound again, writable, after it
                args += _git_dir_guards(path, visible=(str(root), path))
        rebound += [str(root), *(p for p, _ in extra), *(d for d, _ in git_dirs)]
        for mask in plan.masks:
            if not os.path.lexists(mask.path):
                # Gone since the scan (a socket another program removed from /tmp): nothing to
                # hide, and bwrap cannot mount over a path that is not there.
                continue
            if (
                plan.hide_tmp
                and _under(mask.path, self.tmp_dir)
                and not any(_under(mask.path, top) for top in rebound)
            ):
                continue  # inside the private /tmp already
            if mask.read_only_only:
                args += ["--ro-bind", mask.path, mask.path]
            elif mask.is_dir:
                args += ["--tmpfs", mask.path, "--remount-ro", mask.path]
            else:
                args += ["--ro-bind", "/dev/null", mask.path]
        writable_git = {d for d, writable in git_dirs if writable}
        for path in placeholders if root_rw else ():
            if os.path.dirname(path) in external and os.path.dirname(path) not in writable_git:
                continue  # read-only there: nothing can be created, nor can bwrap create it
            if os.path.basename(path) in _FILE_PLACEHOLDERS:
                args += ["--ro-bind", "/dev/null", path]  # an empty file, which git can read
            else:
                args += ["--tmpfs", path, "--remount-ro", path]
        args += ["--chdir", str(cwd)]
        shell = ["/bin/sh", "-c", command]
        python = bridge_python() if network == "proxy" else None
        if network == "proxy" and proxy_socket is not None and python is not None:
            args += ["--dir", os.path.dirname(SANDBOX_PROXY_SOCKET)]
            args += ["--bind", proxy_socket, SANDBOX_PROXY_SOCKET]
            for name, value in proxy_env().items():
                args += ["--setenv", name, value]
            shell = [python, "-I", "-S", "-c", BRIDGE, SANDBOX_PROXY_SOCKET, str(BRIDGE_PORT)]
            shell += ["/bin/sh", "-c", command]
        return [*args, "--", *shell]

    def root_is_writable(self, policy: WorkspacePolicy, *, approved: bool) -> bool:
        write = _normalize(policy.write)
        if self.root_writable and write != "deny":
            return True
        return _open_if_approved(write, approved) == "allow"

    def missing_protected(self, policy: WorkspacePolicy, root: Path) -> list[str]:
        """Protected paths inside the root that do not exist yet, as literal paths (a bare
        name at the root; ``a/b`` with its first missing component): bubblewrap can only
        mount over what exists, so an unapproved command could create them (a
        ``.vscode/settings.json`` the next run obeys). A session holds each with an empty
        read-only directory while such a command runs. Of the built-in list only what tools
        obey while the agent works is held (:data:`HELD_WHEN_MISSING`): every placeholder is
        an empty directory the command (and ``ls``) sees. The executor's own patterns are all
        held."""
        out: list[str] = []
        for pattern in self.protected_patterns(policy):
            built_in = pattern in DEFAULT_PROTECTED_PATHS and pattern not in self.protected_paths
            if built_in and pattern not in HELD_WHEN_MISSING:
                continue
            pat = _subtree(pattern).strip("/")
            if not pat or pat.startswith("~") or any(c in pat for c in "*?[\\"):
                continue
            parts = [p for p in pat.split("/") if p not in ("", ".")]
            if not parts or ".." in parts:
                continue
            path = root
            for part in parts:
                path = path / part
                if not os.path.lexists(path):
                    out.append(str(path))
                    break
                if not path.is_dir() or path.is_symlink():
                    break  # exists (as a file, or a link the masks judge): nothing to hold
        return list(dict.fromkeys(out))

    def _rule_binds(
        self, policy: WorkspacePolicy, root: Path, *, approved: bool
    ) -> list[tuple[str, bool]]:
        """Existing absolute paths that ``allow`` rules open outside the root (the editor's
        other folders, ``Workspace.local(writable=...)``): ``(path, writable)``, read-only
        unless a write rule opens it (``ask`` as the root's writes are opened)."""
        reads: dict[str, bool] = {}
        for rule in policy.path_rules:
            pattern = rule.pattern.rstrip("/")
            if _normalize(rule.action) == "deny" or not pattern.startswith(("/", "~")):
                continue
            path = _canonical_abs_pattern(pattern) if not any(c in pattern for c in "*?[") else ""
            if not path or not os.path.exists(path) or relative_to_root(root, Path(path)):
                continue
            # judged like the file tools judge the path: first matching rule, denied paths
            write = policy.decide_path(rel=None, abs_posix=path, op="write")
            read = policy.decide_path(rel=None, abs_posix=path, op="read")
            writable = write == "allow" or (write == "ask" and (approved or self.root_writable))
            if writable or read == "allow" or (read == "ask" and approved):
                reads[path] = writable
        return sorted(reads.items(), key=lambda kv: (kv[0].count("/"), kv[0]))

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

    def masks(
        self,
        policy: WorkspacePolicy,
        root: Path,
        *,
        home: str | None = None,
        approved: bool = True,
        outside_visible: bool = False,
        extra_roots: tuple[Path, ...] = (),
        scan_cache: ScanCache | None = None,
        exempt: tuple[str, ...] | None = None,
    ) -> list[_Mask]:
        """Existing paths to hide (denied; unix sockets outside when the outside is visible)
        or make read-only (write-only deny rules; protected paths).

        A protected path stays read-only for an approved command too, unless it is one the
        command names as something it writes (``exempt``: what its approval card warned
        about); ``exempt=None`` with ``approved`` opens them all (a caller that cannot tell).
        A git directory keeps only what can run code or redirect git read-only (its config,
        hooks, info, modules and worktrees), so git itself can commit and fetch.

        The walks reuse ``scan_cache`` (a session's) for directories that did not change."""
        return self._mask_plan(
            policy,
            root,
            home=home,
            approved=approved,
            outside_visible=outside_visible,
            extra_roots=extra_roots,
            scan_cache=scan_cache,
            exempt=exempt,
        ).masks

    def _mask_plan(
        self,
        policy: WorkspacePolicy,
        root: Path,
        *,
        home: str | None,
        approved: bool,
        outside_visible: bool,
        extra_roots: tuple[Path, ...],
        scan_cache: ScanCache | None,
        exempt: tuple[str, ...] | None,
    ) -> _MaskPlan:
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
            elif not read_only_only and stat.S_ISDIR(st.st_mode):
                denied_inodes.update(linked_inodes(key))  # ~/.ssh/id_rsa linked into the root

        deny_read = list(policy.denied_paths) + [
            r.pattern
            for r in policy.path_rules
            if _normalize(r.action) == "deny" and "read" in r.ops
        ]
        read_only = [
            r.pattern
            for r in policy.path_rules
            if _normalize(r.action) == "deny" and "read" not in r.ops and "write" in r.ops
        ]
        protected = [_subtree(p) for p in self.protected_patterns(policy)]

        def bare_of(patterns: list[str]) -> list[str]:
            return [p.rstrip("/") for p in patterns if p.rstrip("/") and _bare(p)]

        bare, bare_read_only, bare_protected = bare_of(deny_read), bare_of(read_only), []
        for pattern in deny_read:
            for p in _pattern_paths(pattern, root):
                add(p)
        open_all = approved and exempt is None
        opened = tuple(exempt or ())

        def held_open(path: str) -> bool:
            return open_all or any(_overlaps(path, e) for e in opened)

        def protect(path: Path) -> None:
            if held_open(str(path)):
                return
            if path.name.casefold() == ".git" and path.is_dir() and not path.is_symlink():
                for child in GIT_DIR_GUARDED:
                    if not held_open(str(path / child)):
                        add(path / child, read_only_only=True)
                return
            add(path, read_only_only=True)

        for pattern in read_only:
            for p in _pattern_paths(pattern, root):
                add(p, read_only_only=True)
        for pattern in protected:
            for p in _pattern_paths(pattern, root):
                protect(p)
        bare_protected = bare_of(protected)
        writes_possible = _normalize(policy.write) != "deny"
        write_denials = any(
            _normalize(r.action) == "deny" and "write" in r.ops for r in policy.path_rules
        )
        root_prefix = str(root).rstrip("/") + "/"

        def rel_of(path: str) -> str | None:
            return path[len(root_prefix) :] if path.startswith(root_prefix) else None

        def judge(path: str, op: FileOp) -> Decision:
            return policy.decide_path(rel=rel_of(path), abs_posix=path, op=op)

        # In the walk a bare pattern is tested against the entry's own name only (its parents
        # were tested when they were visited), all of them at once by one compiled match; the
        # policy judges what is left, only in folders a pattern with a path can reach. Both
        # use the policy's own matching, so the walk hides exactly what the file tools refuse.
        narrow = dataclasses.replace(
            policy, denied_paths=tuple(p for p in policy.denied_paths if not _bare(p))
        )
        narrow_needed = bool(narrow.denied_paths or narrow.path_rules)
        protected_paths = [p for p in protected if not _bare(p)]
        denied_name = name_matcher(bare, fold=True)
        read_only_name = name_matcher(bare_read_only, fold=True)
        protected_name = name_matcher(bare_protected, fold=False)
        narrow_below = _FolderFilter(
            [p for p in deny_read if not _bare(p)], root_prefix, fold=True, outside=True
        )
        protected_below = _FolderFilter(protected_paths, root_prefix, fold=False, outside=False)

        def classify(path: str, name: str, st: os.stat_result) -> tuple[str, Hit] | None:
            """Bare patterns, symlinks to denied targets, every pattern the policy judges;
            protected paths are marked for every command (only unapproved ones apply them)."""
            if stat.S_ISLNK(st.st_mode):
                try:
                    real = os.path.realpath(path)
                except OSError:
                    return None
                return (real, "deny") if judge(real, "read") == "deny" else None
            rel = rel_of(path)
            if rel is None and stat.S_ISSOCK(st.st_mode):
                return path, "deny"  # a socket in another bound folder: a way out
            return by_name(path, name, rel)

        def by_name(path: str, name: str, rel: str | None) -> tuple[str, Hit] | None:
            folder = path.rpartition("/")[0]
            if denied_name(name) or (
                narrow_needed
                and narrow_below(folder)
                and narrow.decide_path(rel=rel, abs_posix=path, op="read") == "deny"
            ):
                return path, "deny"
            if not writes_possible:
                return None
            if read_only_name(name) or (write_denials and judge(path, "write") == "deny"):
                return path, "read-only"
            if protected_name(name) or (
                protected_below(folder)
                and any(_pattern_matches(p, rel, path) for p in protected_paths)
            ):
                return path, "protected"
            return None

        def classify_entry(entry: os.DirEntry[str]) -> tuple[str, Hit] | None:
            """:func:`classify` from the listing: a ``stat`` only for a link and for what is
            neither file nor folder (a socket)."""
            path = entry.path
            try:
                plain = entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)
                if not plain:
                    return classify(path, entry.name, os.lstat(path))
            except OSError:
                return None
            return by_name(path, entry.name, rel_of(path))

        names_denied = names_matcher(
            [*bare, *(bare_read_only if writes_possible else ())], fold=True
        )
        names_protected = names_matcher(bare_protected if writes_possible else [], fold=False)

        def may_hit(folder: str, names: list[str]) -> set[int] | None:
            """The names :func:`by_name` may hit, from two searches over the whole folder's
            names; None where a pattern with a path or a write rule judges every entry."""
            if (narrow_needed and narrow_below(folder)) or (
                writes_possible and (write_denials or protected_below(folder))
            ):
                return None
            denied_hits, protected_hits = names_denied(names), names_protected(names)
            if denied_hits is None or protected_hits is None:
                return None
            return denied_hits | protected_hits

        def home_denied(entry: os.DirEntry[str]) -> tuple[str, Hit] | None:
            return (entry.path, "deny") if denied_name(entry.name) else None

        def classify_home(path: str, name: str, st: os.stat_result) -> tuple[str, Hit] | None:
            socket_file = outside_visible and stat.S_ISSOCK(st.st_mode)
            return (path, "deny") if socket_file or denied_name(name) else None

        def classify_tmp(path: str, name: str, st: os.stat_result) -> tuple[str, Hit] | None:
            # a unix socket is a way out of the sandbox (tmux, ssh-agent, X11, a bus)
            return (path, "deny") if stat.S_ISSOCK(st.st_mode) and rel_of(path) is None else None

        def on_hit(path: str, hit: Hit) -> None:
            if hit == "protected":
                protect(Path(path))
                return
            add(Path(path), read_only_only=hit != "deny")

        def masked(path: str) -> bool:
            return path in found and not found[path].read_only_only

        cache = scan_cache if scan_cache is not None else ScanCache()
        judged = (policy, str(root), extra_roots, tuple(protected))
        linked: list[tuple[str, int, int]] = []
        for top in (root, *extra_roots):
            linked += cache.scan(
                ("tree", *judged),
                str(top),
                classify,
                on_hit,
                masked,
                budget=self.scan_budget,
                rest=classify_entry,
                may_hit=may_hit,
            ).linked
        if home and _normalize(policy.read_outside) != "deny" and (bare or outside_visible):
            # the home is visible to this command: every denied name in it is found (past the
            # depth and budget of the socket walk too), the bound tops are walked on their own
            tops = {str(t).rstrip("/") for t in (root, *extra_roots)}
            key: object = ("home", tuple(bare), outside_visible, tuple(sorted(tops)))
            cache.scan(
                key,
                home,
                classify_home,
                on_hit,
                lambda d: masked(d) or d in tops,
                budget=self.home_scan_budget,
                max_depth=self.home_scan_depth,
                rest=home_denied if outside_visible and bare else None,
            )
        hide_tmp = False
        if outside_visible:
            bound, whole = self.socket_table()
            for path in bound:
                real = os.path.realpath(path)
                private = any(_under(real, d) for d in PRIVATE_MOUNTS)
                if not private and rel_of(real) is None and _is_socket(real):
                    add(Path(real))
            hide_tmp = self._walk_tmp(
                cache,
                ("tmp", str(root), extra_roots),
                classify_tmp,
                on_hit,
                masked,
                tops=[str(t) for t in (root, *extra_roots)] + ([home] if home else []),
                hide=None if whole else lambda d: add(Path(d)),
            )
        for path, dev, ino in linked:
            if (dev, ino) in denied_inodes:  # a hard link to a denied file
                add(Path(path))
        ordered = sorted(found.values(), key=lambda m: (m.path.count("/"), m.path))
        visible_tops = [str(t).rstrip("/") for t in (root, *extra_roots)]

        def hidden_anyway(path: str) -> bool:
            """Outside what the sandbox shows: a read-only bind would *reveal* the path."""
            inside = any(path == t or path.startswith(t + "/") for t in visible_tops)
            return not outside_visible and not inside

        kept: list[_Mask] = []
        hidden_dirs: list[str] = []
        for m in ordered:
            if any(m.path == d or m.path.startswith(d + "/") for d in hidden_dirs):
                continue
            if m.read_only_only and hidden_anyway(m.path):
                continue
            kept.append(m)
            if m.is_dir and not m.read_only_only:
                hidden_dirs.append(m.path)
        return _MaskPlan(kept, hide_tmp)

    def _walk_tmp(
        self,
        cache: ScanCache,
        key: object,
        classify: Classify,
        on_hit: Callable[[str, Hit], None],
        masked: Callable[[str], bool],
        *,
        tops: list[str],
        hide: Callable[[str], None] | None,
    ) -> bool:
        """Find the unix sockets under ``/tmp`` (those bound in another network namespace,
        a container's, are not in the kernel's table). With ``hide`` (the table was not
        whole) the walk fails closed: a directory it did not read is hidden, and when that
        is too many directories, or one that holds the root (or another bound top), all of
        ``/tmp`` is (returns True).

        The tops are walked on their own, so this walk does not enter them."""
        inside = {t.rstrip("/") for t in tops}
        walk = cache.scan(
            key,
            self.tmp_dir,
            classify,
            on_hit,
            lambda d: masked(d) or d in inside,
            budget=self.tmp_scan_budget,
            max_depth=self.tmp_scan_depth,
        )
        if hide is None or not walk.unwalked:
            return False
        if len(walk.unwalked) > self.max_unwalked_masks:
            return True
        if any(_under(top, d) for d in walk.unwalked for top in inside):
            return True
        for d in walk.unwalked:
            hide(d)
        return False

    @staticmethod
    def socket_table() -> tuple[list[str], bool]:
        """The bound unix sockets the kernel lists (a seam for tests)."""
        return bound_unix_sockets()

    def protected_patterns(self, policy: WorkspacePolicy) -> tuple[str, ...]:
        """The executor's protected patterns plus the policy's (when it has the field)."""
        own = tuple(getattr(policy, "protected_paths", ()) or ())
        return tuple(dict.fromkeys((*self.protected_paths, *own)))

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
        input: bytes | None = None,
    ) -> CommandResult:
        """Run one command; its proxy (if any) lives as long as the command."""
        live = self.session()
        try:
            return await live.run(
                command,
                cwd=cwd,
                env=env,
                timeout=timeout,
                policy=policy,
                root=root,
                on_output=on_output,
                max_output_chars=max_output_chars,
                input=input,
            )
        finally:
            await live.aclose()


@dataclass
class PreparedCommand:
    """The argv of one sandboxed command and the proxy it holds until :meth:`close`."""

    argv: list[str]
    network: Network
    proxy: ProxyServer | None = None
    _owner: BubblewrapSession | None = field(default=None, repr=False)
    placeholders: tuple[str, ...] = ()
    _closed: bool = field(default=False, repr=False)

    @property
    def refusals(self) -> list[str]:
        return list(self.proxy.refusals) if self.proxy is not None else []

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        _PLACEHOLDERS.release(self.placeholders)
        if self.proxy is not None:
            await self.proxy.close()
            if self._owner is not None:
                self._owner.proxies.discard(self.proxy)


logger = logging.getLogger("lovia.workspace.sandbox")

SETUP_ATTEMPTS = 3
"""How often a command is planned and started when bubblewrap cannot set its view up."""


def _setup_failed(result: CommandResult) -> bool:
    """bubblewrap failed before the command started: a path the plan masks or binds (another
    session's socket, a folder a build just removed) is gone, so a mount point cannot be made
    in a read-only parent. Nothing of the command ran; a fresh plan no longer names the path."""
    err = result.stderr
    return (
        result.exit_code == 1
        and not result.stdout
        and err.startswith("bwrap: Can't ")
        and err.count("\n") <= 1
    )


class _SetupGate:
    """Live output of one attempt, held back while it can still be bubblewrap's own set-up
    error (:func:`_setup_failed`): an attempt that is planned and started again must not have
    shown that error to the user. Anything else (stdout, other stderr, a second line) opens
    the gate at once, so a command's output streams as before."""

    _PREFIX = "bwrap: Can't "

    def __init__(self, listener: OutputCallback) -> None:
        self.listener = listener
        self.held: list[tuple[str, str]] = []
        self.open = False

    def __call__(self, stream: str, text: str) -> None:
        if self.open:
            self.listener(stream, text)
            return
        self.held.append((stream, text))
        seen = "".join(t for _, t in self.held)
        if len(seen) < len(self._PREFIX):
            maybe_setup = self._PREFIX.startswith(seen)
        else:
            maybe_setup = seen.startswith(self._PREFIX) and seen.count("\n") <= 1
        if stream != "stderr" or not maybe_setup:
            self.release()

    def release(self) -> None:
        self.open = True
        held, self.held = self.held, []
        for stream, text in held:
            self.listener(stream, text)


class BubblewrapSession:
    """One workspace session's live side of a :class:`BubblewrapExecutor`: it starts a
    proxy per command that needs one and closes them all with the session."""

    sandboxed: ClassVar[bool] = True

    def __init__(self, executor: BubblewrapExecutor) -> None:
        self.executor = executor
        self.proxies: set[ProxyServer] = set()
        self.scan_cache = SHARED_SCANS
        self._closed = False

    async def prepare(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        policy: WorkspacePolicy,
        root: Path,
        approved: bool | None = None,
    ) -> PreparedCommand:
        if approved is None:
            approved = _approved(policy, root, command, cwd, env)
        network = self.executor.network_for(command, approved=approved)
        held: tuple[str, ...] = ()
        # what an approved command's card named: judged once, for the placeholders and masks
        opened = approved_targets(policy, root, command, cwd) if approved else ()
        if self.executor.root_is_writable(policy, approved=approved):
            missing = self.executor.missing_protected(policy, root)
            missing = [m for m in missing if not any(_overlaps(m, e) for e in opened)]
            if approved:  # the external git dirs are writable: hold what they lack
                missing += missing_git_guards(root)
            held = _PLACEHOLDERS.hold(missing, root)
        proxy: ProxyServer | None = None
        if network == "proxy" and not self._closed:
            proxy = await ProxyServer(
                self.executor.allowlist, hint=self.executor.network_hint
            ).start()
            self.proxies.add(proxy)
        elif network == "proxy":
            network = "none"
        try:
            # the mask walk reads the tree: off the event loop (a cold walk of a big repository
            # takes a while; later ones reuse the cache)
            argv = await asyncio.to_thread(
                functools.partial(
                    self.executor.wrap_argv,
                    command,
                    cwd=cwd,
                    env=env,
                    policy=policy,
                    root=root,
                    approved=approved,
                    proxy_socket=proxy.socket_path if proxy is not None else None,
                    scan_cache=self.scan_cache,
                    placeholders=held,
                    opened=opened,
                )
            )
        except BaseException:
            if proxy is not None:
                self.proxies.discard(proxy)
                await proxy.close()
            _PLACEHOLDERS.release(held)
            raise
        return PreparedCommand(argv, network, proxy, self, held)

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
        input: bytes | None = None,
    ) -> CommandResult:
        for attempt in range(1, SETUP_ATTEMPTS + 1):
            prepared = await self.prepare(command, cwd=cwd, env=env, policy=policy, root=root)
            gate = _SetupGate(on_output) if on_output is not None else None
            try:
                result = await run_argv(
                    prepared.argv,
                    cwd=cwd,
                    env=env,
                    timeout=timeout,
                    limit=max_output_chars if max_output_chars is not None else 1 << 40,
                    on_output=gate,
                    input=input,
                )
            finally:
                await prepared.close()
            if attempt == SETUP_ATTEMPTS or not _setup_failed(result):
                if gate is not None:
                    gate.release()
                break
            logger.info("sandbox.setup_raced (planned again): %s", result.stderr.strip())
        refusals = list(dict.fromkeys(prepared.refusals))
        if refusals:
            stderr = result.stderr
            if stderr and not stderr.endswith("\n"):
                stderr += "\n"
            stderr += "\n".join(refusals) + "\n"
            result = result.model_copy(update={"stderr": stderr})
        return result

    async def aclose(self) -> None:
        """Close every proxy still open (background commands included); idempotent."""
        self._closed = True
        for proxy in list(self.proxies):
            await proxy.close()
        self.proxies.clear()


HELD_WHEN_MISSING: tuple[str, ...] = (".vscode", ".lovia", ".github/workflows")
"""Built-in protected paths that a sandbox holds with a placeholder when they do not exist:
editor settings the editor reloads at once, lovia's own skills and memory, CI workflows. The
other built-in ones are still protected from the file tools and from writes a command names."""

USER_GIT_CONFIG: tuple[str, ...] = (".gitconfig", ".config/git")
"""Kept visible (read-only) in a hidden home: without them ``git commit`` has no identity."""

GIT_DIR_GUARDED: tuple[str, ...] = (
    "config",
    "config.worktree",
    "hooks",
    "info",
    "modules",
    "worktrees",
)
"""What stays read-only of a protected git directory: the parts that can run programs or point
git elsewhere. Objects, refs and the index stay writable, so git itself works."""

WORKTREE_GIT_GUARDED: tuple[str, ...] = ("commondir", "gitdir")
"""What else stays read-only of a worktree's own git dir (outside its root): the files that
point git at the common dir and at the work tree."""


def approved_targets(
    policy: WorkspacePolicy, root: Path, command: str, cwd: Path
) -> tuple[str, ...]:
    """The protected paths an approved command named as something it writes (absolute): the
    only ones its sandbox opens."""
    from lovia.workspace.protected import protected_command_targets

    shown = protected_command_targets(policy, root, command, str(cwd))
    return tuple(str(root / t) if not os.path.isabs(t) else t for t in shown)


def _overlaps(path: str, target: str) -> bool:
    """``path`` is ``target``, lies below it, or holds it."""
    a, b = path.rstrip("/"), target.rstrip("/")
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _approved(
    policy: WorkspacePolicy, root: Path, command: str, cwd: Path, env: Mapping[str, str]
) -> bool:
    """A command runs approved when its decision is ``ask`` (the tool layer asked first)."""
    from lovia.workspace.command_guard import decide_command

    return decide_command(policy, root, command, cwd, env=env) == "ask"


def _external_git_dirs(root: Path) -> list[str]:
    """The git dir of a worktree whose ``.git`` file at the root points outside it, and its
    common dir — only when that git dir names this root back (``gitdir`` file, written by
    ``git worktree add``): a ``.git`` file planted in the root must not open other folders."""
    try:
        text = (root / ".git").read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:  # no .git, or a directory: nothing outside
        return []
    if not text.startswith("gitdir:"):
        return []
    gitdir = Path(os.path.realpath(root / text[len("gitdir:") :].strip()))
    try:
        back = (gitdir / "gitdir").read_text(encoding="utf-8").strip()
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return []
    if os.path.realpath(back) != os.path.realpath(root / ".git"):
        return []
    dirs = [gitdir, Path(os.path.realpath(gitdir / common))]
    return [str(d) for d in dict.fromkeys(dirs) if d.is_dir() and relative_to_root(root, d) is None]


def _git_dir_guards(git_dir: str, *, visible: tuple[str, ...]) -> list[str]:
    """bwrap arguments that make an external git dir's guarded entries read-only (those that
    exist; :func:`missing_git_guards` holds the missing ones). A guarded entry that is a link
    is guarded where it leads, when that is in the git dir or another of the ``visible``
    tops; elsewhere it leads outside, which the outside's own mounts judge."""
    out: list[str] = []
    tops = (git_dir, *visible)
    for name in (*GIT_DIR_GUARDED, *WORKTREE_GIT_GUARDED):
        path = os.path.join(git_dir, name)
        if not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        if os.path.exists(real) and any(_under(real, t) and real != t for t in tops):
            out += ["--ro-bind", real, real]
    return out


def missing_git_guards(root: Path) -> list[str]:
    """Guarded entries the external git dirs of ``root`` lack, which a command allowed to
    write there could create (a ``hooks/`` the next checkout runs, a ``config.worktree`` git
    reads once ``extensions.worktreeConfig`` is on): each is held by a placeholder, an empty
    file for ``config.worktree`` (a directory there would stop git)."""
    out: list[str] = []
    for git_dir in _external_git_dirs(root):
        for name in ("config.worktree", "hooks", "info", "modules"):
            path = os.path.join(git_dir, name)
            if not os.path.lexists(path):
                out.append(path)
    return out


_FILE_PLACEHOLDERS = frozenset({"config.worktree"})
"""Placeholders held as an empty file rather than an empty directory."""


class _Placeholders:
    """The empty directories this process's sandboxes hold at missing protected paths, counted
    so that one command ending never removes what another still mounts over."""

    def __init__(self) -> None:
        self._count: dict[str, int] = {}

    def hold(self, paths: list[str], root: Path) -> tuple[str, ...]:
        """Count ``paths`` that are missing — and every placeholder under ``root`` another
        command still holds (it exists now, as that command's empty directory)."""
        prefix = str(root).rstrip("/") + "/"
        live = [p for p in self._count if p.startswith(prefix)]
        held = []
        for path in dict.fromkeys([*paths, *live]):
            if path in self._count or not os.path.lexists(path):
                self._count[path] = self._count.get(path, 0) + 1
                held.append(path)
        return tuple(held)

    def release(self, paths: tuple[str, ...]) -> None:
        for path in paths:
            left = self._count.get(path, 0) - 1
            if left > 0:
                self._count[path] = left
                continue
            self._count.pop(path, None)
            with contextlib.suppress(OSError):
                if os.path.basename(path) not in _FILE_PLACEHOLDERS:
                    os.rmdir(path)  # only if still the empty directory bubblewrap made
                elif stat.S_ISREG((st := os.lstat(path)).st_mode) and st.st_size == 0:
                    os.unlink(path)  # only if still the empty file bubblewrap made


_PLACEHOLDERS = _Placeholders()


def _resolver_dirs() -> list[str]:
    """Where ``/etc/resolv.conf`` really lives when that is under ``/run`` (resolved,
    resolvconf, NetworkManager): name lookups need it inside the private ``/run``."""
    dirs = ["/run/systemd/resolve"]
    with contextlib.suppress(OSError):
        real = os.path.realpath("/etc/resolv.conf")
        if real.startswith("/run/"):
            dirs.append(os.path.dirname(real))
    return list(dict.fromkeys(dirs))


def _subtree(pattern: str) -> str:
    """``.vscode/**`` protects the directory itself: one read-only mount, not one per file."""
    p = pattern.rstrip("/")
    while p.endswith("/**"):
        p = p[:-3]
    return p or pattern


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
    """Existing paths an absolute or root-relative deny pattern names (globs expanded; a
    root-relative ``**`` is left to the root walk, which judges every entry anyway)."""
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
    if "/" in pat and "**" not in pat:
        for m in _safe_glob(pat, root_dir=str(root)):
            yield root / m


def _safe_glob(pattern: str, *, root_dir: str | None = None) -> list[str]:
    if not any(c in pattern for c in "*?["):
        full = os.path.join(root_dir, pattern) if root_dir else pattern
        return [pattern] if os.path.lexists(full) else []
    with contextlib.suppress(OSError, ValueError, RecursionError):
        return _glob.glob(pattern, root_dir=root_dir, recursive=True, include_hidden=True)[:10_000]
    return []


class _FolderFilter:
    """Whether any of some path patterns (relative with a ``/``, or absolute) can cover an entry
    of a folder, by their literal starts, judged once per folder: the policy's full judgement
    then runs only where it can say something. With ``outside`` a folder outside the root is
    always judged (the policy's defaults for the outside apply there)."""

    def __init__(self, patterns: list[str], root_prefix: str, *, fold: bool, outside: bool) -> None:
        self._rel: list[str] = []
        self._abs: list[str] = []
        for pattern in patterns:
            prefix = pattern_prefix(pattern.rstrip("/"), fold=fold)
            if prefix is not None:
                (self._abs if pattern.startswith(("/", "~")) else self._rel).append(prefix)
        self._root = root_prefix
        self._fold = fold
        self._outside = outside
        self._seen: dict[str, bool] = {}

    def __call__(self, folder: str) -> bool:
        held = self._seen.get(folder)
        if held is None:
            held = self._seen[folder] = self._judge(folder)
        return held

    def _judge(self, folder: str) -> bool:
        inside = folder + "/" == self._root or folder.startswith(self._root)
        if not inside:
            return self._outside or bool(self._abs)
        rel = folder[len(self._root) :] if folder.startswith(self._root) else ""
        absolute = folder
        if self._fold:
            rel, absolute = rel.casefold(), absolute.casefold()
        return any(may_cover_below(p, rel) for p in self._rel) or any(
            may_cover_below(p, absolute) for p in self._abs
        )


def _bare(pattern: str) -> bool:
    """A pattern without ``/`` (not absolute): it matches a name at any depth."""
    return "/" not in pattern.rstrip("/") and not pattern.startswith(("/", "~"))


__all__ = ["SYSTEM_PATHS", "BubblewrapExecutor", "BubblewrapSession", "PreparedCommand"]
