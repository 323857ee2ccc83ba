"""``lovia batch``: run a task file through the in-process executor or on a Ray cluster."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from lovia.exceptions import UserError
from lovia.executor.base import Executor
from lovia.executor.local import InProcessExecutor
from lovia.executor.rate_limit import RateLimit
from lovia.providers import check_model_spec
from lovia_server.batch.display import Progress
from lovia_server.batch.runner import FORWARDED_ENV, BatchOptions, run_batch, secret_values
from lovia_server.batch.task import BatchTask, load_tasks

DESCRIPTION = """Run agent tasks headless and write one result line per task.
Tasks already in the results file are skipped, so running the same command again resumes."""


EPILOG = """\
environment:
  LOVIA_MODEL                          the default model (--model; a task's model wins)
  OPENAI_API_KEY, ANTHROPIC_API_KEY    the provider's key
  OPENAI_BASE_URL, ANTHROPIC_BASE_URL  another endpoint (a local or compatible server)
  LOVIA_PROVIDER_TIMEOUT               seconds without data before a model call is retried
                                       (default 300)
On Ray the five variables above are forwarded to the workers (and kept out of every file
written). `--ray tasks.jsonl` runs the file on a local Ray; name a cluster as --ray ADDRESS.
docs: docs/batch.md
"""


def parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("tasks", nargs="?", help="task file (JSON Lines, see docs/batch.md)")
    p.add_argument("--results", default="results.jsonl", help="results file (default: %(default)s)")
    p.add_argument(
        "--source-root",
        metavar="DIR",
        help="the folder tasks' local sources must lie in (default: the task file's folder)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run on Ray: at ADDRESS (host:port, ray://..., auto), or a local Ray when omitted",
    )
    p.add_argument("--model", default=os.environ.get("LOVIA_MODEL"), help="default model")
    p.add_argument("--concurrency", type=int, default=4, help="tasks at once without --ray")
    p.add_argument("--num-cpus", type=float, default=0.5, help="CPUs one task reserves on Ray")
    p.add_argument("--retries", type=int, default=3, help="reruns of a task whose worker died")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="forward this environment variable to Ray workers (repeatable)",
    )
    p.add_argument("--runtime-env", help="Ray runtime_env as JSON, or @file.json")
    p.add_argument("--rpm", type=float, help="requests per minute per model, cluster-wide")
    p.add_argument("--max-concurrent", type=int, help="model calls in flight per model")
    p.add_argument("--rerun-failed", action="store_true", help="rerun tasks that did not finish")
    p.add_argument("--no-sandbox", action="store_true", help="never use the bubblewrap sandbox")
    p.add_argument(
        "--transcripts",
        choices=["file", "inline", "none"],
        default="file",
        help="where transcripts go (default: a file per task beside the results)",
    )
    p.add_argument(
        "--log-file",
        metavar="PATH",
        help="where the runs' log goes (default: beside the results, e.g. results.log)",
    )
    return p


def parse(argv: list[str], prog: str) -> argparse.Namespace:
    """The arguments, accepting ``--ray tasks.jsonl``: ``--ray``'s address is optional, so
    argparse gives it the task file; a value that names a file is the task file, not a
    cluster address (an address is host:port, ray://..., or auto)."""
    p = parser(prog)
    args = p.parse_args(argv)
    if args.tasks is None and args.ray and _names_a_file(args.ray):
        args.tasks, args.ray = args.ray, ""
    if args.tasks is None:
        p.error("the task file is missing: lovia batch TASKS.jsonl [--ray [ADDRESS]] ...")
    return args


def _names_a_file(value: str) -> bool:
    return Path(value).is_file() or value.endswith((".jsonl", ".json"))


def check_models(tasks: list[BatchTask], default: str | None) -> None:
    """Every task's model spec is known before anything runs (a bad one is a bad line)."""
    for task in tasks:
        spec = task.model or default
        if spec is None:
            continue
        try:
            check_model_spec(spec)
        except UserError as exc:
            where = f"task {task.id}" if task.model else "--model"
            raise UserError(f"{where}: {exc.message}", hint=exc.hint) from exc


def log_to_file(path: Path) -> None:
    """The runs' log (a failed run's traceback, retries, an interrupted run's cancellation)
    goes to a file: the screen keeps the progress table and one line per problem."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("lovia", "lovia_server"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def runtime_env(args: argparse.Namespace) -> dict[str, Any]:
    """The Ray runtime_env: ``--runtime-env`` plus forwarded variables in ``env_vars``."""
    env: dict[str, Any] = {}
    if args.runtime_env:
        text = args.runtime_env
        try:
            if text.startswith("@"):
                text = Path(text[1:]).read_text(encoding="utf-8")
            env = json.loads(text)
        except (OSError, ValueError) as exc:
            raise UserError(
                f"--runtime-env is not valid JSON: {exc}",
                hint='Pass e.g. --runtime-env \'{"pip": ["numpy"]}\' or --runtime-env @env.json',
            ) from exc
    variables = dict(env.get("env_vars") or {})
    for name in (*FORWARDED_ENV, *args.env):
        if name in os.environ:
            variables.setdefault(name, os.environ[name])
        elif name in args.env:
            raise UserError(f"--env {name}: the variable is not set here")
    if variables:
        env["env_vars"] = variables
    return env


def executor_for(args: argparse.Namespace) -> Executor:
    if args.ray is None:
        return InProcessExecutor(concurrency=args.concurrency)
    from lovia.executor.ray_cluster import RayExecutor

    return RayExecutor(
        args.ray or None,
        runtime_env=runtime_env(args),
        num_cpus=args.num_cpus,
        max_retries=args.retries,
    )


def options_for(args: argparse.Namespace) -> BatchOptions:
    limit = None
    if args.rpm is not None or args.max_concurrent is not None:
        limit = RateLimit(requests_per_minute=args.rpm, max_concurrent=args.max_concurrent)
    return BatchOptions(
        model=args.model,
        default_limit=limit,
        rerun_failed=args.rerun_failed,
        sandbox=False if args.no_sandbox else "auto",
        transcripts=args.transcripts,
        secrets=secret_values((*FORWARDED_ENV, *args.env)),
    )


def sub_main(argv: list[str], prog: str = "lovia batch") -> int:
    args = parse(argv, prog)
    try:
        tasks = load_tasks(args.tasks, source_root=args.source_root)
        check_models(tasks, args.model)
        log_to_file(Path(args.log_file or Path(args.results).with_suffix(".log")))
        executor = executor_for(args)
        options = options_for(args)
    except (UserError, ValueError) as exc:
        return _fail(exc)
    try:
        tally = asyncio.run(
            run_batch(tasks, args.results, executor=executor, options=options, progress=Progress())
        )
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: outstanding tasks cancelled; {args.results} keeps the finished "
            "ones, run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    except UserError as exc:
        return _fail(exc)
    finally:
        shutdown = getattr(executor, "shutdown", None)
        if callable(shutdown):
            shutdown()
    return 0 if tally.finished == tally.statuses["done"] else 1


def _fail(exc: Exception) -> int:
    """One ``error:`` line and at most one ``hint:`` line (a ``LoviaError``'s own text already
    carries its hint, so the message is taken without it)."""
    hint = getattr(exc, "hint", None)
    message = getattr(exc, "message", None) if hint else None
    text = message if isinstance(message, str) and message else str(exc)
    print(f"error: {text}" + (f"\nhint: {hint}" if hint else ""), file=sys.stderr)
    return 2


__all__ = ["sub_main"]
