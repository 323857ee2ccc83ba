"""The stdout writer: never blocks the loop, counts its backlog, reports when the client drained it."""

import array
import asyncio
import fcntl
import json
import os
import termios
import threading
import time

from lovia_server.notification_parts import PART_METHOD, PART_MIN, PartAssembler, split_frame
from lovia_server.writer import PIPE_FAST, PIPE_TARGET, RATE_WINDOW, QueuedWriter
from tests.support import raw_lsp


async def test_drained_completes_once_the_reader_took_everything():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    try:
        assert writer.drained() is None  # nothing queued
        payload = b"x" * (1 << 20)  # far more than a pipe holds: the writer thread blocks
        writer.write(payload)
        waiter = writer.drained()
        assert waiter is not None
        await asyncio.sleep(0.05)
        assert not waiter.done() and writer.backlog() > 0  # the client has not read
        got = 0
        while got < len(payload):
            got += len(await asyncio.to_thread(os.read, read_fd, 1 << 16))
        await asyncio.wait_for(waiter, 5)
        assert writer.backlog() == 0 and writer.drained() is None
    finally:
        writer.close()
        os.close(read_fd)


async def test_a_closed_pipe_releases_waiters():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    writer.write(b"y" * (1 << 20))
    waiter = writer.drained()
    assert waiter is not None
    os.close(read_fd)  # the client went away: the write fails, nobody waits forever
    await asyncio.wait_for(waiter, 5)
    writer.close()


# ---------------------------------------------------------------------- lanes, cap, pacing


def _in_pipe(fd: int) -> int:
    held = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, held)
    return held[0]


def _frames(data: bytes) -> list[bytes]:
    """Split what was read into the frames this test wrote (b"<tag>:<padding>|")."""
    return [part.split(b":")[0] for part in data.split(b"|") if part]


def _frame(tag: str, size: int = 2048) -> bytes:
    head = tag.encode() + b":"
    return head + b"." * (size - len(head) - 1) + b"|"


async def _read_all(fd: int, size: int) -> bytes:
    got = b""
    while len(got) < size:
        got += await asyncio.to_thread(os.read, fd, 1 << 16)
    return got


async def _eventually(check, within: float = 10) -> None:
    async with asyncio.timeout(within):
        while not check():  # noqa: ASYNC110 - the writer's thread and the kernel's pipe
            await asyncio.sleep(0.01)


async def test_an_urgent_frame_overtakes_queued_notifications():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"), fast_target=PIPE_TARGET)
    try:
        assert writer.paced
        frames = [_frame(f"n{i}") for i in range(5)]
        for f in frames:
            writer.send(f)
        # The pipe holds the first notification; the others wait in the queue for the client.
        await _eventually(lambda: _in_pipe(read_fd) > 0)
        writer.send(_frame("answer"), urgent=True)
        got = _frames(await _read_all(read_fd, 6 * 2048))
        assert sorted(got) == sorted([b"answer", b"n0", b"n1", b"n2", b"n3", b"n4"])
        assert got.index(b"answer") <= 1  # at most the frame already in the pipe is ahead
        assert [g for g in got if g != b"answer"] == [b"n0", b"n1", b"n2", b"n3", b"n4"]
    finally:
        writer.close()
        os.close(read_fd)


async def test_an_urgent_frame_never_splits_a_frame_being_written():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    try:
        big = _frame("big", 1 << 20)  # far more than the pipe holds: its write blocks
        writer.send(big)
        await _eventually(lambda: _in_pipe(read_fd) > 0)
        writer.send(_frame("answer"), urgent=True)
        got = await _read_all(read_fd, len(big) + 2048)
        assert got == big + _frame("answer")
    finally:
        writer.close()
        os.close(read_fd)


async def test_the_pipe_is_kept_short_while_the_client_does_not_read():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"), pipe_target=1024, fast_target=1024)
    try:
        for i in range(100):
            writer.send(_frame(f"n{i}", 1000))
        await _eventually(lambda: _in_pipe(read_fd) > 0)
        await asyncio.sleep(0.2)
        # At most one frame is written once the pipe holds more than the target.
        assert _in_pipe(read_fd) <= 1024 + 1000
        assert writer.backlog() >= 100 * 1000 - 1024 - 1000
        got = _frames(await _read_all(read_fd, 100 * 1000))
        assert got == [f"n{i}".encode() for i in range(100)]
        await _eventually(lambda: writer.backlog() == 0)
    finally:
        writer.close()
        os.close(read_fd)


async def test_over_the_cap_droppable_frames_are_refused_and_the_rest_kept():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"), cap=10_000)
    try:
        accepted: list[bytes] = []
        refused = 0
        for i in range(40):
            f = _frame(f"d{i}", 1000)
            if writer.send(f, droppable=True):
                accepted.append(f)
            else:
                refused += 1
        assert refused > 0 and writer.dropped == refused
        # Beyond the cap: frames that must not be dropped are still queued, in order.
        for name in ("essential1", "essential2"):
            f = _frame(name, 1000)
            assert writer.send(f)
            accepted.append(f)
        answer = _frame("answer", 1000)
        assert writer.send(answer, urgent=True)
        assert writer.backlog() <= 10_000 + 2 * 1000
        got = _frames(await _read_all(read_fd, (len(accepted) + 1) * 1000))
        want = [f.split(b":")[0] for f in accepted]
        assert [g for g in got if g != b"answer"] == want
        assert b"answer" in got
        # Drained: droppable frames are accepted again.
        await _eventually(lambda: writer.backlog() == 0)
        assert writer.send(_frame("later", 1000), droppable=True)
        assert _frames(await _read_all(read_fd, 1000)) == [b"later"]
    finally:
        writer.close()
        os.close(read_fd)


async def test_a_file_is_written_without_pacing(tmp_path):
    path = tmp_path / "out"
    with open(path, "wb") as out:  # noqa: ASYNC230 - a test's file
        writer = QueuedWriter(out)
        assert not writer.paced
        for i in range(50):
            writer.send(_frame(f"n{i}", 1000))
        writer.send(_frame("answer", 1000), urgent=True)
        await _eventually(lambda: writer.backlog() == 0)
        writer.close()
    got = _frames(path.read_bytes())
    assert sorted(got) == sorted([f"n{i}".encode() for i in range(50)] + [b"answer"])


async def test_after_the_pipe_closed_frames_are_refused():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    os.close(read_fd)
    writer.send(b"x" * 100)
    await _eventually(lambda: not writer.send(b"y", urgent=True))
    assert writer.backlog() == 0 and writer.drained() is None
    writer.close()


async def test_a_client_seen_reading_slowly_is_paced_tightly_and_a_fast_one_loosely():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    try:
        # Not seen slow yet: the pipe may hold up to PIPE_FAST before the next notification.
        for i in range(40):
            writer.send(_frame(f"a{i}", 1000))
        await _eventually(lambda: _in_pipe(read_fd) >= PIPE_FAST)
        assert _in_pipe(read_fd) <= PIPE_FAST + 1000
        # It reads nothing for longer than a measuring window: measured slow, so once it has
        # read what the pipe held, at most PIPE_TARGET plus one frame waits ahead of an answer.
        await asyncio.sleep(3 * RATE_WINDOW)
        got = b""
        got += await asyncio.to_thread(os.read, read_fd, 1 << 16)
        await asyncio.sleep(0.1)
        assert _in_pipe(read_fd) <= PIPE_TARGET + 1000
        # Reading everything at once (a fast client again): the loose target comes back.
        got += await _read_all(read_fd, 40 * 1000 - len(got))
        assert _frames(got) == [f"a{i}".encode() for i in range(40)]
        for i in range(40):
            writer.send(_frame(f"b{i}", 1000))
        rest = b""
        async with asyncio.timeout(10):
            while len(rest) < 40 * 1000:
                rest += await asyncio.to_thread(os.read, read_fd, 1 << 16)
        assert _frames(rest) == [f"b{i}".encode() for i in range(40)]
    finally:
        writer.close()
        os.close(read_fd)


def test_the_verdict_on_the_client_follows_what_it_was_seen_to_read(tmp_path):
    with open(tmp_path / "out", "wb") as out:
        writer = QueuedWriter(out)
        try:
            assert writer._target() == PIPE_FAST  # never seen slow
            writer._written_total = 10_000
            writer._sample_client(100.0, held=8_000)  # data waits: a sample starts
            writer._sample_client(100.0 + RATE_WINDOW, held=7_000)  # 1,000 B in 0.25 s
            assert writer._client_rate == 4_000 and writer._target() == PIPE_TARGET
            # An empty pipe after a short while: it read 7,000 B within 1 ms, fast again.
            writer._sample_client(100.0 + RATE_WINDOW + 0.001, held=0)
            assert writer._target() == PIPE_FAST
            # Slow again; an empty pipe after a long wait says nothing: still slow.
            writer._sample_client(200.0, held=5_000)
            writer._sample_client(200.0 + RATE_WINDOW, held=4_900)
            assert writer._target() == PIPE_TARGET
            writer._sample_client(200.0 + 2 * RATE_WINDOW, held=0)
            assert writer._target() == PIPE_TARGET
        finally:
            writer.close()


# ---------------------------------------------------------------------- notification parts


def _notification(text: str) -> bytes:
    body = json.dumps(
        {"jsonrpc": "2.0", "method": "lovia/event", "params": {"text": text}},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode()
    return raw_lsp.frame(body)


def _slow_reader(fd: int, stop: threading.Event, chunk: int = 1024) -> list[dict]:
    """Read ``chunk`` bytes every 10 ms (about 100 KB/s: slow to the writer) until stopped and
    the pipe is empty; every message read, parts joined."""
    assembler = PartAssembler()
    messages: list[dict] = []
    buffer = b""
    while True:
        if stop.is_set() and _in_pipe(fd) == 0:
            return messages
        data = os.read(fd, chunk) if _in_pipe(fd) else b""
        bodies, buffer = raw_lsp.split_frames(buffer + data)
        for body in bodies:
            message = json.loads(body)
            if message.get("method") == PART_METHOD:
                message = assembler.feed(message["params"]) or {"part": message["params"]}
            messages.append(message)
        time.sleep(0.01)


FILLERS = 120  # ~1 s of reading: long enough for the writer to measure the client


async def _parts_scenario(*, parts: bool) -> tuple[list[dict], str, QueuedWriter]:
    """Filler until the client is seen reading slowly, then a 60 KB notification, then an
    answer queued once the big one has begun to go out."""
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    writer.parts = parts
    stop = threading.Event()
    reading = asyncio.ensure_future(asyncio.to_thread(_slow_reader, read_fd, stop))
    big = 'é"x\\' * 15_000  # escapes and two-byte characters: the parts' sizes still hold
    try:
        for i in range(FILLERS):
            writer.send(_notification(f"filler {i} " + "." * 900))
        await _eventually(lambda: writer._target() == PIPE_TARGET)
        writer.send(_notification(big))
        await _eventually(lambda: writer.backlog() < 40_000)  # the big one is going out
        writer.send(raw_lsp.frame(b'{"jsonrpc":"2.0","id":1,"result":"answer"}'), urgent=True)
        writer.send(_notification("after"))
        await _eventually(lambda: writer.backlog() == 0, within=30)
        stop.set()
        messages = await asyncio.wait_for(reading, 30)
    finally:
        stop.set()
        writer.close()
        os.close(read_fd)
    return messages, big, writer


async def test_a_large_notification_to_a_slow_client_goes_in_parts_and_answers_go_between():
    messages, big, writer = await _parts_scenario(parts=True)
    texts = [m.get("params", {}).get("text") for m in messages]
    assert texts[:FILLERS] == [f"filler {i} " + "." * 900 for i in range(FILLERS)]
    answer = next(i for i, m in enumerate(messages) if m.get("id") == 1)
    whole = texts.index(big)  # joined back exactly, escapes and all
    assert answer < whole, "the answer waited for the whole notification"
    assert all("part" in m for m in messages[FILLERS:answer]), "only parts before the answer"
    assert texts[-1] == "after" and writer.split == 1
    assert writer.backlog() == 0  # the parts' bytes were counted in and out


async def test_a_client_that_did_not_ask_for_parts_gets_whole_frames():
    messages, big, writer = await _parts_scenario(parts=False)
    texts = [m.get("params", {}).get("text") for m in messages]
    answer = next(i for i, m in enumerate(messages) if m.get("id") == 1)
    assert texts.index(big) < answer and writer.split == 0
    assert not any("part" in m for m in messages)


def test_parts_cut_to_size_and_join_back_exactly():
    frame = _notification('ü\n"' * 5000)
    body = raw_lsp.split_frames(frame)[0][0]
    pieces = split_frame(frame, 3, size=PART_MIN)
    assert pieces is not None and len(pieces) > 10
    assert all(len(piece) <= PART_MIN for piece in pieces)
    assembler = PartAssembler()
    joined = [assembler.feed(json.loads(raw_lsp.split_frames(p)[0][0])["params"]) for p in pieces]
    assert joined[:-1] == [None] * (len(pieces) - 1) and joined[-1] == json.loads(body)
    assert split_frame(raw_lsp.frame(b'{"a":1}'), 4, PART_MIN) is None  # small: stays whole
    log = {"jsonrpc": "2.0", "method": "window/logMessage", "params": {"message": "x" * 9000}}
    assert split_frame(raw_lsp.frame(json.dumps(log).encode()), 5, PART_MIN) is None  # not ours
    # A part out of order (a lost one) drops what was gathered, never joins a wrong message.
    params = [json.loads(raw_lsp.split_frames(p)[0][0])["params"] for p in pieces]
    assembler = PartAssembler()
    assert [assembler.feed(p) for p in params[:1] + params[2:]] == [None] * (len(params) - 1)


# ---------------------------------------------------------------------- direct writes


async def test_a_frame_for_a_client_that_keeps_up_is_written_by_the_caller():
    """No thread hop while the client keeps up: the frame is in the pipe when send returns."""
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    try:
        for i in range(50):
            assert writer.send(_frame(f"n{i}", 300))
            assert _in_pipe(read_fd) == 300  # written before send returned
            assert _frames(os.read(read_fd, 4096)) == [f"n{i}".encode()]
        assert writer.send(_frame("answer", 300), urgent=True)
        assert _frames(os.read(read_fd, 4096)) == [b"answer"]
        assert writer.direct == 51 and writer.backlog() == 0
    finally:
        writer.close()
        os.close(read_fd)


async def test_direct_writes_never_block_or_reorder_when_the_client_stops_reading():
    """A pipe shrunk to one page (a user over the pipe quota), a client that stops reading:
    send still returns at once, and the frames arrive in order once it reads again."""
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 4096)
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    try:
        started = time.monotonic()
        tags = []
        for i in range(40):
            tag = f"f{i}"
            tags.append(tag)
            assert writer.send(_frame(tag, 700 + 37 * i), urgent=i % 9 == 4)
        assert time.monotonic() - started < 1.0  # nothing waited for the client
        assert writer.backlog() > 0  # what did not fit is queued for the thread
        urgent = [t for i, t in enumerate(tags) if i % 9 == 4]
        total = sum(700 + 37 * i for i in range(40))
        got = _frames(await _read_all(read_fd, total))
        assert sorted(got) == sorted(t.encode() for t in tags)  # nothing lost or split
        normal = [t.encode() for t in tags if t not in urgent]
        assert [g for g in got if g in normal] == normal  # notifications keep their order
        assert [g for g in got if g not in normal] == [t.encode() for t in urgent]
        assert writer.direct >= 1  # the first frames went straight into the empty pipe
    finally:
        writer.close()
        os.close(read_fd)


async def test_a_frame_waits_behind_one_the_thread_is_writing():
    """While the thread writes a queued frame (outside the lock) to a client that is reading,
    the pipe has room now and then; a new frame is queued behind it at once, never written into
    the middle of it nor waiting for it."""
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    chunks: list[bytes] = []
    big = _frame("big", 1 << 20)  # many pipefuls: the thread is mid-write for a while
    total = len(big) + 200 * 200

    def read() -> None:
        got = 0
        while got < total:
            chunk = os.read(read_fd, 4096)  # small reads: the pipe is never full for long
            chunks.append(chunk)
            got += len(chunk)
            time.sleep(0.0005)  # a pipeful every few ms: the big frame takes over 100 ms

    reader = threading.Thread(target=read)
    reader.start()
    try:
        writer.send(big)
        await asyncio.sleep(0.05)  # the thread took it: the lanes are empty, the pipe drains
        assert writer.backlog() > 0
        slowest = 0.0
        for i in range(200):
            started = time.monotonic()
            writer.send(_frame(f"s{i}", 200))
            slowest = max(slowest, time.monotonic() - started)
            await asyncio.sleep(0.0005)
        await asyncio.to_thread(reader.join, 20)
        assert slowest < 0.05
        assert _frames(b"".join(chunks)) == [b"big"] + [f"s{i}".encode() for i in range(200)]
    finally:
        writer.close()
        os.close(read_fd)
