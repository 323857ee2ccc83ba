"""Time: the ``now`` and ``sleep`` tools and the ``current_date`` instruction fragment."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

import lovia.tools.time as time_mod
from lovia import Agent
from lovia.exceptions import InvalidToolArguments, ToolError, UserError
from lovia.run_context import RunContext
from lovia.tools import current_date, now, sleep


async def test_now_without_tz_is_local_with_offset(ctx: RunContext[Any]) -> None:
    before = datetime.now().astimezone()
    out = await now.invoke({}, ctx)
    parsed = datetime.fromisoformat(out)
    assert parsed.utcoffset() == before.utcoffset()
    assert abs(parsed - before) < timedelta(seconds=5)
    assert "." in out  # microseconds are kept
    assert await now.invoke({"tz": None}, ctx)


async def test_now_in_a_zone(ctx: RunContext[Any]) -> None:
    utc = await now.invoke({"tz": "UTC"}, ctx)
    assert utc.endswith("+00:00")
    assert abs(datetime.fromisoformat(utc) - datetime.now(UTC)) < timedelta(seconds=5)
    tokyo = datetime.fromisoformat(await now.invoke({"tz": "Asia/Tokyo"}, ctx))
    assert tokyo.utcoffset() == timedelta(hours=9)


@pytest.mark.parametrize("tz", ["Mars/Olympus", "../../etc/passwd", "Not A Zone"])
async def test_now_unknown_zone(tz: str, ctx: RunContext[Any]) -> None:
    with pytest.raises(ToolError) as info:
        await now.invoke({"tz": tz}, ctx)
    assert info.value.message == f"Unknown timezone {tz!r}."
    assert "IANA" in (info.value.hint or "") and "tzdata" in (info.value.hint or "")


async def test_now_rejects_bad_arguments(ctx: RunContext[Any]) -> None:
    with pytest.raises(InvalidToolArguments):
        await now.invoke({"tz": 5}, ctx)
    with pytest.raises(InvalidToolArguments):
        await now.invoke({"zone": "UTC"}, ctx)


def test_now_schema() -> None:
    assert now.name == "now"
    tz = now.parameters["properties"]["tz"]
    assert tz["type"] == ["string", "null"] and tz["default"] is None
    assert now.parameters["required"] == []


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    calls: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float) -> None:
        calls.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(time_mod.asyncio, "sleep", fake_sleep)
    return calls


@pytest.mark.parametrize(
    ("seconds", "expected", "waited"),
    [
        (-5, "slept 0.0s", 0.0),
        (0, "slept 0.0s", 0.0),
        (1, "slept 1.0s", 1.0),
        (2.5, "slept 2.5s", 2.5),
        (60, "slept 60.0s", 60.0),
        (3600, "slept 60.0s", 60.0),
        (float("inf"), "slept 60.0s", 60.0),
        (float("nan"), "slept 0.0s", 0.0),
    ],
)
async def test_sleep_clamps(
    seconds: float, expected: str, waited: float, slept: list[float], ctx: RunContext[Any]
) -> None:
    assert await sleep.invoke({"seconds": seconds}, ctx) == expected
    assert slept == [waited]


async def test_sleep_really_waits(ctx: RunContext[Any]) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await sleep.invoke({"seconds": 0.05}, ctx) == "slept 0.05s"
    assert loop.time() - start >= 0.04


@pytest.mark.parametrize("args", [{}, {"seconds": "5"}, {"seconds": True}, {"seconds": 1, "x": 2}])
async def test_sleep_rejects_bad_arguments(args: dict[str, Any], ctx: RunContext[Any]) -> None:
    with pytest.raises(InvalidToolArguments, match="seconds"):
        await sleep.invoke(args, ctx)


def test_sleep_schema() -> None:
    assert sleep.name == "sleep"
    assert sleep.parameters["required"] == ["seconds"]
    assert sleep.parameters["properties"]["seconds"]["type"] == "number"


def test_current_date_fragment(ctx: RunContext[Any]) -> None:
    fragment = current_date()
    out = fragment(ctx)
    match = re.fullmatch(r"Today's date is (\d{4}-\d{2}-\d{2}) \((\w+)\)\.", out)
    assert match
    day = date.fromisoformat(match.group(1))
    assert abs((day - date.today()).days) <= 1
    names = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    assert match.group(2) == names[day.weekday()]
    utc = current_date("UTC")(ctx)
    assert utc.startswith(f"Today's date is {datetime.now(UTC).date().isoformat()}")


def test_current_date_rejects_unknown_zones_at_construction() -> None:
    with pytest.raises(UserError, match=r"^Unknown timezone 'Nowhere/City'\."):
        current_date("Nowhere/City")


async def test_current_date_is_evaluated_on_every_render(
    monkeypatch: pytest.MonkeyPatch, ctx: RunContext[Any]
) -> None:
    days = iter(
        [
            datetime(2024, 2, 29, 12, tzinfo=UTC),
            datetime(2024, 3, 1, 0, 5, tzinfo=UTC),
        ]
    )
    monkeypatch.setattr(time_mod, "_now", lambda tz: next(days))
    agent = Agent(name="a", instructions="Be brief.").with_instructions(current_date())
    first = await agent.render_system_prompt(ctx)
    second = await agent.render_system_prompt(ctx)
    assert first == "Be brief.\n\nToday's date is 2024-02-29 (Thursday)."
    assert second == "Be brief.\n\nToday's date is 2024-03-01 (Friday)."
