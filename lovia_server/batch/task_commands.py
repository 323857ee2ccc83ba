"""A task whose prompt starts with ``/name``: the project's commands, as every door runs them.

The task's tree is the workspace its commands come from (``.lovia/commands``,
``.claude/commands``, ``.github/prompts``, the built-ins, and ``~/.lovia/commands`` of the
machine that runs the task), read through the task's own policy, and expanded by the server's
code (:func:`lovia_server.host.command_runs.resolve_command`): ``$ARGUMENTS`` and ``$1`` … ``$9``,
``mode: plan``, ``model`` when it is a lovia model id. As ``lovia batch`` runs a tree's hooks,
it runs a tree's commands: the batch's author chose the trees. What a batch refuses is stated
here: ``/help`` and ``/new`` answer a person, and a batch task has nobody to answer;
``/compact`` compacts a conversation, and a task starts with none.
"""

from __future__ import annotations

from lovia.exceptions import UserError
from lovia.providers import check_model_spec
from lovia.workspace import LocalWorkspace
from lovia.workspace.project_commands import split_invocation
from lovia_server.host.command_runs import CommandRun, resolve_command, workspace_commands


class TaskCommandError(UserError):
    """The task's ``/name`` cannot run: the task fails before any model call."""


_PERSON_ONLY = {
    "help": (
        "/help lists the commands to a person: a batch task has nobody to show them to",
        "Start the task's prompt with the command that does the work (/review, or one of the "
        "project's .lovia/commands, .claude/commands, .github/prompts); `lovia chat` lists "
        "them with /help.",
    ),
    "new": (
        "/new starts a new conversation: every batch task is one already",
        "Drop /new and give the message itself as the task's prompt.",
    ),
    "compact": (
        "/compact compacts a conversation: a batch task starts with none to compact",
        "Give the task the work to do; lovia compacts a long task's conversation by itself.",
    ),
}


# lovia/run's hint points at /help, which a batch refuses: name the folders instead
_UNKNOWN_HINT = (
    "The task's repository has no command by that name: its commands are the built-ins and the "
    "files in .lovia/commands, .claude/commands and .github/prompts (and ~/.lovia/commands of "
    "the machine that runs the task). To send a message that starts with '/', begin it with a "
    "space."
)


def task_command(prompt: str, workspace: LocalWorkspace) -> CommandRun | None:
    """The run a task's ``prompt`` asks for when it starts with ``/name`` (blocking: it reads
    the tree); None for any other prompt, a path such as ``/usr/bin/x is broken`` included.
    An unknown command, or one a batch cannot run, is :class:`TaskCommandError`, worded as
    ``lovia/run`` words it (the unknown command's hint names the folders, not ``/help``)."""
    split = split_invocation(prompt)
    if split is None:
        return None
    try:
        run = resolve_command(prompt, workspace_commands(workspace))
    except UserError as exc:
        hint = _UNKNOWN_HINT if exc.message.startswith("Unknown command") else exc.hint
        raise TaskCommandError(exc.message, hint=hint) from None
    if run is None:
        return None
    if run.reply is not None or run.new_session or run.compact is not None:
        message, hint = _PERSON_ONLY.get(split[0], _PERSON_ONLY["help"])
        raise TaskCommandError(message, hint=hint)
    if run.model is not None:
        try:
            check_model_spec(run.model)
        except UserError as exc:
            raise TaskCommandError(
                f"/{split[0]} names the model {run.model!r}: {exc.message}", hint=exc.hint
            ) from None
    return run


__all__ = ["TaskCommandError", "task_command"]
