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
"""

from __future__ import annotations

from collections.abc import Mapping

HARDENED_GIT_CONFIG: tuple[tuple[str, str], ...] = (
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("log.showSignature", "false"),
    ("protocol.ext.allow", "never"),
)
_MAX_ENTRIES = 10_000


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


__all__ = ["HARDENED_GIT_CONFIG", "hardened_git_config"]
