/**
 * Fix with lovia in a real VS Code (code-server): a problem VS Code's own JSON support reports
 * offers "lovia: Fix this problem" in the quick-fix menu (the lightbulb's, Ctrl+.); choosing it
 * starts a run in the panel with the problem as its context (a scripted agent repeats what its
 * prompt carried).
 */
import { afterEach, expect, test } from "vitest";
import { repoPython, sleep, until, VsCodeWindow } from "./harness";

let win: VsCodeWindow | undefined;
let failed = true;

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
  failed = true;
});

const AGENTS_PY = `
from collections import deque

from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.transcript import InputEntry


class Echo(ScriptedProvider):
    """Says what its prompt carried."""

    async def stream(self, entries, **kw):
        prompt = next(e for e in entries if isinstance(e, InputEntry) and e.role == "user")
        content = prompt.content if isinstance(prompt.content, str) else str(prompt.content)
        self.script = deque([text("I was asked: " + " ".join(content.split())[:400])])
        async for delta in super().stream(entries, **kw):
            yield delta


echo = Agent(name="echo", instructions="Repeat your prompt.", model=Echo([]))
`;

test("Fix with lovia from the quick-fix menu starts a run in the panel with the problem", async () => {
  const w = new VsCodeWindow({
    scenario: "14-fix-with-lovia",
    files: { "agents.py": AGENTS_PY, "settings.json": '{\n  "size": \n}\n' },
    machineSettings: { "lovia.pythonPath": repoPython() },
    userSettings: { "lovia.agent": "agents.py:echo" },
  });
  win = w;
  w.installExtension();
  await w.start();
  const view = await w.openPanel();
  await view.locator("button.send:not([disabled])").waitFor({ timeout: 90_000 });

  await w.openFile("settings.json");
  // VS Code's JSON support marks the missing value; F8 puts the cursor on it.
  await until("the JSON problem", () => w.page.locator(".monaco-editor .squiggly-error").first().isVisible(), 60_000, 250);
  await w.page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  await w.page.keyboard.press("F8");
  await sleep(500);
  await w.page.keyboard.press("Escape");
  const item = w.page.locator(".action-widget .monaco-list-row", { hasText: "lovia: Fix this problem" }).first();
  await until(
    "lovia's quick fix",
    async () => {
      if (await item.isVisible()) return true;
      await w.page.keyboard.press("Control+.");
      await sleep(1500);
      return item.isVisible();
    },
    90_000,
    500,
  );
  await w.shot("quick-fix-menu");
  await item.click();

  const asked = view.locator("article.msg-user", { hasText: "Fix this problem in settings.json" });
  await asked.waitFor({ timeout: 90_000 });
  const answer = view.locator("article.msg-assistant", { hasText: "I was asked" });
  await answer.waitFor({ timeout: 90_000 });
  const said = await answer.innerText();
  expect(said).toContain("Value expected");
  await w.shot("fix-run-in-panel");
  failed = false;
});
