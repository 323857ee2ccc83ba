"""``lovia-server`` / ``python -m lovia_server`` / ``lovia serve``: run the language server.

stdio by default (the editor spawns it); ``--tcp HOST:PORT`` for debugging.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

SERVER_EPILOG = """\
The editor starts it and sends the settings (the lovia.* section) over LSP: see docs/server.md.

environment:
  LOVIA_MODEL                          the model when the settings name none
  OPENAI_API_KEY, ANTHROPIC_API_KEY    the provider's key
  OPENAI_BASE_URL, ANTHROPIC_BASE_URL  another endpoint (a local or compatible server)
  LOVIA_PROVIDER_TIMEOUT               seconds without data before a model call is retried
                                       (default 300)
  LOVIA_LOG_LEVEL                      the log level (--log-level; default WARNING)
  XDG_STATE_HOME                       where the state directory goes (default ~/.local/state)
  LOVIA_EDITOR_FILE_TIMEOUT            seconds an edit waits for the editor (default 30)
  LOVIA_WRITE_QUEUE_MB                 events held for a slow client, in MB (default 16)
  LOVIA_HEAP_TRIM=0                    no trimming of the C heap after runs (to measure)
  LOVIA_SANDBOX_BWRAP                  another bubblewrap program
"""


def _parse(argv: list[str] | None, prog: str) -> Any:
    """The options; without any (how editors start it) argparse is not even imported."""
    if argv is not None and not argv:
        return types.SimpleNamespace(
            tcp=None,
            log_file=None,
            log_level=os.environ.get("LOVIA_LOG_LEVEL", "WARNING"),
            version=False,
            probe=False,
        )
    import argparse

    parser = argparse.ArgumentParser(
        prog=prog,
        description="The lovia language server.",
        epilog=SERVER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    from lovia_server.host.logging_setup import add_arguments

    add_arguments(parser)
    parser.add_argument(
        "--probe",
        action="store_true",
        help="print {version, protocolVersion, python} as JSON and exit (editors use it to "
        "check an interpreter before starting the server)",
    )
    return parser.parse_args(argv)


def _serve_stdio() -> None:
    from lovia_server.lsp.language_server import LINE_LIMIT, create_server
    from lovia_server.transport.stdio import serve_stdio

    server = create_server()
    try:
        serve_stdio(server.serve_stream, limit=LINE_LIMIT)
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]


def sub_main(argv: list[str] | None = None, *, prog: str = "lovia-server") -> int:
    args = _parse(argv, prog)
    if args.probe:
        import json
        import platform

        from lovia_server.protocol import PROTOCOL_VERSION
        from lovia_server.version import server_version

        probe = {
            "version": server_version(),
            "protocolVersion": PROTOCOL_VERSION,
            "python": platform.python_version(),
        }
        print(json.dumps(probe))
        return 0
    if args.version:
        from lovia_server.version import server_version

        print(f"lovia-server {server_version()}")
        return 0
    from lovia_server.host.logging_setup import setup_logging

    # pygls logs every message body at INFO; keep it quiet unless debugging.
    setup_logging(args.log_level, args.log_file, quiet=("pygls",))
    if args.tcp:
        from lovia_server.lsp.language_server import create_server

        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit():
            print(f"error: --tcp expects HOST:PORT, got {args.tcp!r}", file=sys.stderr)
            return 2
        server = create_server()
        server.start_tcp(host, int(port))
        return 0
    _serve_stdio()
    return 0


def main() -> None:
    raise SystemExit(sub_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
