"""Property-based: no generated path that resolves into a denied or outside location is
ever allowed where the policy says otherwise — as a file path, and inside shell commands."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lovia.workspace import LocalWorkspaceSession, WorkspaceError, WorkspacePolicy

SEVERITY = {"allow": 0, "ask": 1, "deny": 2}
DENIED = (".env", "secrets")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("prop").resolve()
    root, out = base / "ws", base / "outside"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "secrets").mkdir()
    out.mkdir()
    (out / "sub").mkdir()
    (root / "a.txt").write_text("a")
    (root / "src" / "m.py").write_text("m")
    (root / ".env").write_text("e")
    (root / "secrets" / "key").write_text("k")
    (out / "o.txt").write_text("o")
    (out / ".env").write_text("oe")
    (root / "lnk_out").symlink_to(out)
    (root / "lnk_env").symlink_to(root / ".env")
    (root / "lnk_sec").symlink_to(root / "secrets")
    (root / "lnk_ok").symlink_to(root / "src")
    (root / "src" / "up").symlink_to("..")
    (root / "dangling").symlink_to(out / "missing.txt")
    (out / "back").symlink_to(root / "secrets")
    (root / "loop").symlink_to("loop")
    return root, out


SEGMENTS = [
    ".",
    "..",
    "a.txt",
    "src",
    "pkg",
    "m.py",
    ".env",
    "secrets",
    "key",
    "lnk_out",
    "lnk_env",
    "lnk_sec",
    "lnk_ok",
    "up",
    "o.txt",
    "sub",
    "back",
    "dangling",
    "x",
    "loop",
    "ws",
    "outside",
]


@st.composite
def paths(draw: st.DrawFn) -> str:
    segs = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5))
    prefix = draw(st.sampled_from(["", "./", "ROOT/", "OUT/", "BASE/", "//", "ROOT//./"]))
    trailing = draw(st.sampled_from(["", "/"]))
    return prefix + "/".join(segs) + trailing


def concrete(p: str, world: tuple[Path, Path]) -> str:
    root, out = world
    return (
        p.replace("ROOT/", f"{root}/")
        .replace("OUT/", f"{out}/")
        .replace("BASE/", f"{root.parent}/")
    )


def truth(root: Path, text: str, base: Path) -> tuple[bool, bool]:
    """(denied, outside) for where ``text`` really resolves (independent of the session)."""
    real = Path(os.path.realpath(os.path.join(base, os.path.expanduser(text))))
    try:
        rel = real.relative_to(root)
        inside = True
        segments = rel.parts
    except ValueError:
        inside = False
        segments = real.parts
    denied = any(seg in DENIED for seg in segments)
    return denied, not inside


def expected_path_decision(policy: WorkspacePolicy, denied: bool, outside: bool, op: str) -> str:
    if denied:
        return "deny"
    if outside:
        return policy.read_outside if op == "read" else policy.write_outside
    return "allow" if op == "read" else policy.write


POLICIES = {
    "coding": WorkspacePolicy.coding(denied_paths=DENIED),
    "trusted": WorkspacePolicy.trusted(denied_paths=DENIED),
    "bare": WorkspacePolicy(denied_paths=DENIED),
}

_settings = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_settings
@given(p=paths(), preset=st.sampled_from(sorted(POLICIES)), write=st.booleans())
def test_decide_path_matches_the_real_location(
    world: tuple[Path, Path], p: str, preset: str, write: bool
) -> None:
    root, _ = world
    text = concrete(p, world)
    s = LocalWorkspaceSession(root, policy=POLICIES[preset])
    try:
        decision = s.decide_path(text, write=write)
    except WorkspaceError:
        return  # loops fail closed
    denied, outside = truth(root, text, root)
    op = "write" if write else "read"
    assert decision == expected_path_decision(POLICIES[preset], denied, outside, op), (
        text,
        decision,
    )


async def _read_ok(s: LocalWorkspaceSession, text: str) -> bool:
    try:
        await s.read_text(text)
    except WorkspaceError as exc:
        return "denied" not in str(exc) and "not permitted" not in str(exc)
    return True


def quote(text: str, style: str) -> str:
    if style == "plain":
        return text
    if style == "single":
        return "'" + text.replace("'", "'\\''") + "'"
    if style == "double":
        return '"' + text + '"'
    if style == "backslash":
        return "".join("\\" + c if c not in "/" else c for c in text)
    if style == "ansi":
        return "$'" + "".join(f"\\x{ord(c):02x}" for c in text) + "'"
    if style == "split":
        return "".join(f'"{c}"' if i % 2 else c for i, c in enumerate(text))
    raise AssertionError(style)


READS = [
    "cat {q}",
    "cat < {q}",
    "head -n1 {q} 2>/dev/null",
    "env cat {q}",
    "sh -c 'cat {q}'",
    "cat a.txt {q} | wc -l",
    "xargs cat {q}",
    "grep -r x {q}",
    "tool --in={q}",
    "tool -i{q}",
    "python3 script.py {q}",
    "FOO={q} tool",
    "cat file://{q}",
    "echo $(cat {q})",
    "cat a#b {q}",
    "nohup cat {q} &",
    "cd src && cat ../{q}",
]
WRITES = [
    "echo x > {q}",
    "echo x >> {q}",
    "tee {q}",
    "cp a.txt {q}",
    "mv a.txt {q}",
    "dd if=a.txt of={q}",
    "sed -i s/a/b/ {q}",
    "cat <> {q}",
    "touch {q}",
    "rm -rf {q}",
    "curl -o {q} https://e.com",
    "sort -o {q} a.txt",
    "tool --output={q}",
    "echo x | sudo tee -a {q}",
]


@_settings
@given(
    p=paths(),
    preset=st.sampled_from(sorted(POLICIES)),
    template=st.sampled_from(READS + WRITES),
    style=st.sampled_from(["plain", "single", "double", "backslash", "ansi", "split"]),
)
def test_commands_are_never_looser_than_their_paths(
    world: tuple[Path, Path], p: str, preset: str, template: str, style: str
) -> None:
    root, _ = world
    text = concrete(p, world)
    if "file://" in template and (style != "plain" or not text.startswith("/")):
        return  # a URL carries an absolute path; quoting it piecewise is not a URL
    if "'" in template and style in ("single", "ansi"):
        return  # nested single quotes would not reach the inner shell as one word
    policy = POLICIES[preset]
    s = LocalWorkspaceSession(root, policy=policy)
    command = template.replace("{q}", quote(text, style))
    decision = s.decide_command(command)
    base = root / "src" if template.startswith("cd src") else root
    target = "../" + text if template.startswith("cd src") else text
    try:
        s._resolve(target, base=base)
    except WorkspaceError:
        assert decision in ("ask", "deny")
        return
    denied, outside = truth(root, target, base)
    op = "write" if template in WRITES else "read"
    floor = expected_path_decision(policy, denied, outside, op)
    if op == "write" and not denied and not outside and template.startswith("rm"):
        floor = "allow"
    assert SEVERITY[decision] >= SEVERITY[floor], (command, decision, floor)
    if denied:
        assert decision == "deny", (command, decision)
