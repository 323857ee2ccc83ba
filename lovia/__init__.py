"""lovia: an async, provider-neutral agent framework.

Every public name below is exported lazily (PEP 562, see ``lovia._lazy``): ``import lovia``
loads only this table, and ``from lovia import Agent`` imports what ``Agent`` needs and
nothing else. Compaction, plugins, stores, built-in tools and provider SDKs load when a
program first uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia._lazy import lazy_exports
from lovia._version import __version__ as __version__

if TYPE_CHECKING:
    from lovia import events
    from lovia.agent import Agent
    from lovia.checkpointer import Checkpointer, CheckpointOptions, RunHead, RunSnapshot
    from lovia.context import (
        Compaction,
        ContextPolicy,
        FileResultStore,
        InMemoryResultStore,
        ResultStore,
    )
    from lovia.exceptions import (
        BudgetExceeded,
        ContextOverflowError,
        GuardrailTripped,
        InvalidToolArguments,
        LoviaError,
        MaxTurnsExceeded,
        MCPError,
        OutputValidationError,
        ProviderError,
        RunCancelled,
        ToolError,
        UserError,
    )
    from lovia.handoff import Handoff
    from lovia.hooks import AgentHooks
    from lovia.log_config import enable_logging
    from lovia.messages import Message, Usage, assistant, system, user
    from lovia.parts import FilePart, ImagePart, TextPart
    from lovia.plugins import (
        Memory,
        OpenAIEmbedder,
        Plugin,
        PluginInstance,
        SkillNotFoundError,
        Skills,
        SkillsError,
        Subagents,
        Todo,
    )
    from lovia.providers import ModelSettings, Provider, model_from_env
    from lovia.providers.anthropic import AnthropicProvider
    from lovia.providers.openai import OpenAIChatProvider
    from lovia.reliability import CancelToken, RetryPolicy, RunBudget
    from lovia.run_context import RunContext
    from lovia.runner import Runner
    from lovia.runtime.result import RunHandle, RunResult
    from lovia.session import Segment, Session
    from lovia.steering import Mailbox
    from lovia.stores import (
        InMemoryCheckpointer,
        InMemorySession,
        SQLiteCheckpointer,
        SQLiteSession,
    )
    from lovia.tools import Tool, tool
    from lovia.transcript import TranscriptEntry

_LAZY: dict[str, str] = {
    "Agent": "lovia.agent",
    "CheckpointOptions": "lovia.checkpointer",
    "Checkpointer": "lovia.checkpointer",
    "RunHead": "lovia.checkpointer",
    "RunSnapshot": "lovia.checkpointer",
    "Compaction": "lovia.context",
    "ContextPolicy": "lovia.context",
    "FileResultStore": "lovia.context",
    "InMemoryResultStore": "lovia.context",
    "ResultStore": "lovia.context",
    "events": "lovia.events",
    "BudgetExceeded": "lovia.exceptions",
    "ContextOverflowError": "lovia.exceptions",
    "GuardrailTripped": "lovia.exceptions",
    "InvalidToolArguments": "lovia.exceptions",
    "LoviaError": "lovia.exceptions",
    "MCPError": "lovia.exceptions",
    "MaxTurnsExceeded": "lovia.exceptions",
    "OutputValidationError": "lovia.exceptions",
    "ProviderError": "lovia.exceptions",
    "RunCancelled": "lovia.exceptions",
    "ToolError": "lovia.exceptions",
    "UserError": "lovia.exceptions",
    "Handoff": "lovia.handoff",
    "AgentHooks": "lovia.hooks",
    "enable_logging": "lovia.log_config",
    "Message": "lovia.messages",
    "Usage": "lovia.messages",
    "assistant": "lovia.messages",
    "system": "lovia.messages",
    "user": "lovia.messages",
    "FilePart": "lovia.parts",
    "ImagePart": "lovia.parts",
    "TextPart": "lovia.parts",
    "Memory": "lovia.plugins",
    "OpenAIEmbedder": "lovia.plugins",
    "Plugin": "lovia.plugins",
    "PluginInstance": "lovia.plugins",
    "SkillNotFoundError": "lovia.plugins",
    "Skills": "lovia.plugins",
    "SkillsError": "lovia.plugins",
    "Subagents": "lovia.plugins",
    "Todo": "lovia.plugins",
    "ModelSettings": "lovia.providers",
    "Provider": "lovia.providers",
    "model_from_env": "lovia.providers",
    "AnthropicProvider": "lovia.providers.anthropic",
    "OpenAIChatProvider": "lovia.providers.openai",
    "CancelToken": "lovia.reliability",
    "RetryPolicy": "lovia.reliability",
    "RunBudget": "lovia.reliability",
    "RunContext": "lovia.run_context",
    "Runner": "lovia.runner",
    "RunHandle": "lovia.runtime.result",
    "RunResult": "lovia.runtime.result",
    "Segment": "lovia.session",
    "Session": "lovia.session",
    "Mailbox": "lovia.steering",
    "InMemoryCheckpointer": "lovia.stores",
    "InMemorySession": "lovia.stores",
    "SQLiteCheckpointer": "lovia.stores",
    "SQLiteSession": "lovia.stores",
    "Tool": "lovia.tools",
    "tool": "lovia.tools",
    "TranscriptEntry": "lovia.transcript",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "Agent",
    "AgentHooks",
    "AnthropicProvider",
    "BudgetExceeded",
    "CancelToken",
    "CheckpointOptions",
    "Checkpointer",
    "Compaction",
    "ContextOverflowError",
    "ContextPolicy",
    "FilePart",
    "FileResultStore",
    "GuardrailTripped",
    "Handoff",
    "ImagePart",
    "InMemoryCheckpointer",
    "InMemoryResultStore",
    "InMemorySession",
    "InvalidToolArguments",
    "LoviaError",
    "MCPError",
    "Mailbox",
    "MaxTurnsExceeded",
    "Memory",
    "Message",
    "ModelSettings",
    "OpenAIChatProvider",
    "OpenAIEmbedder",
    "OutputValidationError",
    "Plugin",
    "PluginInstance",
    "Provider",
    "ProviderError",
    "ResultStore",
    "RetryPolicy",
    "RunBudget",
    "RunCancelled",
    "RunContext",
    "RunHandle",
    "RunHead",
    "RunResult",
    "RunSnapshot",
    "Runner",
    "SQLiteCheckpointer",
    "SQLiteSession",
    "Segment",
    "Session",
    "SkillNotFoundError",
    "Skills",
    "SkillsError",
    "Subagents",
    "TextPart",
    "Todo",
    "Tool",
    "ToolError",
    "TranscriptEntry",
    "Usage",
    "UserError",
    "assistant",
    "enable_logging",
    "events",
    "model_from_env",
    "system",
    "tool",
    "user",
]
