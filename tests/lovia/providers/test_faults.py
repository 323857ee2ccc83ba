"""Provider faults end a run by cause: configuration errors fail fast, transient ones are retried.

Every test drives a real agent run (``Runner.stream``) through lovia's providers and the real
``openai`` / ``anthropic`` SDKs against a fault-injecting local server (127.0.0.1) speaking
the vendor's wire format (Chat Completions, Responses, Messages). The table these tests pin
is documented in docs/providers.md.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, InMemoryCheckpointer, RetryPolicy, Runner
from lovia import events as ev
from lovia.exceptions import ProviderError
from lovia.providers._errors import SUMMARY_LIMIT
from tests.support import fake_anthropic as ant
from tests.support import fake_openai as oai
from tests.support import fake_openai_responses as rsp
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_responses import FakeOpenAIResponses
from tests.support.fake_server import FakeServer, Reply, closed_port_url, html_reply

ANSWER = ("The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog.")
FULL = "".join(ANSWER)
ATTEMPTS = 3
STALL_TIMEOUT = "1"
"""Read timeout (LOVIA_PROVIDER_TIMEOUT) of the stall tests: short, but roomy on a busy box."""


@dataclass(frozen=True)
class Wire:
    """One vendor's wire format: its fake server, reply builders and settings."""

    vendor: str
    label: str
    server: type[FakeServer]
    text: Callable[..., Reply]
    error: Callable[..., Reply]
    rate_limited: Callable[[str], Reply]
    unknown_model: Callable[[], Reply]
    first_delta: int
    """Index of the first text-delta event in a ``text(...)`` reply."""
    api_key_env: str
    base_url_env: str

    @property
    def model(self) -> str:
        return f"{self.vendor}:fake-model"


OPENAI = Wire(
    vendor="openai",
    label="OpenAI Chat",
    server=FakeOpenAI,
    text=oai.text,
    error=oai.error,
    rate_limited=oai.rate_limited,
    unknown_model=lambda: oai.error(
        404,
        "The model `fake-model` does not exist or you do not have access to it.",
        code="model_not_found",
    ),
    first_delta=1,  # after the role chunk
    api_key_env="OPENAI_API_KEY",
    base_url_env="OPENAI_BASE_URL",
)
RESPONSES = Wire(
    vendor="openai-responses",
    label="OpenAI Responses",
    server=FakeOpenAIResponses,
    text=rsp.text,
    error=rsp.error,
    rate_limited=rsp.rate_limited,
    unknown_model=lambda: rsp.error(
        404,
        "The model `fake-model` does not exist or you do not have access to it.",
        code="model_not_found",
    ),
    first_delta=4,  # after response.created, .in_progress, output_item.added, content_part.added
    api_key_env="OPENAI_API_KEY",
    base_url_env="OPENAI_BASE_URL",
)
ANTHROPIC = Wire(
    vendor="anthropic",
    label="Anthropic",
    server=FakeAnthropic,
    text=ant.text,
    error=ant.error,
    rate_limited=ant.rate_limited,
    unknown_model=lambda: ant.error(404, "model: fake-model", type="not_found_error"),
    first_delta=3,  # after message_start, ping, content_block_start
    api_key_env="ANTHROPIC_API_KEY",
    base_url_env="ANTHROPIC_BASE_URL",
)


@pytest.fixture(params=[OPENAI, RESPONSES, ANTHROPIC], ids=lambda w: w.vendor)
def wire(request: pytest.FixtureRequest) -> Wire:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def server(wire: Wire, monkeypatch: pytest.MonkeyPatch) -> Any:
    with wire.server() as srv:
        monkeypatch.setenv(wire.base_url_env, srv.base_url)
        monkeypatch.setenv(wire.api_key_env, "test-key")
        yield srv


@dataclass
class Outcome:
    """What a consumer saw of a run, and what the checkpoint says about it."""

    shown: str
    """The text a renderer displays at the end (OutputDiscarded drops the turn's text)."""
    streamed: str
    """Every text delta concatenated, discarded or not."""
    discarded: int
    output: Any
    error: BaseException | None
    status: str | None
    delays: list[float]
    warnings: list[str] = field(default_factory=list)


class _Sleeps(list[float]):
    """A real ``RetryPolicy.sleep`` that also records each delay."""

    async def __call__(self, delay: float) -> None:
        self.append(delay)
        await asyncio.sleep(delay)


async def drive(
    wire: Wire,
    caplog: pytest.LogCaptureFixture,
    *,
    attempts: int = ATTEMPTS,
    backoff_max: float = 2.0,
) -> Outcome:
    """Run an agent on ``wire``'s model spec and render its events like a chat client."""
    sleeps = _Sleeps()
    agent = Agent(
        name="faulty",
        model=wire.model,
        retry=RetryPolicy(
            max_attempts=attempts, backoff_base=0.02, backoff_max=backoff_max, sleep=sleeps
        ),
    )
    checkpointer = InMemoryCheckpointer()
    caplog.clear()
    handle = Runner.stream(
        agent, "hi", checkpoint=CheckpointOptions(checkpointer=checkpointer, run_id="r1")
    )
    done: list[str] = []
    current = ""
    streamed = ""
    discarded = 0
    failed: BaseException | None = None
    with caplog.at_level(logging.WARNING, logger="lovia"):
        async for event in handle:
            if isinstance(event, ev.TextDelta):
                current += event.delta
                streamed += event.delta
            elif isinstance(event, ev.OutputDiscarded):
                current = ""
                discarded += 1
            elif isinstance(event, ev.MessageCompleted):
                done.append(current)
                current = ""
            elif isinstance(event, ev.RunFailed):
                failed = event.error
        output = None
        try:
            output = (await handle.result()).output
        except ProviderError as exc:
            assert exc is failed
    snapshot = await checkpointer.load("r1")
    warnings = [r.getMessage() for r in caplog.records if "model.retry" in r.getMessage()]
    return Outcome(
        shown="".join(done) + current,
        streamed=streamed,
        discarded=discarded,
        output=output,
        error=failed,
        status=snapshot.status if snapshot is not None else None,
        delays=list(sleeps),
        warnings=warnings,
    )


def assert_one_line(text: str) -> None:
    assert "\n" not in text and "\r" not in text, text
    assert len(text) <= SUMMARY_LIMIT + 120, text
    assert "<p>" not in text and "<html" not in text.lower(), text


def provider_error(outcome: Outcome) -> ProviderError:
    assert isinstance(outcome.error, ProviderError), outcome
    assert_one_line(outcome.error.message)
    for warning in outcome.warnings:
        assert_one_line(warning)
    return outcome.error


# --------------------------------------------------------------------------- fail fast


def assert_failed_fast(outcome: Outcome, *, hint_names: tuple[str, ...]) -> ProviderError:
    err = provider_error(outcome)
    assert err.retryable is False
    assert outcome.status == "failed"
    assert outcome.delays == [] and outcome.warnings == []  # not retried
    assert err.hint and all(name in err.hint for name in hint_names), err.hint
    return err


async def test_connection_refused_fails_fast_naming_the_base_url(
    wire: Wire, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(wire.base_url_env, closed_port_url("/v1"))
    monkeypatch.setenv(wire.api_key_env, "test-key")
    started = time.monotonic()
    outcome = await drive(wire, caplog)
    err = assert_failed_fast(outcome, hint_names=(wire.base_url_env,))
    assert "connection refused" in err.message
    assert time.monotonic() - started < 10


def _resolves_quickly_to_nothing(host: str) -> bool:
    """Whether looking ``host`` up fails at once here (no resolver that hangs offline)."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(socket.getaddrinfo, host, 80)
    try:
        future.result(timeout=3)
    except socket.gaierror:
        return True
    except Exception:
        return False
    finally:
        pool.shutdown(wait=False)
    return False


async def test_unknown_host_fails_fast_naming_the_base_url(
    wire: Wire, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    host = "lovia-no-such-host.invalid"
    if not _resolves_quickly_to_nothing(host):
        pytest.skip("this machine's resolver does not fail fast for .invalid names")
    monkeypatch.setenv(wire.base_url_env, f"http://{host}/v1")
    monkeypatch.setenv(wire.api_key_env, "test-key")
    outcome = await drive(wire, caplog)
    err = assert_failed_fast(outcome, hint_names=(wire.base_url_env,))
    assert f"cannot resolve host '{host}'" in err.message


@pytest.mark.parametrize("status", [401, 403])
async def test_rejected_credentials_fail_fast_naming_the_key(
    wire: Wire, server: FakeServer, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    server.script(wire.error(status, "Invalid API key provided: test-key", type="auth_error"))
    outcome = await drive(wire, caplog)
    err = assert_failed_fast(outcome, hint_names=(wire.api_key_env,))
    assert err.status_code == status
    assert err.message == (
        f"{wire.label} stream returned HTTP {status}: Invalid API key provided: test-key"
    )
    assert len(server.stream_requests()) == 1


async def test_unknown_model_fails_fast_naming_the_model_setting(
    wire: Wire, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(wire.unknown_model())
    outcome = await drive(wire, caplog)
    err = assert_failed_fast(outcome, hint_names=("LOVIA_MODEL", "lovia.model"))
    assert err.status_code == 404 and "fake-model" in err.message
    assert len(server.stream_requests()) == 1


async def test_unknown_path_fails_fast_naming_the_base_url(
    wire: Wire,
    server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(wire.base_url_env, server.url + "/wrong")
    outcome = await drive(wire, caplog)
    err = assert_failed_fast(outcome, hint_names=(wire.base_url_env,))
    assert err.status_code == 404 and "no route" in err.message
    assert len(server.requests) >= 1 and server.stream_requests() == []


# --------------------------------------------------------------------------- retried


async def test_429_waits_for_retry_after_then_succeeds(
    wire: Wire, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(wire.rate_limited("1"), wire.text(*ANSWER))
    started = time.monotonic()
    outcome = await drive(wire, caplog)
    assert outcome.error is None and outcome.output == FULL and outcome.shown == FULL
    assert len(outcome.delays) == 1 and outcome.delays[0] >= 1.0  # backoff alone is ~0.02 s
    assert time.monotonic() - started >= 1.0
    assert len(server.stream_requests()) == 2
    assert len(outcome.warnings) == 1 and "HTTP 429" in outcome.warnings[0]
    assert_one_line(outcome.warnings[0])


@pytest.mark.parametrize("status", [408, 409, 500, 502, 503, 504])
async def test_transient_statuses_are_retried(
    wire: Wire, server: FakeServer, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    server.script(wire.error(status, "try again", type="api_error"), wire.text(*ANSWER))
    outcome = await drive(wire, caplog)
    assert outcome.error is None and outcome.shown == FULL and outcome.discarded == 0
    assert len(server.stream_requests()) == 2 and len(outcome.delays) == 1


async def test_500_exhausted_interrupts_with_the_json_message(
    wire: Wire, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(
        *(wire.error(500, "The server had an error\nwhile processing", type="api_error"),)
        * ATTEMPTS
    )
    outcome = await drive(wire, caplog)
    err = provider_error(outcome)
    assert err.retryable is True and err.status_code == 500
    assert err.message == (
        f"{wire.label} stream returned HTTP 500: The server had an error while processing"
    )
    assert outcome.status == "interrupted"
    assert len(server.stream_requests()) == ATTEMPTS
    assert len(outcome.warnings) == ATTEMPTS - 1
    delays = outcome.delays
    assert len(delays) == ATTEMPTS - 1 and 0.01 <= delays[0] <= 0.03 and 0.02 <= delays[1] <= 0.06


async def test_503_html_page_is_one_line_and_interrupts(
    wire: Wire, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    page = html_reply(503, "503 Service Temporarily Unavailable")
    assert page.body is not None and page.body.count(b"\n") > 60
    server.script(*(page,) * ATTEMPTS)
    outcome = await drive(wire, caplog)
    err = provider_error(outcome)
    assert err.message == f"{wire.label} stream returned HTTP 503: Service Temporarily Unavailable"
    assert err.body is not None and "diagnostic line 59" in err.body  # kept, just not shown
    assert err.retryable is True and outcome.status == "interrupted"
    assert len(server.stream_requests()) == ATTEMPTS and len(outcome.warnings) == ATTEMPTS - 1
    assert "diagnostic line" not in caplog.text


async def test_501_html_page_hints_at_the_base_url(
    wire: Wire, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(*(html_reply(501, "501 Not Implemented"),) * 2)
    outcome = await drive(wire, caplog, attempts=2)
    err = provider_error(outcome)
    assert err.message == f"{wire.label} stream returned HTTP 501: Not Implemented"
    assert err.hint and wire.base_url_env in err.hint
    assert "diagnostic line" not in caplog.text


# --------------------------------------------------------------------------- cut and stalled


@pytest.mark.parametrize("seed", [7, 1234])
async def test_stream_cut_at_a_random_delta_is_shown_once(
    wire: Wire, server: FakeServer, caplog: pytest.LogCaptureFixture, seed: int
) -> None:
    delivered = random.Random(seed).randint(1, len(ANSWER) - 1)
    cut = wire.text(*ANSWER).cut(after=wire.first_delta + delivered)
    server.script(cut, wire.text(*ANSWER))
    outcome = await drive(wire, caplog)
    assert outcome.error is None and outcome.output == FULL
    assert outcome.streamed == "".join(ANSWER[:delivered]) + FULL  # the cut prefix was sent...
    assert outcome.shown == FULL and outcome.discarded == 1  # ...and withdrawn, not repeated
    assert len(server.stream_requests()) == 2
    assert len(outcome.warnings) == 1 and "broke off" in outcome.warnings[0]
    assert_one_line(outcome.warnings[0])


async def test_streams_cut_every_time_interrupt_without_repeating(
    wire: Wire, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(42)
    server.script(
        *(
            wire.text(*ANSWER).cut(after=wire.first_delta + rng.randint(1, len(ANSWER) - 1))
            for _ in range(ATTEMPTS)
        )
    )
    outcome = await drive(wire, caplog)
    err = provider_error(outcome)
    assert err.retryable is True and "broke off" in err.message
    assert outcome.status == "interrupted"
    assert outcome.discarded == ATTEMPTS - 1
    assert outcome.shown and FULL.startswith(outcome.shown)  # one partial answer, no repeat
    assert len(server.stream_requests()) == ATTEMPTS


async def test_stall_past_the_read_timeout_is_retried_and_shown_once(
    wire: Wire,
    server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("LOVIA_PROVIDER_TIMEOUT", STALL_TIMEOUT)
    server.script(wire.text(*ANSWER).hang(after=wire.first_delta + 3), wire.text(*ANSWER))
    outcome = await drive(wire, caplog)
    assert outcome.error is None and outcome.output == FULL
    assert outcome.shown == FULL and outcome.discarded == 1
    assert len(server.stream_requests()) == 2
    assert len(outcome.warnings) == 1 and "stream stalled" in outcome.warnings[0]


async def test_stalls_exhausted_interrupt_with_a_timeout_hint(
    wire: Wire,
    server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("LOVIA_PROVIDER_TIMEOUT", STALL_TIMEOUT)
    server.script(wire.text(*ANSWER).stall(), wire.text(*ANSWER).hang(after=wire.first_delta + 2))
    outcome = await drive(wire, caplog, attempts=2)
    err = provider_error(outcome)
    assert err.retryable is True and outcome.status == "interrupted"
    assert err.message == f"{wire.label} stream stalled: no data within {STALL_TIMEOUT}s"
    assert err.hint and "LOVIA_PROVIDER_TIMEOUT" in err.hint
    assert "request timed out" in outcome.warnings[0]  # the first attempt got no status line
    assert outcome.shown == "".join(ANSWER[:2])
    assert len(server.stream_requests()) == 2


async def test_401_without_a_key_says_the_key_is_missing(
    wire: Wire,
    server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv(wire.api_key_env)
    server.script(wire.error(401, "Missing API key", type="authentication_error"))
    outcome = await drive(wire, caplog)
    err = assert_failed_fast(outcome, hint_names=(wire.api_key_env,))
    assert err.hint and "none is set" in err.hint
