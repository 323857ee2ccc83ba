"""The retry line docs/neovim.md gives, run in headless Neovim on a ``model.retrying`` event as
the server sends it: the cause, the wait, the next attempt, and the hint with the first retry."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lovia_server.protocol import ModelRetryingEvent

NVIM = shutil.which("nvim")
DOC = Path(__file__).resolve().parents[2] / "docs" / "neovim.md"
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="neovim is not installed (.ci/run installs it)"
)


def _snippet() -> str:
    found = re.search(r"^function lovia\.retry_line\(ev\)\n.*?^end\n", DOC.read_text(), re.M | re.S)
    assert found, "docs/neovim.md has no lovia.retry_line"
    return found.group(0)


def _line(tmp_path: Path, attempt: int) -> str:
    event = ModelRetryingEvent(
        session_id="s1",
        run_id="r1",
        seq=3,
        ts=1_700_000_000_000,
        kind="model.retrying",
        message_id="m1",
        attempt=attempt,
        max_attempts=5,
        delay_ms=4000,
        retry_at=1_700_000_004_000,
        reason="OpenAI Chat stream returned HTTP 501: Not Implemented",
        status_code=501,
        hint="check OPENAI_BASE_URL",
    )
    out = tmp_path / f"line{attempt}.txt"
    script = tmp_path / "drive.lua"
    script.write_text(
        "lovia = {}\n"
        + _snippet()
        + f"local ev = vim.fn.json_decode({json.dumps(event.model_dump_json(by_alias=True))})\n"
        + f"local f = assert(io.open({json.dumps(str(out))}, 'w'))\n"
        + "f:write(lovia.retry_line(ev))\nf:close()\n"
    )
    assert NVIM is not None
    subprocess.run(
        [
            NVIM,
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-n",
            "-c",
            f"luafile {script}",
            "-c",
            "qa!",
        ],
        check=True,
        timeout=60,
        capture_output=True,
    )
    return out.read_text()


def test_the_documented_retry_line_says_the_cause_the_wait_and_the_next_attempt(
    tmp_path: Path,
) -> None:
    assert _line(tmp_path, 1) == (
        "lovia: the model call failed (OpenAI Chat stream returned HTTP 501: Not Implemented); "
        "retrying in 4.0 s (attempt 2 of 5)\ncheck OPENAI_BASE_URL"
    )
    assert _line(tmp_path, 2).endswith("retrying in 4.0 s (attempt 3 of 5)")  # the hint once
