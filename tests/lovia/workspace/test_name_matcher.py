"""The sandbox walk's compiled name match says what the policy's matcher says."""

from __future__ import annotations

import os
import random

from lovia.workspace.patterns import (
    _pattern_matches,
    any_pattern_matches,
    may_cover_below,
    name_matcher,
    names_matcher,
    pattern_prefix,
)

PATTERNS = (".env", ".env.*", "*.env", "id_rsa*", "*.pem", "[!a]x?", "[]]z", "a[b", "secrets")
NAMES = (
    ".env",
    ".ENV",
    ".env.local",
    "prod.env",
    "id_rsa",
    "ID_RSA.pub",
    "server.pem",
    "x.PEM",
    "bx1",
    "ax1",
    "]z",
    "a[b",
    "Secrets",
    "secret",
    "notes.txt",
    "env",
    ".envrc",
    "a\nb.pem",
)


def test_the_compiled_match_is_the_policys_per_pattern() -> None:
    for fold in (True, False):
        match = name_matcher(PATTERNS, fold=fold)
        for name in NAMES:
            expected = any(_pattern_matches(p, name, "/r/" + name, fold=fold) for p in PATTERNS)
            assert match(name) is expected, (name, fold)
    assert name_matcher((), fold=True)("anything") is False


def test_a_folder_filter_keeps_every_folder_a_pattern_can_reach() -> None:
    prefix = pattern_prefix("config/*/secret.json", fold=True)
    assert prefix == "config/"
    assert may_cover_below(prefix, "")  # the root
    assert may_cover_below(prefix, "config")
    assert may_cover_below(prefix, "config/deep/er")
    assert not may_cover_below(prefix, "src")
    assert not may_cover_below(prefix, "configs")
    assert may_cover_below(pattern_prefix("conf*/x", fold=True) or "", "configs")


def test_a_compiled_pattern_set_judges_as_each_pattern_does() -> None:
    """``any_pattern_matches`` (three regexes for a policy's denied or protected patterns)
    answers as ``_pattern_matches`` of each pattern, for paths inside and outside the root,
    folded or not."""
    from lovia.workspace.protected import DEFAULT_PROTECTED_PATHS

    rng = random.Random(7)
    home = os.path.expanduser("~")
    extra = ("secrets/", "a/*.key", "*.PEM", "build/**", "/tmp/x*", "~/.aws", "[!a]b", "Straße")
    extra += ("docs/[ab]*", "x/", "/", "", "*")
    names = [".env", ".ENV", "id_rsa", "server.pem", "a", "cb", "secrets", "STRASSE", "straße"]
    names += ["docs", "x.key", ".ssh", "build", ".git", "hooks", ".vscode", "ab", ".aws", "x1"]
    denied = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", "~/.ssh", "~/.aws", "/etc/shadow")
    sets = [denied, tuple(DEFAULT_PROTECTED_PATHS), (*denied, *extra)]
    for patterns in sets:
        for fold in (True, False):
            for _ in range(3000):
                rel = "/".join(rng.choice(names) for _ in range(rng.randint(1, 5)))
                if rng.random() < 0.2:
                    where: str | None = None
                    absolute = f"{rng.choice([home, '/tmp', '/work/r'])}/{rel}"
                else:
                    where, absolute = rel, f"/work/r/{rel}"
                expected = any(_pattern_matches(p, where, absolute, fold=fold) for p in patterns)
                got = any_pattern_matches(patterns, where, absolute, fold=fold)
                assert got == expected, (patterns, where, absolute, fold)


def test_a_folder_names_prefilter_never_misses_a_name_the_exact_match_finds() -> None:
    """``names_matcher`` (the sandbox walk tests only the names it returns) is a superset of
    ``name_matcher``, folded or not, for the default denied and protected names and odd ones."""
    from lovia.workspace.protected import DEFAULT_PROTECTED_PATHS
    from lovia_server.protocol.settings import DEFAULT_DENIED_PATHS

    rng = random.Random(11)
    odd = ("*", "?x", "*.tf*state*", "a*b?c", "[ab]*", "x[", "Stra\u00dfe", "*\u00df", ".git")
    bare = [p for p in (*DEFAULT_DENIED_PATHS, *DEFAULT_PROTECTED_PATHS) if "/" not in p]
    pieces = [".env", "ENV", ".", "id_rsa", "pem", "x", "a", "b", "c", "STRASSE", "\u00df", "tf"]
    pieces += ["state", ".git", "-", "key", ".vscode", "workspace", "\u212a", "\u0130", "rc"]
    for patterns in (bare, [*bare, *odd], list(odd), [".git"], []):
        for fold in (True, False):
            exact = name_matcher(patterns, fold=fold)
            some = names_matcher(patterns, fold=fold)
            for _ in range(300):
                names = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))]
                names += [rng.choice(NAMES) for _ in range(5)]
                names = list(dict.fromkeys(names))
                maybe = some(names)
                if maybe is None:
                    continue
                missed = [n for i, n in enumerate(names) if exact(n) and i not in maybe]
                assert not missed, (patterns, fold, missed)
    assert names_matcher([".env", "*.pem"], fold=True)(["a.py", ".ENV", "b", "k.PEM"]) == {1, 3}
