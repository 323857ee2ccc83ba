/**
 * Scenario: the offline demo spawns a subagent whose approval is accepted in the panel. The
 * child shows nested under the spawning tool call with a live one-line status; its approval
 * card says whose request it is; accepting it lets the helper write its file, and its report
 * reaches the parent's answer.
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

test("a demo parent spawns a helper whose approval is accepted in the panel", async () => {
  win = new VsCodeWindow({
    scenario: "9-subagent-approval",
    files: { "README.md": "# hello project\n" },
    machineSettings: { "lovia.pythonPath": repoPython() },
    userSettings: { "lovia.permissions.pathRules": [{ pattern: "NOTES.md", write: "ask" }] },
  });
  win.installExtension();
  await win.start();
  const view = await win.openPanel();
  await view.getByRole("button", { name: "Try the offline demo" }).click({ timeout: 90_000 });
  await view.locator(".model-button", { hasText: /demo/i }).waitFor({ timeout: 30_000 });

  await view.locator("textarea.composer-input").fill("Show me a subagent at work.");
  await view.locator("textarea.composer-input").press("Enter");
  const child = view.locator("article.tool section.subagent");
  await child.waitFor({ timeout: 90_000 });
  expect(await child.locator(".subagent-name").innerText()).toBe("t1 · demo-helper");
  const card = child.locator("article.approval-pending");
  await card.waitFor({ timeout: 60_000 });
  expect(await card.locator(".approval-requester").innerText()).toBe("from t1 · demo-helper");
  await expect.poll(() => child.locator(".subagent-step").innerText(), { timeout: 10_000 }).toBe("waiting for approval");
  await win.shot("subagent-approval-in-panel");

  await card.locator('button[data-decision="allow_once"]').click();
  const answer = view.locator("article.msg-assistant", { hasText: "reported: I created NOTES.md." });
  await answer.waitFor({ timeout: 60_000 });
  await expect.poll(() => win!.file("NOTES.md"), { timeout: 20_000 }).toContain("The lovia demo helper was here.");
  await expect.poll(() => child.locator(".subagent-status").innerText(), { timeout: 10_000 }).toBe("done");
  expect(await child.getByRole("button", { name: "Stop subagent t1" }).count()).toBe(0);
  await win.shot("subagent-done");
  failed = false;
});
