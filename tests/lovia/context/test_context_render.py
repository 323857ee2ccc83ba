import copy

from context_helpers import asst, call, out, system, user

from lovia.context import (
    SUMMARY_WRAPPER,
    CompactionState,
    OffloadRecord,
    SummaryState,
    TokenCounter,
    clear_marker,
    offload_marker,
    render_view,
    summary_entry,
)
from lovia.context.render import pair_safe_cuts, protected_tail_start, render_entries
from lovia.parts import TextPart
from lovia.transcript import InputEntry, ToolResultEntry


def test_clear_marker_text():
    m = clear_marker("call_7")
    assert m.startswith("[Earlier tool result cleared")
    assert 'recall_tool_result("call_7")' in m
    assert "\n" not in m
    assert "recall_tool_result" not in clear_marker("call_7", recall=False)


def test_offload_marker_text():
    record = OffloadRecord(preview="PREVIEW", chars=9000, digest="0123456789abcdef")
    m = offload_marker(record)
    assert m.splitlines() == [
        "[Tool result (9,000 chars) trimmed to a preview to save context.",
        "Preview:",
        "PREVIEW",
        'Call recall_tool_result("0123456789abcdef") for the full output.]',
    ]
    bare = offload_marker(record, recall=False)
    assert "PREVIEW" in bare and "recall_tool_result" not in bare


def test_summary_entry_wraps_as_background():
    e = summary_entry("## Session intent\nfix {it}")
    assert e.role == "user"
    assert isinstance(e.content, str)
    assert e.content.startswith("<context_summary>\n")
    assert e.content.endswith("## Session intent\nfix {it}\n</context_summary>")
    assert "NOT a new instruction" in e.content
    assert "{summary}" in SUMMARY_WRAPPER


def test_render_view_with_empty_state_is_a_new_list_of_the_same_objects():
    entries = [system(), user("hi"), call("c1"), out("c1", "x" * 500), asst("ok")]
    view = render_view(entries, CompactionState())
    assert view == entries and view is not entries
    assert all(a is b for a, b in zip(view, entries, strict=True))


def test_render_applies_decisions_without_mutating_input():
    r1 = out("c1", "x" * 500, raw={"big": 1}, is_error=True)
    r2 = out("c2", "y" * 500)
    entries = [system(), user("hi"), call("c1"), r1, call("c2"), r2, call("c3"), out("c3", "z")]
    snapshot = copy.deepcopy(entries)
    state = CompactionState(
        cleared={"c1", "c2"}, offloaded={"c2": OffloadRecord("yy", 500, "d" * 16)}
    )
    view = render_view(entries, state)
    assert entries == snapshot
    assert view[0] is entries[0] and view[-1] is entries[-1]
    cleared = view[3]
    assert isinstance(cleared, ToolResultEntry)
    assert (cleared.call_id, cleared.is_error, cleared.raw) == ("c1", True, None)
    assert cleared.output == clear_marker("c1")
    assert view[5].output == offload_marker(state.offloaded["c2"])  # offload wins over clear
    assert view[7] is entries[7]


def test_decision_applies_to_every_result_with_that_call_id():
    entries = [out("dup", "a" * 300), out("dup", "b" * 300)]
    rendered = render_entries(entries, CompactionState(cleared={"dup"}))
    assert [e.output for e in rendered] == [clear_marker("dup")] * 2


def test_summary_replaces_covered_body_prefix():
    s = [system("one"), system("two")]
    body = [user("a"), asst("b"), user("c"), asst("d")]
    state = CompactionState(summary=SummaryState("SUM", 2, "fp"))
    view = render_view(s + body, state)
    assert view[:2] == s
    assert view[2] == summary_entry("SUM")
    assert view[3:] == body[2:]
    assert view[3] is body[2]
    # out-of-range coverage is ignored
    for covered in (0, 5):
        state.summary = SummaryState("SUM", covered, "fp")
        assert render_view(s + body, state) == s + body


def test_pair_safe_cuts_examples():
    T, F = True, False
    assert pair_safe_cuts([]) == [T]
    entries = [user("u"), call("c1"), out("c1", "1"), call("c2"), out("c2", "2")]
    assert pair_safe_cuts(entries) == [T, T, F, T, F, T]
    assert pair_safe_cuts([call("a"), call("b"), out("a", ""), out("b", "")]) == [T, F, F, F, T]
    assert pair_safe_cuts([user("u"), out("orphan", "x"), user("v")]) == [T, T, T, T]
    assert pair_safe_cuts([user("u"), call("never"), user("v")]) == [T, T, T, T]
    nested = [call("x"), out("x", ""), call("x"), out("x", "")]
    assert pair_safe_cuts(nested) == [T, F, T, F, T]


def test_protected_tail_start_examples():
    c = TokenCounter()
    ten = [user("x" * 100) for _ in range(10)]  # 33 tokens each
    assert protected_tail_start(ten, c, 1.0, 70) == 8
    assert protected_tail_start(ten, c, 2.0, 70) == 9
    assert protected_tail_start([user("x" * 1000)], c, 1.0, 10) == 0
    paired = [user("x" * 600), call("c1"), out("c1", "r" * 200)]
    assert protected_tail_start(paired, c, 1.0, 60) == 1
    assert protected_tail_start([], c, 1.0, 60) == 0


def test_protected_tail_anchors_the_last_user_message_when_affordable():
    c = TokenCounter()
    body = [user("old"), asst("a" * 400), user("ask"), *[asst("b" * 100) for _ in range(4)]]
    # tail 70 covers two 33-token replies; the user message is 4 entries back and the
    # stretch from it costs 9 + 4*33 = 141 <= 2*70
    assert protected_tail_start(body, c, 1.0, 70) == 2
    # too expensive to reach: stays token-budgeted
    assert protected_tail_start(body, c, 1.0, 40) == 6


def test_render_entries_keeps_parts_results_pairable():
    img = out("c9", "[image]", parts=[TextPart("see")])
    rendered = render_entries([call("c9"), img], CompactionState(cleared={"c9"}))
    assert rendered[1].parts is None and rendered[1].call_id == "c9"
    assert isinstance(rendered[0], type(call("c9")))
    assert not isinstance(rendered[1], InputEntry)
