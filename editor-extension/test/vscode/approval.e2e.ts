/**
 * Scenarios 2 and 3, review-first edits with the offline demo: the edit's approval shows in
 * the panel card and in the diff editor. Accept from the diff editor's title action lands the
 * edit in the editor buffer and on disk, and Ctrl+Z undoes it; Reject with a reason is
 * answered by the agent's next message.
 */
import { afterEach, expect, test } from "vitest";
import { recordTimings, repoPython, until, VsCodeWindow } from "./harness";

const README = "# hello project\n\nA small workspace.\n";

let win: VsCodeWindow | undefined;
let failed = true;

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
  failed = true;
});

/** A window whose lovia runs from the repository's Python with the default settings: edits
 * are reviewed first and land through workspace/applyEdit (the editor's undo stack). */
async function demoWindow(scenario: string): Promise<VsCodeWindow> {
  const w = new VsCodeWindow({
    scenario,
    files: { "README.md": README, "main.py": "print('hi')\n" },
    machineSettings: { "lovia.pythonPath": repoPython() },
  });
  w.installExtension();
  await w.start();
  const view = await w.openPanel();
  await view.getByRole("button", { name: "Try the offline demo" }).click({ timeout: 90_000 });
  await view.locator(".model-button", { hasText: /demo/i }).waitFor({ timeout: 30_000 });
  return w;
}

/** Text of both sides of the visible diff editor. */
async function diffText(w: VsCodeWindow): Promise<string> {
  const sides = await w.page.locator(".monaco-diff-editor .view-lines").allInnerTexts();
  return sides.join("\n").replace(/\u00a0/g, " ");
}

test("Accept from the diff editor's title lands the demo's edit in the buffer and on disk; Ctrl+Z undoes it", async () => {
  win = await demoWindow("2-accept-undo");
  const view = win.webview();
  await win.openFile("README.md");
  await expect.poll(() => win!.editorText(), { timeout: 15_000 }).toContain("# hello project");

  await view.locator("textarea.composer-input").fill("Tidy up the README.");
  await view.locator("textarea.composer-input").press("Enter");
  const card = view.locator("article.approval-pending");
  await card.waitFor({ timeout: 90_000 });
  const cardAt = Date.now();
  await expect.poll(() => card.locator(".diff").innerText(), { timeout: 10_000 }).toContain("tidied by lovia");
  await until("the diff editor's content", async () => (await diffText(win!)).includes("tidied by lovia"), 30_000, 50);
  const diffMs = Date.now() - cardAt;
  await win.shot("approval-card-and-diff-editor");
  recordTimings({ diffEditorContentAfterApprovalCardMs: diffMs });

  await win.page.locator('.editor-group-container.active .editor-actions [aria-label^="Accept Change"]').first().click();
  await view.locator("article.msg-assistant", { hasText: "offline demo model" }).waitFor({ timeout: 60_000 });
  await expect.poll(() => win!.file("README.md"), { timeout: 20_000 }).toContain("# hello project — tidied by lovia");
  // The README editor shows the new text.
  await win.page.locator('.tabs-container .tab[aria-label^="README.md"]').first().click();
  await expect.poll(() => win!.editorText(), { timeout: 10_000 }).toContain("# hello project — tidied by lovia");
  await win.shot("accepted");

  await win.page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  await win.page.keyboard.press("Control+Z");
  await expect.poll(() => win!.editorText(), { timeout: 10_000 }).not.toContain("tidied by lovia");
  await expect.poll(() => win!.editorText(), { timeout: 15_000 }).toContain("# hello project");
  await win.shot("undone");
  failed = false;
});

test("Reject with a reason in the card: the agent's next message reacts to it, the file is unchanged", async () => {
  win = await demoWindow("3-reject-reason");
  const view = win.webview();
  await view.locator("textarea.composer-input").fill("Tidy up the README.");
  await view.locator("textarea.composer-input").press("Enter");
  const card = view.locator("article.approval-pending");
  await card.waitFor({ timeout: 90_000 });
  await card.locator("input.reason").fill("keep the title as it is");
  await win.shot("rejecting-with-reason");
  await card.locator('button[data-decision="reject_once"]').click();
  const answer = view.locator("article.msg-assistant", { hasText: "you rejected my edit" });
  await answer.waitFor({ timeout: 60_000 });
  expect(await answer.innerText()).toContain("keep the title as it is");
  await win.shot("agent-reacts");
  // The diff editor closed with the decision; the file never changed.
  await expect.poll(() => win!.page.locator(".monaco-diff-editor").count(), { timeout: 10_000 }).toBe(0);
  expect(win.file("README.md")).toBe(README);
  failed = false;
});

test("a dirty buffer: the agent reads the unsaved text and its edit lands on top of it", async () => {
  win = await demoWindow("8-dirty-buffer");
  const view = win.webview();
  await win.openFile("README.md");
  await win.page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  await win.page.keyboard.press("Control+Home");
  await win.page.keyboard.type("# unsaved title");
  await win.page.keyboard.press("Enter");
  await win.page.keyboard.press("Enter");
  await win.page.locator('.tabs-container .tab.dirty[aria-label^="README.md"]').first().waitFor({ timeout: 10_000 });
  expect(win.file("README.md")).toBe(README); // not saved
  await win.shot("dirty-buffer");

  await view.locator("textarea.composer-input").fill("Tidy up the README.");
  await view.locator("textarea.composer-input").press("Enter");
  const card = view.locator("article.approval-pending");
  await card.waitFor({ timeout: 90_000 });
  // The proposal is based on the unsaved first line, not the one on disk.
  await expect.poll(() => card.locator(".diff").innerText(), { timeout: 10_000 }).toContain("# unsaved title — tidied by lovia");
  await win.shot("proposal-from-unsaved-text");
  await card.locator('button[data-decision="allow_once"]').click();
  await view.locator("article.msg-assistant", { hasText: "offline demo model" }).waitFor({ timeout: 60_000 });
  await win.page.locator('.tabs-container .tab[aria-label^="README.md"]').first().click();
  await expect.poll(() => win!.editorText(), { timeout: 10_000 }).toContain("# unsaved title — tidied by lovia");
  const text = await win.editorText();
  expect(text).toContain("# hello project"); // the rest of the buffer is kept
  await win.shot("edit-on-top-of-unsaved");
  failed = false;
});
