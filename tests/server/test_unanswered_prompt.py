"""An approval prompt the editor drops without a reply — eglot on C-g sends none — is asked
again from *lovia: Show pending approvals*; the command answers before its prompt is sent, since
eglot runs a server request that arrives during its own request's wait inside that wait (and
drops it at the wait's 10 s timeout)."""

from __future__ import annotations

import asyncio

from tests.server.test_code_actions import (
    FIX_AGENT,
    _diagnostic,
    execute,
    menu,
    plain_client,
    until,
)
from tests.server.vscode_client import VsCodeBuffers


async def test_a_prompt_never_answered_is_asked_again_after_the_command_answers(harness, tmp_path):
    app = harness.root / "app.py"
    app.write_text("x = undefined_name\n")
    spec = harness.write_agent(FIX_AGENT)
    await harness.start(
        settings={"agent": spec},
        init_options=False,
        capabilities="emacs",
        env={"XDG_STATE_HOME": str(tmp_path / "xdg")},
        adjust=plain_client(),
    )
    VsCodeBuffers(harness).open(app)  # eglot has the file open
    # the first prompt: dropped, never answered (eglot's C-g)
    harness.message_unanswered = lambda params: len(harness.message_requests) == 1
    harness.message_choice = lambda params: "Accept"
    actions = await menu(harness, app, [_diagnostic(0)])
    fix = next(a for a in actions if a.title == "lovia: Fix this problem")
    run_id = (await execute(harness, fix))["runId"]
    await until(lambda: len(harness.message_requests) == 1)
    await asyncio.sleep(0.5)
    assert harness.kinds(run_id).count("approval.resolved") == 0  # waiting, not hung

    again = await menu(harness, app, [])
    show = next(a for a in again if a.title == "lovia: Show pending approvals")
    assert await execute(harness, show) == {"asked": 1}
    assert len(harness.message_requests) == 1  # the command answered first
    await until(lambda: len(harness.message_requests) >= 2)  # the new file's may follow at once
    assert harness.message_requests[1].actions[0].title == "Reject"

    done = await harness.finished(run_id)
    assert done["status"] == "completed"
    assert (harness.root / "new_mod.py").read_text() == "X = 1\n"
