/**
 * The composer's "New agent in a worktree" button (issue 27) in the built webview, in
 * headless Chromium: it posts the composer's text as a `newWorktreeAgent` intent (never as a
 * steer, even while the shown run is live), with the composer's mentions, and clears it.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatViewState } from "../../src/chat/messages";
import { ViewSync } from "../../src/chat/viewSync";
import { createRunView } from "../../src/protocol";
import { artifacts, deliver, openWebview, validIntents, type WebviewPage } from "./page";

let web: WebviewPage;
let page: Page;
const sync = new ViewSync();

function state(extra: Partial<ChatViewState> = {}): ChatViewState {
  const run = createRunView("run_01", "ses_1");
  return {
    server: { state: "running" },
    trusted: true,
    sessions: [],
    sessionId: "ses_1",
    sessionTitle: "Fix cart total",
    runs: [run],
    pendingSteers: [],
    childRuns: [],
    busy: false,
    model: { kind: "demo", label: "Offline demo" },
    ...extra,
  };
}

async function postState(s: ChatViewState): Promise<void> {
  const message = sync.next(s);
  if (message) await deliver(page, message);
}

async function posted(): Promise<unknown[]> {
  const all = await page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted.splice(0));
  return validIntents(all).filter((m) => m.type !== "scrolled" && m.type !== "ready");
}

beforeAll(async () => {
  web = await openWebview();
  page = web.page;
  await web.load("dark");
  expect(web.errors).toEqual([]);
});

afterAll(async () => {
  await web?.close();
});

describe("the composer's worktree button", () => {
  const button = () => page.getByRole("button", { name: "New agent in a worktree" });
  const textarea = () => page.locator("textarea.composer-input");

  it("sits beside Send and posts the composer's text as a new worktree agent", async () => {
    await postState(state());
    await posted();
    expect(await page.locator(".composer-buttons button").allTextContents()).toEqual(["Stop", "Worktree", "Send"]);
    await textarea().fill('Tidy up the README "variant A"');
    await page.screenshot({ path: `${artifacts}/composer-worktree-button.png` });
    await button().click();
    expect(await posted()).toEqual([{ type: "newWorktreeAgent", text: 'Tidy up the README "variant A"' }]);
    expect(await textarea().inputValue()).toBe("");
  });

  it("does nothing without text, and is off while the server is not running", async () => {
    await button().click();
    expect(await posted()).toEqual([]);
    expect(await textarea().evaluate((el) => el === document.activeElement)).toBe(true);
    await postState(state({ server: { state: "starting" } }));
    expect(await button().isDisabled()).toBe(true);
    await postState(state());
    expect(await button().isDisabled()).toBe(false);
  });

  it("starts a new agent, not a steer, while the shown run is live", async () => {
    const live = createRunView("run_live", "ses_1");
    live.status = "running";
    await postState(state({ runs: [live], liveRunId: "run_live" }));
    expect(await page.locator("button.send").textContent()).toBe("Steer");
    await textarea().fill("Try it with a cache instead");
    await button().click();
    expect(await posted()).toEqual([{ type: "newWorktreeAgent", text: "Try it with a cache instead" }]);
  });
});
