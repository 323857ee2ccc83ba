import pytest

from lovia import Agent, RetryPolicy, Runner, events
from lovia.exceptions import ContextOverflowError, ProviderError
from lovia.messages import Usage
from lovia.runtime.model_turn import (
    _StreamReset,
    _ToolCallSlot,
    assemble_turn_entries,
    stream_with_retries,
)
from lovia.transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    UsageDelta,
)


async def no_sleep(delay):
    return None


def fast_retry(n=5, **kw):
    return RetryPolicy(max_attempts=n, sleep=no_sleep, **kw)


class Flaky:
    """Each attempt yields the scripted deltas, then raises if the script says so."""

    name = "flaky"
    model = "m"
    supports_json_schema = False

    def __init__(self, attempts):
        self.attempts = list(attempts)
        self.count = 0

    async def stream(self, entries, **kw):
        self.count += 1
        deltas, error = self.attempts.pop(0)
        for d in deltas:
            yield d
        if error is not None:
            raise error


def retryable():
    return ProviderError("blip", retryable=True)


async def test_restart_on_partial_event_sequence():
    provider = Flaky(
        [
            ([TextDelta("partial-")], retryable()),
            ([TextDelta("final answer"), UsageDelta(Usage(1, 1)), FinishDelta("stop")], None),
        ]
    )
    agent = Agent(name="a", model=provider, retry=fast_retry())
    evs = [e async for e in Runner.stream(agent, "x")]
    kinds = [
        (type(e).__name__, getattr(e, "delta", None))
        for e in evs
        if isinstance(e, (events.DeltaEvent, events.MessageCompleted))
    ]
    assert kinds == [
        ("TextDelta", "partial-"),
        ("OutputDiscarded", None),
        ("TextDelta", "final answer"),
        ("MessageCompleted", None),
    ]
    assert evs[-1].result.output == "final answer"


async def test_on_retry_is_told_each_retry_before_its_wait_and_the_events_stay_the_same():
    notices = []
    slept = []

    async def sleep(delay):
        slept.append((delay, len(notices)))

    provider = Flaky(
        [
            ([], ProviderError("HTTP 503: busy\nnow", retryable=True, hint="try later")),
            ([TextDelta("partial-")], retryable()),
            ([TextDelta("final answer"), UsageDelta(Usage(1, 1)), FinishDelta("stop")], None),
        ]
    )
    policy = RetryPolicy(max_attempts=4, sleep=sleep, on_retry=notices.append)
    agent = Agent(name="a", model=provider, retry=policy)
    evs = [e async for e in Runner.stream(agent, "x")]
    kinds = [
        type(e).__name__ for e in evs if isinstance(e, (events.DeltaEvent, events.MessageCompleted))
    ]
    assert kinds == ["TextDelta", "OutputDiscarded", "TextDelta", "MessageCompleted"]
    assert [(n.attempt, n.max_attempts) for n in notices] == [(1, 4), (2, 4)]
    assert notices[0].reason == "HTTP 503: busy now"  # one line, without the hint
    assert isinstance(notices[0].error, ProviderError)
    # each notice comes before the wait it announces, with that wait's length
    assert [(n.delay, i + 1) for i, n in enumerate(notices)] == slept


async def test_a_failing_retry_listener_does_not_stop_the_retry():
    def broken(notice):
        raise RuntimeError("listener bug")

    provider = Flaky([([], retryable()), ([TextDelta("ok")], None)])
    agent = Agent(name="a", model=provider, retry=fast_retry(on_retry=broken))
    result = await Runner.run(agent, "x")
    assert result.output == "ok" and provider.count == 2


async def test_tool_call_only_partial_has_no_output_discarded():
    provider = Flaky(
        [
            ([ToolCallDelta(0, "c", "f", '{"a"')], retryable()),
            ([TextDelta("ok")], None),
        ]
    )
    agent = Agent(name="a", model=provider, retry=fast_retry())
    evs = [e async for e in Runner.stream(agent, "x")]
    assert not any(isinstance(e, events.OutputDiscarded) for e in evs)
    assert evs[-1].result.output == "ok"


async def test_always_failing_gives_up_after_max_attempts():
    provider = Flaky([([TextDelta("p")], retryable()) for _ in range(3)])
    agent = Agent(name="a", model=provider, retry=fast_retry(3))
    evs = [e async for e in Runner.stream(agent, "x")]
    assert provider.count == 3
    assert sum(isinstance(e, events.OutputDiscarded) for e in evs) == 2
    assert isinstance(evs[-1], events.RunFailed) and isinstance(evs[-1].error, ProviderError)


async def test_no_restart_on_partial_reraises():
    provider = Flaky([([TextDelta("p")], retryable()), ([TextDelta("x")], None)])
    agent = Agent(name="a", model=provider, retry=fast_retry(restart_on_partial=False))
    with pytest.raises(ProviderError):
        await Runner.run(agent, "x")
    assert provider.count == 1


async def test_not_retryable_and_overflow_propagate_immediately():
    provider = Flaky([([], ProviderError("bad request", retryable=False))])
    agent = Agent(name="a", model=provider, retry=fast_retry())
    with pytest.raises(ProviderError, match="bad request"):
        await Runner.run(agent, "x")
    provider = Flaky([([], ContextOverflowError("too long"))])
    agent = Agent(name="a", model=provider, retry=fast_retry())
    with pytest.raises(ContextOverflowError):
        await Runner.run(agent, "x")
    assert provider.count == 1


async def test_retry_before_output_is_invisible():
    provider = Flaky([([], retryable()), ([TextDelta("ok")], None)])
    out = [
        d
        async for d in stream_with_retries(
            provider, [], tools=None, response_format=None, settings=None, retry=fast_retry()
        )
    ]
    assert out == [TextDelta("ok")]


async def test_cancel_token_checked_around_backoff():
    from lovia.exceptions import RunCancelled
    from lovia.reliability import CancelToken

    token = CancelToken()

    async def sleep(delay):
        token.cancel("stop during backoff")

    provider = Flaky([([], retryable()), ([TextDelta("never")], None)])
    with pytest.raises(RunCancelled, match="stop during backoff"):
        async for _ in stream_with_retries(
            provider,
            [],
            tools=None,
            response_format=None,
            settings=None,
            retry=RetryPolicy(sleep=sleep),
            cancel_token=token,
        ):
            pass


def test_backoff_delay_bounds():
    policy = RetryPolicy(backoff_base=1.0, backoff_max=30.0)
    for attempt, base in ((1, 1.0), (3, 4.0), (10, 30.0)):
        d = policy.backoff_delay(attempt)
        assert 0.5 * base <= d <= 1.5 * base


def test_assemble_prefers_completed_entries_per_kind():
    slots = {1: _ToolCallSlot(1, "b", "g", ["{}"]), 0: _ToolCallSlot(0, "a", "f", [])}
    out = assemble_turn_entries(
        text=["he", "llo"],
        reasoning=["r"],
        tool_slots=slots,
        completed_entries=[ReasoningEntry("full", provider="x")],
    )
    assert out == [
        ReasoningEntry("full", provider="x"),
        AssistantTextEntry("hello"),
        ToolCallEntry("a", "f", "{}"),
        ToolCallEntry("b", "g", "{}"),
    ]


async def test_tool_call_fragments_accumulate_by_index():
    provider = Flaky(
        [
            (
                [
                    ToolCallDelta(0, "c1", "add", '{"a":'),
                    ToolCallDelta(1, "c2", "add", '{"a": 5,'),
                    ToolCallDelta(0, "", "", " 1, "),
                    ToolCallDelta(0, None, None, '"b": 2}'),
                    ToolCallDelta(1, None, None, ' "b": 5}'),
                    ReasoningDelta("thinking"),
                    EntryCompletedDelta(ReasoningEntry("thinking", provider="flaky")),
                    UsageDelta(Usage(3, 4)),
                    FinishDelta("tool_calls"),
                ],
                None,
            ),
            ([TextDelta("done")], None),
        ]
    )
    from lovia import tool

    @tool
    async def add(a: int, b: int) -> int:
        return a + b

    agent = Agent(name="a", model=provider, tools=[add], retry=None)
    result = await Runner.run(agent, "x")
    calls = [e for e in result.entries if isinstance(e, ToolCallEntry)]
    assert [(c.call_id, c.arguments) for c in calls] == [
        ("c1", '{"a": 1, "b": 2}'),
        ("c2", '{"a": 5, "b": 5}'),
    ]
    outs = [e.output for e in result.entries if type(e).__name__ == "ToolResultEntry"]
    assert sorted(outs) == ["10", "3"]
    assert result.usage.input_tokens == 3


def test_stream_reset_is_internal_marker():
    assert _StreamReset(visible=True).visible
