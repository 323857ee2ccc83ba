"""What ``lovia chat`` says about the server in the user's words: a refused request as one line
and a hint naming the flag typed, and the once-per-session notices (an unconfined shell, the
instruction files in use)."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from pydantic import ValidationError

from lovia_server import protocol as p
from lovia_server.chat.client import RpcError
from lovia_server.chat.terminal_text import printable
from lovia_server.protocol import MODEL_NOT_CONFIGURED


def describe_error(exc: RpcError, args: argparse.Namespace) -> tuple[str, str | None]:
    """One line and a hint for a refused request, in the words of the flags the user typed."""
    data = exc.data if isinstance(exc.data, dict) else {}
    message, hint = str(exc), data.get("hint")
    if exc.code == MODEL_NOT_CONFIGURED and not data.get("model"):
        return message, (
            "pass --model (e.g. --model openai:gpt-4.1-mini) or set LOVIA_MODEL; "
            "to try lovia without a key: lovia chat --demo"
        )
    if exc.code == MODEL_NOT_CONFIGURED:
        model = data["model"]
        source = f"--model {model}" if args.model == model else f"LOVIA_MODEL={model}"
        message = f"{source}: {message}"
    if data.get("field") == "agent" and args.agent:
        message = message.replace("lovia.agent", "--agent")
        if "--agent" not in message:
            message = f"--agent {args.agent}: {message}"
        hint = hint or "pass --agent path/to/file.py:name, a file in the workspace that defines it"
    if isinstance(hint, str):
        hint = hint.replace("the lovia.model setting", "--model").replace("lovia.model", "--model")
    return message, hint if isinstance(hint, str) else None


def sandbox_notice(status: Any) -> str | None:
    """Once per session: shell commands run unconfined here (or refuse to run). Not when the
    user turned the sandbox off on purpose."""
    sandbox = status.get("sandbox") if isinstance(status, dict) else None
    if not isinstance(sandbox, dict) or sandbox.get("enabled") or sandbox.get("setting") == "off":
        return None
    reason = sandbox.get("reason")
    return f"note: {reason}." if isinstance(reason, str) and reason else None


def instructions_notice(status: Any) -> str | None:
    """Once per session: the project instruction files the agent reads (docs/customization.md)."""
    listed = status.get("instructions") if isinstance(status, dict) else None
    if not isinstance(listed, list):
        return None
    files: list[p.InstructionFileInfo] = []
    for item in listed:
        with contextlib.suppress(ValidationError):  # a newer server's entry this chat cannot read
            files.append(p.InstructionFileInfo.model_validate(item))
    line = p.instructions_line(files)
    return printable(line) if line else None


__all__ = ["describe_error", "instructions_notice", "sandbox_notice"]
