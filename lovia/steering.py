"""Mid-run steering: messages pushed while a run works, delivered at the next turn start."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from lovia.parts import ContentPart

InjectedContent: TypeAlias = str | list[ContentPart]


@dataclass
class Mailbox:
    """FIFO of user messages; the loop drains it at every turn start.

    An empty mailbox is falsy, so callers test ``is not None`` rather than truthiness.
    """

    _items: dict[int, InjectedContent] = field(default_factory=dict, init=False, repr=False)
    _next: int = field(default=1, init=False, repr=False)

    def push(self, content: InjectedContent) -> int:
        token = self._next
        self._next += 1
        self._items[token] = content
        return token

    def remove(self, token: int) -> bool:
        return self._items.pop(token, None) is not None

    def drain(self) -> list[InjectedContent]:
        return [content for _token, content in self.take()]

    def take(self) -> list[tuple[int, InjectedContent]]:
        """Drain, keeping each message's token: the run loop reports the token with the
        delivery (``UserMessageInjected.token``), so whoever pushed a message knows when that
        one arrived (two messages may say the same thing)."""
        items = list(self._items.items())
        self._items.clear()
        return items

    def pending(self) -> list[tuple[int, InjectedContent]]:
        """Queued ``(token, content)`` pairs, oldest first, without draining."""
        return list(self._items.items())

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)


__all__ = ["InjectedContent", "Mailbox"]
