"""Provider faults through the real server: a wrong setting fails the run with a hint, an
unavailable model server interrupts it so it can be resumed (see docs/providers.md)."""

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
