"""Where a subagent works: the seam that lets ``Subagents`` run a child in a place of its own.

Two children editing one working copy race. Core cannot make a git worktree (that belongs to
``lovia.workspace``, or to a host that also lists and lands them), so ``Subagents`` takes a
:class:`ChildIsolation` and asks it only two things: set this child up somewhere of its own
(:meth:`ChildIsolation.isolate`), and, once the child is done, say what it changed there
(:attr:`IsolatedChild.finish`, whose text ends the child's report).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lovia.agent import Agent
    from lovia.plugins.subagents import ChildSpec


@dataclass(frozen=True)
class IsolatedChild:
    """One child set up in a place of its own."""

    agent: Agent[Any]
    """The child agent, working there (its workspace rooted in the place)."""
    root: str
    """The folder the child works in; a ``run_child`` host attaches its workspace here."""
    finish: Callable[[], Awaitable[str]]
    """Called once when the child has ended (also when it failed or was cancelled): keeps or
    clears the place and returns the summary of its changes for the report."""
    key: str | None = None
    """The provider's own id for the place (the lovia server: the child's run id)."""


class ChildIsolation(Protocol):
    """Sets children up in places of their own; ``kind`` is what the model asks for."""

    @property
    def kind(self) -> str: ...

    async def isolate(self, spec: ChildSpec) -> IsolatedChild: ...


__all__ = ["ChildIsolation", "IsolatedChild"]
