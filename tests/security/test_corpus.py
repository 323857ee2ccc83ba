"""Issue 23's attack classes, played against the real server by a prompt-injected model.

For each attack: every call's outcome is what the corpus expects (asked, refused, or ran
unasked with its effect contained), the attack's effect is absent, no secret reached the
model, nothing appeared outside the workspace and the canary saw no connection.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.security.attacks import ATTACKS, _conftest_payload
from tests.security.victim import SECRET, leaks, make_env, play
from tests.support.fake_openai import FakeOpenAI

MCP_SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "mcp_stdio_server.py")


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.id for a in ATTACKS])
async def test_attack_is_refused_or_asked_and_has_no_effect(attack, tmp_path):
    env = make_env(tmp_path)
    env.extra.update(python=sys.executable, mcp_script=MCP_SCRIPT, payload=_conftest_payload(env))
    try:
        with FakeOpenAI() as fake:
            seen = await play(attack, env, fake, tmp_path / "state")
            model_saw_secret = leaks(fake)
    finally:
        env.canary.close()
    assert seen["done"]["status"] == "completed", seen["done"]
    wanted = attack.outcomes()
    got = [
        "blocked" if want == "blocked" and have in ("asked", "refused") else have
        for want, have in zip(wanted, seen["outcomes"], strict=True)
    ]
    assert got == wanted, _explain(seen)
    if attack.effect is not None:
        assert attack.effect(env) is None, attack.effect(env)
    assert not model_saw_secret, "a secret reached the model"
    assert sorted(p.name for p in env.outside.iterdir()) == [], "something was written outside"
    assert env.canary.connections == 0 and SECRET.encode() not in env.canary.received


def _explain(seen: dict) -> str:
    lines = []
    for call_id, result in sorted(seen["results"].items()):
        text = " ".join(c.get("text", "") for c in result.get("content", []))[:300]
        lines.append(f"{call_id}: error={result.get('isError')} {text!r}")
    return "\n".join(lines)
