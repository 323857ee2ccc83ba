"""Time: the ``now`` and ``sleep`` tools and the ``current_date`` instruction fragment."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lovia.exceptions import InvalidToolArguments, ToolError, UserError
from lovia.run_context import RunContext
from lovia.tools.base import Tool

MAX_SLEEP_SECONDS = 60.0
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_TZ_HINT = (
    "Use an IANA time zone name such as 'UTC', 'Europe/Paris' or 'America/New_York' "
    "(on Windows, install the 'tzdata' package)."
)


def _zone(name: str) -> tzinfo | None:
    """The zone called ``name``, or None if unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _now(tz: tzinfo | None) -> datetime:
    return datetime.now(tz) if tz is not None else datetime.now().astimezone()


# --------------------------------------------------------------------------- now


async def _invoke_now(args: dict[str, Any], ctx: RunContext[Any]) -> str:
    extra = set(args) - {"tz"}
    if extra:
        raise InvalidToolArguments(
            f"Invalid arguments for tool 'now': unexpected {', '.join(sorted(extra))}"
        )
    name = args.get("tz")
    if name is not None and not isinstance(name, str):
        raise InvalidToolArguments("Invalid arguments for tool 'now': tz: must be a string or null")
    if name is None or not name.strip():
        return _now(None).isoformat()
    zone = _zone(name.strip())
    if zone is None:
        raise ToolError(f"Unknown timezone {name!r}.", hint=_TZ_HINT)
    return _now(zone).isoformat()


now = Tool(
    name="now",
    description=(
        "The current date and time as ISO 8601 with the UTC offset. Without tz: the local "
        "time of the machine running the agent; with tz (an IANA name like 'Europe/Paris' "
        "or 'UTC'): the time there."
    ),
    parameters={
        "type": "object",
        "properties": {
            "tz": {
                "type": ["string", "null"],
                "default": None,
                "description": "IANA time zone name, e.g. 'UTC' or 'America/New_York'.",
            }
        },
        "required": [],
        "additionalProperties": False,
    },
    invoke=_invoke_now,
    kind="other",
    title=lambda args: f"Check the time in {args['tz']}" if args.get("tz") else "Check the time",
)


# --------------------------------------------------------------------------- sleep


async def _invoke_sleep(args: dict[str, Any], ctx: RunContext[Any]) -> str:
    extra = set(args) - {"seconds"}
    seconds = args.get("seconds")
    if (
        extra
        or "seconds" not in args
        or isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
    ):
        raise InvalidToolArguments(
            "Invalid arguments for tool 'sleep': seconds: a number is required"
            + (f"; unexpected {', '.join(sorted(extra))}" if extra else "")
        )
    value = float(seconds)
    if math.isnan(value):
        value = 0.0
    capped = min(MAX_SLEEP_SECONDS, max(0.0, value))
    await asyncio.sleep(capped)
    return f"slept {capped}s"


sleep = Tool(
    name="sleep",
    description=(
        f"Wait for the given number of seconds (at most {MAX_SLEEP_SECONDS:g}) before "
        "continuing, e.g. to let a background job or a rate limit make progress."
    ),
    parameters={
        "type": "object",
        "properties": {
            "seconds": {
                "type": "number",
                "description": f"Seconds to wait, 0 to {MAX_SLEEP_SECONDS:g}.",
            }
        },
        "required": ["seconds"],
        "additionalProperties": False,
    },
    invoke=_invoke_sleep,
    kind="other",
    title=lambda args: f"Wait {args.get('seconds', '')}s",
)


# --------------------------------------------------------------------------- current_date


def current_date(tz: str | None = None) -> Callable[[RunContext[Any]], str]:
    """An instruction fragment: ``"Today's date is YYYY-MM-DD (Weekday)."``.

    Evaluated on every render of the system prompt, in ``tz`` (an IANA name) or the local
    zone. Use ``Agent(instructions=current_date())`` or ``agent.instruction(current_date())``.
    """
    zone: tzinfo | None = None
    if tz is not None:
        zone = _zone(tz)
        if zone is None:
            raise UserError(f"Unknown timezone {tz!r}.", hint=_TZ_HINT)

    def fragment(ctx: RunContext[Any]) -> str:
        today = _now(zone).date()
        return f"Today's date is {today.isoformat()} ({_WEEKDAYS[today.weekday()]})."

    return fragment


__all__ = ["MAX_SLEEP_SECONDS", "current_date", "now", "sleep"]
