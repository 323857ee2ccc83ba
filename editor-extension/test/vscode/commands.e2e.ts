/**
 * The composer's `/` menu in a real VS Code (code-server): a command file copied unchanged from
 * a Claude Code project (`.claude/commands/fix-issue.md` with `$ARGUMENTS`) is listed with its
 * description and the *workspace* label, and the line sent reaches the model expanded (a
 * scripted user agent repeats what it was given); `/help` is answered without the model. The
 * workspace's AGENTS.md is named above the composer (the instructions-in-use line).
 */
import { afterEach, expect, test } from "vitest";
import { repoPython, VsCodeWindow } from "./harness";

let win: VsCodeWindow | undefined;
let failed = true;

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
  failed = true;
});

const FIX_ISSUE = `---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
argument-hint: [issue-number]
description: Fix a GitHub issue
---

Fix issue #$ARGUMENTS following our coding standards.
`;

const AGENTS_PY = `
from collections import deque
from pathlib import Path

from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.transcript import InputEntry


class Echo(ScriptedProvider):
    """Says what its prompt was; counts its calls in calls.txt."""

    async def stream(self, entries, **kw):
        prompt = [e for e in entries if isinstance(e, InputEntry) and e.role == "user"][-1]
        with open(Path(__file__).parent / "calls.txt", "a") as f:
            f.write(str(prompt.content) + "\\n")
        self.script = deque([text("I was given: " + str(prompt.content))])
        async for delta in super().stream(entries, **kw):
            yield delta


echo = Agent(name="echo", instructions="Repeat your prompt.", model=Echo([]))
`;

test("the / menu lists a Claude Code command file, which reaches the model expanded; /help stays local", async () => {
  const w = new VsCodeWindow({
    scenario: "12-commands",
    files: {
      "agents.py": AGENTS_PY,
      ".claude/commands/fix-issue.md": FIX_ISSUE,
      "README.md": "# commands project\n",
      "AGENTS.md": "# Rules\n\nRun the tests before you finish.\n",
    },
    machineSettings: { "lovia.pythonPath": repoPython() },
    userSettings: { "lovia.agent": "agents.py:echo" },
  });
  win = w;
  w.installExtension();
  await w.start();
  const view = await w.openPanel();
  await view.locator("button.send:not([disabled])").waitFor({ timeout: 90_000 });
  const instructions = view.locator(".instructions-area");
  await expect.poll(() => instructions.textContent(), { timeout: 30_000 }).toBe("Instructions: AGENTS.md");
  await w.shot("instructions-line");
  const input = view.locator("textarea.composer-input");
  await input.click();
  await input.pressSequentially("/", { delay: 40 });
  const fix = view.locator(".command-popup li", { hasText: "/fix-issue" }).first();
  await fix.waitFor({ timeout: 30_000 });
  expect(await fix.locator(".command-description").innerText()).toBe("Fix a GitHub issue");
  expect(await fix.locator(".command-source").innerText()).toBe("workspace");
  expect(await view.locator(".command-popup li .command-name").allInnerTexts()).toEqual(
    expect.arrayContaining(["/help", "/plan", "/init", "/review", "/compact", "/new", "/fix-issue"]),
  );
  await w.shot("commands-menu");
  await input.pressSequentially("fix", { delay: 40 });
  await input.press("Enter");
  await expect.poll(() => input.inputValue()).toBe("/fix-issue ");
  await input.pressSequentially("123");
  await input.press("Enter");
  const answer = view.locator("article.msg-assistant", { hasText: "I was given" });
  await answer.waitFor({ timeout: 90_000 });
  expect(await answer.innerText()).toContain("Fix issue #123 following our coding standards.");
  await view.locator("article.msg-user", { hasText: "/fix-issue 123" }).waitFor({ timeout: 10_000 });
  await input.pressSequentially("/help");
  await input.press("Enter"); // picks /help from the menu (or sends it, when the menu was not open yet)
  await input.press("Enter");
  const help = view.locator("article.msg-assistant", { hasText: "Commands (type" });
  await help.waitFor({ timeout: 60_000 });
  expect(await help.innerText()).toContain("Fix a GitHub issue");
  await w.shot("commands-help");
  expect(w.file("calls.txt")).toBe("Fix issue #123 following our coding standards.\n"); // /help never reached it
  failed = false;
});
