"""The stdout writer over a real pipe: never blocks the loop, answers and essential events
overtake, droppable frames are refused over the cap, and it says when the client drained it."""

import asyncio
import os

from lovia_server.transport.frame_writer import FrameWriter


def _frame(tag: str, size: int = 2048) -> bytes:
    head = tag.encode() + b":"
    return head + b"." * (size - len(head) - 1) + b"|"


def _tags(data: bytes) -> list[str]:
    """The frames this test wrote (b"<tag>:<padding>|"), in the order they were read."""
    return [part.split(b":")[0].decode() for part in data.split(b"|") if part]


async def _read_all(fd: int, size: int) -> bytes:
    got = b""
    while len(got) < size:
        got += await asyncio.to_thread(os.read, fd, 1 << 16)
    return got


async def _pipe(cap: int = 1 << 20) -> tuple[int, FrameWriter]:
    read_fd, write_fd = os.pipe()
    writer = await FrameWriter.open(os.fdopen(write_fd, "wb", buffering=0), cap=cap)
    return read_fd, writer


async def _fill(writer: FrameWriter) -> int:
    """Write until the pipe is full (the client does not read); the bytes written."""
    size = 0
    n = 0
    while not writer.pending:
        frame = _frame(f"fill{n}", 16 * 1024)
        assert writer.send(frame)
        size += len(frame)
        n += 1
    return size


async def test_a_frame_the_pipe_takes_is_written_at_once():
    read_fd, writer = await _pipe()
    try:
        assert writer.send(_frame("a"))
        assert not writer.pending and writer.backlog() == 0 and writer.drained() is None
        assert _tags(os.read(read_fd, 1 << 16)) == ["a"]  # already in the pipe: no loop turn
    finally:
        writer.close()
        os.close(read_fd)


async def test_a_stopped_client_never_blocks_the_loop_and_drained_completes_once_it_reads():
    read_fd, writer = await _pipe()
    try:
        filled = await _fill(writer)
        waiter = writer.drained()
        assert waiter is not None
        queued = [_frame(f"q{i}") for i in range(100)]
        for frame in queued:
            assert writer.send(frame)  # returns at once: queued, the loop goes on
        await asyncio.sleep(0.05)
        assert not waiter.done() and writer.backlog() >= len(queued) * 2048
        total = filled + sum(len(f) for f in queued)
        data = await _read_all(read_fd, total)
        await asyncio.wait_for(waiter, 5)
        assert _tags(data)[-100:] == [f"q{i}" for i in range(100)]  # in order, none lost
        assert not writer.pending and writer.backlog() == 0
    finally:
        writer.close()
        os.close(read_fd)


async def test_answers_and_essential_events_overtake_queued_notifications():
    read_fd, writer = await _pipe()
    try:
        filled = await _fill(writer)
        frames = [
            (_frame("delta-r1"), {"droppable": True, "key": "r1"}),
            (_frame("log"), {}),
            (_frame("delta-r2"), {"droppable": True, "key": "r2"}),
            (_frame("finished-r1"), {"lane": "essential", "key": "r1"}),
            (_frame("answer"), {"lane": "answer"}),
            (_frame("delta-r1-after"), {"droppable": True, "key": "r1"}),
        ]
        for frame, how in frames:
            assert writer.send(frame, **how)
        # The essential event of r1 dropped r1's queued delta: r1's order holds on the wire.
        assert writer.dropped == 1
        expected = ["answer", "finished-r1", "log", "delta-r2", "delta-r1-after"]
        data = await _read_all(read_fd, filled + 5 * 2048)
        assert [t for t in _tags(data) if not t.startswith("fill")] == expected
    finally:
        writer.close()
        os.close(read_fd)


async def test_over_the_cap_droppable_frames_are_refused_and_the_rest_kept():
    read_fd, writer = await _pipe(cap=10 * 2048)
    try:
        filled = await _fill(writer)
        results = [writer.send(_frame(f"d{i}"), droppable=True, key="r") for i in range(20)]
        assert results == [True] * 10 + [False] * 10  # memory stays at the cap
        assert writer.dropped == 10 and writer.dropped_bytes == 10 * 2048
        assert writer.send(_frame("progress"))  # not droppable: always kept
        assert writer.send(_frame("answer"), lane="answer")
        assert writer.stats()["queued"] == 11 * 2048
        data = await _read_all(read_fd, filled + 12 * 2048)
        tags = [t for t in _tags(data) if not t.startswith("fill")]
        assert tags == ["answer"] + [f"d{i}" for i in range(10)] + ["progress"]
    finally:
        writer.close()
        os.close(read_fd)


async def test_a_closed_pipe_releases_waiters_and_refuses_frames():
    read_fd, writer = await _pipe()
    await _fill(writer)
    writer.send(_frame("queued"))
    waiter = writer.drained()
    assert waiter is not None
    os.close(read_fd)  # the client went away: nobody waits forever
    await asyncio.wait_for(waiter, 5)
    assert not writer.send(_frame("late"))
    assert writer.backlog() == 0
    writer.close()


async def test_a_file_is_written_plainly(tmp_path):
    path = tmp_path / "out"
    with open(path, "wb") as out:  # noqa: ASYNC230 - a local file, in a test
        writer = await FrameWriter.open(out)
        assert writer.send(_frame("a")) and writer.send(_frame("b"), lane="answer")
        assert not writer.pending and writer.drained() is None
        writer.close()
    assert _tags(path.read_bytes()) == ["a", "b"]


async def test_finish_gives_the_client_time_to_take_what_is_queued():
    read_fd, writer = await _pipe()
    try:
        filled = await _fill(writer)
        writer.send(_frame("last"))
        reading = asyncio.ensure_future(_read_all(read_fd, filled + 2048))
        await writer.finish(grace=10)
        assert _tags(await reading)[-1] == "last"
        assert not writer.send(_frame("after"))  # closed
    finally:
        os.close(read_fd)
