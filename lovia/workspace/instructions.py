"""The workspace section of the system prompt, generated from the policy.

It never promises more than the session enforces: every sentence follows from a
policy field (or from what is on disk at the root).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from lovia.workspace.decision import Decision
from lovia.workspace.decision import normalize as _normalize
from lovia.workspace.policy import WorkspacePolicy

Flavor = Literal["uv", "poetry", "pip"]

_PHRASE: dict[Decision, str] = {
    "allow": "is allowed",
    "ask": "requires user approval",
    "deny": "is not permitted",
}


def detect_flavor(root: Path) -> Flavor:
    """uv / poetry / pip, from lock files or a ``[tool.uv]`` / ``[tool.poetry]`` table."""
    if (root / "uv.lock").is_file():
        return "uv"
    if (root / "poetry.lock").is_file():
        return "poetry"
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return "pip"
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("[tool.uv]", "[tool.uv.")):
            return "uv"
        if stripped.startswith(("[tool.poetry]", "[tool.poetry.")):
            return "poetry"
    return "pip"


def _resolve_root(root: str | Path) -> Path:
    try:
        return Path(root).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return Path(root)


def build_instructions(root: str | Path, policy: WorkspacePolicy, *, executor: Any = None) -> str:
    resolved = _resolve_root(root)
    name = resolved.name or str(resolved)
    write = _normalize(policy.write)
    read_out = _normalize(policy.read_outside)
    write_out = _normalize(policy.write_outside)
    lines: list[str] = ["## Workspace"]
    lines.append(
        f"You work in a workspace named {name!r}; its root directory is '.'. Refer to files with "
        "paths relative to the root (preferred) or absolute paths — never prefix them with the "
        "workspace name. Symbolic links are judged by the file they point to."
    )
    lines.append(
        "Explore with list_files and grep_files, read a file with read_file before you edit it, "
        "use edit_file for a targeted change and write_file for a new file or a full rewrite. "
        "Long output is truncated: page through files with start/end."
    )
    if write == "deny":
        lines.append(
            "The workspace is read-only: write_file and edit_file are disabled and files cannot "
            "be changed."
        )
    elif write == "ask":
        lines.append(
            "Writing files inside the workspace requires user approval; batch related edits "
            "together so the user can review them at once."
        )
    if write != "deny" and policy.protected_paths:
        shown = ", ".join(repr(p) for p in policy.protected_paths[:6])
        more = ", …" if len(policy.protected_paths) > 6 else ""
        lines.append(
            f"Changes to editor, git and agent configuration ({shown}{more}) always need user "
            "approval, by file tools and by commands alike; do not try to get around that."
        )
    if write != "deny":
        lines.append(
            "Keep the workspace tidy: put scratch files under 'tmp/' (disposable) and never "
            "create files nobody asked for."
        )
        if (resolved / ".git").exists():
            lines.append(
                "This is a git repository: follow its conventions (layout, style, naming) and "
                "never commit tmp/."
            )
        else:
            lines.append(
                "Place new files in the existing structure, or in a topical subdirectory when "
                "nothing fits."
            )
    if read_out == "deny" and write_out == "deny":
        lines.append("Access outside the workspace is not permitted.")
    else:
        lines.append(
            f"Outside the workspace, reading {_PHRASE[read_out]} and writing "
            f"{_PHRASE[write_out]}; if you need more, ask the user to widen the workspace "
            "configuration."
        )
    if policy.denied_paths:
        listed = ", ".join(repr(p) for p in policy.denied_paths)
        lines.append(
            f"These paths are denied: {listed}. The file tools and the shell both refuse them."
        )
    if policy.allow_shell:
        sandboxed = getattr(executor, "sandboxed", False) is True
        summary = getattr(executor, "summary", None)
        confinement = summary() if sandboxed and callable(summary) else ""
        if _normalize(policy.shell_default) == "allow":
            if sandboxed:
                lines.append(
                    "Shell commands run without approval inside a sandbox that enforces the "
                    "rules above." + (f" {confinement}" if confinement else "")
                )
            else:
                lines.append(
                    "Shell commands run without approval; they are not sandboxed and run as the "
                    "host user, so be careful."
                )
        else:
            lines.append(
                "Shell commands are gated: some need user approval and some are denied."
                + (
                    (f" {confinement}" if confinement else " They run inside a sandbox.")
                    if sandboxed
                    else ""
                )
            )
        lines.append(
            "Paths in shell commands (arguments, redirections, the working directory) are "
            "checked by the same rules; commands the guard cannot judge (variables, globs, "
            "substitutions) need approval."
        )
        lines.append(
            "A .venv or venv at the root is activated automatically for shell commands; never "
            "install packages globally."
        )
        flavor = detect_flavor(resolved)
        if flavor == "uv":
            lines.append(
                "The project is uv-managed: add packages with uv pip install (or uv add), sync "
                "with uv sync, create the environment with uv venv; pip itself is absent in uv "
                "environments."
            )
        elif flavor == "poetry":
            lines.append(
                "The project is poetry-managed: install with poetry install, add dependencies "
                "with poetry add, and run tools with poetry run."
            )
        else:
            lines.append(
                "python and pip resolve to the virtual environment when one exists; otherwise "
                "create one with python -m venv .venv first."
            )
    return "\n".join(lines)


__all__ = ["build_instructions", "detect_flavor"]
