"""The exact-span edit algorithm of ``edit_file``, as a pure function.

Hosts use :func:`apply_edit` to preview an edit (e.g. a diff shown for approval)
that is byte-identical to what :meth:`LocalWorkspaceSession.edit_text` will write.
"""

from __future__ import annotations

import re

from lovia.workspace.errors import WorkspaceError

EMPTY_OLD_MESSAGE = "old must not be empty; read the file and provide an exact span"
NOT_FOUND_MESSAGE = (
    "old text not found in the file. Re-read the file and copy the exact span to replace "
    "(whitespace, indentation and line endings matter)."
)

_BARE_LF = re.compile(r"(?<!\r)\n")


class EditError(WorkspaceError):
    """An edit that cannot be applied; ``replacements`` is the number of matches found."""

    replacements: int = 0


def _ambiguous_message(count: int) -> str:
    return (
        f"old text matched {count} times; include more surrounding context so it matches "
        "exactly once, or pass replace_all=true to replace every occurrence."
    )


def apply_edit(text: str, old: str, new: str, *, replace_all: bool = False) -> tuple[str, int]:
    """Replace ``old`` with ``new`` in ``text``; return ``(new_text, replacements)``.

    - ``old`` must be non-empty and occur exactly once (or ``replace_all=True``);
    - when ``old`` has no ``\\r`` and is not found but ``text`` uses CRLF line endings,
      ``old`` and ``new`` are matched/inserted with CRLF line endings;
    - ``old == new`` returns ``text`` unchanged with the match count.

    Raises :class:`EditError` (a ``WorkspaceError``) with the messages ``edit_file``
    reports: empty ``old``, ``"old text not found"``, ``"old text matched N times"``.
    """
    if old == "":
        raise EditError(EMPTY_OLD_MESSAGE, replacements=0)
    count = text.count(old)
    if count == 0 and "\r" not in old and "\r\n" in text:
        crlf_old = _BARE_LF.sub("\r\n", old)
        crlf_count = text.count(crlf_old)
        if crlf_count:
            old, new, count = crlf_old, _BARE_LF.sub("\r\n", new), crlf_count
    if count == 0:
        raise EditError(NOT_FOUND_MESSAGE, replacements=0)
    if count > 1 and not replace_all:
        raise EditError(_ambiguous_message(count), replacements=count)
    if old == new:
        return text, count
    return text.replace(old, new), count


__all__ = ["EMPTY_OLD_MESSAGE", "EditError", "apply_edit"]
