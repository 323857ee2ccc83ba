"""schema.json is generated from the models, checked in, and validates what the server sends."""

import json

import jsonschema
import pytest

from lovia_server import protocol as p
from lovia_server.protocol import docs, schema
from tests.server.protocol.test_models import _sample_event


def test_the_committed_schema_and_docs_are_current():
    assert schema.main(["--check"]) == 0


def test_check_fails_on_a_stale_schema_and_writing_fixes_it(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "schema.json"
    stale.write_text(schema.SCHEMA_PATH.read_text().replace('"toolCallId"', '"toolCall"', 1))
    monkeypatch.setattr(schema, "SCHEMA_PATH", stale)
    monkeypatch.setattr(schema, "DOCS_PATH", tmp_path / "absent.md")
    assert schema.main(["--check"]) == 1
    assert "schema.json is stale" in capsys.readouterr().err
    assert schema.main([]) == 0
    assert schema.main(["--check"]) == 0
    assert stale.read_text() == schema.render_schema()


def test_check_fails_when_a_generated_docs_table_is_edited(tmp_path, monkeypatch):
    page = tmp_path / "server.md"
    text = schema.DOCS_PATH.read_text()
    page.write_text(text.replace("| `lovia/cancel` |", "| `lovia/stop` |"))
    monkeypatch.setattr(schema, "DOCS_PATH", page)
    assert schema.main(["--check"]) == 1
    schema.main([])
    assert page.read_text() == text


def test_docs_without_the_markers_are_an_error():
    with pytest.raises(docs.StaleDocs, match="generated:methods"):
        docs.render_into("# no tables here\n")


def _validator(definition):
    whole = schema.build_schema()
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{definition}", "$defs": whole["$defs"]}
    )


@pytest.mark.parametrize("kind", p.EVENT_KINDS)
def test_the_schema_accepts_every_event_kind(kind):
    _validator("LoviaEvent").validate(_sample_event(kind))


def test_the_schema_rejects_an_event_that_breaks_its_kind():
    event = _sample_event("tool.result")
    event["status"] = "exploded"
    with pytest.raises(jsonschema.ValidationError):
        _validator("LoviaEvent").validate(event)
    event = _sample_event("approval.resolved")
    del event["by"]
    with pytest.raises(jsonschema.ValidationError):
        _validator("LoviaEvent").validate(event)


def test_left_out_fields_are_optional_and_not_nullable_in_the_schema():
    defs = schema.build_schema()["$defs"]
    resolved = defs["ApprovalResolvedEvent"]
    assert "decision" not in resolved["required"]
    assert resolved["properties"]["decision"] == {"$ref": "#/$defs/ApprovalChoice"}
    started = defs["RunStartedEvent"]
    assert "model" in started["required"]
    assert {"type": "null"} in started["properties"]["model"]["anyOf"]
    assert "type" in defs["TextContent"]["required"]  # the union's tag is always sent


def test_every_method_has_params_and_result_in_the_schema():
    methods = schema.build_schema()["properties"]["methods"]["properties"]
    assert list(methods) == p.METHODS
    replay = methods["lovia/replay"]["properties"]
    assert replay == {
        "params": {"$ref": "#/$defs/ReplayParams"},
        "result": {"$ref": "#/$defs/ReplayResult"},
    }


def test_the_extensions_recorded_events_match_the_schema():
    """The extension's tests replay this recording; it must be what the server really sends."""
    recording = schema.SCHEMA_PATH.parents[2] / "editor-extension/test/fixtures/run-events.json"
    fixture = json.loads(recording.read_text())
    validator = _validator("LoviaEvent")
    for event in fixture["events"] + fixture["finish"]:
        validator.validate(event)
