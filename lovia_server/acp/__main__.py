"""``lovia acp`` / ``python -m lovia_server.acp``: lovia as an Agent Client Protocol agent on stdio.

The ACP client (Zed, a JetBrains IDE, Neovim's CodeCompanion...) starts this process and speaks
newline-delimited JSON-RPC on its stdin and stdout. Logs go to stderr (or ``--log-file``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path

ACP_EPILOG = """\
environment (a flag wins over its variable):
  LOVIA_MODEL                          the default model (--model)
  LOVIA_MODELS                         the models the picker offers (--models)
  LOVIA_SETTINGS                       the settings file (--settings)
  LOVIA_STATE_DIR                      the state directory (--state-dir)
  LOVIA_LOG_LEVEL                      the log level (--log-level; default WARNING)
  OPENAI_API_KEY, ANTHROPIC_API_KEY    the provider's key (or credentials.json in the state)
  OPENAI_BASE_URL, ANTHROPIC_BASE_URL  another endpoint (a local or compatible server)
  LOVIA_PROVIDER_TIMEOUT               seconds without data before a model call is retried
                                       (default 300)
  LOVIA_EDITOR_FILE_TIMEOUT            seconds a file read or write waits for the client
                                       (default 30)

docs: docs/acp.md
"""


def _parse(argv: list[str] | None, prog: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="lovia as an Agent Client Protocol agent (stdio).",
        epilog=ACP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--state-dir",
        default=os.environ.get("LOVIA_STATE_DIR"),
        help="where sessions, checkpoints and event logs live (default: the state directory "
        "of the working directory, shared with the editor extension)",
    )
    parser.add_argument(
        "--settings",
        default=os.environ.get("LOVIA_SETTINGS"),
        help="a JSON file with the lovia settings (the keys of VS Code's lovia.* section: "
        "model, permissions, mcpServers, maxTurns, ...; plus models: [...] for the picker)",
    )
    parser.add_argument(
        "--untrusted",
        action="store_true",
        default=os.environ.get("LOVIA_UNTRUSTED", "") not in ("", "0"),
        help="treat the workspace as untrusted (also LOVIA_UNTRUSTED=1): its settings only add "
        "restrictions, and its hooks, agent file and MCP servers are not used",
    )
    parser.add_argument("--model", help="the default model, e.g. openai:gpt-4.1-mini")
    parser.add_argument(
        "--models",
        default=os.environ.get("LOVIA_MODELS", ""),
        help="comma-separated models the client's model picker offers",
    )
    from lovia_server.host.logging_setup import add_arguments

    add_arguments(parser)
    return parser.parse_args(argv)


def _options(args: argparse.Namespace) -> object:
    from lovia_server.acp.agent import HostOptions
    from lovia_server.host.sandbox_setup import choose_sandbox, sandbox_problems
    from lovia_server.protocol.settings import (
        default_state_dir,
        parse_settings,
        restrict_untrusted,
    )

    raw: dict[str, object] = {}
    if args.settings:
        try:
            loaded = json.loads(Path(args.settings).expanduser().read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SystemExit(f"error: cannot read --settings {args.settings}: {exc}") from None
        if not isinstance(loaded, dict):
            raise SystemExit(f"error: --settings {args.settings} must hold a JSON object")
        raw = loaded.get("lovia", loaded) if isinstance(loaded.get("lovia"), dict) else loaded
    if args.model:
        raw = {**raw, "model": args.model}
    settings, problems = parse_settings(raw)
    if args.untrusted:
        settings = restrict_untrusted(settings)
    problems += sandbox_problems(settings.sandbox)
    for problem in problems:
        logging.getLogger("lovia_server.acp").warning("settings: %s", problem)
    unconfined = choose_sandbox(settings.sandbox)
    if unconfined.kind is None and settings.sandbox.enabled == "auto" and unconfined.reason:
        logging.getLogger("lovia_server.acp").warning("%s", unconfined.reason)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    listed = raw.get("models")
    if isinstance(listed, list):
        models += [str(m) for m in listed if isinstance(m, str) and m.strip()]
    state_dir = (
        Path(args.state_dir).expanduser() if args.state_dir else default_state_dir(Path.cwd())
    )
    return HostOptions(
        state_dir=state_dir, settings=settings, models=models, trusted=not args.untrusted
    )


def sub_main(argv: list[str] | None = None, *, prog: str = "lovia acp") -> int:
    args = _parse(argv, prog)
    if args.version:
        from lovia_server.version import server_version

        print(f"lovia acp {server_version()}")
        return 0
    from lovia_server.host.logging_setup import setup_logging

    setup_logging(args.log_level, args.log_file)
    options = _options(args)
    from lovia_server.acp.agent import HostOptions, LoviaAcpAgent
    from lovia_server.acp.connection import MAX_FRAME_BYTES, serve
    from lovia_server.transport.frame_writer import FrameWriter
    from lovia_server.transport.stdio import serve_stdio

    assert isinstance(options, HostOptions)

    async def serve_agent(reader: asyncio.StreamReader, writer: FrameWriter) -> None:
        await serve(LoviaAcpAgent(options), reader, writer.write)

    serve_stdio(serve_agent, limit=MAX_FRAME_BYTES)
    return 0


def main() -> None:
    raise SystemExit(sub_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
