"""The guard's full analysis of a large command corpus, pinned to a reviewed golden file.

It guards refactors of ``command_guard``: any change in claims, uncertainties, invoked
commands or session decisions shows up as a diff. Regenerate with
``LOVIA_REGEN_GUARD_GOLDEN=1`` and review the diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy
from lovia.workspace.command_guard import analyze

from .guard_corpus import COMMANDS

GOLDEN = Path(__file__).parent / "data" / "guard_golden.json"
DENIED = (".env*", "secrets")


def _snapshot(command: str, sessions: dict[str, LocalWorkspaceSession]) -> dict[str, Any]:
    a = analyze(command)
    return {
        "claims": [
            [c.op, c.text, list(c.bases), c.recursive, c.destructive, c.bare, c.glob]
            for c in a.claims
        ],
        "uncertain": a.uncertain,
        "invocations": [[*i.words, "<unknown>"] if i.unknown else i.words for i in a.invocations],
        **{name: s.decide_command(command) for name, s in sessions.items()},
    }


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LocalWorkspaceSession]:
    root = tmp_path_factory.mktemp("golden").resolve() / "ws"
    (root / "rel").mkdir(parents=True)
    (root / "rel" / "p").write_text("p")
    (root / "a").write_text("a")
    (root / ".env").write_text("e")
    (root / "secrets").mkdir()
    return {
        preset: LocalWorkspaceSession(
            root, policy=getattr(WorkspacePolicy, preset)(denied_paths=DENIED)
        )
        for preset in ("coding", "trusted")
    }


def test_guard_matches_the_golden_file(sessions: dict[str, LocalWorkspaceSession]) -> None:
    current = {command: _snapshot(command, sessions) for command in COMMANDS}
    if os.environ.get("LOVIA_REGEN_GUARD_GOLDEN"):
        GOLDEN.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    changed = [c for c in COMMANDS if golden.get(c) != current[c]]
    assert not changed, f"{len(changed)} commands changed, first: {changed[:5]}"
    assert set(golden) == set(COMMANDS)
