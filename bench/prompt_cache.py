"""What a coding session's input costs with prompt caching, relative to none (not a test).

    .venv/bin/python bench/prompt_cache.py [--json] [--only NAME ...] [--skip-server]
                                           [--instructions]

Replays the scripted session of ``bench/cache_session.py`` (43 model turns on a small Python
project: reads of 2–8 KB, greps, 16 edits, 6 test runs of 0.2–2.5 KB, the todo reminder every
turn) against local fake vendors that keep a prompt cache by the documented rules
(``tests/support/caching_anthropic.py``, ``tests/support/caching_openai.py``) and report usage
as the real APIs do. The agent is the language server's built-in coding agent (its
instructions, its tools, the workspace's real file and shell tools), run

- ``framework``: in process with ``Runner.run`` and default settings (Anthropic, then OpenAI
  Chat Completions);
- ``framework+cache_system``: Anthropic with ``provider_options={"anthropic":
  {"cache_system": True}}``;
- ``framework+official``: OpenAI with the provider built as for api.openai.com
  (``official_dialect=True``), the only place lovia sends a ``prompt_cache_key``;
- ``server``: through the real language server (``python -m lovia_server`` driven over LSP,
  permission preset ``trusted``) with the provider pointed at the fake's base URL;
- ``sdk-peer``: a plain ``anthropic`` SDK loop with one moving breakpoint on the last block,
  replaying the same turns and tool results (a reference; it has no todo reminder);
- ``reference+cache_system`` (with ``--reference-python PY``): the same agent built by another
  lovia release installed for ``PY`` (the seeds' 0.9.119), with its ``cache_system`` opt-in
  (``bench/prompt_cache_reference.py``).

For each row: requests, prompt tokens sent, cache reads and writes, and the billed input
relative to no caching (Anthropic: input + 1.25 × writes + 0.1 × reads; OpenAI: uncached +
``--openai-read-ratio`` × cached, 0.25 for gpt-4.1), and the same in tokens ("billed tok"): the
relative figure of two clients whose requests differ in size (tool schemas, instructions) is
compared best through it. ``--json`` prints the rows as JSON. The
session is deterministic and so are the figures; the whole bench takes under a minute. To
measure another branch, run its checkout's copy of this script (merge this branch into a
scratch worktree): the rows import lovia from the checkout the script is in, the server
process too.

``--instructions`` adds a root ``AGENTS.md`` and nested ones under ``src/ledger`` and
``tests``: the server puts the root's into the system prompt and the nested ones ahead of the
first tool result under their folder (docs/customization.md); the target is that the server
rows' relative figures do not rise by more than 0.01 (measured: Anthropic 0.150 → 0.148,
OpenAI 0.287 → 0.286).

The OpenAI fake has one cache machine by default, so a single conversation is never split
and the key cannot change its figure; the fake's ``shards`` model shows what the key is for
(many conversations sharing the agent's head under load; see its tests).

Measured (2 shared cores), main before caching by default → with the ``caching`` branch:
Anthropic framework 1.000 → 0.152, server 1.000 → 0.150, ``cache_system`` 0.780 → 0.152;
OpenAI framework 0.289, server 0.288 (both); SDK peer 0.144. The reference 0.9.119 with its
opt-in: 0.1496 of a larger uncached total, 79,963 billed tokens against lovia's default 73,312.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cache_session import (  # noqa: E402
    EDITS,
    PROMPT,
    STEPS,
    TEST_RUNS,
    Step,
    call_id,
    make_project,
    output_tokens,
    step_of,
)
from tests.support import fake_anthropic as ant  # noqa: E402
from tests.support import fake_openai as oai  # noqa: E402
from tests.support.caching_anthropic import CachingAnthropic  # noqa: E402
from tests.support.caching_openai import CachingOpenAI  # noqa: E402
from tests.support.fake_server import RecordedRequest, Reply  # noqa: E402
from tests.support.prompt_tokens import CacheTally  # noqa: E402

ANTHROPIC_MODEL = "claude-sonnet-4-5"
OPENAI_MODEL = "gpt-4.1"


# --------------------------------------------------------------------------- scripted replies


def _step(steps: list[Step], request: RecordedRequest) -> tuple[int, Step]:
    index = min(step_of(request.messages), len(steps) - 1)
    return index, steps[index]


def anthropic_responder(steps: list[Step]) -> Callable[[RecordedRequest], Reply]:
    def respond(request: RecordedRequest) -> Reply:
        index, step = _step(steps, request)
        use = ant.usage(output=output_tokens(step))
        if not step.calls:
            return ant.text(step.text, usage=use)
        blocks = [ant.text_block(step.text)] if step.text else []
        blocks += [
            ant.tool_block(c.name, c.args, id=call_id(index, i, "anthropic"))
            for i, c in enumerate(step.calls)
        ]
        return ant.message(*blocks, stop_reason="tool_use", usage=use)

    return respond


def openai_responder(steps: list[Step]) -> Callable[[RecordedRequest], Reply]:
    def respond(request: RecordedRequest) -> Reply:
        index, step = _step(steps, request)
        use = oai.usage(completion=output_tokens(step))
        if not step.calls:
            return oai.text(step.text, usage=use)
        calls = [
            oai.call(c.name, c.args, id=call_id(index, i, "openai"))
            for i, c in enumerate(step.calls)
        ]
        return oai.tool_calls(*calls, text=step.text or None, usage=use)

    return respond


# --------------------------------------------------------------------------- rows


@dataclass
class Row:
    client: str
    provider: str
    tally: CacheTally
    seconds: float
    output: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "provider": self.provider,
            **self.tally.summary(),
            "seconds": round(self.seconds, 2),
        }


@dataclass
class Vendor:
    name: str
    model: str
    make: Callable[[list[Step]], CachingAnthropic | CachingOpenAI]


def vendors(read_ratio: float) -> dict[str, Vendor]:
    return {
        "anthropic": Vendor(
            "anthropic",
            f"anthropic:{ANTHROPIC_MODEL}",
            lambda steps: CachingAnthropic(responder=anthropic_responder(steps)),
        ),
        "openai": Vendor(
            "openai",
            f"openai:{OPENAI_MODEL}",
            lambda steps: CachingOpenAI(responder=openai_responder(steps), read_ratio=read_ratio),
        ),
    }


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


WITH_INSTRUCTIONS = False
"""``--instructions``: the project carries a root and two nested ``AGENTS.md`` (the server
reads them; the framework rows, which do not opt in, are unchanged)."""


def _add_instructions(root: Path) -> None:
    rules = "".join(
        f"- Rule {i}: keep functions small, typed and documented; run tools/check.py.\n"
        for i in range(20)
    )
    (root / "AGENTS.md").write_text(
        "# Ledger\n\nBuild: none. Test: `python3 tools/check.py`.\n" + rules
    )
    (root / "src" / "ledger" / "AGENTS.md").write_text(
        "# ledger package\n\nAmounts are integer cents; never use float.\n" + rules[:800]
    )
    (root / "tests" / "AGENTS.md").write_text("# tests\n\nPlain asserts, no pytest fixtures.\n")


@contextmanager
def project() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lovia-cache-bench-") as tmp:
        root = Path(tmp, "ledger").resolve()
        root.mkdir()
        make_project(root)
        if WITH_INSTRUCTIONS:
            _add_instructions(root)
        yield root


async def run_framework(
    vendor: Vendor,
    steps: list[Step],
    options: dict[str, Any] | None = None,
    *,
    official: bool = False,
) -> tuple[CacheTally, str, list[RecordedRequest]]:
    """The built-in coding agent in process: ``Runner.run`` with default settings.

    ``official``: the OpenAI provider built as for api.openai.com (``official_dialect``), which
    the fake's local URL would not make it: lovia sends ``prompt_cache_key`` only there.
    """
    from lovia import ModelSettings, Runner
    from lovia.providers._clients import aclose_shared_clients
    from lovia.providers._windows import clear_endpoint_cache
    from lovia.tools.human import HumanChannel, ask_human
    from lovia.workspace import Workspace
    from lovia_server.host.agents import coding_agent

    server = vendor.make(steps)
    server.start()
    try:
        with project() as root, environment(server.env()):
            clear_endpoint_cache()
            agent = coding_agent(vendor.model, extra_tools=[ask_human(HumanChannel())]).clone(
                workspace=Workspace.local(str(root), mode="trusted"),
                settings=ModelSettings(provider_options=options or {}),
            )
            if official:
                agent = agent.clone(model=official_openai(server.base_url))
            result = await Runner.run(agent, PROMPT)
            await aclose_shared_clients()
        return server.tally, str(result.output), server.stream_requests()
    finally:
        server.stop()


def official_openai(base_url: str) -> Any:
    from lovia.providers.openai import OpenAIChatProvider

    return OpenAIChatProvider(
        OPENAI_MODEL, base_url=base_url, api_key="bench", official_dialect=True
    )


async def run_server(vendor: Vendor, steps: list[Step]) -> tuple[CacheTally, str]:
    """The built-in coding agent through the real language server process."""
    from tests.server.harness import Harness

    server = vendor.make(steps)
    server.start()
    try:
        with project() as root, tempfile.TemporaryDirectory(prefix="lovia-state-") as state:
            harness = Harness(root, Path(state))
            try:
                await harness.start(
                    settings={"model": vendor.model, "permissions": {"preset": "trusted"}},
                    env={**server.env(), "PYTHONPATH": _pythonpath()},
                )
                run = await harness.run(PROMPT)
                done = await _finish(harness, run["runId"])
            finally:
                await harness.stop()
        if done.get("status") != "completed":
            raise RuntimeError(f"the server's run did not complete: {done}")
        return server.tally, str(done.get("output"))
    finally:
        server.stop()


def _pythonpath() -> str:
    """The server process imports lovia from this checkout, like the in-process rows."""
    return os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])


async def _finish(harness: Any, run_id: str, within: float = 900.0) -> dict[str, Any]:
    """Wait for the run's end, allowing any approval the preset still asks for."""
    handled: set[str] = set()
    while True:
        event = await harness.wait_for(
            lambda e: (
                e["runId"] == run_id
                and (
                    e["kind"] == "run.finished"
                    or (e["kind"] == "approval.requested" and e["approvalId"] not in handled)
                )
            ),
            within=within,
        )
        if event["kind"] == "run.finished":
            return dict(event)
        handled.add(event["approvalId"])
        await harness.request(
            "lovia/approve",
            {"runId": run_id, "approvalId": event["approvalId"], "decision": "allow_once"},
        )


async def run_sdk_peer(
    reference: list[RecordedRequest], steps: list[Step]
) -> tuple[CacheTally, str]:
    """A plain SDK loop with one breakpoint on the last block, on lovia's own tool results.

    ``reference`` is a framework run's requests to the Anthropic fake: its tools and system
    prompt, and the tool results its last request carried, are replayed as they were.
    """
    import anthropic

    first, last = reference[0].json, reference[-1].json
    tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in first["tools"]]
    system = [{k: v for k, v in b.items() if k != "cache_control"} for b in first["system"]]
    results = {
        block["tool_use_id"]: block
        for message in last["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    server = CachingAnthropic(responder=anthropic_responder(steps))
    server.start()
    client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="bench")
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": PROMPT}]}
    ]
    answer = ""
    try:
        for _ in range(len(steps)):
            marked = [dict(m, content=[dict(b) for b in m["content"]]) for m in messages]
            marked[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
            request: dict[str, Any] = {"system": system, "tools": tools, "messages": marked}
            async with client.messages.stream(
                model=ANTHROPIC_MODEL, max_tokens=8192, **request
            ) as stream:
                reply = await stream.get_final_message()
            content = [b.model_dump(exclude_none=True) for b in reply.content]
            messages.append({"role": "assistant", "content": content})
            uses = [b for b in content if b["type"] == "tool_use"]
            if not uses:
                answer = "".join(b.get("text", "") for b in content)
                break
            messages.append({"role": "user", "content": [results[b["id"]] for b in uses]})
        return server.tally, answer
    finally:
        await client.close()
        server.stop()


# --------------------------------------------------------------------------- the bench


async def measure(
    names: list[str], read_ratio: float, reference_python: str | None = None
) -> list[Row]:
    known = vendors(read_ratio)
    rows: list[Row] = []
    reference: list[RecordedRequest] = []

    async def timed(client: str, provider: str, job: Awaitable[tuple[CacheTally, str]]) -> None:
        started = time.perf_counter()
        tally, output = await job
        if output.strip() != STEPS[-1].text.strip():
            raise RuntimeError(f"{client} × {provider} did not finish the script: {output!r}")
        rows.append(Row(client, provider, tally, time.perf_counter() - started, output))
        print(f"  {client} × {provider}: {tally.relative:.3f}", file=sys.stderr, flush=True)

    async def framework(
        vendor: Vendor, options: dict[str, Any] | None = None
    ) -> tuple[CacheTally, str]:
        tally, output, requests = await run_framework(vendor, STEPS, options)
        if vendor.name == "anthropic" and not options:
            reference[:] = requests
        return tally, output

    for vendor in known.values():
        if "framework" in names:
            await timed("framework", vendor.name, framework(vendor))
        if "framework+official" in names and vendor.name == "openai":
            official = run_framework(vendor, STEPS, official=True)
            await timed("framework+official", vendor.name, _drop_requests(official))
        if "framework+cache_system" in names and vendor.name == "anthropic":
            cache = {"anthropic": {"cache_system": True}}
            await timed("framework+cache_system", vendor.name, framework(vendor, cache))
        if "server" in names:
            await timed("server", vendor.name, run_server(vendor, STEPS))
    if reference_python and "anthropic" in known:
        job = run_reference(known["anthropic"], STEPS, reference_python)
        await timed("reference+cache_system", "anthropic", job)
    if "sdk-peer" in names:
        if not reference:
            await framework(known["anthropic"])
        await timed("sdk-peer", "anthropic", run_sdk_peer(reference, STEPS))
    return rows


async def run_reference(vendor: Vendor, steps: list[Step], python: str) -> tuple[CacheTally, str]:
    """Another lovia release, in its own interpreter, against the same fake vendor."""
    from lovia_server.host.agents import CODING_INSTRUCTIONS

    server = vendor.make(steps)
    server.start()
    try:
        env = server.env()
        # releases before the SDK-based provider append the path to a base URL ending in /v1
        env["ANTHROPIC_BASE_URL"] = env["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1"
        config = {
            "env": env,
            "model": vendor.model,
            "instructions": CODING_INSTRUCTIONS,
            "provider_options": {"anthropic": {"cache_system": True}},
        }
        proc = await asyncio.create_subprocess_exec(
            python,
            str(ROOT / "bench" / "prompt_cache_reference.py"),
            json.dumps(config),
            stdin=asyncio.subprocess.DEVNULL,
        )
        if await proc.wait() != 0:
            raise RuntimeError(f"the reference run failed (exit {proc.returncode})")
        return server.tally, steps[-1].text
    finally:
        server.stop()


async def _drop_requests(
    job: Awaitable[tuple[CacheTally, str, list[RecordedRequest]]],
) -> tuple[CacheTally, str]:
    tally, output, _ = await job
    return tally, output


def table(rows: list[Row]) -> str:
    head = (
        f"{'client':<24}{'provider':<11}{'requests':>9}{'input':>10}{'read':>10}{'write':>10}"
        f"{'billed':>8}{'billed tok':>12}"
    )
    lines = [head, "-" * len(head)]
    for row in rows:
        t = row.tally
        lines.append(
            f"{row.client:<24}{row.provider:<11}{t.requests:>9}{t.total:>10}"
            f"{t.cache_read:>10}{t.cache_write:>10}{t.relative:>8.3f}{t.relative * t.total:>12,.0f}"
        )
    return "\n".join(lines)


ALL = ["framework", "framework+cache_system", "framework+official", "server", "sdk-peer"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--only", nargs="+", choices=ALL, default=ALL, metavar="CLIENT")
    parser.add_argument("--skip-server", action="store_true", help="leave out the server rows")
    parser.add_argument("--openai-read-ratio", type=float, default=0.25)
    parser.add_argument(
        "--reference-python",
        metavar="PY",
        help="also run the session with the lovia release installed for this interpreter",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="add a root and two nested AGENTS.md to the project (docs/customization.md)",
    )
    args = parser.parse_args(argv)
    global WITH_INSTRUCTIONS
    WITH_INSTRUCTIONS = args.instructions
    names = [n for n in args.only if not (args.skip_server and n == "server")]
    os.chdir(ROOT)  # ``python -m lovia_server`` imports from its working directory first
    print(
        f"session: {len(STEPS)} model turns, {EDITS} edits, {TEST_RUNS} test runs",
        file=sys.stderr,
    )
    rows = asyncio.run(measure(names, args.openai_read_ratio, args.reference_python))
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        print(table(rows))
        print("billed: input cost relative to the same requests without caching")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
