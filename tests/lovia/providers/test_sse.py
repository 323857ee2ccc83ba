from __future__ import annotations

from collections.abc import AsyncIterator

from lovia.providers._sse import SSEParser, iter_sse_json


def feed_all(*chunks: bytes) -> tuple[list[dict[str, object]], SSEParser]:
    parser = SSEParser()
    out = []
    for chunk in chunks:
        out += parser.feed(chunk)
    out += parser.close()
    return out, parser


def test_events_split_across_chunks_are_reassembled() -> None:
    events, _ = feed_all(b'data: {"a"', b": 1}\n", b"\n", b'data: {"b": 2}\n\n')
    assert events == [{"a": 1}, {"b": 2}]


def test_only_data_fields_count_and_crlf_is_accepted() -> None:
    events, _ = feed_all(b'event: message_start\r\nid: 7\r\n: comment\r\ndata: {"x": 1}\r\n\r\n')
    assert events == [{"x": 1}]


def test_consecutive_data_lines_are_joined_with_newlines() -> None:
    events, _ = feed_all(b'data: {"text":\ndata: "two lines"}\n\n')
    assert events == [{"text": "two lines"}]


def test_done_marker_stops_and_later_events_are_ignored() -> None:
    events, parser = feed_all(b'data: {"a": 1}\n\ndata: [DONE]\n\ndata: {"late": 1}\n\n')
    assert events == [{"a": 1}]
    assert parser.done


def test_malformed_payloads_are_skipped_and_counted() -> None:
    events, parser = feed_all(b"data: not json\n\ndata: [1, 2]\n\ndata:\n\ndata: {}\n\n")
    assert events == [{}]
    assert parser.skipped == 3


def test_trailing_event_without_blank_line_is_flushed_at_eof() -> None:
    events, _ = feed_all(b'data: {"tail": true}')
    assert events == [{"tail": True}]


async def test_iter_sse_json_calls_on_done() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'data: {"a": 1}\n\n'
        yield b"data: [DONE]\n\n"

    seen: list[str] = []
    events = [e async for e in iter_sse_json(chunks(), on_done=lambda: seen.append("done"))]
    assert events == [{"a": 1}]
    assert seen == ["done"]
