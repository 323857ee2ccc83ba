import gc
import json

import pytest
from context_helpers import asst, call, out, system, user

from lovia import tool
from lovia.context import CompactionState, OffloadRecord, SummaryState, TokenBudget, TokenCounter
from lovia.context.state import (
    RATIO_MAX,
    RATIO_MIN,
    SCRATCH_KEY,
    fingerprint,
    result_digest,
    unique_result_ids,
    window_key,
)
from lovia.context.tokens import usable_tokens
from lovia.parts import FilePart, ImagePart, TextPart
from lovia.transcript import InputEntry, ReasoningEntry, ToolResultEntry

# --------------------------------------------------------------------------- budget


def test_usable_tokens():
    assert usable_tokens(10_000, 1_000) == 9_000
    assert usable_tokens(4096, 4096) == 2048
    assert usable_tokens(1, 16_384) == 1
    assert usable_tokens(100, 200) == 50


def test_budget_defaults_are_the_seed_watermarks():
    b = TokenBudget(window=1000, reserve_output=0)
    assert (b.usable, b.trigger_tokens, b.target_tokens) == (1000, 750, 500)
    b = TokenBudget(window=1000, reserve_output=0, trigger=0.85, target=0.60)
    assert (b.trigger_tokens, b.target_tokens) == (850, 600)
    assert b.pressure(500) == 0.5


def test_budget_reserve_is_subtracted_first():
    b = TokenBudget(window=100_000)
    assert b.usable == 100_000 - 16_384
    assert b.trigger_tokens == int(0.75 * b.usable)


def test_absolute_watermarks_clamp_and_keep_hysteresis():
    b = TokenBudget(window=10_000, reserve_output=0, trigger=150_000, target=100_000)
    assert (b.trigger_tokens, b.target_tokens) == (10_000, 9_999)
    mixed = TokenBudget(window=1000, reserve_output=0, trigger=0.5, target=900)
    assert mixed.trigger_tokens == 500 and mixed.target_tokens == 499
    tiny = TokenBudget(window=1, reserve_output=0, trigger=1, target=0.5)
    assert tiny.trigger_tokens == 1 and tiny.target_tokens == 1


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"window": 0}, "window must be >= 1"),
        ({"window": 10, "reserve_output": -1}, "reserve_output must be >= 0"),
        ({"window": 10, "trigger": True}, "trigger must be a fraction or a token count"),
        ({"window": 10, "trigger": 1.5}, r"trigger as a fraction must be in \(0, 1\]"),
        ({"window": 10, "target": 0.0}, r"target as a fraction must be in \(0, 1\]"),
        ({"window": 10, "target": 0}, "target as a token count must be >= 1"),
        ({"window": 10, "trigger": 0.5, "target": 0.6}, "target must be below trigger"),
        ({"window": 10, "trigger": 500, "target": 500}, "target must be below trigger"),
    ],
)
def test_budget_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        TokenBudget(**kw)


# --------------------------------------------------------------------------- counter


def test_exact_token_arithmetic():
    c = TokenCounter()
    assert c.count_entry(user("x" * 400)) == 108
    assert c.count_entry(out("c", "r" * 1000)) == 258
    assert c.count_entry(user("中" * 400)) == 308
    assert c.count_entry(asst("a" * 40)) == 18
    assert c.count_entry(ReasoningEntry("b" * 40)) == 18
    assert c.count_entry(call("c1", "fetch", '{"u": 1}')) == (5 + 8) // 4 + 8
    assert c.count_text("x" * 400) == 108
    assert c.count([user("x" * 400), out("c", "r" * 1000)]) == 366


def test_lone_surrogates_count_without_raising():
    assert TokenCounter().count_entry(user("\ud800" * 4)) == 3 + 8


def test_parts_are_priced_flat_and_once_per_entry_overhead():
    c = TokenCounter()
    image = ImagePart(data="QUJD" * 10_000, mime_type="image/png")
    entry = InputEntry(role="user", content=[TextPart("x" * 40), image, TextPart("y" * 41)])
    assert c.count_entry(entry) == 8 + 10 + 1600 + 10
    pdf = FilePart(data="QUJD", mime_type="application/pdf")
    result = ToolResultEntry(call_id="c", output="z" * 4000, parts=[pdf, TextPart("abcd")])
    assert c.count_entry(result) == 8 + 2000 + 1
    assert TokenCounter(image_tokens=10).count_entry(InputEntry("user", [image])) == 18
    # empty parts fall back to the output
    assert c.count_entry(ToolResultEntry(call_id="c", output="z" * 40, parts=[])) == 18


def test_provider_estimator_is_used_per_entry_and_falls_back():
    seen = []

    class Estimating:
        def estimate_tokens(self, entries):
            seen.append(list(entries))
            if entries[0].content == "boom":
                raise RuntimeError("no tokenizer")
            return 7

    c = TokenCounter(Estimating())
    e = user("hello")
    assert c.count_entry(e) == 7
    assert seen == [[e]]
    assert c.count_entry(user("boom")) == 1 + 8
    assert c.count_text("x" * 8) == 10  # count_text never asks the provider


def test_count_tools_measures_the_wire_schema():
    @tool
    async def lookup(query: str, limit: int = 3) -> str:
        """Look something up — über."""
        return query

    c = TokenCounter()
    wire = json.dumps(lookup.openai_schema(), ensure_ascii=False, separators=(",", ":"))
    expected = len(wire.encode()) // 4 + 8
    assert c.count_tools([lookup]) == expected
    assert c.count_tools([]) == 0

    class NoSchema:
        pass

    class Broken:
        def openai_schema(self):
            raise RuntimeError

    assert c.count_tools([NoSchema(), Broken()]) == 16
    assert id(lookup) in c._tool_memo


def test_memo_is_identity_checked_and_bounded():
    c = TokenCounter(memo_size=3)
    entries = [user("x" * (4 * i)) for i in range(5)]
    for e in entries:
        c.count_entry(e)
    assert len(c._memo) == 3
    assert list(c._memo) == [id(e) for e in entries[2:]]
    # a stale id (object gone) is never trusted
    c2 = TokenCounter()
    e = user("x" * 400)
    key = id(e)
    c2.count_entry(e)
    del e
    gc.collect()
    ref, n = c2._memo[key]
    assert ref() is None and n == 108
    # a mutated memo value is used while the object lives
    f = user("y")
    c2.count_entry(f)
    c2._memo[id(f)] = (c2._memo[id(f)][0], 999)
    assert c2.count_entry(f) == 999


# --------------------------------------------------------------------------- state


def _state():
    return CompactionState(
        cleared={"b", "a"},
        offloaded={"c": OffloadRecord("pre", 9000, "d" * 16)},
        summary=SummaryState("sum", 4, "f" * 16),
        ratio=1.3,
        last_view_estimate=1234,
        summary_failures=2,
        learned_windows={"\x00m": 8192},
    )


def test_state_round_trips_through_json():
    scratch = {"other": 1}
    data = _state().save(scratch)
    assert scratch[SCRATCH_KEY] is data
    assert data["version"] == 3 and data["cleared"] == ["a", "b"]
    restored = CompactionState.load(json.loads(json.dumps(scratch)))
    assert restored == _state()
    assert scratch["other"] == 1


@pytest.mark.parametrize(
    "scratch",
    [None, {}, {SCRATCH_KEY: "x"}, {SCRATCH_KEY: {"version": 2, "cleared": ["a"]}}],
)
def test_load_is_forgiving(scratch):
    assert CompactionState.load(scratch) == CompactionState()


def test_load_drops_bad_fields_individually():
    raw = {
        "version": 3,
        "cleared": ["a", 1, None],
        "offloaded": {
            "ok": {"preview": "p", "chars": 3, "digest": "d"},
            "bad_chars": {"preview": "p", "chars": True, "digest": "d"},
            "bad": "nope",
        },
        "summary": {"text": "s", "covered": 0, "fingerprint": "f"},
        "ratio": 9.0,
        "last_view_estimate": True,
        "summary_failures": "2",
        "learned_windows": {"k": 10, "ok": 100_000, "flag": True},
    }
    s = CompactionState.load({SCRATCH_KEY: raw})
    assert s.cleared == {"a"}
    assert set(s.offloaded) == {"ok"}
    assert s.summary is None
    assert s.ratio == RATIO_MAX
    assert s.last_view_estimate is None and s.summary_failures == 0
    assert s.learned_windows == {"ok": 100_000}
    assert CompactionState.load({SCRATCH_KEY: {"version": 3, "ratio": 0.1}}).ratio == RATIO_MIN
    assert CompactionState.load({SCRATCH_KEY: {"version": 3, "ratio": "x"}}).ratio == 1.0
    # a missing optional key never discards the others
    assert CompactionState.load({SCRATCH_KEY: {"version": 3, "cleared": ["z"]}}).cleared == {"z"}


def test_decided_and_prune():
    s = _state()
    assert s.decided("a") and s.decided("c") and not s.decided("z")
    assert s.prune({"a", "c"}) is True
    assert s.cleared == {"a"} and set(s.offloaded) == {"c"}
    assert s.prune({"a", "c"}) is False


def test_result_digest_and_unique_ids():
    assert result_digest("hello") == "aaf4c61ddcc5e8a2"
    assert len(result_digest("\ud800")) == 16
    entries = [call("a"), out("a", "1"), out("b", "2"), out("b", "3"), out("c", "")]
    assert unique_result_ids(entries) == {"a", "c"}


def test_fingerprint_is_structural():
    base = [user("hi"), call("c1", "f", '{"a":1}'), out("c1", "long output"), asst("ok")]
    fp = fingerprint(base)
    assert len(fp) == 16
    trimmed = [*base[:2], out("c1", "short"), base[3]]
    assert fingerprint(trimmed) == fp  # tool-result length is ignored
    assert fingerprint([user("hI"), *base[1:]]) == fp  # same size, same role
    assert fingerprint([user("hello"), *base[1:]]) != fp
    assert fingerprint([*base[:3], asst("okay")]) != fp
    assert fingerprint([base[0], call("c2", "f", '{"a":1}'), *base[2:]]) != fp
    parts = InputEntry(role="user", content=[TextPart("ab"), ImagePart(url="u")])
    assert fingerprint([parts]) == fingerprint([user("abc")])
    assert fingerprint([system("x")]) != fingerprint([user("x")])


def test_window_key():
    class P:
        base_url = "https://api.example/v1"

    assert window_key(object(), "m") == "\x00m"
    assert window_key(P(), None) == "https://api.example/v1\x00"
