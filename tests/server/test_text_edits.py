"""Minimal line edits: applying them gives the new text, and they touch only changed lines."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from lovia_server.lsp.text_edits import TextPosition, apply_edits, minimal_edits, split_lines

LINES = st.lists(
    st.sampled_from(["a", "b", "c", "ü", "😀x", "", "  indent", "a\u2028b", "form\x0cfeed"]),
    max_size=12,
)
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines = draw(LINES)
    text = "".join(line + draw(ENDINGS) for line in lines)
    if draw(st.booleans()):
        text += draw(st.sampled_from(["tail", "😀", ""]))
    return text


@settings(max_examples=400, deadline=None)
@given(documents(), documents())
def test_applying_the_edits_gives_the_new_text(old: str, new: str) -> None:
    assert apply_edits(old, minimal_edits(old, new)) == new


@settings(max_examples=200, deadline=None)
@given(documents(), documents())
def test_edits_are_in_order_and_do_not_overlap(old: str, new: str) -> None:
    edits = minimal_edits(old, new)
    for before, after in itertools.pairwise(edits):
        assert (before.end.line, before.end.character) <= (after.start.line, after.start.character)


def test_only_the_changed_line_is_replaced() -> None:
    old = "one\ntwo\nthree\nfour\n"
    (edit,) = minimal_edits(old, "one\n2\nthree\nfour\n")
    assert (edit.start, edit.end, edit.new_text) == (TextPosition(1, 0), TextPosition(2, 0), "2\n")


def test_two_distant_changes_are_two_edits() -> None:
    old = "".join(f"line {i}\n" for i in range(20))
    new = old.replace("line 2\n", "LINE 2\n").replace("line 17\n", "LINE 17\n")
    edits = minimal_edits(old, new)
    assert [(e.start.line, e.end.line) for e in edits] == [(2, 3), (17, 18)]


def test_an_unterminated_last_line_ends_at_its_utf16_length() -> None:
    (edit,) = minimal_edits("a\n😀b", "a\nc")
    assert edit.start == TextPosition(1, 0)
    assert edit.end == TextPosition(1, 3)  # the emoji is two UTF-16 code units


def test_appending_after_a_terminated_last_line_inserts_at_the_end() -> None:
    (edit,) = minimal_edits("a\n", "a\nb\n")
    assert (edit.start, edit.end, edit.new_text) == (TextPosition(1, 0), TextPosition(1, 0), "b\n")


def test_unchanged_text_needs_no_edit_and_empty_documents_work() -> None:
    assert minimal_edits("same\n", "same\n") == []
    assert apply_edits("", minimal_edits("", "new\n")) == "new\n"
    assert apply_edits("gone\n", minimal_edits("gone\n", "")) == ""


def test_only_lsp_line_breaks_split_lines() -> None:
    assert split_lines("a\u2028b\x0cc\r\nd\re\nf") == ["a\u2028b\x0cc\r\n", "d\r", "e\n", "f"]
