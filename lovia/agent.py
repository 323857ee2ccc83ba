"""``Agent``: the declarative description of who runs, with which model, tools and plugins."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar

from lovia._runner_seam import runner
from lovia.context.policy import ContextPolicy
from lovia.exceptions import UserError
from lovia.guardrails import GuardrailFn
from lovia.hooks import AgentHooks
from lovia.messages import ToolCall
from lovia.output import OutputRepairStrategy
from lovia.providers.base import ModelSettings, Provider
from lovia.reliability import RetryPolicy
from lovia.run_context import RunContext
from lovia.tools.base import Tool, ToolResultRenderer

if TYPE_CHECKING:
    from lovia.handoff import Handoff
    from lovia.plugins.base import Plugin
    from lovia.runtime.result import RunHandle, RunResult

TContext = TypeVar("TContext")

InstructionsFn: TypeAlias = Callable[[RunContext[Any]], str | Awaitable[str]]
ApprovalDecision: TypeAlias = bool | Literal["allow", "deny", "ask"]
ApprovalHandler: TypeAlias = Callable[
    [ToolCall, RunContext[Any]], ApprovalDecision | Awaitable[ApprovalDecision]
]


def _default_context_policy() -> ContextPolicy:
    from lovia.context import default_policy

    return default_policy()


@dataclass
class Agent(Generic[TContext]):
    name: str
    instructions: str | InstructionsFn = ""
    model: str | Provider | None = None
    tools: list[Tool] = field(default_factory=list)
    output_type: Any = str
    output_repair: bool | OutputRepairStrategy = True
    handoffs: list[Agent[Any] | Handoff] = field(default_factory=list)
    settings: ModelSettings = field(default_factory=ModelSettings)
    retry: RetryPolicy | None = field(default_factory=RetryPolicy)
    context_policy: ContextPolicy = field(default_factory=_default_context_policy)
    workspace: Any = None
    plugins: list[Plugin] = field(default_factory=list)
    hooks: AgentHooks | None = None
    approval_handler: ApprovalHandler | None = None
    input_guardrails: list[GuardrailFn] = field(default_factory=list)
    output_guardrails: list[GuardrailFn] = field(default_factory=list)
    default_tool_retries: int = 0
    default_tool_timeout: float | None = None
    max_tool_output_chars: int | None = 200_000
    tool_result_renderer: ToolResultRenderer | None = None
    _fragments: tuple[InstructionsFn, ...] = field(default=(), repr=False, compare=False)

    def resolve_provider(self) -> Provider:
        model: Any = self.model
        if model is None:
            raise UserError(
                f"Agent '{self.name}' has no model configured",
                hint="Pass Agent(model='openai:gpt-4.1-mini') (or another 'vendor:model' string, "
                "or a Provider instance), or set LOVIA_MODEL and use lovia.model_from_env().",
            )
        if isinstance(model, (list, tuple)):
            raise UserError(
                f"Agent '{self.name}': model no longer accepts a list",
                hint="Pass a single model string or Provider; use RetryPolicy for resilience.",
            )
        if isinstance(model, str):
            from lovia.providers import provider_from_string

            return provider_from_string(model)
        provider: Provider = model
        return provider

    def instruction(self, fn: InstructionsFn) -> InstructionsFn:
        """Register a dynamic instruction fragment, rendered after the base instructions."""
        self._fragments = (*self._fragments, fn)
        return fn

    def with_instructions(self, fn: InstructionsFn) -> Agent[TContext]:
        return dataclasses.replace(self, _fragments=(*self._fragments, fn))

    async def render_system_prompt(self, ctx: RunContext[Any], *, extra: str | None = None) -> str:
        parts: list[str] = []
        for piece in (self.instructions, *self._fragments, extra):
            if piece is None:
                continue
            value: Any = piece(ctx) if callable(piece) else piece
            if inspect.isawaitable(value):
                value = await value
            text = str(value) if value is not None else ""
            if text:
                parts.append(text)
        return "\n\n".join(parts)

    def clone(self, **overrides: Any) -> Agent[TContext]:
        return dataclasses.replace(self, **overrides)

    def as_tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        max_turns: int = 50,
        budget: Any = None,
        retry: RetryPolicy | None = None,
        context_policy: ContextPolicy | None = None,
    ) -> Tool:
        from lovia.handoff import agent_as_tool

        return agent_as_tool(
            self,
            name=name,
            description=description,
            max_turns=max_turns,
            budget=budget,
            retry=retry,
            context_policy=context_policy,
        )

    async def run(self, input: Any, **kw: Any) -> RunResult:
        return await runner().run(self, input, **kw)

    def run_sync(self, input: Any, **kw: Any) -> RunResult:
        return runner().run_sync(self, input, **kw)

    def stream(self, input: Any, **kw: Any) -> RunHandle:
        return runner().stream(self, input, **kw)


__all__ = ["Agent", "ApprovalDecision", "ApprovalHandler", "InstructionsFn"]
