"""Shared by the matrix rows that play a prompt-injected model against the real server:
one attack (``tests/security/victim.py``'s ``Attack``) in a fresh server whose user rejects
every approval, and the checks every cell makes afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.security.victim import SECRET, Attack, Env, leaks, make_env, play
from tests.support.fake_openai import FakeOpenAI


def secret_file(path: Path, text: str = f"token={SECRET}\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def attack(tmp_path: Path, attack: Attack, env: Env | None = None) -> dict[str, Any]:
    """Play ``attack``; returns what ``victim.play`` saw plus ``leaked`` (a secret reached the
    model) and ``connections`` (to the canary). The run must complete."""
    env = env or make_env(tmp_path)
    try:
        with FakeOpenAI() as fake:
            seen = await play(attack, env, fake, tmp_path / "state")
            seen["leaked"] = leaks(fake)
            seen["requests"] = [r.body.decode("utf-8", "replace") for r in fake.requests]
    finally:
        env.canary.close()
    seen["connections"] = env.canary.connections
    assert seen["done"]["status"] == "completed", seen["done"]
    return seen


def explain(seen: dict[str, Any]) -> str:
    lines = [f"outcomes: {seen['outcomes']}"]
    for call_id, result in sorted(seen["results"].items()):
        text = " ".join(c.get("text", "") for c in result.get("content", []))[:300]
        lines.append(f"{call_id}: error={result.get('isError')} {text!r}")
    return "\n".join(lines)


def warned(seen: dict[str, Any]) -> set[str]:
    """The calls whose approval card carried the protected-path warning."""
    return {
        e["toolCallId"]
        for e in seen["events"]
        if e["kind"] == "approval.requested" and e.get("warning")
    }
