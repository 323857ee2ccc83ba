"""The command line of ``lovia chat``: its flags, and the defaults and environment its
``--help`` names (the same ones docs/server.md gives)."""

from __future__ import annotations

import argparse

CHAT_EPILOG = """\
defaults:
  workspace    the current directory (--demo without --workspace: a temporary folder)
  state        $XDG_STATE_HOME/lovia/workspaces/<folder>-<hash> (~/.local/state/... when
               XDG_STATE_HOME is unset), shared with the editor extension
  log          chat-server.log in the state directory (--verbose: this terminal)

environment:
  LOVIA_MODEL                          the model when --model is not given
  OPENAI_API_KEY, ANTHROPIC_API_KEY    the provider's key
  OPENAI_BASE_URL, ANTHROPIC_BASE_URL  another endpoint (a local or compatible server)
  LOVIA_PROVIDER_TIMEOUT               seconds without data before a model call is retried
                                       (default 300)
  LOVIA_HTTP_CA_BUNDLE, LOVIA_HTTP_INSECURE=1   TLS: a CA bundle, or no verification
  XDG_STATE_HOME                       where the state directory goes
  NO_COLOR                             plain text, no colours

in the chat: /help lists the commands; Ctrl-C stops the run, again quits.
docs: docs/server.md (lovia chat), docs/providers.md (models and keys)
"""


def parse_chat_args(argv: list[str] | None, prog: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Chat with a lovia agent.",
        epilog=CHAT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", nargs="*", help="run this prompt once instead of chatting")
    parser.add_argument("--workspace", "--cwd", dest="workspace", help="workspace folder")
    parser.add_argument("--demo", action="store_true", help="use the offline demo model")
    parser.add_argument("--model", help="model string, e.g. openai:gpt-4.1-mini")
    parser.add_argument("--agent", help="agent file 'path.py:name' in the workspace")
    parser.add_argument("--resume", nargs="?", const="", metavar="RUN_ID", help="resume a run")
    parser.add_argument(
        "--yes",
        action="store_true",
        help="approve every request, except changes to editor or agent configuration",
    )
    parser.add_argument(
        "--untrusted",
        action="store_true",
        help="treat the folder as untrusted: read-only, and none of its hooks, agent file or "
        "MCP servers",
    )
    parser.add_argument("--state-dir", help="where the server keeps state.db")
    parser.add_argument(
        "--log-file", help="where the server writes its log (default: chat-server.log in the state)"
    )
    parser.add_argument(
        "--verbose", action="store_true", help="show the server's log (INFO) in this terminal"
    )
    return parser.parse_args(argv)


__all__ = ["CHAT_EPILOG", "parse_chat_args"]
