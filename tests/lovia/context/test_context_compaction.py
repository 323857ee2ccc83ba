import json
import logging

import pytest
from context_helpers import (
    FakeSummarizer,
    WindowProvider,
    asst,
    call,
    out,
    request,
    system,
    tool_turns,
    user,
)

from lovia import tool
from lovia.context import (
    ClearToolResults,
    Compaction,
    CompactionState,
    OffloadToolResults,
    SummarizeHistory,
    SummaryState,
    TokenCounter,
    clear_marker,
    render_view,
)
from lovia.context.state import SCRATCH_KEY, fingerprint
from lovia.tools.recall import make_recall_tool
from lovia.transcript import entry_to_dict


def dicts(entries):
    return [entry_to_dict(e) for e in entries]


def policy(**kw):
    kw.setdefault("reserve_output_tokens", 0)
    kw.setdefault("summarizer", FakeSummarizer())
    return Compaction(**kw)


def transcript(n=4, size=9000):
    return [system(), user("go"), *tool_turns(n, size)]


# --------------------------------------------------------------------------- construction


def test_defaults():
    p = Compaction()
    assert p.name == "compaction"
    assert (p.compact_at, p.compact_to) == (0.75, 0.50)
    assert p.context_window is None and p.keep_recent_tokens is None
    assert p.reserve_output_tokens == 16_384 and p.store is None
    assert [type(s) for s in p.stages] == [OffloadToolResults, ClearToolResults, SummarizeHistory]
    [recall] = p.tools()
    assert recall.name == "recall_tool_result"


def test_custom_stages_ignore_the_summarizer():
    s = FakeSummarizer()
    p = Compaction(stages=[ClearToolResults()], summarizer=s)
    assert len(p.stages) == 1
    assert Compaction(summarizer=s).stages[2].summarizer is s


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"context_window": 0}, "context_window must be >= 1"),
        ({"reserve_output_tokens": -1}, "reserve_output_tokens must be >= 0"),
        ({"compact_at": 1.5}, r"compact_at as a fraction must be in \(0, 1\]"),
        ({"compact_to": True}, "compact_to must be a fraction or a token count"),
        ({"compact_to": 0}, "compact_to as a token count must be >= 1"),
        ({"compact_at": 0.5, "compact_to": 0.5}, "compact_to must be below compact_at"),
        ({"compact_at": 100, "compact_to": 200}, "compact_to must be below compact_at"),
        ({"keep_recent_tokens": 0}, "keep_recent_tokens must be >= 1"),
    ],
)
def test_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        Compaction(**kw)


def test_counter_is_cached_by_provider_identity():
    p = Compaction()
    a, b = WindowProvider(), WindowProvider()
    ca = p._counter_for(a)
    assert p._counter_for(a) is ca and p._counter == (a, ca)
    assert p._counter_for(b) is not ca


# --------------------------------------------------------------------------- below the watermark


async def test_no_window_accounts_but_never_compacts_proactively():
    entries = transcript()
    scratch = {}
    req = request(entries, scratch)
    p = Compaction()
    assert p.passthrough(None, scratch, None) is True
    r = await p.compact(req)
    assert r.entries is req.entries
    assert (r.changed, r.compacted, r.reason, r.detail) == (False, False, None, [])
    assert r.tokens_after == r.tokens_before == TokenCounter().count(entries)
    assert CompactionState.load(scratch).last_view_estimate == r.tokens_after


async def test_below_trigger_returns_the_request_list_and_accounts():
    entries = transcript(n=1, size=100)
    scratch = {}
    req = request(entries, scratch)
    r = await policy(context_window=100_000).compact(req)
    raw = TokenCounter().count(entries)
    assert r.entries is req.entries and not r.changed and not r.compacted
    assert r.reason is None
    assert r.tokens_before == r.tokens_after == raw
    assert r.detail == [f"context was {round(raw / 1000)}% full"]
    assert scratch[SCRATCH_KEY]["last_view_estimate"] == raw


async def test_provider_window_is_used_per_turn():
    entries = transcript()
    prov = WindowProvider(window=None)
    p = policy()
    r = await p.compact(request(entries, provider=prov))
    assert not r.changed
    prov.window = 10_000
    r = await p.compact(request(entries, provider=prov))
    assert r.compacted and r.reason == "offload"


# --------------------------------------------------------------------------- bursts


async def test_offload_burst_reason_detail_and_view():
    entries = transcript()
    scratch = {}
    p = policy(context_window=10_000)
    r = await p.compact(request(entries, scratch))
    assert (r.changed, r.compacted, r.reason, r.summary) == (True, True, "offload", None)
    c = TokenCounter()
    before = c.count(entries)
    assert r.tokens_before == before
    assert r.tokens_after == c.count(r.entries) < 5000
    assert r.detail == [
        f"context was {round(before / 100)}% full",
        "2 tool results offloaded in total",
    ]
    state = CompactionState.load(scratch)
    assert set(state.offloaded) == {"c0", "c1"}
    assert dicts(r.entries) == dicts(render_view(entries, state))
    assert r.entries[-1] is entries[-1] and r.entries[0] is entries[0]
    assert len(entries) == 10  # the request's transcript is untouched


async def test_clear_then_summary_reasons_and_summary_field():
    s = FakeSummarizer()
    entries = [system(), user("go"), *tool_turns(6, 1500), user("x" * 8000), asst("ok")]
    p = policy(context_window=5000, summarizer=s)
    r = await p.compact(request(entries))
    assert r.reason == "clear+summary"
    assert r.summary == "S2" and [prior for _, prior in s.calls] == [None, "S1"]
    assert "summary covers" in r.detail[-1]
    only_clear = policy(context_window=3000, stages=[ClearToolResults()])
    r = await only_clear.compact(request(transcript(n=6, size=1500)))
    assert r.reason == "clear" and r.summary is None
    assert r.detail[1] == "3 tool results cleared in total"


async def test_singular_detail_bullets():
    entries = [system(), user("go"), *tool_turns(2, 9000)]
    r = await policy(context_window=6000, stages=[OffloadToolResults(keep_last=1)]).compact(
        request(entries)
    )
    assert r.detail[1:] == ["1 tool result offloaded in total"]
    body = [user("x" * 400) for _ in range(4)]
    state = CompactionState(summary=SummaryState("S", 1, fingerprint(body[:1])))
    scratch = {}
    state.save(scratch)
    r = await policy().compact(request([system(), *body], scratch, reported_window=None))
    assert r.changed and r.detail == ["summary covers 1 message"]  # no window: no % bullet


async def test_sticky_replay_is_dict_identical_and_json_safe():
    s = FakeSummarizer()
    entries = transcript()
    scratch = {}
    p = policy(context_window=10_000, summarizer=s)
    first = await p.compact(request(entries, scratch))
    again = await p.compact(request(entries, scratch))
    assert (again.compacted, again.changed, again.reason) == (False, True, "sticky_replay")
    assert dicts(again.entries) == dicts(first.entries)
    assert again.entries is not first.entries
    assert s.calls == []
    restored = json.loads(json.dumps(scratch))
    fresh = await policy(context_window=10_000).compact(request(entries, restored))
    assert (fresh.compacted, fresh.changed) == (False, True)
    assert dicts(fresh.entries) == dicts(first.entries)


async def test_view_prefix_is_byte_stable_between_bursts():
    p = policy(context_window=12_000)
    scratch = {}
    entries = [system(), user("go")]
    previous = None
    bursts = 0
    for i in range(30):
        entries += [call(f"c{i}"), out(f"c{i}", f"{i}" + "r" * 3000)]
        r = await p.compact(request(entries, scratch))
        view = dicts(r.entries if r.changed else entries)
        if r.compacted:
            bursts += 1
        elif previous is not None:
            assert view[: len(previous)] == previous
        previous = view
    assert bursts >= 2


async def test_stages_stop_at_target_and_run_in_order():
    order = []

    class Probe:
        def __init__(self, name, decide):
            self.name, self.decide = name, decide

        async def plan(self, body, ctx):
            order.append((self.name, ctx.current_tokens))
            if self.decide:
                ctx.state.cleared.add("c0")
            return self.decide

    entries = transcript(n=2, size=40_000)
    p = policy(
        context_window=20_000, stages=[Probe("a", False), Probe("b", True), Probe("c", True)]
    )
    r = await p.compact(request(entries))
    assert [name for name, _ in order] == ["a", "b", "c"]
    assert order[2][1] < order[1][1]  # re-counted after a decision
    assert r.reason == "b+c"


async def test_a_raising_stage_saves_state_and_propagates():
    class Boom:
        name = "boom"

        async def plan(self, body, ctx):
            raise RuntimeError("stage failed")

    scratch = {}
    p = policy(context_window=2500, stages=[OffloadToolResults(keep_last=0), Boom()])
    entries = transcript(n=4, size=2000)
    with pytest.raises(RuntimeError, match="stage failed"):
        await p.compact(request(entries, scratch))
    saved = CompactionState.load(scratch)
    assert saved.last_view_estimate is not None


async def test_warns_when_the_protected_tail_is_everything(caplog):
    entries = [system(), user("x" * 40_000)]
    with caplog.at_level(logging.WARNING, "lovia.context.compaction"):
        await policy(context_window=10_000).compact(request(entries))
    assert "protected tail covers the entire view" in caplog.text


# --------------------------------------------------------------------------- accounting


async def test_calibration_is_an_ema_and_estimates_stay_raw():
    @tool
    async def lookup(q: str) -> str:
        """Look up."""
        return q

    entries = transcript(n=1, size=100)
    scratch = {}
    CompactionState(last_view_estimate=100).save(scratch)
    p = policy(context_window=1_000_000)
    await p.compact(request(entries, scratch, last_input_tokens=200, tools=[lookup]))
    state = CompactionState.load(scratch)
    assert state.ratio == pytest.approx(1.2)
    c = TokenCounter()
    assert state.last_view_estimate == c.count(entries) + c.count_tools([lookup])


async def test_tool_schemas_are_additive():
    @tool
    async def lookup(q: str) -> str:
        """Look up."""
        return q

    entries = transcript(n=1, size=100)
    tools = [lookup, make_recall_tool(None)]
    with_tools = await policy(context_window=10**6).compact(request(entries, tools=tools))
    without = await policy(context_window=10**6).compact(request(entries))
    assert with_tools.tokens_after - without.tokens_after == TokenCounter().count_tools(tools)


async def test_markers_mention_recall_only_when_the_agent_has_it():
    @tool
    async def fetch() -> str:
        """Fetch."""
        return ""

    entries = transcript(n=6, size=1500)
    p = policy(context_window=3000, stages=[ClearToolResults()])
    r = await p.compact(request(entries, tools=[fetch]))
    assert r.entries[3].output == clear_marker("c0", recall=False)
    r = await p.compact(request(entries, tools=[fetch, make_recall_tool(None)]))
    assert r.entries[3].output == clear_marker("c0")


# --------------------------------------------------------------------------- windows


async def test_learned_windows():
    entries = transcript(n=1, size=100)
    scratch = {}
    p = policy()
    prov = WindowProvider(window=1_000_000)
    prov.model = "m"
    await p.compact(request(entries, scratch, provider=prov, model="m", reported_window=50_000))
    assert CompactionState.load(scratch).learned_windows == {"\x00m": 50_000}
    await p.compact(request(entries, scratch, provider=prov, model="m", reported_window=40_000))
    assert CompactionState.load(scratch).learned_windows == {"\x00m": 40_000}
    # implausible reports are ignored
    await p.compact(request(entries, scratch, provider=prov, model="m", reported_window=10))
    assert CompactionState.load(scratch).learned_windows == {"\x00m": 40_000}
    # the learned window caps an overstated provider window ...
    r = await p.compact(request(entries, scratch, provider=prov, model="m"))
    assert r.detail[0] == f"context was {round(r.tokens_after / 400)}% full"
    # ... never raises a configured smaller one ...
    small = policy(context_window=20_000)
    r = await small.compact(request(entries, dict(scratch), provider=prov, model="m"))
    assert r.detail[0] == f"context was {round(r.tokens_after / 200)}% full"
    # ... and another model is unaffected
    r = await p.compact(request(entries, scratch, provider=prov, model="other"))
    assert r.detail[0] == f"context was {round(r.tokens_after / 10_000)}% full"


# --------------------------------------------------------------------------- overflow


async def test_overflow_without_window_still_compacts():
    s = FakeSummarizer()
    entries = [system(), *[user(f"{i}" + "x" * 2000) for i in range(12)]]
    scratch = {}
    r = await policy(summarizer=s).compact(request(entries, scratch, overflow=True))
    assert r.compacted and r.reason == "reactive_summary"
    assert r.entries[-1] is entries[-1]
    assert r.tokens_after < r.tokens_before * 0.5
    assert r.detail[0] == "context was 100% full"
    # the decision is sticky on the next (proactive, windowless) call
    again = await policy().compact(request(entries, scratch))
    assert again.changed and again.reason == "sticky_replay"


async def test_reactive_summary_failure_is_persisted():
    s = FakeSummarizer(fail=True)
    entries = [system(), *[user("x" * 2000) for _ in range(12)]]
    scratch = {}
    r = await policy(summarizer=s).compact(request(entries, scratch, overflow=True))
    assert not r.compacted and not r.changed
    assert CompactionState.load(scratch).summary_failures == 1


async def test_overflow_squeezes_below_a_quarter_of_the_failed_prompt():
    entries = transcript(n=8, size=4000)
    r = await policy(context_window=1_000_000).compact(request(entries, overflow=True))
    assert r.compacted and r.reason.startswith("reactive_")
    assert r.tokens_after <= 0.25 * r.tokens_before + 10


# --------------------------------------------------------------------------- validity


async def test_trimmed_outputs_keep_the_summary():
    body = [user("x" * 400), call("c1"), out("c1", "r" * 3000), user("y" * 400), user("z")]
    scratch = {}
    CompactionState(summary=SummaryState("S", 3, fingerprint(body[:3]))).save(scratch)
    trimmed = [body[0], body[1], out("c1", "r" * 10), *body[3:]]
    r = await policy().compact(request([system(), *trimmed], scratch))
    assert r.changed and CompactionState.load(scratch).summary.covered == 3


async def test_system_run_changes_do_not_reset_the_summary():
    body = [user("x" * 400), asst("a"), user("y" * 400), user("z")]
    scratch = {}
    CompactionState(summary=SummaryState("S", 2, fingerprint(body[:2]))).save(scratch)
    r = await policy().compact(request([system("a"), system("b"), *body], scratch))
    assert r.changed and r.entries[:2] == [system("a"), system("b")]
    assert CompactionState.load(scratch).summary is not None


async def test_rewritten_prefix_drops_the_summary():
    body = [user("x" * 400), asst("a"), user("y" * 400), user("z")]
    scratch = {}
    CompactionState(summary=SummaryState("S", 2, fingerprint(body[:2]))).save(scratch)
    r = await policy().compact(request([system(), user("other"), *body[1:]], scratch))
    assert not r.changed and CompactionState.load(scratch).summary is None


async def test_pair_splitting_coverage_rewinds():
    body = [user(f"u{i}") for i in range(6)] + [call("c"), out("c", "r"), user("q"), user("w")]
    for covered, expected in ((8, 8), (7, 6)):
        scratch = {}
        CompactionState(summary=SummaryState("S", covered, fingerprint(body[:covered]))).save(
            scratch
        )
        await policy().compact(request(body, scratch))
        assert CompactionState.load(scratch).summary.covered == expected
    body2 = [call("c"), out("c", "r"), user("q")]
    scratch = {}
    CompactionState(summary=SummaryState("S", 1, fingerprint(body2[:1]))).save(scratch)
    r = await policy().compact(request(body2, scratch))
    assert CompactionState.load(scratch).summary is None and not r.changed


async def test_prune_drops_stale_and_duplicated_decisions():
    entries = [
        system(),
        user("go"),
        call("a"),
        out("a", "x"),
        out("a", "y"),
        call("b"),
        out("b", ""),
    ]
    scratch = {}
    CompactionState(cleared={"a", "gone"}).save(scratch)
    r = await policy().compact(request(entries, scratch))
    assert not r.changed and r.entries is not None
    assert CompactionState.load(scratch).cleared == set()


async def test_a_reused_call_id_lifts_an_earlier_decision():
    entries = transcript(n=4, size=9000)
    scratch = {}
    p = policy(context_window=10_000)
    r = await p.compact(request(entries, scratch))
    assert "c0" in CompactionState.load(scratch).offloaded
    entries += [call("c0"), out("c0", "again")]
    r = await p.compact(request(entries, scratch))
    assert "c0" not in CompactionState.load(scratch).offloaded
    assert r.entries[3] is entries[3]


# --------------------------------------------------------------------------- incremental == pure


@pytest.mark.parametrize(
    ("seed", "stages"),
    [
        (7, None),
        (11, None),
        (3, "summary"),
        (5, "clear"),
        (9, "offload+summary"),
    ],
)
async def test_incremental_view_always_equals_the_pure_render(seed, stages):
    import random

    rng = random.Random(seed)
    s = FakeSummarizer()
    chosen = {
        None: None,
        "summary": [SummarizeHistory(summarizer=s)],
        "clear": [ClearToolResults()],
        "offload+summary": [OffloadToolResults(min_chars=1000), SummarizeHistory(summarizer=s)],
    }[stages]
    p = policy(context_window=8_000, summarizer=s, stages=chosen)
    scratch = {}
    entries = [system(), user("start")]
    counter = TokenCounter()
    compactions = 0
    for turn in range(150):
        kind = rng.random()
        if kind < 0.55:
            cid = f"t{turn}" if rng.random() > 0.05 else "reused"
            entries += [call(cid), out(cid, "r" * rng.choice([10, 300, 2000, 6000]))]
        elif kind < 0.65:
            a, b = f"p{turn}a", f"p{turn}b"  # a parallel batch: calls first, results later
            entries += [call(a), call(b), out(b, "x" * 900), out(a, "y" * 1500)]
        elif kind < 0.85:
            entries.append(user("u" * rng.choice([5, 500, 3000])))
        else:
            entries.append(asst("a" * rng.choice([5, 800])))
        if turn in (60, 100):  # a handoff replaces the system run
            entries[0] = system(f"agent {turn}")
        if turn == 120:  # a handoff to an agent without instructions drops it
            del entries[0]
        tools = [make_recall_tool(None)] if turn % 3 else []
        r = await p.compact(request(entries, scratch, tools=tools, overflow=turn % 37 == 36))
        compactions += r.compacted
        state = CompactionState.load(scratch)
        expected = render_view(entries, state)
        view = r.entries if r.changed else entries
        assert dicts(view) == dicts(expected), turn
        overhead = counter.count_tools(tools)
        assert r.tokens_after == int((counter.count(expected) + overhead) * state.ratio)
        assert r.tokens_before == int((counter.count(entries) + overhead) * state.ratio)
        if state.summary is not None:
            body = entries[1:] if turn < 120 else entries
            assert state.summary.fingerprint == fingerprint(body[: state.summary.covered])
    assert compactions >= 3


def _reference_tail_start(body, counter, ratio, tail_tokens):
    """protected_tail_start as the spec states it (a straightforward O(n) version)."""
    from lovia.context.render import pair_safe_cuts

    n = len(body)
    if n == 0:
        return 0
    budget_raw = max(1, int(tail_tokens / max(ratio, 0.01)))
    cut, acc = n, 0
    for i in range(n - 1, -1, -1):
        acc += counter.count_entry(body[i])
        if acc > budget_raw:
            break
        cut = i
    cut = min(cut, n - 1)
    users = [i for i, e in enumerate(body) if getattr(e, "role", None) == "user"]
    anchor_cost = sum(counter.count_entry(e) for e in body[users[-1] :]) if users else 0
    if users and users[-1] < cut and anchor_cost <= 2 * budget_raw:
        cut = users[-1]
    safe = pair_safe_cuts(body)
    while cut > 0 and not safe[cut]:
        cut -= 1
    return cut


def test_protected_tail_start_matches_the_reference():
    import random

    from lovia.context.render import protected_tail_start

    rng = random.Random(1)
    counter = TokenCounter()
    for _ in range(300):
        body = []
        for _ in range(rng.randint(0, 30)):
            r = rng.random()
            if r < 0.3:
                body.append(user("u" * rng.randint(0, 400)))
            elif r < 0.5:
                body.append(asst("a" * rng.randint(0, 400)))
            elif r < 0.8:
                cid = f"c{rng.randint(0, 5)}"
                body += [call(cid), out(cid, "o" * rng.randint(0, 800))]
            else:
                body.append(out(f"c{rng.randint(0, 9)}", "o" * rng.randint(0, 300)))
        tail = rng.choice([1, 20, 80, 200, 600])
        ratio = rng.choice([0.5, 1.0, 1.7])
        assert protected_tail_start(body, counter, ratio, tail) == _reference_tail_start(
            body, counter, ratio, tail
        )


async def test_a_rewritten_transcript_on_the_same_scratch_is_detected():
    p = policy(context_window=10_000)
    scratch = {}
    entries = transcript()
    await p.compact(request(entries, scratch))
    replaced = [system(), user("go"), *tool_turns(4, 100, prefix="d")]
    r = await p.compact(request(replaced, scratch))
    assert not r.changed and r.entries == replaced
    shorter = entries[:4]
    r = await p.compact(request(shorter, scratch))
    assert dicts(r.entries if r.changed else shorter) == dicts(
        render_view(shorter, CompactionState.load(scratch))
    )


# --------------------------------------------------------------------------- session cache


async def test_session_cache_carries_decisions_to_a_new_run():
    p = policy(context_window=10_000)
    entries = transcript()
    first = await p.compact(request(entries, {}, session_id="s1"))
    assert first.compacted
    # a new run on the same session without persisted scratch resumes the decisions
    r = await p.compact(request([*entries, user("next")], {}, session_id="s1"))
    assert r.changed and not r.compacted and r.reason == "sticky_replay"
    assert dicts(r.entries[:-1]) == dicts(first.entries)
    # another session starts fresh
    other = await policy(context_window=10**6).compact(request(entries, {}, session_id="s2"))
    assert not other.changed
    assert p.session_state("s1") is not None and p.session_state("nope") is None
    p.forget_session("s1")
    assert p.session_state("s1") is None


async def test_session_cache_resets_a_summary_whose_prefix_was_rewritten():
    s = FakeSummarizer()
    p = policy(context_window=5000, summarizer=s)
    history = [user("x" * 8000), asst("a"), *tool_turns(6, 1500), user("more")]
    r = await p.compact(request([system(), *history], {}, session_id="s"))
    assert "summary" in r.reason and "clear" in r.reason
    cleared = set(p.session_state("s").cleared)
    # the host trimmed the oldest message before the next run
    trimmed = history[1:]
    r = await policy(context_window=10**6).compact(request([system(), *trimmed], {}))
    assert not r.changed
    scratch = {}
    r2 = await p.compact(request([system(), *trimmed], scratch, session_id="s"))
    state = CompactionState.load(scratch)
    assert state.summary is None
    assert state.cleared == cleared
    assert r2.changed


async def test_scratch_state_wins_over_the_session_cache():
    p = policy(context_window=10_000)
    entries = transcript()
    await p.compact(request(entries, {}, session_id="s"))
    scratch = {}
    CompactionState(ratio=2.0).save(scratch)
    await p.compact(request(entries, scratch, session_id="s"))
    assert CompactionState.load(scratch).ratio == 2.0


async def test_circuit_breaker_through_the_policy():
    s = FakeSummarizer(fail=True)
    entries = [system(), *[user(f"{i}" + "x" * 2000) for i in range(12)]]
    scratch = {}
    p = policy(context_window=8_000, summarizer=s)
    for _ in range(5):
        r = await p.compact(request(entries, scratch))
        assert not r.compacted
    assert len(s.calls) == 3
    assert CompactionState.load(scratch).summary_failures == 3
    s.fail = False
    r = await p.compact(request(entries, scratch, overflow=True))
    assert r.compacted and r.reason == "reactive_summary"
    assert len(s.calls) > 3 and CompactionState.load(scratch).summary_failures == 0


async def test_tracks_are_bounded_and_released_per_session():
    p = policy(context_window=10**6)
    entries = transcript(n=1, size=100)
    for _ in range(5):
        await p.compact(request(entries, {}, session_id="s"))
    assert len(p._tracks) == 2  # a session keeps at most its two newest runs' mirrors
    for _ in range(50):
        await p.compact(request(entries, {}))
    assert len(p._tracks) == 32


async def test_passthrough_hook():
    prov = WindowProvider(window=None)
    p = Compaction()
    assert p.passthrough(prov, {}, None) is True
    assert p.passthrough(prov, {SCRATCH_KEY: {}}, None) is False
    prov.window = 100_000
    assert p.passthrough(prov, {}, None) is False
    prov.window = None
    assert Compaction(context_window=50_000).passthrough(prov, {}, None) is False
    # a session with cached sticky state is not idle
    cached = policy()
    r = await cached.compact(request(transcript(), {}, session_id="s", overflow=True))
    assert r.compacted
    assert cached.passthrough(prov, {}, "s") is False
    assert cached.passthrough(prov, {}, "other") is True

    class Overriding(Compaction):
        async def compact(self, req):
            return await super().compact(req)

    assert Overriding().passthrough(prov, {}, None) is False


async def test_overflow_on_a_tiny_prompt_does_not_crash():
    r = await policy().compact(request([user("")], overflow=True))
    assert not r.compacted
    r = await policy(context_window=1).compact(request([system(), user("x" * 40)], overflow=True))
    assert r.tokens_after is not None
