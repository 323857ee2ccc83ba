"""The spec's lexical claim list: what ``extract_path_claims`` returns (public contract)."""

from __future__ import annotations

import shlex

from lovia.workspace.decision import FileOp

_PUNCT = "();<>|&"
_WRITE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">&", ">|"})
_SKIP_REDIRECTS = frozenset({"<<", "<<-", "<<<"})
_PSEUDO_DEVICES = frozenset(
    {
        "/dev/null",
        "/dev/zero",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
        "/dev/random",
        "/dev/urandom",
    }
)


def is_pseudo_device(token: str) -> bool:
    return token in _PSEUDO_DEVICES or token.startswith("/dev/fd/")


def _pathish(token: str) -> str | None:
    candidate = token
    if candidate.startswith("-"):
        if "=" not in candidate:
            return None
        candidate = candidate.split("=", 1)[1]
    elif "=" in candidate:
        value = candidate.split("=", 1)[1]
        if value.startswith(("/", "~", ".")):
            candidate = value
    if not candidate or "://" in candidate:
        return None
    if "/" in candidate or "." in candidate or candidate.startswith("~"):
        return candidate
    return None


def extract_path_claims(command: str) -> list[tuple[FileOp, str]]:
    """Lexical path claims of ``command`` in token order (the spec's contract).

    Redirect targets (``>``, ``>>``, ``&>``, ``&>>``, ``>&``, ``>|``) are writes, ``<``
    targets and path-looking words are reads. Tokenisation errors give ``[]``. The
    session does not rely on this alone: see :func:`judge_command`.
    """
    lex = shlex.shlex(command, posix=True, punctuation_chars=_PUNCT)
    lex.whitespace_split = True
    try:
        tokens = list(lex)
    except ValueError:
        return []
    claims: list[tuple[FileOp, str]] = []
    pending: str | None = None
    for tok in tokens:
        if tok and all(c in _PUNCT for c in tok):
            if tok in _WRITE_REDIRECTS:
                pending = "write"
            elif tok == "<":
                pending = "read"
            elif tok in _SKIP_REDIRECTS:
                pending = "skip"
            else:
                pending = None
            continue
        if pending is not None:
            op, pending = pending, None
            if op == "skip" or tok.isdigit() or tok == "-" or is_pseudo_device(tok):
                continue
            claims.append(("write" if op == "write" else "read", tok))
            continue
        path = _pathish(tok)
        if path is not None and not is_pseudo_device(path):
            claims.append(("read", path))
    return claims


__all__ = ["extract_path_claims", "is_pseudo_device"]
