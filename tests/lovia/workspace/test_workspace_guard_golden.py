"""The guard's analysis of a large command corpus, pinned to a reviewed golden file.

It guards refactors of ``command_guard``: a change in a session decision, or in the
claims, uncertainties or invoked commands behind it (kept as a digest), shows up
here. Regenerate with ``LOVIA_REGEN_GUARD_GOLDEN=1`` and review the diff (decisions are
plain text) before committing it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy
from lovia.workspace.command_guard import analyze
from lovia.workspace.command_guard.readonly_table import TABLE

from .guard_corpus import COMMANDS

GOLDEN = Path(__file__).parent / "data" / "guard_golden.jsonl"
DENIED = (".env*", "secrets")


def analysis_digest(command: str) -> str:
    a = analyze(command)
    detail = [
        [
            [c.op, c.text, list(c.bases), c.recursive, c.destructive, c.bare, c.glob]
            for c in a.claims
        ],
        a.uncertain,
        [[*i.words, "<unknown>"] if i.unknown else i.words for i in a.invocations],
    ]
    return hashlib.sha256(json.dumps(detail).encode()).hexdigest()[:12]


def snapshot(command: str, sessions: dict[str, LocalWorkspaceSession]) -> list[str]:
    """``[command, coding decision, trusted decision, analysis digest]``."""
    return [
        command,
        sessions["coding"].decide_command(command),
        sessions["trusted"].decide_command(command),
        analysis_digest(command),
    ]


def pinned_path(base: Path) -> str:
    """A ``PATH`` on which every program the read-only table knows exists, whatever this
    machine has installed: the table lifts an ``ask`` only for a program ``PATH`` finds, so
    with the host's ``PATH`` the decisions would depend on whether ripgrep (or ``jq``...) is
    there. Real programs are linked (git is run by the guard); missing ones get a stub that
    is never run."""
    bin_dir = base / "bin"
    bin_dir.mkdir()
    for name in sorted({*TABLE, "git"}):
        real = shutil.which(name)
        if real is not None:
            (bin_dir / name).symlink_to(real)
        else:
            (bin_dir / name).write_text("#!/bin/sh\nexit 127\n")
            (bin_dir / name).chmod(0o755)
    return str(bin_dir)


def make_sessions(base: Path) -> dict[str, LocalWorkspaceSession]:
    path = pinned_path(base)
    root = base / "ws"
    (root / "rel").mkdir(parents=True)
    (root / "rel" / "p").write_text("p")
    (root / "a").write_text("a")
    (root / ".env").write_text("e")
    (root / "secrets").mkdir()
    return {
        preset: LocalWorkspaceSession(
            root, policy=getattr(WorkspacePolicy, preset)(denied_paths=DENIED), env={"PATH": path}
        )
        for preset in ("coding", "trusted")
    }


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LocalWorkspaceSession]:
    return make_sessions(tmp_path_factory.mktemp("golden").resolve())


def test_guard_matches_the_golden_file(sessions: dict[str, LocalWorkspaceSession]) -> None:
    current = [snapshot(command, sessions) for command in COMMANDS]
    if os.environ.get("LOVIA_REGEN_GUARD_GOLDEN"):
        GOLDEN.write_text("".join(json.dumps(row) + "\n" for row in current))
    golden = {row[0]: row for row in map(json.loads, GOLDEN.read_text().splitlines())}
    decisions = [
        f"{r[0]!r}: {golden[r[0]][1:3]} -> {r[1:3]}"
        for r in current
        if r[0] in golden and golden[r[0]][1:3] != r[1:3]
    ]
    analyses = [r[0] for r in current if r[0] in golden and golden[r[0]][3] != r[3]]
    assert not decisions, f"{len(decisions)} decisions changed: {decisions[:10]}"
    assert not analyses, f"{len(analyses)} analyses changed: {analyses[:10]}"
    assert set(golden) == set(COMMANDS)
