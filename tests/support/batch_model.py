"""A fake OpenAI-compatible model for batch tests: a two-turn "agent" that writes a file.

For a prompt ``write WORD to PATH`` it first calls ``write_file`` (PATH, ``WORD``) and, once
the tool result is back, answers ``wrote WORD``; so every task's output and patch follow from
its prompt alone, whichever executor ran it. A prompt ``reply TEXT`` is answered with TEXT in
one turn (the benchmark's tasks). Each answer takes ``delay`` seconds, and the
server counts requests in flight (``peak``) and notes when each arrived (``started``) to check
rate limits against; ``throttle_at = n`` answers the n-th request with a 429 and
``Retry-After: retry_after``.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from tests.support import fake_openai as oai
from tests.support.fake_server import RecordedRequest, Reply

PROMPT = re.compile(r"write (\S+) to (\S+)")


class TaskModel(oai.FakeOpenAI):
    def __init__(self, *, delay: float = 0.0) -> None:
        super().__init__(responder=self._answer)
        self.delay = delay
        self.in_flight = 0
        self.peak = 0
        self.started: list[float] = []  # when each chat request arrived (time.monotonic)
        self.throttle_at: int | None = None  # answer that request (0-based) with a 429
        self.retry_after = "2"
        self.throttled_at: float | None = None
        self._count_lock = threading.Lock()

    def env(self, api_key: str = "sk-batch-test-secret-0123") -> dict[str, str]:
        return super().env(api_key)

    def _answer(self, request: RecordedRequest) -> Reply:
        with self._count_lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.started.append(time.monotonic())
            throttle = len(self.started) - 1 == self.throttle_at
        if throttle:
            with self._count_lock:
                self.in_flight -= 1
                self.throttled_at = time.monotonic()
            return oai.rate_limited(retry_after=self.retry_after)
        try:
            if self.delay:
                time.sleep(self.delay)
            return self.reply_for(request.json)
        finally:
            with self._count_lock:
                self.in_flight -= 1

    @staticmethod
    def reply_for(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        prompt = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
        if isinstance(prompt, list):
            prompt = " ".join(str(p.get("text", "")) for p in prompt)
        if str(prompt).startswith("reply "):
            return oai.text(str(prompt)[len("reply ") :], usage=oai.usage(prompt=20, completion=3))
        match = PROMPT.search(str(prompt))
        if match is None:
            return oai.text("I do not understand the task.")
        word, path = match.groups()
        if any(m.get("role") == "tool" for m in messages):
            return oai.text(f"wrote {word}", usage=oai.usage(prompt=20, completion=3))
        return oai.tool_calls(
            oai.call("write_file", {"path": path, "content": word + "\n"}, id="call_write")
        )
