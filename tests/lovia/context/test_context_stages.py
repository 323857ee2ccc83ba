import logging

import pytest
from context_helpers import FakeSummarizer, WindowProvider, call, out, request, user

from lovia.context import (
    ClearToolResults,
    CompactionState,
    InMemoryResultStore,
    OffloadToolResults,
    Stage,
    StageContext,
    SummarizeHistory,
    SummaryState,
    TokenBudget,
    TokenCounter,
    clear_marker,
)
from lovia.context.state import fingerprint, result_digest
from lovia.parts import TextPart


def make_ctx(body, *, state=None, current=None, target=None, protected_from=None, **kw):
    counter = TokenCounter()
    budget = kw.pop("budget", None) or TokenBudget(window=1_000_000, reserve_output=0)
    if target is not None:
        budget = TokenBudget(window=1_000_000, reserve_output=0, trigger=target + 1, target=target)
    return StageContext(
        request=kw.pop("req", None) or request(body),
        state=state or CompactionState(),
        counter=counter,
        budget=budget,
        current_tokens=current if current is not None else counter.count(body),
        protected_from=len(body) if protected_from is None else protected_from,
        aggressive=kw.pop("aggressive", False),
        **kw,
    )


def big_body(n=4, size=9000, same=False):
    body = [user("go")]
    for i in range(n):
        body += [call(f"c{i}"), out(f"c{i}", ("same" if same else f"{i}") + "r" * size)]
    return body


def test_stage_protocol_and_names():
    assert isinstance(OffloadToolResults(), Stage)
    assert [s.name for s in (OffloadToolResults(), ClearToolResults())] == ["offload", "clear"]
    assert SummarizeHistory(summarizer=FakeSummarizer()).name == "summary"


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: OffloadToolResults(min_chars=0), "min_chars"),
        (lambda: OffloadToolResults(keep_last=-1), "keep_last"),
        (lambda: OffloadToolResults(preview_chars=-1), "preview_chars"),
        (lambda: ClearToolResults(keep_last=-1), "keep_last"),
        (lambda: ClearToolResults(min_chars=-1), "min_chars"),
        (lambda: SummarizeHistory(min_savings_ratio=1.0), "min_savings_ratio"),
        (lambda: SummarizeHistory(max_failures=0), "max_failures"),
        (lambda: SummarizeHistory(max_summary_chars=0), "max_summary_chars"),
    ],
)
def test_stage_validation(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()


# --------------------------------------------------------------------------- offload


async def test_offload_archives_and_records_previews():
    body = big_body()
    store = InMemoryResultStore()
    ctx = make_ctx(body, target=10, store=store)
    assert await OffloadToolResults().plan(body, ctx) is True
    assert set(ctx.state.offloaded) == {"c0", "c1"}  # keep_last=2 protects c2, c3
    rec = ctx.state.offloaded["c0"]
    output = body[2].output
    assert rec.preview == output[:400] and rec.chars == len(output)
    assert rec.digest == result_digest(output)
    assert await store.get(rec.digest) == output
    assert len(body) == 9 and body[2].output == output  # body untouched


async def test_offload_stops_at_target():
    body = big_body()
    c = TokenCounter()
    current = c.count(body)
    target = current - 100  # one offload is enough
    ctx = make_ctx(body, current=current, target=target)
    assert await OffloadToolResults().plan(body, ctx) is True
    assert set(ctx.state.offloaded) == {"c0"}
    ctx = make_ctx(body, current=target, target=target)
    assert await OffloadToolResults().plan(body, ctx) is False


async def test_offload_without_store_and_with_a_failing_store(caplog):
    body = big_body()
    ctx = make_ctx(body, target=10)
    assert await OffloadToolResults().plan(body, ctx)

    class Failing:
        async def put(self, key, content):
            raise OSError("disk full")

        async def get(self, key):
            return None

    ctx = make_ctx(body, target=10, store=Failing())
    with caplog.at_level(logging.WARNING, "lovia.context.stages"):
        assert await OffloadToolResults().plan(body, ctx)
    assert set(ctx.state.offloaded) == {"c0", "c1"}
    assert "offload.store_failed" in caplog.text


async def test_identical_outputs_share_one_store_key():
    body = big_body(same=True)
    store = InMemoryResultStore()
    ctx = make_ctx(body, target=10, store=store)
    await OffloadToolResults(keep_last=0).plan(body, ctx)
    assert len(ctx.state.offloaded) == 4
    assert len({r.digest for r in ctx.state.offloaded.values()}) == 1
    assert len(store) == 1


async def test_offload_thresholds_and_protection():
    body = [user("go"), call("a"), out("a", "x" * 3999), call("b"), out("b", "y" * 4000)]
    ctx = make_ctx(body, target=1)
    assert await OffloadToolResults(keep_last=0).plan(body, ctx)
    assert set(ctx.state.offloaded) == {"b"}  # len < min_chars is skipped
    body = big_body()
    ctx = make_ctx(body, target=1, protected_from=3)
    await OffloadToolResults(keep_last=0).plan(body, ctx)
    assert set(ctx.state.offloaded) == {"c0"}


async def test_offload_aggressive_unprotects_only_oversized_results():
    body = big_body()
    # every result (~2258 tokens) is bigger than a 1000-token target
    ctx = make_ctx(body, target=1000, protected_from=3, aggressive=True)
    await OffloadToolResults().plan(body, ctx)
    assert set(ctx.state.offloaded) == {"c0", "c1", "c2", "c3"}
    ctx = make_ctx(body, target=5000, current=100_000, protected_from=3, aggressive=True)
    await OffloadToolResults().plan(body, ctx)
    assert set(ctx.state.offloaded) == {"c0"}


async def test_stages_skip_decided_reused_and_summarized_results():
    body = [
        user("go"),
        *[call("old"), out("old", "o" * 9000)],
        *[call("dup"), out("dup", "d" * 9000), call("dup"), out("dup", "e" * 9000)],
        *[call("done"), out("done", "f" * 9000)],
        *[call("new"), out("new", "g" * 9000)],
    ]
    state = CompactionState(cleared={"done"}, summary=SummaryState("S", 3, fingerprint(body[:3])))
    ctx = make_ctx(body, state=state, target=1)
    assert await OffloadToolResults(keep_last=0).plan(body, ctx)
    assert set(state.offloaded) == {"new"}
    state2 = CompactionState(summary=SummaryState("S", 3, fingerprint(body[:3])))
    ctx = make_ctx(body, state=state2, target=1)
    assert await ClearToolResults(keep_last=0).plan(body, ctx)
    assert state2.cleared == {"done", "new"}


# --------------------------------------------------------------------------- clear


async def test_clear_thresholds_and_parts():
    body = [
        user("go"),
        *[call("a"), out("a", "x" * 200)],
        *[call("b"), out("b", "x" * 201)],
        *[call("img"), out("img", "[image]", parts=[TextPart("pic")])],
        *[call("k1"), out("k1", "x" * 5000)],
    ]
    ctx = make_ctx(body, target=1)
    assert await ClearToolResults(keep_last=1).plan(body, ctx)
    assert ctx.state.cleared == {"b", "img"}


async def test_clear_aggressive_overrides_keep_last_and_min_chars():
    body = [user("go")] + [e for i in range(4) for e in (call(f"c{i}"), out(f"c{i}", "tiny"))]
    ctx = make_ctx(body, target=10, current=10_000, aggressive=True)
    assert await ClearToolResults().plan(body, ctx)
    assert ctx.state.cleared == {"c0", "c1", "c2"}
    # a result bigger than the target loses even the last slot's protection
    ctx = make_ctx(body, target=1, current=10_000, aggressive=True)
    assert await ClearToolResults().plan(body, ctx)
    assert ctx.state.cleared == {"c0", "c1", "c2", "c3"}


async def test_clear_at_least_tokens_keeps_going_below_target():
    body = big_body(size=1000)
    c = TokenCounter()
    current = c.count(body)
    ctx = make_ctx(body, current=current, target=current - 10)
    await ClearToolResults(keep_last=0).plan(body, ctx)
    assert ctx.state.cleared == {"c0"}
    ctx = make_ctx(body, current=current, target=current - 10)
    await ClearToolResults(keep_last=0, clear_at_least_tokens=400).plan(body, ctx)
    assert ctx.state.cleared == {"c0", "c1"}


async def test_clear_savings_use_the_marker_size_and_ratio():
    body = [user("go"), call("a"), out("a", "x" * 4000), call("b"), out("b", "x" * 4000)]
    c = TokenCounter()
    saving = c.count_entry(body[2]) - c.count_text(clear_marker("a"))
    current = 10_000
    # after clearing "a" the estimate is exactly at target: "b" is left alone
    state = CompactionState(ratio=2.0)
    ctx = make_ctx(body, state=state, current=current, target=current - 2 * saving)
    await ClearToolResults(keep_last=0).plan(body, ctx)
    assert state.cleared == {"a"}


# --------------------------------------------------------------------------- summary


def ten_users():
    return [user("x" * 400) for _ in range(10)]  # 108 tokens each


def summary_ctx(body, summarizer_state=None, **kw):
    kw.setdefault("budget", TokenBudget(window=1000, reserve_output=0))
    kw.setdefault("protected_from", 8)
    return make_ctx(body, state=summarizer_state, **kw)


async def test_summary_chunks_fold_and_commit():
    body = ten_users()
    s = FakeSummarizer()
    ctx = summary_ctx(body)
    assert await SummarizeHistory(summarizer=s).plan(body, ctx) is True
    assert [len(chunk) for chunk, _ in s.calls] == [4, 4]
    assert s.calls[0][0] == body[:4] and s.calls[1][0] == body[4:8]
    assert [prior for _, prior in s.calls] == [None, "S1"]
    assert ctx.state.summary == SummaryState("S2", 8, fingerprint(body[:8]))
    assert ctx.state.summary_failures == 0


async def test_summary_folds_onto_a_prior_summary():
    body = ten_users()
    state = CompactionState(summary=SummaryState("OLD", 2, fingerprint(body[:2])))
    s = FakeSummarizer()
    ctx = summary_ctx(body, state, protected_from=6)
    assert await SummarizeHistory(summarizer=s).plan(body, ctx)
    assert s.calls == [(body[2:6], "OLD")]
    assert state.summary.covered == 6 and state.summary.text == "S1"


async def test_summary_mid_fold_failure_keeps_committed_coverage():
    body = ten_users()
    s = FakeSummarizer(fail_on=(2,))
    ctx = summary_ctx(body)
    assert await SummarizeHistory(summarizer=s).plan(body, ctx) is True
    assert ctx.state.summary.covered == 4
    assert ctx.state.summary_failures == 1


async def test_summary_boundary_is_pair_safe():
    body = [user("x" * 400) for _ in range(6)] + [call("c"), out("c", "r" * 400), user("q")]
    s = FakeSummarizer()
    ctx = summary_ctx(body, protected_from=7, budget=TokenBudget(window=100_000))
    assert await SummarizeHistory(summarizer=s).plan(body, ctx)
    assert ctx.state.summary.covered == 6


async def test_summary_oversized_group_is_its_own_chunk():
    body = [user("x" * 4000), user("y" * 40), user("z" * 40), user("end")]
    s = FakeSummarizer()
    ctx = summary_ctx(body, protected_from=3, budget=TokenBudget(window=1000, reserve_output=0))
    assert await SummarizeHistory(summarizer=s, min_savings_ratio=0).plan(body, ctx)
    assert [len(chunk) for chunk, _ in s.calls] == [1, 2]


async def test_summary_span_is_rendered_with_markers():
    body = [user("go"), call("a"), out("a", "x" * 500), user("x" * 4000), user("now")]
    state = CompactionState(cleared={"a"})
    s = FakeSummarizer()
    ctx = summary_ctx(body, state, protected_from=4, budget=TokenBudget(window=100_000))
    await SummarizeHistory(summarizer=s).plan(body, ctx)
    assert s.calls[0][0][2].output == clear_marker("a")


async def test_summary_anti_thrash_and_empty_span():
    body = ten_users()
    s = FakeSummarizer()
    # projected savings 108 - 512 < 10% of current
    ctx = summary_ctx(body, protected_from=1)
    assert await SummarizeHistory(summarizer=s).plan(body, ctx) is False
    ctx = summary_ctx(body, protected_from=0)
    assert await SummarizeHistory(summarizer=s).plan(body, ctx) is False
    assert s.calls == []
    # the aggressive path skips the anti-thrash check
    ctx = summary_ctx(body, protected_from=1, aggressive=True)
    assert await SummarizeHistory(summarizer=s).plan(body, ctx) is True


async def test_summary_rejects_empty_or_oversized_text():
    class Fixed:
        def __init__(self, text):
            self.text = text

        async def summarize(self, entries, *, req, prior_summary=None):
            return self.text

    body = ten_users()
    for text, limit in (("   ", 100), ("z" * 101, 100)):
        ctx = summary_ctx(body)
        stage = SummarizeHistory(summarizer=Fixed(text), max_summary_chars=limit)
        assert await stage.plan(body, ctx) is False
        assert ctx.state.summary is None and ctx.state.summary_failures == 1


async def test_summary_circuit_breaker():
    body = ten_users()
    s = FakeSummarizer(fail=True)
    stage = SummarizeHistory(summarizer=s)
    state = CompactionState()
    for _ in range(5):
        await stage.plan(body, summary_ctx(body, state))
    assert len(s.calls) == 3 and state.summary_failures == 3
    s.fail = False
    assert await stage.plan(body, summary_ctx(body, state, aggressive=True))
    assert state.summary_failures == 0


async def test_summary_chunk_cap_honours_smaller_windows():
    body = ten_users()
    s = FakeSummarizer()
    s.provider = WindowProvider(window=600)  # usable 600 - 0 -> cap 300 -> 2 entries
    ctx = summary_ctx(body, budget=TokenBudget(window=100_000, reserve_output=0))
    await SummarizeHistory(summarizer=s).plan(body, ctx)
    assert [len(chunk) for chunk, _ in s.calls] == [2, 2, 2, 2]
    s2 = FakeSummarizer()
    ctx = summary_ctx(body, budget=TokenBudget(window=100_000, reserve_output=0), model_window=1000)
    await SummarizeHistory(summarizer=s2).plan(body, ctx)
    assert [len(chunk) for chunk, _ in s2.calls] == [4, 4]
