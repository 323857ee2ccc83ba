"""The git configuration every shell command of the workspace runs with.

A repository inside the project (a bare "test fixture", a nested ``.git``) can set
``core.fsmonitor`` to a program that an innocent ``git status`` runs. The session
therefore adds command-scope configuration through ``GIT_CONFIG_COUNT`` /
``GIT_CONFIG_KEY_<n>`` / ``GIT_CONFIG_VALUE_<n>``, which wins over every config file:

* ``safe.bareRepository=explicit`` — a bare repository is only used when named with
  ``--git-dir``/``GIT_DIR``, never found by walking into its directory;
* ``core.fsmonitor=false`` — no file system monitor hook;
* ``core.pager=cat`` — no pager (commands also run without a terminal, so git never
  starts one: ``pager.<cmd>`` settings have nothing to start);
* ``log.showSignature=false`` — ``git log`` never starts ``gpg.program`` by itself;
* ``protocol.ext.allow=never`` — no ``ext::`` remote helper commands.

Entries already in the environment (the host's, the session's or the call's) are kept
and ours are appended after them, so ours win; ``GIT_CONFIG_PARAMETERS`` (which git
reads *after* the count and is otherwise only set by git itself for its children) is
dropped. A user who needs one of these settings off cannot turn it back on through the
session's environment, by design; ``git -c`` inside a command still can, which is why
the command guard treats ``git -c`` as a command that needs approval.

What cannot be switched off this way without breaking ``git diff`` is documented in
``docs/workspace.md`` (external diff programs, diff drivers, filters).

The git processes lovia starts itself, outside any user command (worktree create, check-out,
commit, diff, merge, remove; restore points; batch trees), use :func:`own_git_env`: the
same configuration, without the repository-pointing variables of the server's own
environment, and their diffs pass :data:`SAFE_DIFF` so no external diff or textconv program
runs. A ``core.fsmonitor`` planted in a repository's config therefore never runs outside
the sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

HARDENED_GIT_CONFIG: tuple[tuple[str, str], ...] = (
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("log.showSignature", "false"),
    ("protocol.ext.allow", "never"),
)
_MAX_ENTRIES = 10_000

SAFE_DIFF: tuple[str, ...] = ("--no-ext-diff", "--no-textconv")
"""Flags for every ``git diff`` lovia reads: no ``diff.external``/``GIT_EXTERNAL_DIFF``
program, no ``textconv`` driver (a repository's config names them)."""

REPOSITORY_ENV: tuple[str, ...] = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_CONFIG",
    "GIT_DIR",
    "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
    "GIT_WORK_TREE",
)
"""Variables that point git at another repository (``git rev-parse --local-env-vars``):
lovia's own git works on the path it names, whatever environment the server started in."""


def _valid_count(env: Mapping[str, str]) -> int:
    """How many leading ``GIT_CONFIG_KEY_<n>``/``VALUE_<n>`` pairs ``env`` really has."""
    try:
        declared = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        return 0
    declared = max(0, min(declared, _MAX_ENTRIES))
    for i in range(declared):
        if f"GIT_CONFIG_KEY_{i}" not in env or f"GIT_CONFIG_VALUE_{i}" not in env:
            return i
    return declared


def hardened_git_config(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the hardened git configuration appended (idempotent)."""
    out = dict(env)
    out.pop("GIT_CONFIG_PARAMETERS", None)
    count = _valid_count(out)
    tail = [
        (out.get(f"GIT_CONFIG_KEY_{i}"), out.get(f"GIT_CONFIG_VALUE_{i}"))
        for i in range(max(0, count - len(HARDENED_GIT_CONFIG)), count)
    ]
    if tail == list(HARDENED_GIT_CONFIG):
        out["GIT_CONFIG_COUNT"] = str(count)
        return out
    for offset, (key, value) in enumerate(HARDENED_GIT_CONFIG):
        out[f"GIT_CONFIG_KEY_{count + offset}"] = key
        out[f"GIT_CONFIG_VALUE_{count + offset}"] = value
    out["GIT_CONFIG_COUNT"] = str(count + len(HARDENED_GIT_CONFIG))
    return out


def own_git_env(
    extra: Mapping[str, str] | None = None, *, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a git process lovia starts itself: ``base`` (the server's
    environment by default) without :data:`REPOSITORY_ENV`, no prompts, the C locale,
    ``extra`` (a private ``GIT_INDEX_FILE``, an identity...) and the hardened configuration
    last, so that nothing before it turns it off."""
    env = {
        k: v for k, v in (os.environ if base is None else base).items() if k not in REPOSITORY_ENV
    }
    env |= {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    env |= extra or {}
    return hardened_git_config(env)


__all__ = [
    "HARDENED_GIT_CONFIG",
    "REPOSITORY_ENV",
    "SAFE_DIFF",
    "hardened_git_config",
    "own_git_env",
]
