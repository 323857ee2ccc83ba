"""Commands: a team's recurring prompts as Markdown files, invoked as ``/name arguments``.

Read from, first match wins: lovia's built-ins, ``.lovia/commands/``, ``.claude/commands/``
(Claude Code's format: a file copied unchanged works), ``.github/prompts/*.prompt.md``
(Copilot's prompt files) and the user's ``~/.lovia/commands/``. A subfolder namespaces a command
as Claude Code does: ``frontend/component.md`` is ``/frontend:component``. Front matter may set
``description`` (else the body's first line), ``argument-hint``, ``model``, ``mode`` (``plan`` or
``act``; Copilot's ``ask`` is ``plan``) and ``allowed-tools``, which is listed but grants
nothing: a file in the repository never widens what the workspace policy allows.

The body is the prompt, with ``$ARGUMENTS`` (everything after the name) and ``$1`` … ``$9``
(its words) filled in; a body that uses neither gets the arguments appended, as Claude Code
does. Every file is read through the workspace policy (a denied file is never read, nor
listed) and bounded in size: invoking a larger one is a :class:`UserError` saying so.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lovia.exceptions import UserError
from lovia.workspace.paths import resolve_path

if TYPE_CHECKING:
    from lovia.workspace.policy import WorkspacePolicy

Source = Literal["built-in", "workspace", "user"]
Action = Literal["prompt", "help", "new", "compact"]
Mode = Literal["plan", "act"]

COMMAND_DIRS: tuple[str, ...] = (".lovia/commands", ".claude/commands")
"""Folders of ``*.md`` command files (subfolders namespace them), in order of precedence."""
PROMPTS_DIR = ".github/prompts"
PROMPT_SUFFIX = ".prompt.md"
USER_COMMANDS = "~/.lovia/commands"

COMMAND_PROTECTED_PATHS: tuple[str, ...] = (".claude/commands", PROMPTS_DIR)
"""Protected-path patterns of the command files outside ``.lovia`` (protected already)."""

MAX_FILE_CHARS = 32_000
MAX_COMMANDS = 200
MAX_DEPTH = 3

_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_INVOCATION = re.compile(r"/([A-Za-z0-9_][A-Za-z0-9_.:-]*)(?:[ \t\r\n]+(.*))?", re.S)
_POSITIONAL = re.compile(r"\$([1-9])(?![0-9])")


@dataclass(frozen=True)
class Command:
    """One ``/name``: a built-in, or a prompt file of the workspace or the user."""

    name: str
    description: str
    source: Source
    argument_hint: str | None = None
    path: str | None = None
    """The file (root-relative for the workspace's, absolute for the user's); None: built-in."""
    body: str = ""
    model: str | None = None
    mode: Mode | None = None
    allowed_tools: tuple[str, ...] = ()
    action: Action = "prompt"
    too_large: bool = False


@dataclass(frozen=True)
class CommandInvocation:
    """``/name arguments`` resolved: the command and the prompt the model gets."""

    command: Command
    arguments: str
    prompt: str


# --------------------------------------------------------------------------- built-ins

_INIT = """\
Explore this repository and propose an `AGENTS.md` at its root: the instructions an agent \
needs to work here. Read the README, the build and packaging files, the test set-up, the CI \
configuration and a few representative source files first. Then write `AGENTS.md` with \
write_file (the user reviews it before anything is written) covering, briefly and concretely:
- how to install, build, lint, type-check and run the tests (exact commands);
- the layout: where the main code, the tests and the docs live;
- the conventions the code follows (naming, style, error handling, commit messages);
- anything an agent must not do here.
Keep what is true for this repository only; where an `AGENTS.md` exists already, improve it \
instead of starting over.
$ARGUMENTS"""

_REVIEW = """\
Review the changes in the working tree (nothing is to be changed: this is a review). Run \
`git status` and `git diff HEAD` (and `git diff --stat HEAD` first when the diff is large) and \
read the surrounding code where the diff alone is not enough. Report, most important first: \
bugs and regressions, missing or wrong tests, security problems, unclear names or structure; \
each with the file and line. End with a short verdict.
$ARGUMENTS"""

BUILT_INS: tuple[Command, ...] = (
    Command("help", "List the commands (answered here, never sent to the model)", "built-in",
            action="help"),
    Command("new", "Start a new conversation (with the rest of the line as its first message)",
            "built-in", argument_hint="[message]", action="new", body="$ARGUMENTS"),
    Command("plan", "Plan first: explore and propose a plan, change nothing", "built-in",
            argument_hint="<what to plan>", mode="plan", body="$ARGUMENTS"),
    Command("init", "Explore the repository and propose an AGENTS.md (a reviewed write)",
            "built-in", argument_hint="[focus]", body=_INIT),
    Command("review", "Review the working tree's changes (git diff), changing nothing",
            "built-in", argument_hint="[focus]", mode="plan", body=_REVIEW),
    Command("compact", "Compact the conversation now: a summary (kept to the focus, if given) "
            "replaces the older messages", "built-in", argument_hint="[focus]",
            action="compact", body="$ARGUMENTS"),
)  # fmt: skip


# --------------------------------------------------------------------------- reading


def _allowed(policy: WorkspacePolicy, root: Path, rel: str) -> Path | None:
    try:
        resolved = resolve_path(root, rel)
    except Exception:
        return None
    if policy.decide_path(rel=resolved.rel, abs_posix=resolved.abs_posix, op="read") != "allow":
        return None
    return resolved.abs


def _read(path: Path, limit: int) -> tuple[str, bool] | None:
    """The file's text and whether it is over ``limit`` characters (only its start is read)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(limit * 4 + 4)
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    return text[:limit], len(text) > limit


def front_matter(text: str) -> tuple[dict[str, str | list[str]], str]:
    """``---``-fenced ``key: value`` lines (values kept as written, so ``argument-hint:
    [message]`` stays text) with ``- item`` lists under a bare key; and the body after them."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    fields: dict[str, str | list[str]] = {}
    key: str | None = None
    for index, line in enumerate(lines[1:], start=1):
        stripped = line.strip()
        if stripped == "---":
            return fields, "".join(lines[index + 1 :])
        if stripped.startswith("- ") and key is not None:
            items = fields.setdefault(key, [])
            if isinstance(items, list):
                items.append(stripped[2:].strip().strip("'\""))
            continue
        name, sep, value = line.partition(":")
        if sep and name.strip() and not name.startswith((" ", "\t")):
            key = name.strip()
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            fields[key] = value
            if not value:
                fields[key] = []
    return {}, text


def _text(fields: dict[str, str | list[str]], key: str) -> str | None:
    value = fields.get(key)
    if isinstance(value, list):
        return ", ".join(value) or None
    return value or None


def _tools(fields: dict[str, str | list[str]]) -> tuple[str, ...]:
    value = fields.get("allowed-tools", fields.get("tools", ""))
    items = value if isinstance(value, list) else re.split(r",\s*(?![^()]*\))", value)
    return tuple(t.strip() for t in items if t.strip())


def _mode(fields: dict[str, str | list[str]]) -> Mode | None:
    value = (_text(fields, "mode") or _text(fields, "agent") or "").lower()
    if value in ("plan", "ask"):
        return "plan"
    if value in ("act", "agent", "edit"):
        return "act"
    return None


def _first_line(body: str) -> str:
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:120]
    return ""


def parse_command(name: str, text: str, source: Source, path: str, *, too_large: bool) -> Command:
    """A command file's text as a :class:`Command` (``too_large``: only its start was read)."""
    fields, body = front_matter(text)
    return Command(
        name=name,
        description=_text(fields, "description") or _first_line(body),
        source=source,
        argument_hint=_text(fields, "argument-hint"),
        path=path,
        body=body.strip(),
        model=_text(fields, "model"),
        mode=_mode(fields),
        allowed_tools=_tools(fields),
        too_large=too_large,
    )


def _names(folder: Path, suffix: str, depth: int) -> list[tuple[str, Path]]:
    """``(name, file)`` for each command file under ``folder`` (sorted; subfolders as
    ``sub:name`` down to ``depth`` levels)."""
    found: list[tuple[str, Path]] = []
    try:
        entries = sorted(folder.iterdir(), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        if entry.is_dir() and depth > 1 and _SEGMENT.fullmatch(entry.name):
            found += [(f"{entry.name}:{n}", f) for n, f in _names(entry, suffix, depth - 1)]
        elif entry.name.endswith(suffix) and _SEGMENT.fullmatch(entry.name[: -len(suffix)]):
            found.append((entry.name[: -len(suffix)], entry))
    return found


def _from_folder(
    root: Path,
    policy: WorkspacePolicy,
    folder: Path,
    suffix: str,
    depth: int,
    source: Source,
    limit: int,
) -> list[Command]:
    commands: list[Command] = []
    for name, file in _names(folder, suffix, depth)[:MAX_COMMANDS]:
        if source == "workspace":
            try:
                rel = file.relative_to(root).as_posix()
            except ValueError:  # a folder that leads outside (where reading outside is allowed)
                continue
            path, shown = _allowed(policy, root, rel), rel
        else:
            denied = policy.is_denied(rel=None, abs_posix=file.resolve().as_posix())
            path, shown = (None if denied else file), str(file)
        if path is None or not path.is_file():
            continue
        read = _read(path, limit)
        if read is not None:
            commands.append(parse_command(name, read[0], source, shown, too_large=read[1]))
    return commands


def find_commands(
    root: str | Path,
    policy: WorkspacePolicy,
    *,
    user_dir: str | None = USER_COMMANDS,
    max_file_chars: int = MAX_FILE_CHARS,
) -> list[Command]:
    """Every command for a workspace at ``root``: the built-ins, then the workspace's and the
    user's files (a name already taken is skipped: the first source wins)."""
    base = Path(root).resolve()
    found: list[Command] = list(BUILT_INS)
    for rel in COMMAND_DIRS:
        folder = _allowed(policy, base, rel)
        if folder is not None and folder.is_dir():
            found += _from_folder(base, policy, folder, ".md", MAX_DEPTH, "workspace",
                                  max_file_chars)  # fmt: skip
    prompts = _allowed(policy, base, PROMPTS_DIR)
    if prompts is not None and prompts.is_dir():
        found += _from_folder(base, policy, prompts, PROMPT_SUFFIX, 1, "workspace", max_file_chars)
    if user_dir:
        folder = Path(user_dir).expanduser()
        if folder.is_dir() and not policy.is_denied(rel=None, abs_posix=folder.as_posix()):
            found += _from_folder(base, policy, folder, ".md", MAX_DEPTH, "user", max_file_chars)
    seen: set[str] = set()
    unique: list[Command] = []
    for command in found:
        if command.name not in seen:
            seen.add(command.name)
            unique.append(command)
    return unique


# --------------------------------------------------------------------------- invoking


def split_invocation(text: str) -> tuple[str, str] | None:
    """``("name", "arguments")`` for a prompt that starts with ``/name``; None for any other
    text (a path such as ``/usr/bin/python is broken`` is a message, not a command)."""
    match = _INVOCATION.fullmatch(text.strip("\r\n") if text.startswith("/") else "")
    if match is None:
        return None
    return match.group(1), (match.group(2) or "").strip()


def _words(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def expand(command: Command, arguments: str) -> str:
    """The command's body with ``$ARGUMENTS`` and ``$1`` … ``$9`` filled in (Claude Code's
    rules: a missing word is empty; a body that uses neither gets ``ARGUMENTS: …`` appended)."""
    if command.too_large:
        raise UserError(
            f"The command file {command.path} is longer than {MAX_FILE_CHARS:,} characters",
            hint="Shorten it, or split it into several commands.",
        )
    body = command.body
    uses = "$ARGUMENTS" in body or _POSITIONAL.search(body) is not None
    words = _words(arguments)
    out = body.replace("$ARGUMENTS", arguments)
    out = _POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words)
                          else "", out)  # fmt: skip
    if arguments and not uses:
        out = f"{out}\n\nARGUMENTS: {arguments}"
    return out.strip()


def invoke(text: str, commands: list[Command]) -> CommandInvocation | None:
    """``text`` as a command invocation; None when it does not start with ``/name``. An
    unknown name is a :class:`UserError` (it is never sent to the model as a message)."""
    split = split_invocation(text)
    if split is None:
        return None
    name, arguments = split
    command = next((c for c in commands if c.name == name), None)
    if command is None:
        raise UserError(
            f"Unknown command /{name}",
            hint="/help lists the commands; to send a message that starts with '/', "
            "begin it with a space.",
        )
    prompt = expand(command, arguments) if command.action != "help" else ""
    return CommandInvocation(command, arguments, prompt)


def help_text(commands: list[Command]) -> str:
    """The ``/help`` answer, as Markdown: each command with its argument hint, description and
    where it comes from."""
    lines = ["Commands (type `/name` and any arguments):", ""]
    for c in commands:
        usage = f"/{c.name}" + (f" {c.argument_hint}" if c.argument_hint else "")
        where = "" if c.source == "built-in" else f" [{c.source}: {c.path}]"
        lines.append(f"- `{usage}` — {c.description}{where}")
    return "\n".join(lines)


__all__ = [
    "BUILT_INS",
    "COMMAND_DIRS",
    "COMMAND_PROTECTED_PATHS",
    "MAX_FILE_CHARS",
    "PROMPTS_DIR",
    "USER_COMMANDS",
    "Command",
    "CommandInvocation",
    "expand",
    "find_commands",
    "front_matter",
    "help_text",
    "invoke",
    "parse_command",
    "split_invocation",
]
