"""Opt-in logging setup: ``enable_logging()`` for readable, optionally coloured log lines."""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import IO, Any

_LEVEL_COLORS = {
    "DEBUG": "\033[2m",
    "INFO": "\033[32m",
    "WARNING": "\033[33m",
    "ERROR": "\033[31m",
    "CRITICAL": "\033[1;31m",
}
_RESET = "\033[0m"
_BOLD = "\033[1m"
_DIM = "\033[2m"
_EVENT = re.compile(r"^[a-z][a-z0-9_.]*:")

logging.getLogger("lovia").addHandler(logging.NullHandler())


def supports_color(stream: Any) -> bool:
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    try:
        if not stream.isatty():
            return False
    except Exception:
        return False
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        try:
            import ctypes

            kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
            kernel32.SetConsoleMode(kernel32.GetStdHandle(-11), 7)
        except Exception:
            return False
    return True


class ColorFormatter(logging.Formatter):
    """Colours the level, dims the logger name and bolds a leading ``event.name:`` token."""

    def format(self, record: logging.LogRecord) -> str:
        saved = (record.levelname, record.name, record.msg, record.args)
        try:
            message = record.getMessage()
            match = _EVENT.match(message)
            if match:
                message = f"{_BOLD}{match.group(0)}{_RESET}{message[match.end() :]}"
            record.msg = message
            record.args = None
            color = _LEVEL_COLORS.get(record.levelname, "")
            record.levelname = f"{color}{record.levelname:<7}{_RESET}"
            record.name = f"{_DIM}{record.name}{_RESET}"
            return super().format(record)
        finally:
            record.levelname, record.name, record.msg, record.args = saved


def enable_logging(
    level: int = logging.INFO,
    *,
    format: str = "%(asctime)s %(levelname)-7s %(name)s: %(message)s",
    datefmt: str = "%H:%M:%S",
    stream: IO[str] | None = None,
    color: bool | None = None,
    propagate: bool = False,
) -> logging.Logger:
    """Send ``lovia`` logs to ``stream`` (stderr by default); safe to call repeatedly."""
    logger = logging.getLogger("lovia")
    for handler in list(logger.handlers):
        if getattr(handler, "_lovia_managed", False):
            logger.removeHandler(handler)
    target = stream or sys.stderr
    handler = logging.StreamHandler(target)
    use_color = supports_color(target) if color is None else color
    formatter = ColorFormatter if use_color else logging.Formatter
    handler.setFormatter(formatter(format, datefmt=datefmt))
    handler._lovia_managed = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = propagate
    return logger


__all__ = ["ColorFormatter", "enable_logging", "supports_color"]
