/**
 * Scenario 9, restore points: a run edits two files (both open in editors) and runs a shell
 * command that creates and deletes files. "Compare" shows what changed since the prompt;
 * "Restore to here" previews the restore in a multi-file diff view, its Confirm title action
 * restores: the disk and the open editors hold the old text again, the created file is gone,
 * the deleted one is back, and the prompt returns to the composer (the conversation was cut).
 */
import { afterEach, expect, test } from "vitest";
import { recordTimings, repoPython, until, VsCodeWindow } from "./harness";

const APP = "def total(items):\n    return sum(items)\n";
const UTIL = "RATE = 1\n";
const OLD_NOTE = "# old notes\n";

const AGENTS_PY = `
from lovia import Agent
from lovia.testing import ScriptedProvider, call, text

editor = Agent(
    name="editor",
    instructions="A scripted test agent.",
    model=ScriptedProvider([
        call("edit_file", {"path": "src/app.py", "old": "sum(items)", "new": "round(sum(items), 2)"}, call_id="e1"),
        call("write_file", {"path": "src/util.py", "content": "RATE = 2\\nBONUS = 3\\n"}, call_id="w1"),
        call("shell", {"command": "mkdir -p gen && echo made > gen/new.txt && rm notes/old.md"}, call_id="s1"),
        text("Refactored: app.py and util.py changed, gen/new.txt made, notes/old.md removed."),
    ]),
)
`;

let win: VsCodeWindow | undefined;
let failed = true;

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
  failed = true;
});

test("Restore to here puts the files back on disk and in the open editors, and the prompt back in the composer", async () => {
  win = new VsCodeWindow({
    scenario: "9-restore-to-here",
    files: { "agents.py": AGENTS_PY, "src/app.py": APP, "src/util.py": UTIL, "notes/old.md": OLD_NOTE },
    machineSettings: { "lovia.pythonPath": repoPython() },
    userSettings: {
      "lovia.agent": "agents.py:editor",
      // No approvals in this scenario: writes and shell commands run at once.
      "lovia.permissions.preset": "trusted",
      "lovia.permissions.write": "allow",
    },
  });
  const w = win;
  w.installExtension();
  await w.start();
  const view = await w.openPanel();
  await w.openFile("src/util.py");
  await w.openFile("src/app.py");
  await expect.poll(() => w.editorText(), { timeout: 15_000 }).toContain("return sum(items)");

  await view.locator("textarea.composer-input").fill("Refactor the app.");
  await view.locator("textarea.composer-input").press("Enter");
  await view.locator("article.msg-assistant", { hasText: "Refactored" }).waitFor({ timeout: 120_000 });
  await expect.poll(() => w.file("src/app.py"), { timeout: 20_000 }).toContain("round(sum(items), 2)");
  // the run's files reach the disk as the editor saves them, one by one
  await expect.poll(() => w.exists("gen/new.txt") && w.file("gen/new.txt"), { timeout: 20_000 }).toBe("made\n");
  await expect.poll(() => w.file("src/util.py"), { timeout: 20_000 }).toBe("RATE = 2\nBONUS = 3\n");
  await expect.poll(() => w.exists("notes/old.md"), { timeout: 20_000 }).toBe(false);
  await expect.poll(() => w.editorText(), { timeout: 15_000 }).toContain("round(sum(items), 2)");

  const prompt = view.locator("article.msg-user", { hasText: "Refactor the app." });
  const restore = prompt.getByRole("button", { name: "Restore to here" });
  await restore.waitFor({ timeout: 30_000 });
  await w.shot("run-done-restore-to-here");

  // Compare: what changed since the prompt, the files as they are now on the right.
  await prompt.getByRole("button", { name: "Compare" }).click();
  const compareTab = w.page.locator('.tabs-container .tab[aria-label^="Changes since"]');
  await compareTab.waitFor({ timeout: 30_000 });
  await until("the compare view's files", async () => (await w.page.locator(".editor-group-container.active").innerText()).includes("util.py"), 30_000);
  await w.shot("compare-with-checkpoint");
  await compareTab.first().click({ button: "middle" });
  await until("compare view closed", async () => (await compareTab.count()) === 0, 15_000);

  const clickedAt = Date.now();
  await restore.click();
  const restoreTab = w.page.locator('.tabs-container .tab[aria-label^="Restore to"]');
  await restoreTab.waitFor({ timeout: 30_000 });
  await until("the restore preview's files", async () => (await w.page.locator(".editor-group-container.active").innerText()).includes("app.py"), 30_000);
  const previewMs = Date.now() - clickedAt;
  // The choices wait in a quick pick that stays open while the diff is reviewed.
  const choices = w.page.locator(".quick-input-widget");
  await choices.getByText("Restore Files & Conversation").waitFor({ timeout: 15_000 });
  expect(await choices.innerText()).toContain("Restore 4 files to how they were before “Refactor the app.”?");
  // Looking through the diff (focus in it) leaves the choices open.
  await w.page.locator(".editor-group-container.active .view-lines", { hasText: "RATE = 1" }).first().click();
  expect(await choices.isVisible()).toBe(true);
  await w.shot("restore-preview-multi-diff");

  const confirm = w.page.locator('.editor-group-container.active .editor-actions [aria-label^="Confirm Restore"]').first();
  await confirm.click();
  await until("files restored", () => w.file("src/app.py") === APP, 30_000);
  const restoredMs = Date.now() - clickedAt;
  expect(w.file("src/util.py")).toBe(UTIL);
  expect(w.file("notes/old.md")).toBe(OLD_NOTE);
  expect(w.exists("gen/new.txt")).toBe(false);
  await until("preview closed", async () => (await restoreTab.count()) === 0, 15_000);
  expect(await choices.isVisible()).toBe(false);

  // The open editors show the restored text.
  await w.page.locator('.tabs-container .tab[aria-label^="app.py"]').first().click();
  await expect.poll(() => w.editorText(), { timeout: 15_000 }).toContain("return sum(items)");
  expect(await w.editorText()).not.toContain("round(");
  await w.page.locator('.tabs-container .tab[aria-label^="util.py"]').first().click();
  await expect.poll(() => w.editorText(), { timeout: 15_000 }).toContain("RATE = 1");
  expect(await w.editorText()).not.toContain("BONUS");
  expect(await w.page.locator(".tabs-container .tab.dirty").count()).toBe(0);

  // The conversation went back to before the prompt, which is in the composer to edit.
  await expect.poll(() => view.locator("textarea.composer-input").inputValue(), { timeout: 15_000 }).toBe("Refactor the app.");
  expect(await view.locator("article.msg-user", { hasText: "Refactor the app." }).count()).toBe(0);
  await w.shot("restored");
  recordTimings({ restorePreviewOpenMs: previewMs, restoreConfirmedToDiskMs: restoredMs });
  failed = false;
});
