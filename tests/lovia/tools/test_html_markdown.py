"""``html_to_markdown``: the stdlib HTML → Markdown conversion behind ``read_page``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lovia.tools import html_to_markdown
from lovia.tools._html import code_span, parse_srcset, resolve_url

BASE = "https://e.com/dir/page.html"


def md(html: str, base: str = BASE) -> str:
    return html_to_markdown(html, base_url=base)


# --------------------------------------------------------------------------- blocks


def test_headings_paragraphs_breaks_and_rules() -> None:
    html = """
    <html><head><title>T</title></head><body>
      <h1>One</h1><h2>Two</h2><h3>Three</h3><h4>Four</h4><h5>Five</h5><h6>Six</h6>
      <p>First   paragraph
         spans lines.</p>
      <div>A div</div><section><p>In a section</p></section>
      <p>line one<br>line two<br/>  line three</p>
      <hr>
      <p>after</p>
    </body></html>
    """
    assert md(html) == (
        "# One\n\n## Two\n\n### Three\n\n#### Four\n\n##### Five\n\n###### Six\n\n"
        "First paragraph spans lines.\n\nA div\n\nIn a section\n\n"
        "line one\nline two\nline three\n\n---\n\nafter"
    )


def test_title_is_not_part_of_the_text() -> None:
    assert md("<title>Page title</title><p>body</p>") == "body"


def test_blank_line_runs_collapse_and_result_is_stripped() -> None:
    html = "\n\n   <div>\n\n<p>a</p>\n\n\n<div></div><div> </div><p></p>\n<p>b</p></div>   \n"
    assert md(html) == "a\n\nb"
    assert md("<p>a<br><br><br><br>b</p>") == "a\n\nb"


def test_dropped_elements_lose_their_contents() -> None:
    html = (
        "<script>var x = '<p>no</p>';</script><style>p { color: red }</style>"
        "<noscript>enable js</noscript><template><p>tpl</p></template>"
        "<svg><text>vector</text><title>svg title</title></svg><canvas>fallback</canvas>"
        "<iframe src='x'>frame</iframe><p>kept</p>"
    )
    assert md(html) == "kept"


def test_inline_text_between_blocks_forms_paragraphs() -> None:
    assert md("<div>before<p>middle</p>after</div>") == "before\n\nmiddle\n\nafter"
    assert md("<div><span>inline <div>block</div> tail</span></div>") == "inline\n\nblock\n\ntail"


def test_interior_whitespace_and_nbsp_are_normalised() -> None:
    assert md("<p>  a&nbsp;&nbsp;b \t\n c  </p>") == "a b c"
    assert md("<p><b>bold</b> <i>italic</i></p>") == "bold italic"


def test_implied_paragraph_and_item_ends() -> None:
    assert md("<p>a<p>b<ul><li>one<li>two</ul>") == "a\n\nb\n\n- one\n- two"


# --------------------------------------------------------------------------- lists


def test_unordered_and_ordered_lists_with_nesting() -> None:
    html = """
    <ul>
      <li>alpha
        <ul><li>beta<ol><li>gamma</li><li>delta</li></ol></li></ul>
      </li>
      <li>epsilon</li>
    </ul>
    <ol><li>first</li><li>second</li></ol>
    """
    assert md(html) == (
        "- alpha\n  - beta\n    1. gamma\n    2. delta\n- epsilon\n\n1. first\n2. second"
    )


def test_ordered_list_start_and_value() -> None:
    assert md('<ol start="3"><li>c</li><li>d</li></ol>') == "3. c\n4. d"
    assert md('<ol><li>a</li><li value="10">j</li><li>k</li></ol>') == "1. a\n10. j\n11. k"


def test_empty_bullets_are_removed() -> None:
    assert md("<ul><li></li><li>  </li><li>real</li></ul>") == "- real"
    assert md("<ul><li><ul><li>x</li></ul></li></ul>") == "- x"
    assert md("<ul><li>a</li><li><ul><li>x</li></ul></li></ul>") == "- a\n  - x"


def test_literal_dash_paragraph_survives() -> None:
    assert md("<p>-</p>") == "-"
    assert md("<p>before</p><p>-</p><p>after</p>") == "before\n\n-\n\nafter"


def test_li_outside_a_list_is_a_bullet() -> None:
    assert md("<li>orphan</li><li>two</li>") == "- orphan\n\n- two"


def test_list_item_with_paragraphs_and_code() -> None:
    html = "<ul><li><p>para one</p><p>para two</p></li><li><pre>x = 1</pre></li></ul>"
    assert md(html) == "- para one\n  para two\n- ```\n  x = 1\n  ```"


def test_wrappers_inside_lists_are_looked_through() -> None:
    assert md("<ul><div><li>a</li><li>b</li></div></ul>") == "- a\n- b"


# --------------------------------------------------------------------------- code


def test_pre_is_a_verbatim_fenced_block() -> None:
    html = "<pre>\ndef f(x):\n    return  x * 2\n\n\nprint(f(1))  </pre>"
    assert md(html) == "```\ndef f(x):\n    return  x * 2\n\n\nprint(f(1))\n```"


def test_pre_with_highlight_spans_and_entities() -> None:
    html = (
        '<pre><code class="language-py"><span class="k">if</span> a &lt; b:\n    pass</code></pre>'
    )
    assert md(html) == "```\nif a < b:\n    pass\n```"


def test_pre_fence_grows_past_inner_fences() -> None:
    assert md("<pre>```\ninner\n```</pre>") == "````\n```\ninner\n```\n````"


def test_no_escaping_inside_code() -> None:
    assert md("<p>use <code>a[0] \\ *b*</code> here</p>") == "use `a[0] \\ *b*` here"
    assert md('<p><a href="/x"><code>a[0]</code> [y]</a></p>') == (
        "[`a[0]` \\[y\\]](https://e.com/x)"
    )


def test_inline_code_fences() -> None:
    assert md("<p><code>a `b` c</code></p>") == "``a `b` c``"
    assert md("<p><code>x``y</code></p>") == "```x``y```"
    assert md("<p>a<code>`tick</code></p>") == "a`` `tick ``"
    assert code_span("plain") == "`plain`"
    assert code_span("ends`") == "`` ends` ``"


# --------------------------------------------------------------------------- links


def test_links_are_resolved_and_escaped() -> None:
    html = '<p>see <a href="../other.html">the [other] \\ page</a> now</p>'
    assert md(html) == "see [the \\[other\\] \\\\ page](https://e.com/other.html) now"


def test_link_urls_with_parentheses_or_spaces_are_wrapped() -> None:
    assert md('<a href="https://e.com/wiki/Foo_(bar)">Foo</a>') == (
        "[Foo](<https://e.com/wiki/Foo_(bar)>)"
    )
    assert md('<a href="https://e.com/a b">sp</a>') == "[sp](<https://e.com/a b>)"


def test_unusable_link_targets_become_plain_text() -> None:
    assert md('<p><a href="#cite-9">[9]</a> text</p>') == "[9] text"
    assert md("<p>see [1] in prose</p>") == "see [1] in prose"
    assert md('<a href="javascript:void(0)">js [x]</a>') == "js [x]"
    assert md('<a href="data:text/html,hi">data</a>') == "data"
    assert md('<a href="mailto:a@e.com">mail</a>') == "mail"
    assert md('<a href="ftp://e.com/f">ftp</a>') == "ftp"
    assert md("<a>no href</a>") == "no href"
    assert md('<a href="">empty</a>') == "empty"
    assert md('<a href="/relative">rel</a>', base="") == "rel"
    assert md('<a href="https://abs.example/x">abs</a>', base="") == "[abs](https://abs.example/x)"


def test_link_spacing_and_empty_links() -> None:
    assert md('<p>a<a href="/x"> b </a>c</p>') == "a [b](https://e.com/x) c"
    assert md('<p>x<a href="/x"></a>y</p>') == "xy"


def test_link_wrapping_blocks_flattens_its_text() -> None:
    html = '<a href="/card"><div><h3>Title</h3><p>desc</p></div></a>'
    assert md(html) == "[Title desc](https://e.com/card)"


def test_base_href_rebases_relative_urls() -> None:
    html = '<head><base href="https://cdn.example/root/"></head><a href="x.html">x</a> <img src="i.png" alt="i">'
    assert md(html) == "[x](https://cdn.example/root/x.html) ![i](https://cdn.example/root/i.png)"
    # a relative base resolves against the document URL
    assert md('<base href="/sub/"><a href="y">y</a>') == "[y](https://e.com/sub/y)"


# --------------------------------------------------------------------------- images


def test_images_alt_and_url() -> None:
    assert (
        md('<img src="/a.png" alt="An  [odd]\n alt">') == "![An \\[odd\\] alt](https://e.com/a.png)"
    )
    assert md('<img src="/b.png">') == "![](https://e.com/b.png)"
    long_alt = "w" * 300
    assert md(f'<img src="/c.png" alt="{long_alt}">') == f"![{'w' * 200}](https://e.com/c.png)"


def test_image_srcset_largest_candidate() -> None:
    html = '<img srcset="small.jpg 320w, large.jpg 1280w, mid.jpg 640w" alt="x">'
    assert md(html) == "![x](https://e.com/dir/large.jpg)"
    assert md('<img srcset="a.jpg, b.jpg 2x, c.jpg 1.5x">') == "![](https://e.com/dir/b.jpg)"
    assert md('<img src="main.jpg" srcset="big.jpg 2x">') == "![](https://e.com/dir/main.jpg)"


def test_data_uris_never_appear() -> None:
    out = md('<p><img src="data:image/png;base64,AAAA" alt="pixel"> and <img src="data:x"></p>')
    assert "data:" not in out and out == "pixel and"
    lazy = '<img src="data:image/gif;base64,R0l" data-src="/real.jpg" alt="lazy">'
    assert md(lazy) == "![lazy](https://e.com/real.jpg)"


def test_linked_image() -> None:
    assert md('<a href="/big"><img src="/thumb.png" alt="t"></a>') == (
        "[![t](https://e.com/thumb.png)](https://e.com/big)"
    )


def test_parse_srcset_and_resolve_url() -> None:
    assert parse_srcset("a.jpg 1x, b.jpg 2x") == [("a.jpg", 1.0), ("b.jpg", 2.0)]
    assert parse_srcset("a.jpg, b.jpg 300w,") == [("a.jpg", 1.0), ("b.jpg", 300.0)]
    # as in browsers, a comma inside a URL belongs to it; only trailing commas separate
    assert parse_srcset("img?w=1,2 2x, c.jpg,") == [("img?w=1,2", 2.0), ("c.jpg", 1.0)]
    assert resolve_url("  /x\n", "https://e.com/a/b") == "https://e.com/x"
    assert resolve_url("//cdn.e.com/y", "https://e.com/") == "https://cdn.e.com/y"
    assert resolve_url("#top", "https://e.com/") is None
    assert resolve_url("JavaScript:alert(1)", "https://e.com/") is None
    assert resolve_url("x", "") is None


# --------------------------------------------------------------------------- tables


def test_table_with_header_row() -> None:
    html = "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
    assert md(html) == "| a | b |\n| --- | --- |\n| 1 | 2 |"


def test_table_without_header_row() -> None:
    assert md("<table><tr><td>x</td></tr></table>") == "| x |"


def test_table_cells_escape_pipes_and_flatten() -> None:
    assert md("<table><tr><td>a|b</td></tr></table>") == r"| a\|b |"
    html = '<table><tr><td><p>multi</p><p>para</p></td><td>x<br>y</td><td><a href="/l">l</a></td></tr></table>'
    assert md(html) == "| multi para | x y | [l](https://e.com/l) |"


def test_table_thead_tbody_caption_and_ragged_rows() -> None:
    html = """
    <table>
      <caption>Scores</caption>
      <thead><tr><td>name</td><td>score</td></tr></thead>
      <tbody><tr><td>ann</td><td>3</td></tr><tr><td>bob</td></tr>
      <tr><td colspan="2">total</td></tr></tbody>
    </table>
    """
    assert md(html) == (
        "Scores\n\n| name | score |\n| --- | --- |\n| ann | 3 |\n| bob |  |\n| total |  |"
    )


def test_layout_tables_render_as_flow() -> None:
    html = (
        "<table><tr><td><h2>Side</h2></td><td><table><tr><td>in</td></tr></table></td></tr></table>"
    )
    assert md(html) == "## Side\n\n| in |"
    assert md('<table role="presentation"><tr><td>a</td><td>b</td></tr></table>') == "a\n\nb"


def test_table_implied_cell_ends() -> None:
    assert md("<table><tr><th>a<th>b<tr><td>1<td>2</table>") == (
        "| a | b |\n| --- | --- |\n| 1 | 2 |"
    )


# --------------------------------------------------------------------------- robustness


@pytest.mark.parametrize(
    "html",
    [
        "",
        "<",
        "<<>>",
        "<p",
        "<a href='x",
        "</div></p></li></table>",
        "<table><td>cell without row",
        "<ul><li>unclosed <b>bold <i>both",
        "<!-- unclosed comment",
        "<![CDATA[ x ]]><?xml version='1.0'?><!DOCTYPE html>",
        "<pre>unclosed",
        "<title>unclosed title",
        "&#xFFFFFFFF; &bogus; &#0;",
        "<img srcset=',,, ,'>",
        "<ol start='x'><li value='y'>a</ol>",
        "<td colspan='huge'>x</td>",
        "<base href='javascript:alert(1)'><a href='y'>y</a>",
    ],
)
def test_malformed_markup_never_raises(html: str) -> None:
    assert isinstance(md(html), str)


def test_deep_nesting_never_raises() -> None:
    depth = 5000
    html = "<div>" * depth + "deep" + "</div>" * depth
    assert md(html) == "deep"
    lists = "<ul><li>" * 1000 + "x" + "</li></ul>" * 1000
    assert md(lists).endswith("- x")
    spans = "<span>" * 3000 + "s" + "</span>" * 3000
    assert md(spans) == "s"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "<p>",
                "</p>",
                "<div>",
                "</div>",
                "<ul>",
                "<ol>",
                "<li>",
                "</li>",
                "</ul>",
                "<table>",
                "<tr>",
                "<td>",
                "<th>",
                "</table>",
                "<pre>",
                "</pre>",
                "<code>",
                "</code>",
                "<a href='/x'>",
                "<a href='#y'>",
                "</a>",
                "<img src='i.png' alt='[a]'>",
                "<br>",
                "<hr>",
                "<h2>",
                "</h2>",
                "<script>",
                "</script>",
                "text",
                " ",
                "`",
                "|",
                "[",
                "]",
                "\\",
                "\n",
                "&amp;",
                "<b>",
                "</b>",
                "<base href='/b/'>",
            ]
        ),
        max_size=40,
    )
)
def test_random_tag_soup_never_raises(parts: list[str]) -> None:
    out = md("".join(parts))
    assert isinstance(out, str) and out == out.strip()
