/**
 * Scenario 1, the whole first run: a fresh user-data dir and no lovia.pythonPath. The
 * extension offers "Install lovia", installs the bundled wheel into a private venv (its
 * dependencies from the package index), and the empty panel's "Try the offline demo" runs the
 * demo agent to its answer. The time from `--install-extension` to that answer is recorded.
 */
import { statSync } from "node:fs";
import { afterEach, expect, test } from "vitest";
import { recordTimings, VSIX, VsCodeWindow } from "./harness";

let win: VsCodeWindow | undefined;
let failed = true;

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
});

test("a fresh VS Code installs lovia from the bundled wheel, then runs the offline demo", async () => {
  win = new VsCodeWindow({
    scenario: "1-first-run",
    files: { "README.md": "# hello project\n\nA small workspace.\n", "main.py": "print('hi')\n" },
  });
  win.installExtension();
  await win.start();
  const view = await win.openPanel();
  await win.shot("panel-opened");

  const install = win.notificationButton("Install lovia");
  await install.waitFor({ timeout: 90_000 });
  await win.shot("install-offered");
  await install.click();
  await win.page.locator(".notifications-toasts").getByText("lovia: Installing lovia").first().waitFor({ timeout: 30_000 }).catch(() => undefined);
  await win.shot("installing");

  const demo = view.getByRole("button", { name: "Try the offline demo" });
  await demo.waitFor({ timeout: 240_000 });
  await win.shot("empty-panel-no-model");
  await demo.click();
  await view.locator(".model-button", { hasText: /demo/i }).waitFor({ timeout: 30_000 });

  await view.locator("textarea.composer-input").fill("Show me what you can do.");
  await view.locator("textarea.composer-input").press("Enter");
  // The demo edits README.md; when writes ask (review-first), accept in the card.
  const approval = view.locator("article.approval-pending");
  const answer = view.locator("article.msg-assistant", { hasText: "offline demo model" });
  await answer.or(approval).first().waitFor({ timeout: 90_000 });
  if (await approval.isVisible()) {
    await win.shot("approval");
    await approval.locator('button[data-decision="allow_once"]').click();
  }
  await answer.waitFor({ timeout: 60_000 });
  const firstAnswerMs = Date.now() - win.installStartedAt;
  await win.shot("first-answer");

  expect(win.file("README.md")).toContain("tidied by lovia");
  recordTimings({
    installToFirstDemoAnswerSeconds: Math.round(firstAnswerMs / 100) / 10,
    vsixBytes: statSync(VSIX).size,
    measuredAt: new Date().toISOString(),
  });
  failed = false;
});
