"""``grep_files`` with ripgrep on PATH finds exactly what the session's own walk finds (same
matches, same order), and rg never opens a denied file."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy
from lovia.workspace import _rg_prefilter as rg_prefilter
from lovia.workspace._rg_prefilter import _ASCII_FOLD_EXTRA, exclude_globs, needle
from lovia_server.protocol.settings import DEFAULT_DENIED_PATHS

needs_rg = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep not installed")
SECRET = "needle-secret"


class ListingOverlay:
    def __init__(self, docs: dict[Path, str]) -> None:
        self.docs = docs

    def text_for(self, path: Path) -> str | None:
        return self.docs.get(path)

    def open_paths(self) -> list[Path]:
        return list(self.docs)


def _tree(root: Path, outside: Path) -> None:
    def put(rel: str, text: str) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    put("a.py", "x = 1\nneedle one\n")
    put("z.py", "needle last\r\nneedle after a carriage return\n")
    for i in range(5):
        put(f"pkg{i}/mod.py", f"needle {i}\n")
        put(f"pkg{i}/deep/inner.py", f"NEEDLE {i}\n")
    # denied, in every spelling: names, case tricks, a denied folder, full case folding
    for rel in (".env", "Id_Rsa", "conf/SERVER.PEM", "keys.pem/inner.txt", "prod.tf\ufb06ate"):
        put(rel, f"{SECRET} {rel}\n")
    put(".kube/config", f"{SECRET} kube\n")
    put("sub/.ENV.local", f"{SECRET} hidden env\n")
    # names rg leaves to the session
    put("stra\u00dfe/notes.txt", "needle in a folder with a non-ASCII name\n")
    put("\u00dcn\u00efcode.txt", "needle non-ASCII file\n")
    put(".hidden/x.txt", "needle hidden\n")
    put("bin.dat", "needle\x00binary\n")
    put("buffer.py", "nothing on disk\n")
    put(".gitignore", "ignored.txt\n")  # the walk reads ignored files: rg runs --no-ignore
    put(".ignore", "also_ignored.txt\n")
    put("ignored.txt", "needle ignored by git\n")
    put("also_ignored.txt", "needle ignored by rg's own file\n")
    (root / "alias.txt").symlink_to(root / ".env")  # a symlink alias of a denied file
    (root / "good_link.txt").symlink_to(root / "a.py")
    (root / "linkdir").symlink_to(root / "pkg0")  # never descended
    put_out = outside / "out.txt"
    put_out.write_text("needle outside\n")
    (root / "out_link.txt").symlink_to(put_out)  # outside: read_outside decides
    os.mkfifo(root / "pipe")


PATTERNS = [
    "needle",
    "NEEDLE",
    "nee+dle",
    "^needle",
    r"\bneedle\b \d",
    "nee(?=dle)",
    "(needle) (one|last)",
    "carriage",
    "needle-secret",
]


async def _all_greps(s: LocalWorkspaceSession) -> list[list[tuple[str, int, str]]]:
    out = []
    for pattern in PATTERNS:
        for ignore_case in (False, True):
            for hidden in (False, True):
                found = await s.grep(pattern, ignore_case=ignore_case, include_hidden=hidden)
                out.append([(m.path, m.line, m.text) for m in found])
        found = await s.grep("needle", path="pkg1/../pkg2")
        out.append([(m.path, m.line, m.text) for m in found])
    return out


@needs_rg
async def test_rg_and_the_walk_find_the_same_and_never_a_denied_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    _tree(root, outside)
    overlay = ListingOverlay({root / "buffer.py": "needle in the buffer\n"})
    policy = WorkspacePolicy.trusted(denied_paths=DEFAULT_DENIED_PATHS)
    s = LocalWorkspaceSession(root, policy=policy, overlay=overlay)
    # the fast path is taken here, not silently skipped
    globs = exclude_globs(policy.denied_paths, root.as_posix(), ".")
    assert globs is not None
    assert rg_prefilter.candidates(root, "needle", globs, include_hidden=False) is not None
    with_rg = await _all_greps(s)

    no_rg = tmp_path / "bin"
    no_rg.mkdir()
    (no_rg / "find").symlink_to(shutil.which("find") or "/usr/bin/find")
    monkeypatch.setenv("PATH", str(no_rg))
    walked = await _all_greps(s)
    assert with_rg == walked

    flat = [hit for found in with_rg for hit in found]
    assert not [hit for hit in flat if SECRET in hit[2]]
    paths = {hit[0] for hit in flat}
    assert {"a.py", "z.py", "stra\u00dfe/notes.txt", "\u00dcn\u00efcode.txt", "buffer.py"} <= paths
    assert {"good_link.txt", "out_link.txt", ".hidden/x.txt"} <= paths
    assert {"ignored.txt", "also_ignored.txt"} <= paths
    assert not paths & {"alias.txt", "bin.dat", "pipe"} and not any("linkdir" in p for p in paths)
    first = next(found for found in with_rg if found)
    assert first[:4] == [
        ("a.py", 2, "needle one"),
        ("also_ignored.txt", 1, "needle ignored by rg's own file"),
        ("buffer.py", 1, "needle in the buffer"),
        ("good_link.txt", 2, "needle one"),
    ]


@needs_rg
async def test_rg_never_opens_a_denied_file(tmp_path: Path) -> None:
    """A read sets a file's access time when it is older than its change time (relatime):
    rg, walking the whole tree, reads the control file and none of the denied ones."""
    root = tmp_path / "ws"
    (root / "keys").mkdir(parents=True)
    denied = [root / ".env", root / "ID_RSA", root / "keys" / "Server.Pem", root / "x.tfstate"]
    control = root / "control.txt"
    for path in [*denied, control]:
        path.write_text(f"{SECRET}\n")
        os.utime(path, (time.time() - 86400, time.time()))
    atimes = {p: p.stat().st_atime for p in [*denied, control]}
    s = LocalWorkspaceSession(
        root, policy=WorkspacePolicy.trusted(denied_paths=DEFAULT_DENIED_PATHS)
    )
    found = await s.grep(SECRET, include_hidden=True)
    assert [m.path for m in found] == ["control.txt"]
    if control.stat().st_atime == atimes[control]:
        pytest.skip("this file system does not record reads (noatime)")
    assert [p for p in denied if p.stat().st_atime != atimes[p]] == []


def test_the_needle_is_a_literal_every_match_holds() -> None:
    def hits(pattern: str, flags: int = 0) -> str | None:
        return needle(re.compile(pattern, flags))

    assert hits("needle") == "".join(f"\\x{{{ord(c):X}}}" for c in "needle")
    assert hits("ab(?:cde)f+g") == "".join(f"\\x{{{ord(c):X}}}" for c in "abcde")
    assert hits(r"^foo\bbar$") == "".join(f"\\x{{{ord(c):X}}}" for c in "foobar")
    assert hits("foo|barbaz") is None  # no literal is in every match
    assert hits("ab") is None  # too short to be worth it
    assert hits(r"\d+\s*") is None
    assert hits("(?i:abc)") is None
    folded = hits("kis", re.IGNORECASE)
    assert folded is not None and "\\x{212A}" in folded and "\\x{131}" in folded
    assert "\\x{17F}" in folded


def test_ignorecase_takes_no_other_non_ascii_character_for_an_ascii_one() -> None:
    """``_ASCII_FOLD_EXTRA`` must hold every character ``re.IGNORECASE`` matches with an ASCII
    one (a new Unicode version could add some)."""
    everything = "".join(map(chr, range(0x80, 0x110000)))
    found = set(re.findall(r"[\x00-\x7f]", everything, re.IGNORECASE))
    assert found == set(_ASCII_FOLD_EXTRA)


def test_patterns_a_glob_cannot_spell_leave_the_search_to_the_walk() -> None:
    assert exclude_globs(("conf/*.key",), "/w", ".") is None  # fnmatch's * crosses "/"
    assert exclude_globs(("[ab].env",), "/w", ".") is None
    assert exclude_globs(("/w/sub",), "/w", ".") == ["!/sub", rg_prefilter._NON_ASCII_GLOB]
    assert exclude_globs(("/elsewhere/x",), "/w", ".") == [rg_prefilter._NON_ASCII_GLOB]
    assert exclude_globs(("a/b/c",), "/w/a", "a") == ["!/b/c", rg_prefilter._NON_ASCII_GLOB]
