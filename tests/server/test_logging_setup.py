"""The server's log: a prompt-cache break (a WARNING on ``lovia.providers.cache``) reaches it
whatever ``--log-level`` says, through the same setup both front doors run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EMIT = """
import logging, sys
from lovia_server.host.logging_setup import setup_logging

setup_logging(sys.argv[1], sys.argv[2] or None, quiet=("pygls",))
cache = logging.getLogger("lovia.providers.cache")
cache.warning("cache.break: anthropic:claude-x cache read fell from 9000 to 0 tokens; tools changed")
cache.info("cache.expired: anthropic:claude-x unchanged prefix")
logging.getLogger("lovia.providers").warning("providers.other: a plain warning")
logging.getLogger("pygls.protocol").warning("pygls.noise")
"""


def _emit(level: str, log_file: Path | None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", EMIT, level, str(log_file) if log_file else ""],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == ""  # stdout is the protocol's channel
    return log_file.read_text() if log_file else done.stderr


@pytest.mark.parametrize(
    ("level", "expired", "other"),
    [("ERROR", False, False), ("WARNING", False, True), ("DEBUG", True, True)],
)
def test_cache_breaks_reach_the_log_file_at_any_level(tmp_path, level, expired, other):
    text = _emit(level, tmp_path / "server.log")
    assert "WARNING lovia.providers.cache: cache.break: anthropic:claude-x" in text
    assert "tools changed" in text
    assert ("cache.expired" in text) is expired
    assert ("providers.other" in text) is other


def test_without_a_log_file_the_warning_goes_to_stderr_the_editors_output_channel():
    text = _emit("ERROR", None)
    assert "lovia.providers.cache: cache.break" in text
    assert "providers.other" not in text and "pygls.noise" not in text
