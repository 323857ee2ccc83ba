/**
 * Scenarios 4–7, a run in flight: steer and withdraw a queued steer, Stop, reload the window,
 * and a killed server. The run is a user agent file in the (trusted) workspace whose scripted
 * model calls a tool that waits a few seconds per turn, so there is time to act mid-run.
 */
import { afterEach, expect, test } from "vitest";
import { repoPython, sleep, until, VsCodeWindow } from "./harness";

const STEPS = 6;
const AGENTS_PY = `
import asyncio
from collections import deque

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import ToolResultEntry


@tool
async def pause(seconds: float) -> str:
    "Wait a moment (stands in for slow work)."
    await asyncio.sleep(seconds)
    return f"waited {seconds}s"


class Steps(ScriptedProvider):
    """Picks the next step from how many tool results the transcript holds, so a resumed
    run carries on where it stopped."""

    async def stream(self, entries, **kw):
        done = sum(isinstance(e, ToolResultEntry) for e in entries)
        steps = [call("pause", {"seconds": 3}, call_id=f"p{i}") for i in range(${STEPS})]
        self.script = deque([*steps, text("All steps done.")][done:])
        async for delta in super().stream(entries, **kw):
            yield delta


slow = Agent(name="slow", instructions="A slow scripted test agent.", model=Steps([]), tools=[pause])
`;

let win: VsCodeWindow | undefined;
let failed = true;

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
  failed = true;
});

async function slowRun(scenario: string, prompt: string) {
  const w = new VsCodeWindow({
    scenario,
    files: { "agents.py": AGENTS_PY, "README.md": "# slow project\n" },
    machineSettings: { "lovia.pythonPath": repoPython() },
    userSettings: { "lovia.agent": "agents.py:slow" },
  });
  win = w;
  w.installExtension();
  await w.start();
  const view = await w.openPanel();
  await view.locator("button.send:not([disabled])").waitFor({ timeout: 90_000 });
  await view.locator("textarea.composer-input").fill(prompt);
  await view.locator("textarea.composer-input").press("Enter");
  await view.locator("article.tool.tool-status-running").first().waitFor({ timeout: 60_000 });
  return { w, view };
}

const DONE = "All steps done.";

test("steer mid-run: a withdrawn queued steer is never delivered, the next one is", async () => {
  const { w, view } = await slowRun("4-steer", "Work through the steps.");
  const input = view.locator("textarea.composer-input");
  await expect.poll(() => input.getAttribute("aria-label")).toBe("Steer message");
  await input.fill("Steer A: forget this one");
  await input.press("Enter");
  const queuedA = view.locator(".steers li.steer", { hasText: "Steer A" });
  await queuedA.waitFor({ timeout: 20_000 });
  await w.shot("steer-queued");
  await queuedA.getByRole("button", { name: "Withdraw" }).click();
  await queuedA.waitFor({ state: "detached", timeout: 20_000 });
  await input.fill("Steer B: also say goodbye");
  await input.press("Enter");
  await view.locator("article.msg-steer", { hasText: "Steer B" }).waitFor({ timeout: 30_000 });
  await w.shot("steer-delivered");
  await view.locator("article.msg-assistant", { hasText: DONE }).waitFor({ timeout: 90_000 });
  expect(await view.locator("article.msg-steer", { hasText: "Steer A" }).count()).toBe(0);
  failed = false;
});

test("Stop mid-run ends the run; it does not carry on", async () => {
  const { w, view } = await slowRun("5-stop", "Work through the steps.");
  const stop = view.locator("button.stop");
  await stop.click();
  await view.locator('button.send[aria-label="Send"]').waitFor({ timeout: 30_000 });
  expect(await stop.isVisible()).toBe(false);
  await w.shot("stopped");
  await sleep(5_000); // longer than one step: nothing more arrives
  expect(await view.locator("article.msg-assistant", { hasText: DONE }).count()).toBe(0);
  expect(await view.locator("article.tool.tool-status-running").count()).toBe(0);
  failed = false;
});

// A browser reload restarts code-server's extension host, and the stdio server (its child)
// goes with it: the run cannot stream on. What the window must keep is the session, with the
// interrupted run offered for Resume, and Resume must finish it.
test("reload the window mid-run: the same session is shown and its run carries on to the end", async () => {
  const { w } = await slowRun("6-reload", "Work through the steps, slowly.");
  await w.shot("before-reload");
  await w.reload();
  const view = await w.openPanel();
  await view.locator("article.msg-user", { hasText: "Work through the steps, slowly." }).waitFor({ timeout: 60_000 });
  await expect.poll(() => view.locator(".session-name").innerText(), { timeout: 10_000 }).toContain("Work through the steps");
  await w.shot("after-reload");
  const done = view.locator("article.msg-assistant", { hasText: DONE });
  const resume = view.locator('.run-footer button[data-action="resume"]');
  await done.or(resume).first().waitFor({ timeout: 90_000 });
  if (await resume.isVisible()) {
    await w.shot("interrupted-by-reload");
    await resume.click();
  }
  await done.waitFor({ timeout: 90_000 });
  await w.shot("finished-after-reload");
  failed = false;
});

test("kill the server mid-run: the extension restarts it, the run is resumable, Resume finishes it", async () => {
  const { w, view } = await slowRun("7-server-killed", "Work through the steps.");
  const pids = await until("the lovia server process", () => {
    const p = w.serverPids();
    return p.length > 0 ? p : undefined;
  }, 20_000);
  for (const pid of pids) process.kill(pid, "SIGKILL");
  const resume = view.locator('.run-footer button[data-action="resume"]');
  await resume.waitFor({ timeout: 90_000 });
  await until("a new server process", () => w.serverPids().some((p) => !pids.includes(p)), 30_000);
  await w.shot("resumable");
  await resume.click();
  await view.locator("article.msg-assistant", { hasText: DONE }).waitFor({ timeout: 120_000 });
  await w.shot("resumed-and-finished");
  failed = false;
});
