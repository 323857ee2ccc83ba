import math

import pytest
from pydantic import BaseModel

from lovia.messages import AssistantTurn, Message, ToolCall
from lovia.parts import FilePart, ImagePart, TextPart
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    assistant_to_entries,
    drop_dangling_tool_calls,
    entries_to_messages,
    entry_from_dict,
    entry_to_dict,
    input_to_entries,
    leading_system_count,
    messages_to_entries,
    safe_window,
    split_system,
    to_json_safe,
)

ALL = [
    InputEntry("user", "hi"),
    InputEntry("user", [TextPart("a"), ImagePart(data="AAAA", mime_type="image/png")]),
    AssistantTextEntry("x", id="m1"),
    ReasoningEntry("think", provider="anthropic", metadata={"signature": "s"}),
    ToolCallEntry("c1", "f", '{"a": 1}'),
    ToolResultEntry("c1", "out", raw={"k": [1]}, is_error=True),
    ToolResultEntry("c2", "img", parts=[TextPart("t"), FilePart(url="u", filename="f.pdf")]),
]


@pytest.mark.parametrize("entry", ALL)
def test_round_trip(entry):
    assert entry_from_dict(entry_to_dict(entry)) == entry


def test_entry_to_dict_shapes():
    d = entry_to_dict(ToolResultEntry("c", "o"))
    assert "parts" not in d and d["raw"] is None and d["is_error"] is False
    d = entry_to_dict(InputEntry("user", [TextPart("a")]))
    assert d["content"] == [{"text": "a", "type": "text"}]


def test_entry_from_dict_errors():
    with pytest.raises(ValueError, match="Unknown entry type: 'nope'"):
        entry_from_dict({"type": "nope"})
    with pytest.raises(ValueError, match="Unknown entry type"):
        entry_from_dict({})
    with pytest.raises(ValueError, match="Unknown content part type"):
        entry_from_dict({"type": "input", "role": "user", "content": [{"type": "video"}]})
    with pytest.raises(ValueError):
        entry_from_dict({"type": "tool_result", "call_id": "c", "output": "", "parts": "x"})
    with pytest.raises(TypeError):
        entry_from_dict({"type": "assistant_text", "content": "x", "bogus": 1})


def test_to_json_safe():
    class M(BaseModel):
        a: int

    assert to_json_safe(M(a=1)) == {"a": 1}
    assert to_json_safe({1: [1, 2.5]}) == {"1": [1, 2.5]}
    assert to_json_safe(math.inf) is None
    assert to_json_safe([1, object()]) is None
    assert to_json_safe({"a": None}) == {"a": None}
    assert to_json_safe(object()) is None


def test_conversions():
    turn = AssistantTurn("hi", [ToolCall("1", "f", "{}")])
    assert [e.type for e in assistant_to_entries(turn)] == ["assistant_text", "tool_call"]
    assert input_to_entries([Message("user", None)]) == [InputEntry("user", "")]
    with pytest.raises(ValueError):
        input_to_entries([Message("assistant", "x")])
    msgs = [
        Message("system", "s"),
        Message("assistant", "t", reasoning="r", tool_calls=[ToolCall("1", "f", "{}")]),
        Message("tool", "out", tool_call_id="1"),
    ]
    entries = messages_to_entries(msgs)
    assert [type(e).__name__ for e in entries] == [
        "InputEntry",
        "ReasoningEntry",
        "AssistantTextEntry",
        "ToolCallEntry",
        "ToolResultEntry",
    ]
    back = entries_to_messages(entries)
    assert [m.role for m in back] == ["system", "assistant", "tool"]
    assert back[1].reasoning == "r" and back[1].content == "t" and back[1].tool_calls[0].id == "1"


def test_entries_to_messages_merges_assistant_run():
    entries = [
        InputEntry("user", "u"),
        ReasoningEntry("a"),
        ReasoningEntry("b"),
        AssistantTextEntry("x"),
        AssistantTextEntry("y"),
        ToolCallEntry("1", "f", "{}"),
        ToolResultEntry("1", "r"),
        ToolCallEntry("2", "g", "{}"),
    ]
    msgs = entries_to_messages(entries)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[1].reasoning == "ab" and msgs[1].content == "xy"
    assert msgs[3].content is None and msgs[3].tool_calls[0].id == "2"


def test_system_helpers():
    e = [InputEntry("system", "a"), InputEntry("system", "b"), InputEntry("user", "c")]
    assert leading_system_count(e) == 2
    head, body = split_system(e)
    assert len(head) == 2 and body == [e[2]]


def _ids(entries):
    return [getattr(e, "call_id", None) or getattr(e, "content", None) for e in entries]


def test_safe_window_expands_to_keep_pairs():
    e = [
        InputEntry("system", "s"),
        InputEntry("user", "u"),
        ToolCallEntry("a", "t", "{}"),
        ToolResultEntry("a", "r"),
        AssistantTextEntry("x"),
    ]
    # tail of 2 starts at the result: the cut moves left to include its call
    assert _ids(safe_window(e, head=1, tail=2)) == ["s", "a", "a", "x"]
    assert safe_window(e, head=1, tail=0) == e[:1]
    assert safe_window(e, head=-3, tail=10) == e
    assert safe_window(e, head=2, tail=3) == e


def test_safe_window_drops_unfindable_orphans():
    e = [InputEntry("user", "u"), ToolResultEntry("zz", "o"), AssistantTextEntry("q")]
    assert _ids(safe_window(e, head=0, tail=2)) == ["q"]


def test_safe_window_cut_reaching_head_returns_all():
    e = [InputEntry("system", "s"), ToolCallEntry("a", "t", "{}"), ToolResultEntry("a", "r")]
    e += [AssistantTextEntry("x")]
    assert safe_window(e, head=1, tail=2) == e


def test_drop_dangling_tool_calls():
    e = [ToolCallEntry("a", "t", "{}"), ToolCallEntry("b", "t", "{}"), ToolResultEntry("a", "r")]
    assert [x.call_id for x in drop_dangling_tool_calls(e)] == ["a", "a"]
