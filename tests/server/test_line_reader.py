"""``LineReader``: one reader of standard input, on real pipes and files."""

import asyncio
import os

from lovia_server.chat.line_reader import LineReader


async def test_lines_split_across_reads_arrive_whole_and_in_order():
    read_end, write_end = os.pipe()
    reader = LineReader(read_end)
    reader.start()
    try:
        os.write(write_end, b"first\nsec")
        assert await asyncio.wait_for(reader.read(), 10) == "first"
        pending = asyncio.ensure_future(reader.read())
        await asyncio.sleep(0.05)
        assert not pending.done()  # half a line is not a line
        os.write(write_end, "ond\r\nthird é\n".encode()[:-2])  # é cut in half
        assert await asyncio.wait_for(pending, 10) == "second"
        os.write(write_end, "é\n".encode()[-2:])
        assert await asyncio.wait_for(reader.read(), 10) == "third é"
    finally:
        reader.close()
        os.close(read_end)
        os.close(write_end)


async def test_a_cancelled_read_takes_no_line_and_unread_puts_one_back():
    read_end, write_end = os.pipe()
    reader = LineReader(read_end)
    reader.start()
    try:
        waiting = asyncio.ensure_future(reader.read())
        await asyncio.sleep(0.05)
        waiting.cancel()
        os.write(write_end, b"kept\n")
        assert await asyncio.wait_for(reader.read(), 10) == "kept"
        reader.unread("again")
        assert await asyncio.wait_for(reader.read(), 10) == "again"
    finally:
        reader.close()
        os.close(read_end)
        os.close(write_end)


async def test_end_of_input_gives_the_last_partial_line_then_none():
    read_end, write_end = os.pipe()
    reader = LineReader(read_end)
    reader.start()
    try:
        os.write(write_end, b"one\ntail")
        os.close(write_end)
        assert await asyncio.wait_for(reader.read(), 10) == "one"
        assert await asyncio.wait_for(reader.read(), 10) == "tail"
        assert await asyncio.wait_for(reader.read(), 10) is None
    finally:
        reader.close()
        os.close(read_end)


async def test_a_regular_file_is_read_too(tmp_path):
    path = tmp_path / "input.txt"
    path.write_text("a\nb\n")
    fd = os.open(path, os.O_RDONLY)
    reader = LineReader(fd)
    reader.start()  # a file cannot be polled: read in a thread
    try:
        lines = [await asyncio.wait_for(reader.read(), 10) for _ in range(3)]
        assert lines == ["a", "b", None]
    finally:
        reader.close()
        os.close(fd)


async def test_no_input_at_all_reads_as_end_of_input():
    reader = LineReader(-1)
    reader.start()
    assert await asyncio.wait_for(reader.read(), 10) is None
