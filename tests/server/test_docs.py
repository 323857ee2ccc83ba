"""docs/server.md is checked against the code: every method, event kind and error code, and the
generated tables match the protocol models."""

from pathlib import Path

from lovia_server import protocol as p
from lovia_server.protocol import docs

DOC = (Path(__file__).parents[2] / "docs" / "server.md").read_text()


def test_the_generated_tables_match_the_models():
    assert docs.render_into(DOC) == DOC, "run `python -m lovia_server.protocol.schema`"


def test_every_method_is_documented():
    for method in p.METHODS:
        assert f"`{method}`" in DOC, method


def test_every_event_kind_is_documented():
    for kind in p.EVENT_KINDS:
        assert f"`{kind}`" in DOC, kind


def test_every_error_code_is_documented():
    codes = [v for k, v in vars(p).items() if k.isupper() and isinstance(v, int) and v < -32000]
    assert codes
    for code in [*codes, *p.ErrorCode]:
        assert f"| {int(code)} |" in DOC, code


def test_every_tool_kind_and_edit_mode_is_documented():
    for kind in p.TOOL_KINDS:
        assert f"`{kind}`" in DOC, kind
    for mode in p.EDIT_MODES:
        assert mode in DOC
