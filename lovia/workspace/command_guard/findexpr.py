"""Which entries ``find`` prints: its expression, evaluated with three-valued logic.

``find . -name '*.py'`` walks into ``.git`` but prints none of it; ``find . -type f`` prints
everything. The read-only judgement needs to know the difference, so this module turns
a find expression into a :class:`~.core.CommandWalk` whose ``shown`` callback says, for one
entry, whether find may print it and whether find prunes it. Tests that depend on
more than the entry's path, name and type (``-size``, ``-newer``, ``-mtime``...) are
*unknown*: an entry is taken as printed unless the expression is surely false for it.

Anything the model does not know (an action that runs or writes something, an
unknown primary, unbalanced parentheses, ``-L``) gives ``None``: no relief, the strict
default applies.
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.core import CommandWalk

# primaries that take one argument and are tests the model can evaluate
_NAME_TESTS = frozenset({"-name", "-iname"})
_PATH_TESTS = frozenset({"-path", "-ipath", "-wholename", "-iwholename"})
# primaries that take one argument whose result the model cannot know
_OPAQUE_1 = frozenset(
    {
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-xtype",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-newer",
        "-anewer",
        "-cnewer",
        "-size",
        "-perm",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-links",
        "-inum",
        "-samefile",
        "-used",
        "-fstype",
    }
)
_OPAQUE_0 = frozenset(
    {"-empty", "-readable", "-writable", "-executable", "-nouser", "-nogroup", "-true"}
)
# options written where tests go: always true, no effect on printing
_OPTIONS_0 = frozenset(
    {
        "-depth",
        "-d",
        "-xdev",
        "-mount",
        "-noleaf",
        "-daystart",
        "-follow",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "-warn",
        "-nowarn",
    }
)
_OPTIONS_1 = frozenset({"-maxdepth", "-mindepth", "-regextype"})
_PRINT_ACTIONS_0 = frozenset({"-print", "-print0", "-ls"})
_PRINT_ACTIONS_1 = frozenset({"-printf"})

Tri = bool | None  # True, False, or unknown


def _and3(a: Tri, b: Tri) -> Tri:
    if a is False or b is False:
        return False
    if a is True and b is True:
        return True
    return None


def _or3(a: Tri, b: Tri) -> Tri:
    if a is True or b is True:
        return True
    if a is False and b is False:
        return False
    return None


def _not3(a: Tri) -> Tri:
    return None if a is None else not a


def _maybe(a: Tri) -> Tri:
    """A side effect of a branch that may or may not run."""
    return False if a is False else None


class _Entry:
    __slots__ = ("kind", "name", "path")

    def __init__(self, path: str, name: str, kind: str) -> None:
        self.path = path
        self.name = name
        self.kind = kind


# evaluates to (value, printed, pruned)
_Node = Callable[[_Entry], tuple[Tri, Tri, Tri]]


class _Parser:
    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.i = 0
        self.has_action = False
        self.max_depth: int | None = None
        self.depth_first = False

    def peek(self) -> str | None:
        return self.words[self.i] if self.i < len(self.words) else None

    def take(self) -> str:
        word = self.words[self.i]
        self.i += 1
        return word

    def parse(self) -> _Node:
        node = self.or_expr()
        if self.peek() is not None:
            raise ValueError("trailing words")
        return node

    def or_expr(self) -> _Node:
        left = self.and_expr()
        while self.peek() in ("-o", "-or", ","):
            op = self.take()
            right = self.and_expr()
            left = _comma(left, right) if op == "," else _or(left, right)
        return left

    def and_expr(self) -> _Node:
        left = self.unary()
        while self.peek() not in (None, "-o", "-or", ",", ")"):
            if self.peek() in ("-a", "-and"):
                self.take()
            right = self.unary()
            left = _and(left, right)
        return left

    def unary(self) -> _Node:
        word = self.peek()
        if word in ("!", "-not"):
            self.take()
            return _not(self.unary())
        if word == "(":
            self.take()
            node = self.or_expr()
            if self.peek() != ")":
                raise ValueError("unbalanced parenthesis")
            self.take()
            return node
        return self.primary()

    def arg(self) -> str:
        if self.peek() is None:
            raise ValueError("missing argument")
        return self.take()

    def primary(self) -> _Node:
        word = self.take()
        if word in _NAME_TESTS:
            pattern = self.arg()
            fold = word == "-iname"
            return _test(lambda e: _match(e.name, pattern, fold))
        if word in _PATH_TESTS:
            pattern = self.arg()
            fold = word.startswith("-i")
            return _test(lambda e: _match(e.path, pattern, fold))
        if word == "-type":
            kinds = self.arg().split(",")
            return _test(lambda e: e.kind in kinds if e.kind != "o" else None)
        if word == "-false":
            return _test(lambda e: False)
        if word == "-prune":
            return lambda e: (True, False, True)
        if word in _OPAQUE_1:
            self.arg()
            return _test(lambda e: None)
        if word in _OPAQUE_0:
            return _test(lambda e: None if word != "-true" else True)
        if word in _OPTIONS_0:
            self.depth_first |= word in ("-depth", "-d")
            return _test(lambda e: True)
        if word in _OPTIONS_1:
            value = self.arg()
            if word == "-maxdepth":
                self.max_depth = int(value) if value.isdigit() else None
                if self.max_depth is None:
                    raise ValueError("unknown depth")
            return _test(lambda e: True)
        if word in _PRINT_ACTIONS_0 or word in _PRINT_ACTIONS_1:
            if word in _PRINT_ACTIONS_1:
                self.arg()
            self.has_action = True
            return lambda e: (True, True, False)
        if word == "-quit":
            return _test(lambda e: True)
        raise ValueError(f"not modelled: {word}")


def _match(text: str, pattern: str, fold: bool) -> bool:
    return fnmatchcase(text.lower(), pattern.lower()) if fold else fnmatchcase(text, pattern)


def _test(fn: Callable[[_Entry], Tri]) -> _Node:
    return lambda e: (fn(e), False, False)


def _and(a: _Node, b: _Node) -> _Node:
    def node(e: _Entry) -> tuple[Tri, Tri, Tri]:
        va, pa, ra = a(e)
        if va is False:
            return False, pa, ra
        vb, pb, rb = b(e)
        if va is True:
            return _and3(va, vb), _or3(pa, pb), _or3(ra, rb)
        return _and3(va, vb), _or3(pa, _maybe(pb)), _or3(ra, _maybe(rb))

    return node


def _or(a: _Node, b: _Node) -> _Node:
    def node(e: _Entry) -> tuple[Tri, Tri, Tri]:
        va, pa, ra = a(e)
        if va is True:
            return True, pa, ra
        vb, pb, rb = b(e)
        if va is False:
            return vb, _or3(pa, pb), _or3(ra, rb)
        return _or3(va, vb), _or3(pa, _maybe(pb)), _or3(ra, _maybe(rb))

    return node


def _comma(a: _Node, b: _Node) -> _Node:
    def node(e: _Entry) -> tuple[Tri, Tri, Tri]:
        _va, pa, ra = a(e)
        vb, pb, rb = b(e)
        return vb, _or3(pa, pb), _or3(ra, rb)

    return node


def _not(a: _Node) -> _Node:
    def node(e: _Entry) -> tuple[Tri, Tri, Tri]:
        va, pa, ra = a(e)
        return _not3(va), pa, ra

    return node


def find_walk(options: list[Word], expr: list[Word]) -> CommandWalk | None:
    """The walk of ``find OPTIONS START... EXPR`` when only names are printed, else None."""
    if any(w.text in ("-L", "-H") for w in options):
        return None
    if any(w.expansion or w.brace for w in expr):
        return None
    parser = _Parser([w.text for w in expr])
    try:
        root = parser.parse() if expr else _test(lambda e: True)
    except (ValueError, IndexError):
        return None
    implicit_print = not parser.has_action
    may_prune = not parser.depth_first

    def shown(path: str, name: str, kind: str) -> tuple[bool, bool]:
        value, printed, pruned = root(_Entry(path, name, kind))
        if implicit_print:
            printed = value
        return printed is not False, may_prune and pruned is True

    return CommandWalk(names_only=True, max_depth=parser.max_depth, shown=shown)


__all__ = ["find_walk"]
