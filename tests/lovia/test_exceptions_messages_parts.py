import base64
import pickle

import pytest

from lovia.exceptions import LoviaError, ProviderError, ToolError, UserError
from lovia.messages import AssistantTurn, ToolCall, Usage, assistant, system, tool_message, user
from lovia.parts import (
    FilePart,
    ImagePart,
    TextPart,
    coerce_parts,
    image_mime,
    normalize_content,
    project_parts,
    text_of,
)


def test_error_str_includes_hint():
    assert str(LoviaError("x", hint="y")) == "x\n  hint: y"
    assert str(LoviaError(hint="only")) == "only"
    assert str(LoviaError("plain")) == "plain"


def test_error_extra_kwargs_become_attributes_and_pickle():
    exc = ProviderError("boom", retryable=False, status_code=429, body="b")
    assert exc.retryable is False and exc.status_code == 429 and exc.body == "b"
    assert ProviderError("x").retryable is None
    again = pickle.loads(pickle.dumps(exc))
    assert str(again) == "boom" and again.status_code == 429
    assert issubclass(ToolError, LoviaError) and issubclass(UserError, LoviaError)


def test_usage_add_clone_total():
    u = Usage(10, 5, 3, 1)
    u.add(Usage(1, 1, 1, 1))
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        11,
        6,
        4,
        2,
    )
    assert u.total_tokens == 17
    c = u.clone()
    c.add(Usage(1))
    assert u.input_tokens == 11


def test_message_helpers():
    assert system("s").role == "system"
    m = user(TextPart("hi"))
    assert m.content == [TextPart("hi")] and m.text == "hi"
    assert assistant("a").content == "a"
    t = tool_message("c1", "out")
    assert t.tool_call_id == "c1" and t.role == "tool"
    turn = AssistantTurn("x", [ToolCall("1", "f", "{}")])
    assert turn.to_message().tool_calls[0].name == "f"


def test_part_validation_messages():
    with pytest.raises(ValueError, match="exactly one of url or data"):
        ImagePart()
    with pytest.raises(ValueError, match="also needs mime_type"):
        ImagePart(data="AAAA")
    with pytest.raises(ValueError, match="FilePart data must be valid base64"):
        FilePart(data="!!!", mime_type="text/plain")
    with pytest.raises(ValueError, match="FilePart requires exactly one"):
        FilePart(url="u", data="AAAA", mime_type="x")


def test_part_constructors(tmp_path):
    png = tmp_path / "a.PNG"
    png.write_bytes(b"\x89PNG")
    img = ImagePart.from_path(png)
    assert img.mime_type == "image/png" and base64.b64decode(img.data) == b"\x89PNG"
    with pytest.raises(ValueError, match="Cannot infer mime_type for '.xyz'"):
        ImagePart.from_path(tmp_path / "b.xyz")
    txt = tmp_path / "n.txt"
    txt.write_text("hello")
    f = FilePart.from_path(txt)
    assert f.filename == "n.txt" and f.mime_type == "text/plain"
    assert FilePart.from_bytes(b"x", mime_type="a/b").data == "eA=="
    assert FilePart.from_url("https://x/z.pdf").url == "https://x/z.pdf"
    assert image_mime("x.JPG") == "image/jpeg" and image_mime("x.bmp") is None


def test_text_of_and_normalize():
    content = [TextPart("see "), ImagePart(url="u"), FilePart(url="f", filename="a.txt")]
    content += [FilePart(url="g"), TextPart(" end")]
    assert text_of(content) == "see [image][file:a.txt][file] end"
    assert text_of(None) == "" and text_of("s") == "s"
    p = TextPart("x")
    assert normalize_content(p) == [p] and normalize_content("s") == "s"
    assert normalize_content(None) is None and normalize_content((p,)) == [p]


def test_coerce_parts():
    p = TextPart("x")
    assert coerce_parts(p) == [p]
    assert coerce_parts(["a", p]) == [TextPart("a"), p]
    assert coerce_parts([]) is None
    assert coerce_parts(["a", "b"]) is None
    assert coerce_parts([p, 3]) is None
    assert coerce_parts("str") is None


def test_project_parts_formats():
    data = base64.b64encode(b"hello").decode()
    assert project_parts([TextPart("shot.png"), ImagePart(data=data, mime_type="image/png")]) == (
        "shot.png\n[image: image/png, 5 B]"
    )
    kb = base64.b64encode(b"x" * 1536).decode()
    assert (
        project_parts([ImagePart(data=kb, mime_type="image/png")]) == "[image: image/png, 1.5 KB]"
    )
    mixed = [ImagePart(url="https://x/y.png"), FilePart(url="https://x/z.pdf", filename="z.pdf")]
    assert project_parts(mixed) == "[image: https://x/y.png]\n[file z.pdf: https://x/z.pdf]"
    assert project_parts([ImagePart(data="=", mime_type="image/png")]) == "[image: image/png, 0 B]"
    assert project_parts([TextPart(""), TextPart("a")]) == "a"
    big = base64.b64encode(b"x" * (2 * 1048576)).decode()
    assert project_parts([FilePart(data=big, mime_type="a/b")]) == "[file: a/b, 2.0 MB]"
