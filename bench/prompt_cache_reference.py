"""The scripted session of ``bench/prompt_cache.py`` run by another lovia release.

Run by ``prompt_cache.py --reference-python PY`` with the interpreter of a virtual environment
where that release is installed (for the seeds' reference implementation:
``python3 -m venv /tmp/ref && /tmp/ref/bin/pip install lovia==0.9.119``). It builds the agent
the built-in coding agent is (the same instructions, the workspace's file and shell tools, the
todo plugin, ``ask_human``) with that release's own classes and its documented caching opt-in,
and runs the session against the fake vendor whose address it is given. It imports nothing from
this checkout but ``cache_session`` (standard library only), so the release's ``lovia`` is the
one that runs.

    PY bench/prompt_cache_reference.py CONFIG_JSON
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any


async def run(config: dict[str, Any]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cache_session import PROMPT, STEPS, make_project

    from lovia import Agent, ModelSettings, Runner
    from lovia.plugins.todo import Todo
    from lovia.tools.human import HumanChannel, ask_human
    from lovia.workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="lovia-cache-bench-") as tmp:
        root = Path(tmp, "ledger").resolve()
        root.mkdir()
        make_project(root)
        agent = Agent(
            name="lovia",
            instructions=config["instructions"],
            model=config["model"],
            tools=[ask_human(HumanChannel())],
            plugins=[Todo()],
            workspace=Workspace.local(str(root), mode="trusted"),
            settings=ModelSettings(provider_options=config["provider_options"]),
        )
        result = await Runner.run(agent, PROMPT)
    output = str(result.output)
    if output.strip() != STEPS[-1].text.strip():
        raise SystemExit(f"the reference run did not finish the script: {output[:200]!r}")


def main() -> None:
    config = json.loads(sys.argv[1])
    os.environ.update(config["env"])
    asyncio.run(run(config))


if __name__ == "__main__":
    main()
