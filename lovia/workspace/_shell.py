"""A small POSIX shell lexer/parser for the command guard (internal).

It is not a shell: it recognises what the shell will treat as words, operators,
redirections, quoting, expansions and nested commands, so the guard can judge what
a command line touches. Everything it cannot be sure about is *flagged* on the word
(``expansion``, ``glob``, ``brace``, ``hash_inside``) or reported as ``error`` so the
caller can fail closed (at least ``ask``).

Nested commands (``$(...)``, backticks, process substitution, ``${...}`` contents)
are parsed recursively and returned next to the top-level ones with ``nested=True``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_GLOB_CHARS = "*?["
_MAX_DEPTH = 16


def escape_glob(text: str) -> str:
    """Escape glob metacharacters so ``glob``/``fnmatch`` treat them literally."""
    return "".join(f"[{c}]" if c in _GLOB_CHARS else c for c in text)


@dataclass
class Word:
    """One shell word after quote removal.

    ``text`` is the dequoted text with expansions left verbatim (``$HOME/x``);
    ``pattern`` is the same text as a glob pattern (quoted metacharacters escaped).
    """

    text: str = ""
    pattern: str = ""
    raw: str = ""
    quoted: bool = False
    expansion: bool = False
    glob: bool = False
    brace: bool = False
    hash_inside: bool = False
    tilde: bool = False
    procsub: bool = False
    ansi_c: bool = False
    _brace_open: bool = field(default=False, repr=False)

    def add(self, ch: str, *, quoted: bool) -> None:
        self.text += ch
        if quoted:
            self.pattern += escape_glob(ch)
            return
        self.pattern += ch
        if ch in _GLOB_CHARS:
            self.glob = True
        elif ch == "{":
            self._brace_open = True
        elif ch in ",." and self._brace_open:
            self.brace = True

    def add_expansion(self, raw: str) -> None:
        self.expansion = True
        self.text += raw
        self.pattern += escape_glob(raw)


@dataclass
class Redirect:
    op: str
    fd: str | None
    target: Word | None = None


@dataclass
class SimpleCommand:
    words: list[Word] = field(default_factory=list)
    assignments: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    nested: bool = False
    heredoc: str | None = None
    heredoc_quoted: bool = False

    @property
    def empty(self) -> bool:
        return not self.words and not self.assignments and not self.redirects


@dataclass
class ParseResult:
    commands: list[SimpleCommand] = field(default_factory=list)
    error: str | None = None


class ShellParseError(Exception):
    pass


_REDIR_OPS = ("<<<", "<<-", "&>>", "<<", ">>", "<>", "<&", ">&", ">|", "&>", "<", ">")
_CTRL_OPS = ("&&", "||", ";;&", ";;", ";&", "|&", ";", "&", "|", "(", ")")
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def _decode_ansi_c(body: str) -> str:
    out: list[str] = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[e])
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            m = re.match(rf"[0-9A-Fa-f]{{1,{width}}}", body[i:])
            if m:
                try:
                    out.append(chr(int(m.group(0), 16)))
                except (ValueError, OverflowError):
                    out.append("?")
                i += len(m.group(0))
            else:
                out.append("\\" + e)
        elif e in "01234567":
            m = re.match(r"[0-7]{0,2}", body[i:])
            digits = e + (m.group(0) if m else "")
            i += len(digits) - 1
            out.append(chr(int(digits, 8) & 0xFF))
        elif e == "c" and i < n:
            out.append(chr(ord(body[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + e)
    return "".join(out)


class _Parser:
    def __init__(self, src: str, depth: int) -> None:
        self.s = src
        self.n = len(src)
        self.depth = depth
        self.nested: list[SimpleCommand] = []

    # ------------------------------------------------------------------ helpers

    def _sub(self, inner: str) -> None:
        """Parse a nested command string and keep all of its commands as nested."""
        if self.depth >= _MAX_DEPTH:
            raise ShellParseError("nesting too deep")
        p = _Parser(inner, self.depth + 1)
        cmds, _ = p.parse_list(0, stop_at_paren=False)
        for c in cmds:
            c.nested = True
        self.nested.extend(cmds)
        self.nested.extend(p.nested)

    def _skip_single(self, i: int) -> int:
        """``i`` is just past an opening ``'``; return the index past the closing one."""
        j = self.s.find("'", i)
        if j < 0:
            raise ShellParseError("unterminated single quote")
        return j + 1

    def _scan_dollar_paren(self, i: int) -> int:
        """``i`` is just past ``$(`` (or ``<(``); parse up to the matching ``)``."""
        if self.depth >= _MAX_DEPTH:
            raise ShellParseError("nesting too deep")
        p = _Parser(self.s, self.depth + 1)
        cmds, end = p.parse_list(i, stop_at_paren=True)
        if end >= self.n or self.s[end] != ")":
            raise ShellParseError("unterminated command substitution")
        for c in cmds:
            c.nested = True
        self.nested.extend(cmds)
        self.nested.extend(p.nested)
        return end + 1

    def _scan_arith(self, i: int) -> int:
        """``i`` is just past ``$((``; return the index past the closing ``))``."""
        depth = 2
        j = i
        while j < self.n:
            c = self.s[j]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return j + 1
            elif c == "'":
                j = self._skip_single(j + 1) - 1
            j += 1
        raise ShellParseError("unterminated arithmetic expansion")

    def _scan_braced(self, i: int) -> int:
        """``i`` is just past ``${``; return the index past the matching ``}``."""
        depth = 1
        j = i
        while j < self.n:
            c = self.s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                j = self._skip_single(j + 1)
                continue
            if c == '"':
                j = self._scan_double(j + 1, Word())
                continue
            if c == "`":
                j = self._scan_backtick(j + 1)
                continue
            if c == "$" and self.s.startswith("$(", j) and not self.s.startswith("$((", j):
                j = self._scan_dollar_paren(j + 2)
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise ShellParseError("unterminated ${...}")

    def _scan_backtick(self, i: int) -> int:
        """``i`` is just past an opening backtick; parse the inner command."""
        buf: list[str] = []
        j = i
        while j < self.n:
            c = self.s[j]
            if c == "\\" and j + 1 < self.n and self.s[j + 1] in "$`\\":
                buf.append(self.s[j + 1])
                j += 2
                continue
            if c == "`":
                self._sub("".join(buf))
                return j + 1
            buf.append(c)
            j += 1
        raise ShellParseError("unterminated backtick")

    def _scan_dollar(self, i: int, word: Word) -> int:
        """``i`` points at ``$``; consume one expansion into ``word``."""
        s = self.s
        if s.startswith("$((", i):
            end = self._scan_arith(i + 3)
        elif s.startswith("$(", i):
            end = self._scan_dollar_paren(i + 2)
        elif s.startswith("${", i):
            end = self._scan_braced(i + 2)  # nested substitutions are parsed on the way
        elif i + 1 < self.n and (m := _NAME_RE.match(s, i + 1)):
            end = m.end()
        elif i + 1 < self.n and s[i + 1] in "0123456789@*#?$!-":
            end = i + 2
        else:
            word.add("$", quoted=True)
            return i + 1
        word.add_expansion(s[i:end])
        return end

    def _scan_double(self, i: int, word: Word) -> int:
        """``i`` is just past an opening ``"``; return the index past the closing one."""
        s = self.s
        j = i
        while j < self.n:
            c = s[j]
            if c == '"':
                return j + 1
            if c == "\\" and j + 1 < self.n:
                nxt = s[j + 1]
                if nxt in '$`"\\':
                    word.add(nxt, quoted=True)
                    j += 2
                    continue
                if nxt == "\n":
                    j += 2
                    continue
                word.add("\\", quoted=True)
                j += 1
                continue
            if c == "$":
                j = self._scan_dollar(j, word)
                continue
            if c == "`":
                end = self._scan_backtick(j + 1)
                word.add_expansion(s[j:end])
                j = end
                continue
            word.add(c, quoted=True)
            j += 1
        raise ShellParseError("unterminated double quote")

    # ------------------------------------------------------------------ words

    def _read_word(self, i: int) -> tuple[Word, int]:
        s = self.s
        word = Word()
        start = i
        while i < self.n:
            c = s[i]
            if c in " \t\n" or c in ";&|()<>":
                # `<(` / `>(` process substitution glued inside a word is an operator too
                break
            if c == "\\":
                if i + 1 >= self.n:
                    word.add("\\", quoted=True)
                    i += 1
                    continue
                if s[i + 1] == "\n":
                    i += 2
                    continue
                word.quoted = True
                word.add(s[i + 1], quoted=True)
                i += 2
                continue
            if c == "'":
                end = self._skip_single(i + 1)
                word.quoted = True
                for ch in s[i + 1 : end - 1]:
                    word.add(ch, quoted=True)
                i = end
                continue
            if c == '"':
                word.quoted = True
                i = self._scan_double(i + 1, word)
                continue
            if c == "$":
                if s.startswith("$'", i):
                    end = self._skip_ansi(i + 2)
                    word.quoted = True
                    word.ansi_c = True
                    for ch in _decode_ansi_c(s[i + 2 : end - 1]):
                        word.add(ch, quoted=True)
                    i = end
                    continue
                if s.startswith('$"', i):
                    word.quoted = True
                    i = self._scan_double(i + 2, word)
                    continue
                i = self._scan_dollar(i, word)
                continue
            if c == "`":
                end = self._scan_backtick(i + 1)
                word.add_expansion(s[i:end])
                i = end
                continue
            if c == "#" and i > start:
                word.hash_inside = True
            if c == "~" and i == start:
                word.tilde = True
            word.add(c, quoted=False)
            i += 1
        word.raw = s[start:i]
        if not (word._brace_open and "}" in word.text):
            word.brace = False
        return word, i

    def _skip_ansi(self, i: int) -> int:
        j = i
        while j < self.n:
            if self.s[j] == "\\":
                j += 2
                continue
            if self.s[j] == "'":
                return j + 1
            j += 1
        raise ShellParseError("unterminated $'...' quote")

    # ------------------------------------------------------------------ commands

    def _read_heredocs(self, i: int, pending: list[tuple[str, bool, SimpleCommand]]) -> int:
        """``i`` is just past a newline; consume here-document bodies."""
        s = self.s
        for delim, strip_tabs, cmd in pending:
            body: list[str] = []
            while True:
                if i >= self.n:
                    break  # an unterminated here-doc runs to the end of input
                nl = s.find("\n", i)
                line = s[i:] if nl < 0 else s[i:nl]
                i = self.n if nl < 0 else nl + 1
                check = line.lstrip("\t") if strip_tabs else line
                if check == delim:
                    break
                body.append(line)
            cmd.heredoc = "\n".join(body)
        pending.clear()
        return i

    def parse_list(self, i: int, *, stop_at_paren: bool) -> tuple[list[SimpleCommand], int]:
        s = self.s
        cmds: list[SimpleCommand] = []
        cur = SimpleCommand()
        pending_redirect: Redirect | None = None
        heredocs: list[tuple[str, bool, SimpleCommand]] = []
        paren_depth = 0

        def finish() -> None:
            nonlocal cur
            if not cur.empty:
                cmds.append(cur)
            cur = SimpleCommand()

        while i < self.n:
            c = s[i]
            if c in " \t":
                i += 1
                continue
            if c == "\n":
                if pending_redirect is not None:
                    raise ShellParseError("redirection without a target")
                finish()
                i += 1
                if heredocs:
                    i = self._read_heredocs(i, heredocs)
                continue
            if c == "#" and pending_redirect is None:
                nl = s.find("\n", i)
                i = self.n if nl < 0 else nl
                continue
            # process substitution <( ... ) / >( ... )
            if c in "<>" and s.startswith("(", i + 1):
                end = self._scan_dollar_paren(i + 2)
                word = Word(text=s[i:end], pattern=s[i:end], raw=s[i:end], procsub=True)
                if pending_redirect is not None:
                    pending_redirect.target = word
                    pending_redirect = None
                else:
                    cur.words.append(word)
                i = end
                continue
            op = next((o for o in _REDIR_OPS if s.startswith(o, i)), None)
            if op is not None:
                if pending_redirect is not None:
                    raise ShellParseError("redirection without a target")
                fd: str | None = None
                if (
                    cur.words
                    and cur.words[-1].raw.isdigit()
                    and i > 0
                    and s[i - 1] not in " \t"
                    and not op.startswith("&")
                ):
                    fd = cur.words.pop().raw
                pending_redirect = Redirect(op=op, fd=fd)
                cur.redirects.append(pending_redirect)
                i += len(op)
                continue
            ctrl = next((o for o in _CTRL_OPS if s.startswith(o, i)), None)
            if ctrl is not None:
                if pending_redirect is not None:
                    raise ShellParseError("redirection without a target")
                if ctrl == ")":
                    if paren_depth == 0 and stop_at_paren:
                        finish()
                        return cmds, i
                    paren_depth = max(0, paren_depth - 1)
                elif ctrl == "(":
                    paren_depth += 1
                finish()
                i += len(ctrl)
                continue
            word, i = self._read_word(i)
            if pending_redirect is not None:
                pending_redirect.target = word
                if pending_redirect.op in ("<<", "<<-"):
                    heredocs.append((word.text, pending_redirect.op == "<<-", cur))
                    cur.heredoc_quoted = word.quoted
                pending_redirect = None
                continue
            if not cur.words and _ASSIGN_RE.match(word.raw):
                cur.assignments.append(word)
            else:
                cur.words.append(word)
        if pending_redirect is not None:
            raise ShellParseError("redirection without a target")
        if stop_at_paren:
            raise ShellParseError("unterminated parenthesis")
        finish()
        if heredocs:
            for _, _, cmd in heredocs:
                cmd.heredoc = ""
        return cmds, i


def parse(command: str) -> ParseResult:
    """Parse ``command`` into simple commands (top level first, then nested ones)."""
    p = _Parser(command, 0)
    try:
        cmds, _ = p.parse_list(0, stop_at_paren=False)
    except ShellParseError as exc:
        return ParseResult(commands=[*p.nested], error=str(exc))
    except RecursionError:
        return ParseResult(commands=[], error="nesting too deep")
    return ParseResult(commands=cmds + p.nested)


__all__ = [
    "ParseResult",
    "Redirect",
    "ShellParseError",
    "SimpleCommand",
    "Word",
    "escape_glob",
    "parse",
]
