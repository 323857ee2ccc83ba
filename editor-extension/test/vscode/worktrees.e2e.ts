/**
 * Scenario: two agents in git worktrees of their own (issue 27). Two demo runs start from the
 * Worktree button beside Send, each edits README.md in its worktree while the workspace's file
 * stays as it is; the Agents view lists both with status, elapsed time and files changed. One
 * opens in the panel; "Apply Agent Run and Discard the Others" reviews its change in a diff
 * editor and lands it, and the other's worktree and branch are gone.
 */
import { execFileSync } from "node:child_process";
import { afterEach, expect, test } from "vitest";
import { repoPython, sleep, until, VsCodeWindow } from "./harness";

const README = "# hello project\n\nA small workspace.\n";

let win: VsCodeWindow | undefined;
let failed = true;

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
  failed = true;
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-C", cwd, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** Run a palette command by its title (focus in the workbench, not the webview). */
async function command(w: VsCodeWindow, title: string): Promise<void> {
  await w.page.keyboard.press("F1");
  const input = w.page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 20_000 });
  await input.fill(`>${title}`);
  await w.page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout: 20_000 });
  await sleep(300);
  await w.page.keyboard.press("Enter");
}

test("two demo agents in worktrees: one is reviewed and applied, the other discarded with it", async () => {
  win = new VsCodeWindow({
    scenario: "12-worktree-agents",
    files: { "README.md": README, "main.py": "print('hi')\n" },
    machineSettings: { "lovia.pythonPath": repoPython() },
    // The runs write their worktrees without asking: this scenario is about landing them.
    userSettings: { "lovia.permissions.write": "allow" },
  });
  const ws = win.workspace;
  git(ws, "init", "-q", "-b", "main");
  git(ws, "add", "-A");
  git(ws, "-c", "user.name=Test", "-c", "user.email=test@example.invalid", "commit", "-q", "-m", "initial");
  win.installExtension();
  await win.start();
  const view = await win.openPanel();
  await view.getByRole("button", { name: "Try the offline demo" }).click({ timeout: 90_000 });
  await view.locator(".model-button", { hasText: /demo/i }).waitFor({ timeout: 30_000 });

  const composer = view.locator("textarea.composer-input");
  for (const variant of ["variant A", "variant B"]) {
    await composer.fill(`Tidy up the README "${variant}"`);
    await view.getByRole("button", { name: "New agent in a worktree" }).click();
    await expect.poll(() => composer.inputValue(), { timeout: 10_000 }).toBe("");
  }

  // A wider side bar, so that the rows show their status line beside the prompt.
  const sidebar = await win.page.locator(".part.sidebar").boundingBox();
  if (sidebar) {
    const edge = { x: sidebar.x + sidebar.width + 1, y: sidebar.y + sidebar.height / 2 };
    await win.page.mouse.move(edge.x, edge.y);
    await win.page.mouse.down();
    await win.page.mouse.move(edge.x + 260, edge.y, { steps: 8 });
    await win.page.mouse.up();
  }

  // Both rows in the Agents view, finished, each with the one file it changed.
  // The Agents view's rows (a quick pick's rows are list rows too, outside any view pane).
  const agentRows = () => win!.page.locator(".pane-body .monaco-list-row[aria-label*='variant']");
  const row = (variant: string) => win!.page.locator(`.pane-body .monaco-list-row[aria-label*='${variant}']`).first();
  for (const variant of ["variant A", "variant B"]) {
    await expect.poll(async () => (await row(variant).getAttribute("aria-label").catch(() => "")) ?? "", { timeout: 120_000 }).toMatch(/completed · \d+s · 1 file/);
  }
  // The workspace's file is untouched; each run's worktree has its own change.
  expect(win.file("README.md")).toBe(README);
  const worktrees = git(ws, "worktree", "list", "--porcelain");
  expect(worktrees.match(/^worktree /gm)?.length).toBe(3);
  expect(git(ws, "branch", "--list", "lovia/*").trim().split("\n")).toHaveLength(2);
  // Expanded, a run shows the files it changed.
  await row("variant A").locator(".monaco-tl-twistie").click();
  await win.page.locator(".pane-body .monaco-list-row[aria-label*='README.md']").first().waitFor({ timeout: 15_000 });
  await win.shot("agents-view-two-runs");

  // Open run A in the panel: its transcript, in its own session.
  await row("variant A").click();
  await view.locator("article.msg-user", { hasText: 'Tidy up the README "variant A"' }).waitFor({ timeout: 30_000 });
  await view.locator("article.msg-assistant", { hasText: "offline demo model" }).waitFor({ timeout: 30_000 });
  await win.shot("run-a-in-panel");

  // Apply A (selected in the view) and discard the other candidate in the same flow.
  await row("variant A").click();
  await command(win, "lovia: Apply Agent Run and Discard the Others");
  const picks = win.page.locator(".quick-input-widget");
  await picks.getByText("variant B").first().waitFor({ timeout: 20_000 });
  await sleep(300);
  await win.page.keyboard.press("Enter");

  // The review: the workspace's README against what applying writes.
  const reviewTab = win.page.locator('.tabs-container .tab[aria-label*="review"]');
  await reviewTab.first().waitFor({ timeout: 30_000 });
  await until(
    "the review's diff",
    async () => (await win!.page.locator(".monaco-diff-editor .view-lines").allInnerTexts()).join("\n").replace(/\u00a0/g, " ").includes("# hello project — variant A"),
    30_000,
  );
  await win.shot("apply-review");
  await win.page.locator('.editor-group-container.active .editor-actions [aria-label^="Apply Reviewed Changes"]').first().click();

  await expect.poll(() => win!.file("README.md"), { timeout: 30_000 }).toBe("# hello project — variant A\n\nA small workspace.\n");
  await until("both worktrees gone", () => (git(ws, "worktree", "list", "--porcelain").match(/^worktree /gm)?.length ?? 0) === 1, 30_000);
  expect(git(ws, "branch", "--list", "lovia/*").trim()).toBe("");
  await until("the Agents view is empty", async () => (await agentRows().count()) === 0, 30_000);
  await win.page.getByRole("button", { name: "New Agent in a Worktree" }).waitFor({ timeout: 10_000 });
  await until("the review closed", async () => (await reviewTab.count()) === 0, 15_000);
  await win.shot("applied-and-discarded");
  failed = false;
});
