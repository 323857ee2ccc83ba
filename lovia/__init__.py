"""lovia: an async, provider-neutral agent framework."""

from __future__ import annotations

from lovia import events
from lovia._version import __version__ as __version__
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

_LAZY = {
    "OpenAIChatProvider": "lovia.providers.openai",
    "AnthropicProvider": "lovia.providers.anthropic",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lovia' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


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
