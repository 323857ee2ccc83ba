"""How long the server waits for an editor to carry out a file operation it was asked to do.

An editor may stop on a prompt of its own (Neovim's "file changed since reading it"), or
never answer at all; a run must not wait on it forever. Both front doors use the same bound:
the LSP door for ``workspace/applyEdit``, the ACP door for ``fs/read_text_file`` and
``fs/write_text_file``.
"""

from __future__ import annotations

import os

DEFAULT_SECONDS = 30.0


def editor_file_timeout() -> float:
    """The bound in seconds; ``LOVIA_EDITOR_FILE_TIMEOUT`` overrides it (tests, slow editors)."""
    try:
        value = float(os.environ.get("LOVIA_EDITOR_FILE_TIMEOUT", DEFAULT_SECONDS))
    except ValueError:
        return DEFAULT_SECONDS
    return value if value > 0 else DEFAULT_SECONDS


def unconfirmed_write(path: object, limit: float) -> str:
    """The tool error's text when an editor did not confirm a write in time."""
    return (
        f"The editor did not confirm the edit to {path} within {limit:g} s; it may be waiting on "
        "a prompt of its own, and may still apply the edit when that is answered."
    )


UNCONFIRMED_HINT = (
    "Do not repeat this edit: read the file again before changing it, or ask the user to check "
    "the editor."
)

__all__ = ["DEFAULT_SECONDS", "UNCONFIRMED_HINT", "editor_file_timeout", "unconfirmed_write"]
