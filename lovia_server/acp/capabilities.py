"""What this agent tells an ACP client in ``initialize``: the protocol version, what it can do
(load, list, resume, close and delete sessions; images and embedded context in prompts; HTTP
MCP servers) and how it authenticates."""

from __future__ import annotations

from acp import schema as a

import lovia
from lovia_server.acp.credentials import AUTH_METHOD

PROTOCOL_VERSION = 1


def initialize_response() -> a.InitializeResponse:
    return a.InitializeResponse(
        protocol_version=PROTOCOL_VERSION,
        agent_capabilities=a.AgentCapabilities(
            load_session=True,
            prompt_capabilities=a.PromptCapabilities(
                image=True, audio=False, embedded_context=True
            ),
            mcp_capabilities=a.McpCapabilities(http=True, sse=False),
            session_capabilities=a.SessionCapabilities(
                list=a.SessionListCapabilities(),
                delete=a.SessionDeleteCapabilities(),
                resume=a.SessionResumeCapabilities(),
                close=a.SessionCloseCapabilities(),
            ),
        ),
        auth_methods=[
            a.AuthMethodAgent(
                id=AUTH_METHOD,
                name="API key",
                description="lovia uses OPENAI_API_KEY / ANTHROPIC_API_KEY from its "
                "environment or from credentials.json in its state directory.",
            )
        ],
        agent_info=a.Implementation(name="lovia", title="lovia", version=lovia.__version__),
    )


__all__ = ["PROTOCOL_VERSION", "initialize_response"]
