"""The sandbox walk's compiled name match says what the policy's matcher says."""

from __future__ import annotations

from lovia.workspace.patterns import (
    _pattern_matches,
    may_cover_below,
    name_matcher,
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
