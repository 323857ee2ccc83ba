"""Where both front doors' logs go: stderr or a file, never stdout (the protocol's channel)."""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every front door takes: ``--log-file``, ``--log-level`` and ``--version``."""
    parser.add_argument("--log-file", help="write logs to this file (default: stderr)")
    parser.add_argument(
        "--log-level",
        default=os.environ.get("LOVIA_LOG_LEVEL", "WARNING"),
        help="DEBUG, INFO, WARNING (default) or ERROR",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")


ALWAYS_WARN = ("lovia.providers.cache",)
"""Loggers whose warnings reach the log even under a stricter ``--log-level``: a prompt-cache
break (a turn's cache read collapsed without a compaction, and which part of the prompt
changed) is the bug report a user would otherwise have to write from a grown bill."""


def setup_logging(level: str, log_file: str | None, *, quiet: tuple[str, ...] = ()) -> None:
    """Log at ``level`` (a name; unknown names mean WARNING) to ``log_file`` or stderr;
    the ``quiet`` loggers stay at WARNING or above unless ``level`` is stricter, the
    :data:`ALWAYS_WARN` ones log at WARNING (or what ``level`` adds) whatever it is."""
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.WARNING))
    for name in quiet:
        logging.getLogger(name).setLevel(max(root.level, logging.WARNING))
    for name in ALWAYS_WARN:
        logging.getLogger(name).setLevel(min(root.level, logging.WARNING))


__all__ = ["ALWAYS_WARN", "add_arguments", "setup_logging"]
