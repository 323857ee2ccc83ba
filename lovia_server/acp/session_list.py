"""``session/list``: the stored sessions, newest first, a page at a time, optionally only those
of one folder. The cursor is the offset into the store's list where the next page starts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from acp import schema as a

from lovia_server.acp.request_errors import invalid_params
from lovia_server.acp.session_params import folder
from lovia_server.host.store import ServerStore

LIST_PAGE = 50


async def list_page(
    store: ServerStore, cwd: str | None, cursor: str | None
) -> a.ListSessionsResponse:
    try:
        offset = int(cursor) if cursor else 0
    except ValueError:
        raise invalid_params("cursor is not one this agent returned", "cursor") from None
    want = str(folder(cwd, "cwd")) if cwd else None
    sessions: list[a.SessionInfo] = []
    while len(sessions) <= LIST_PAGE:
        rows = await store.list_sessions(limit=LIST_PAGE, offset=offset, query=None)
        if not rows:
            break
        for row in rows:
            offset += 1
            if want is not None and row.get("cwd") != want:
                continue
            sessions.append(
                a.SessionInfo(
                    session_id=row["id"],
                    cwd=row.get("cwd") or "",
                    title=row.get("title"),
                    updated_at=iso(row["updated_at"] * 1000),
                )
            )
            if len(sessions) == LIST_PAGE:
                return a.ListSessionsResponse(sessions=sessions, next_cursor=str(offset))
    return a.ListSessionsResponse(sessions=sessions)


def iso(ms: Any) -> str | None:
    """Milliseconds since the epoch as ACP's ISO 8601 time (UTC, ``Z``)."""
    if not isinstance(ms, int | float):
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


__all__ = ["LIST_PAGE", "iso", "list_page"]
