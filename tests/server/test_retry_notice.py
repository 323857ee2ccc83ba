"""A model call that fails and is retried is said at once, through the real server, with the
real openai and anthropic SDKs against the local fake servers: ``model.retrying`` arrives
before the retry is even made, and the run's other events are those of a run that never failed
(issue 40; docs/server.md#retry-notices)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support import fake_anthropic as anth
from tests.support import fake_openai as oai

WAIT = 4  # seconds of Retry-After: long enough to see the notice come before the retry


def _without_envelope(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    keep = ("message.delta", "message.completed", "output.discarded", "run.finished")
    shown = []
    for e in events:
        if e["kind"] in keep:
            shown.append((e["kind"], e.get("text") or e.get("status") or ""))
    return shown


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_a_retried_call_is_announced_before_the_retry_and_the_run_is_unchanged(
    harness: Any, fake_openai: Any, fake_anthropic: Any, vendor: str
) -> None:
    if vendor == "openai":
        fake, model = fake_openai, "openai:fake-model"
        fake.script(oai.rate_limited(str(WAIT)), oai.text("all ", "good"))
    else:
        fake, model = fake_anthropic, "anthropic:claude-sonnet-4-5"
        fake.script(anth.rate_limited(str(WAIT)), anth.text("all ", "good"))
    await harness.start(settings={"model": model}, env=fake.env())
    run = await harness.run("hi")
    rid = run["runId"]
    failed_at = await fake.stream_requested()
    notice = await harness.wait_kind(rid, "model.retrying")
    seen_at = time.time()
    # told within 2 s of the failed call, and before the retry was made
    assert time.monotonic() - failed_at < 2
    assert len(fake.stream_requests()) == 1
    assert notice["attempt"] == 1 and notice["maxAttempts"] == 5
    assert notice["statusCode"] == 429 and "429" in notice["reason"]
    assert "\n" not in notice["reason"]
    assert notice["delayMs"] >= WAIT * 1000
    assert notice["retryAt"] - notice["ts"] >= WAIT * 1000 - 50
    assert notice["retryAt"] / 1000 > seen_at  # the next attempt is still ahead
    assert notice["hint"] and "Retry-After" in notice["hint"]

    done = await harness.finished(rid)
    assert done["status"] == "completed" and done["output"] == "all good", done
    assert len(fake.stream_requests()) == 2
    events = harness.of_run(rid)
    kinds = [e["kind"] for e in events]
    assert kinds.count("model.retrying") == 1
    assert kinds.index("model.retrying") < kinds.index("message.delta")
    # the rest is what a run that never failed shows: nothing discarded, the text once
    text = "".join(e["text"] for e in events if e["kind"] == "message.delta")
    assert text == "all good"
    assert _without_envelope(events)[-2:] == [
        ("message.completed", "all good"),
        ("run.finished", "completed"),
    ]
    assert "output.discarded" not in kinds
