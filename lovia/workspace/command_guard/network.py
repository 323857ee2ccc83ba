"""Which commands need the network: downloaders, remote shells, package installs, git remotes.

The sandbox uses it to give an *approved* network command (``pip install requests`` the
user approved at a card) the network for that one run; everything else only reaches the
allowlist. It reads the invocations the guard already parsed (wrappers, ``sh -c`` payloads
and ``python -m pip`` unwrapped), so ``env X=1 npm ci`` and ``bash -c 'curl ...'`` count.
"""

from __future__ import annotations

from lovia.workspace.command_guard.dispatch import invocations

ANY = frozenset({"*"})
"""Every use of the program is a network use."""

NETWORK_PROGRAMS: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        (
            "curl",
            "wget",
            "aria2c",
            "http",
            "https",
            "xh",
            "ssh",
            "scp",
            "sftp",
            "rsync",
            "ftp",
            "telnet",
            "nc",
            "ncat",
            "netcat",
            "socat",
            "ping",
            "dig",
            "nslookup",
            "host",
            "npx",
            "bunx",
            "uvx",
            "pipx",
            "deno",
            "gh",
            "glab",
            "aws",
            "gcloud",
            "az",
            "kubectl",
            "helm",
            "mvn",
            "gradle",
            "gradlew",
        ),
        ANY,
    ),
    "git": frozenset({"clone", "fetch", "pull", "push", "ls-remote", "submodule", "remote", "lfs"}),
    "pip": frozenset({"install", "download", "wheel", "index", "search"}),
    "uv": frozenset({"pip", "sync", "add", "lock", "run", "tool", "python", "venv", "export"}),
    "poetry": frozenset({"install", "add", "update", "lock", "sync", "search", "publish"}),
    "pdm": frozenset({"install", "add", "update", "lock", "sync", "publish"}),
    "npm": frozenset(
        {"install", "i", "ci", "add", "update", "up", "upgrade", "publish", "exec", "view", "audit"}
    ),
    "pnpm": frozenset({"install", "i", "add", "update", "up", "dlx", "publish", "fetch"}),
    "yarn": frozenset({"", "install", "add", "up", "upgrade", "dlx", "npm", "publish"}),
    "bun": frozenset({"install", "i", "add", "update", "x", "publish"}),
    "cargo": frozenset(
        {"fetch", "install", "update", "publish", "search", "add", "build", "check", "test", "run"}
    ),
    "go": frozenset({"get", "install", "mod", "build", "test", "run"}),
    "gem": frozenset({"install", "update", "push", "fetch"}),
    "bundle": frozenset({"install", "update"}),
    "bundler": frozenset({"install", "update"}),
    "composer": frozenset({"install", "update", "require"}),
    "dotnet": frozenset({"restore", "add", "build", "run", "test", "tool"}),
    "conda": frozenset({"install", "create", "update"}),
    "mamba": frozenset({"install", "create", "update"}),
    "micromamba": frozenset({"install", "create", "update"}),
    "apt": frozenset({"update", "install", "upgrade", "download", "source"}),
    "apt-get": frozenset({"update", "install", "upgrade", "dist-upgrade", "download", "source"}),
    "brew": frozenset({"install", "update", "upgrade", "fetch", "tap"}),
}

# options of these programs that take a value (so the value is not the subcommand)
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "git": frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}),
    "uv": frozenset({"--directory", "--project", "--config-file", "--cache-dir", "--python"}),
    "npm": frozenset({"--prefix", "-C", "--workspace", "-w"}),
    "pnpm": frozenset({"--dir", "-C", "--filter", "-F"}),
    "yarn": frozenset({"--cwd"}),
    "cargo": frozenset({"-C", "--manifest-path", "--config", "-Z"}),
    "poetry": frozenset({"--directory", "-C", "--project", "-P"}),
}
_PIP_NAMES = ("pip", "pip3")
_PYTHON_PREFIXES = ("python", "pypy")


def _normalized(words: list[str]) -> list[str]:
    """``python3 -m pip install x`` → ``pip install x``; ``pip3.11`` → ``pip``."""
    if not words:
        return words
    name = words[0]
    if name.startswith(_PYTHON_PREFIXES) and "-m" in words[1:]:
        at = words.index("-m", 1)
        return _normalized(words[at + 1 :])
    if name.startswith(_PIP_NAMES) and name.rstrip("0123456789.") in _PIP_NAMES:
        return ["pip", *words[1:]]
    return words


def _subcommand(program: str, args: list[str]) -> str:
    takes_value = _VALUE_OPTIONS.get(program, frozenset())
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in takes_value
            continue
        return word
    return ""


def is_network_invocation(words: list[str]) -> bool:
    """True when this one command (normalised words) talks to the network."""
    words = _normalized(words)
    if not words:
        return False
    subcommands = NETWORK_PROGRAMS.get(words[0])
    if subcommands is None:
        return False
    if subcommands is ANY:
        return True
    return _subcommand(words[0], words[1:]) in subcommands


def uses_network(command: str) -> bool:
    """True when some command the line runs talks to the network (as far as the guard knows)."""
    return any(is_network_invocation(inv.words) for inv in invocations(command) if inv.words)


__all__ = ["NETWORK_PROGRAMS", "is_network_invocation", "uses_network"]
