"""Approval futures for tool calls that need a human (or handler) decision.

A decision may carry an ``answer``: whatever object the decider wants the approved call to see
(a host's reviewed edits, say). The loop hands it to the call as :data:`current_approval`, so
it travels with the decision instead of through a side table.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from dataclasses import dataclass, field


@dataclass
class ApprovalChannel:
    """Pending decisions keyed by ``(scope, call_id)``; the loop uses ``scope=None``."""

    _pending: dict[tuple[Hashable, str], asyncio.Future[bool]] = field(default_factory=dict)
    _messages: dict[tuple[Hashable, str], str] = field(default_factory=dict, repr=False)
    _answers: dict[tuple[Hashable, str], object] = field(default_factory=dict, repr=False)

    def register(self, call_id: str, *, scope: Hashable = None) -> asyncio.Future[bool]:
        key = (scope, call_id)
        fut = self._pending.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._pending[key] = fut
        return fut

    def resolve(
        self, call_id: str, decision: bool, *, scope: Hashable = None, answer: object = None
    ) -> bool:
        """Settle a pending call; ``answer`` (optional) goes with the decision to the call."""
        key = (scope, call_id)
        fut = self._pending.get(key)
        if fut is None or fut.done():
            return False
        if answer is not None:
            self._answers[key] = answer
        fut.set_result(bool(decision))
        return True

    def approve(self, call_id: str, *, scope: Hashable = None, answer: object = None) -> None:
        self.resolve(call_id, True, scope=scope, answer=answer)

    def reject(
        self,
        call_id: str,
        *,
        scope: Hashable = None,
        message: str | None = None,
        answer: object = None,
    ) -> None:
        """Deny a call; ``message`` (optional) is passed on to the model with the rejection."""
        if self.resolve(call_id, False, scope=scope, answer=answer) and message:
            self._messages[(scope, call_id)] = message

    def answer(self, call_id: str, *, scope: Hashable = None) -> object:
        """The ``answer`` the call was decided with (``None`` when it was given none)."""
        return self._answers.get((scope, call_id))

    def rejection_message(self, call_id: str, *, scope: Hashable = None) -> str | None:
        return self._messages.get((scope, call_id))

    def is_pending(self, call_id: str, *, scope: Hashable = None) -> bool:
        fut = self._pending.get((scope, call_id))
        return fut is not None and not fut.done()

    def release(self, *, scope: Hashable = None, decision: bool = False) -> None:
        for (s, _), fut in list(self._pending.items()):
            if s == scope and not fut.done():
                fut.set_result(decision)

    def discard(self, call_id: str, *, scope: Hashable = None) -> None:
        self._pending.pop((scope, call_id), None)
        self._messages.pop((scope, call_id), None)
        self._answers.pop((scope, call_id), None)


__all__ = ["ApprovalChannel"]
