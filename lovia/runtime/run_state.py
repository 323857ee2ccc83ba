"""Per-run mutable state (owned by ``RunLoop``) and per-agent derived bundles."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lovia.events import CompactionNotice
from lovia.guardrails import GuardrailFn
from lovia.hooks import AgentHooks
from lovia.messages import AssistantTurn
from lovia.output import StructuredOutput
from lovia.plugins.base import ViewInjector
from lovia.providers.base import Provider
from lovia.run_context import RunContext
from lovia.run_interceptor import RunInterceptor
from lovia.tools.base import Tool
from lovia.transcript import TranscriptEntry

if TYPE_CHECKING:
    from lovia.agent import Agent
    from lovia.handoff import _HandoffSignal


@dataclass
class PluginActivation:
    tools: list[Tool] = field(default_factory=list)
    view_injectors: list[ViewInjector] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    hooks: list[AgentHooks] = field(default_factory=list)
    input_guardrails: list[GuardrailFn] = field(default_factory=list)
    output_guardrails: list[GuardrailFn] = field(default_factory=list)
    interceptors: list[RunInterceptor] = field(default_factory=list)


@dataclass
class ActiveAgent:
    """Everything derived from one agent for one run: built once, reused on handoff back."""

    agent: Agent[Any]
    provider: Provider
    structured_output: StructuredOutput | None
    tools_by_name: dict[str, Tool]
    workspace: Any = None
    plugins: PluginActivation = field(default_factory=PluginActivation)
    view_injectors: list[ViewInjector] = field(default_factory=list)
    tool_schemas: list[dict[str, Any]] | None = None
    hook_list: list[AgentHooks] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.tool_schemas is None:
            self.tool_schemas = [t.openai_schema() for t in self.tools_by_name.values()] or None
        hooks = [self.agent.hooks] if self.agent.hooks else []
        self.hook_list = hooks + [h for h in self.plugins.hooks if h]


@dataclass
class ModelTurnResult:
    assistant: AssistantTurn | None = None
    turn_entries: list[TranscriptEntry] = field(default_factory=list)


@dataclass
class RunState:
    run_ctx: RunContext[Any]
    active: ActiveAgent
    last_input_tokens: int | None = None
    context_state: dict[str, Any] = field(default_factory=dict)
    context_notice: CompactionNotice | None = None
    output_repair_attempts: int = 0
    turns: int = 0
    last_finish_reason: str | None = None
    extra_instructions: str | None = None
    pending_handoff: _HandoffSignal | None = None
    stop_continued: int = 0
    """How often an interceptor's ``before_stop`` has sent the model on in this run."""
    run_start: int = 0
    system_head_len: int = 0

    @property
    def agent(self) -> Agent[Any]:
        return self.active.agent

    @property
    def transcript(self) -> list[TranscriptEntry]:
        return self.run_ctx.entries

    @property
    def run_entries(self) -> list[TranscriptEntry]:
        return self.run_ctx.entries[self.run_start :]

    def activate(self, active: ActiveAgent) -> None:
        self.active = active
        self.run_ctx.agent = active.agent
        self.run_ctx.workspace = active.workspace


__all__ = ["ActiveAgent", "ModelTurnResult", "PluginActivation", "RunState"]
