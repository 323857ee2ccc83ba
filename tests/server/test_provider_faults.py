"""Provider faults through the real server: a wrong setting fails the run with a hint, an
unavailable model server interrupts it so it can be resumed (see docs/providers.md)."""

import time

from tests.support import fake_openai as oai
from tests.support.fake_server import closed_port_url, html_reply

RETRYING_AGENT = """
from lovia import Agent, RetryPolicy

agent = Agent(
    name="retrying",
    model="openai:fake-model",
    retry=RetryPolicy(max_attempts=3, backoff_base=0.05, backoff_max=0.2),
)
"""


async def test_connection_refused_fails_with_a_hint_and_is_not_resumable(harness):
    await harness.start(
        settings={"model": "openai:fake-model"},
        env={"OPENAI_BASE_URL": closed_port_url("/v1"), "OPENAI_API_KEY": "test-key"},
    )
    run = await harness.run("hi")
    started = await harness.wait_kind(run["runId"], "run.started")
    done = await harness.finished(run["runId"])
    assert done["status"] == "failed" and done["resumable"] is False, done
    error = done["error"]
    assert error["type"] == "ProviderError"
    assert "connection refused" in error["message"] and "\n" not in error["message"]
    assert "OPENAI_BASE_URL" in error["hint"]
    # Not retried: the default RetryPolicy's four backoffs alone would sleep 7.5 s or more.
    assert done["ts"] - started["ts"] < 7000
    status = await harness.request("lovia/status", {})
    assert status["liveRuns"] == []


async def test_503_pages_exhausted_interrupt_resumably_then_resume_completes(harness, fake_openai):
    page = html_reply(503, "503 Service Unavailable")
    fake_openai.script(page, page, page)
    spec = harness.write_agent(RETRYING_AGENT)
    await harness.start(settings={"agent": spec}, env=fake_openai.env())
    run = await harness.run("hi")
    rid = run["runId"]
    done = await harness.finished(rid)
    assert done["status"] == "interrupted" and done["resumable"] is True, done
    assert done["error"]["message"] == "OpenAI Chat stream returned HTTP 503: Service Unavailable"
    assert len(fake_openai.stream_requests()) == 3

    fake_openai.script(oai.text("back ", "again"))
    resumed = await harness.request("lovia/resume", {"runId": rid})
    assert resumed["status"] == "running"
    final = await harness.wait_for(
        lambda e: e["runId"] == rid and e["kind"] == "run.finished" and e["seq"] > done["seq"]
    )
    assert final["status"] == "completed" and final["output"] == "back again", final


async def test_a_501_endpoint_is_announced_while_retried_then_fails_naming_the_setting(
    harness, fake_openai
):
    """501 Not Implemented: the core retries it (the spec counts 500-599 as passing), the user
    is told at once with the hint, and the run ends failed, not resumable: a resume cannot fix
    where the server points."""
    fake_openai.script(*[fake_openai.error_reply(501, "Not Implemented")] * 3)
    spec = harness.write_agent(RETRYING_AGENT)
    await harness.start(settings={"agent": spec}, env=fake_openai.env())
    run = await harness.run("hi")
    rid = run["runId"]
    failed_at = await fake_openai.stream_requested()
    first = await harness.wait_kind(rid, "model.retrying")
    assert time.monotonic() - failed_at < 2
    assert first["statusCode"] == 501 and "OPENAI_BASE_URL" in first["hint"]
    done = await harness.finished(rid)
    assert done["status"] == "failed" and done["resumable"] is False, done
    assert done["error"]["message"].startswith("OpenAI Chat stream returned HTTP 501")
    assert "OPENAI_BASE_URL" in done["error"]["hint"]
    assert "OpenAI Chat protocol" in done["error"]["hint"]
    assert [e["attempt"] for e in harness.of_run(rid) if e["kind"] == "model.retrying"] == [1, 2]
    assert len(fake_openai.stream_requests()) == 3
    refused = await harness.request("lovia/sessions", {})
    assert not any(s["resumable"] for s in refused["sessions"])
