"""``/compact [focus]`` through the real server and the built-in agent on a local
OpenAI-format endpoint: the conversation is compacted now (the summary request carries the
focus, the next turn sees the summary instead of the early messages), the ``PreCompact`` hook
hears ``trigger: "manual"`` and can refuse it, and an empty conversation calls no model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lovia.context.prompts import REQUIRED_SECTIONS
from tests.support import fake_openai as oai

SETTINGS = {"model": "openai:fake-model"}
SUMMARY = "\n".join(f"{s}\nSUMMARY-MARK {s}" for s in REQUIRED_SECTIONS)


def _posts(fake: Any) -> list[dict[str, Any]]:
    return [r.json for r in fake.requests if r.method == "POST"]


def _said(harness: Any, run_id: str) -> str:
    return "".join(e["text"] for e in harness.of_run(run_id) if e["kind"] == "message.completed")


def _pre_compact(root: Path, body: str) -> None:
    script = root / ".lovia" / "hooks" / "compact.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(body)
    hook = {"type": "command", "command": f"{sys.executable} {script}"}
    hooks = {"PreCompact": [{"matcher": "manual", "hooks": [hook]}]}
    (root / ".lovia" / "hooks.json").write_text(json.dumps({"hooks": hooks}))


async def test_compact_summarises_with_the_focus_and_the_next_turn_sees_only_the_summary(
    harness, fake_openai, tmp_path
):
    marker = harness.root / "pre-compact.json"
    _pre_compact(harness.root, f"import sys\nopen({str(marker)!r}, 'w').write(sys.stdin.read())\n")
    fake_openai.script(oai.text("early answer"), oai.text(SUMMARY), oai.text("later answer"))
    await harness.start(
        settings=SETTINGS, env={**fake_openai.env(), "HOME": str(tmp_path / "home")}
    )
    first = await harness.run("EARLY-MESSAGE: the parser drops comments")
    assert (await harness.finished(first["runId"]))["status"] == "completed"
    session = first["sessionId"]

    compact = await harness.run("/compact focus-on-the-parser", sessionId=session)
    done = await harness.finished(compact["runId"])
    assert done["status"] == "completed", done
    summary_request = json.dumps(_posts(fake_openai)[1]["messages"])
    assert "focus-on-the-parser" in summary_request and "EARLY-MESSAGE" in summary_request
    assert "compaction" in harness.kinds(compact["runId"])
    assert _said(harness, compact["runId"]).startswith("Compacted the conversation")
    heard = json.loads(marker.read_text())
    assert heard["hook_event_name"] == "PreCompact" and heard["trigger"] == "manual"
    assert heard["custom_instructions"] == "focus-on-the-parser"

    later = await harness.run("what is next?", sessionId=session)
    assert (await harness.finished(later["runId"]))["status"] == "completed"
    sent = json.dumps(_posts(fake_openai)[2]["messages"])
    assert "SUMMARY-MARK" in sent and "what is next?" in sent
    assert "EARLY-MESSAGE" not in sent and "early answer" not in sent


async def test_a_pre_compact_hook_exit_2_refuses_the_compaction(harness, fake_openai, tmp_path):
    _pre_compact(
        harness.root,
        "import sys\nprint('no compaction during the review', file=sys.stderr)\nsys.exit(2)\n",
    )
    fake_openai.script(oai.text("early answer"), oai.text("later answer"))
    await harness.start(
        settings=SETTINGS, env={**fake_openai.env(), "HOME": str(tmp_path / "home")}
    )
    first = await harness.run("EARLY-MESSAGE")
    assert (await harness.finished(first["runId"]))["status"] == "completed"
    compact = await harness.run("/compact", sessionId=first["sessionId"])
    done = await harness.finished(compact["runId"])
    assert done["status"] == "failed", done
    assert "no compaction during the review" in done["error"]["message"]
    assert len(_posts(fake_openai)) == 1  # no summary was asked for
    assert "compaction" not in harness.kinds(compact["runId"])
    later = await harness.run("again", sessionId=first["sessionId"])
    assert (await harness.finished(later["runId"]))["status"] == "completed"
    assert "EARLY-MESSAGE" in json.dumps(_posts(fake_openai)[1]["messages"])


async def test_compact_on_an_empty_conversation_calls_no_model(harness, fake_openai, tmp_path):
    await harness.start(
        settings=SETTINGS, env={**fake_openai.env(), "HOME": str(tmp_path / "home")}
    )
    run = await harness.run("/compact")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert _said(harness, run["runId"]) == "Nothing to compact: the conversation is empty."
    assert _posts(fake_openai) == []
