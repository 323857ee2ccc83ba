/**
 * Loads the built chat webview (dist/webview.js + the page the extension serves) in
 * headless Chromium, replays a recorded event stream through the real reducer, and
 * checks what a person would see and what the buttons post.
 */
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatViewState } from "../../src/chat/messages";
import { ViewSync } from "../../src/chat/viewSync";
import { applyEvent, createRunView, type LoviaEvent, type RunView } from "../../src/protocol";
import { hunksOf } from "../../src/diff/hunks";
import { longSession } from "../../bench/longSession";
import { artifacts, deliver, openWebview, root, validIntents, type WebviewPage } from "./page";

const fixture = JSON.parse(readFileSync(`${root}test/fixtures/run-events.json`, "utf8")) as {
  events: LoviaEvent[];
  finish: LoviaEvent[];
  pendingApprovalId: string;
};

let web: WebviewPage;
let page: Page;

function baseState(run: RunView, extra: Partial<ChatViewState> = {}): ChatViewState {
  return {
    server: { state: "running" },
    trusted: true,
    sessions: [
      { sessionId: run.sessionId, title: "Fix cart total", updatedAt: 1764489600000, lastRunId: run.runId, lastRunStatus: run.status, resumable: false, children: [] },
      { sessionId: "ses_old", title: "Refactor checkout flow", updatedAt: 1764400000000, lastRunId: "run_old", lastRunStatus: "interrupted", resumable: true, children: [] },
    ],
    sessionId: run.sessionId,
    sessionTitle: "Fix cart total",
    runs: [run],
    ...(run.status === "running" ? { liveRunId: run.runId } : {}),
    pendingSteers: [],
    childRuns: [],
    busy: false,
    model: { kind: "setting", label: "openai:gpt-4.1-mini" },
    ...extra,
  };
}

/** What the extension posts for this state (a reset first, then patches), as the chat view does. */
const sync = new ViewSync();
const sizes: number[] = [];

async function postState(state: ChatViewState): Promise<void> {
  const message = sync.next(state);
  if (!message) return;
  const json = JSON.stringify(message);
  sizes.push(json.length);
  await deliver(page, JSON.parse(json) as unknown);
}

async function scrollToBottom(): Promise<void> {
  await page.evaluate(() => {
    const t = document.querySelector("main.transcript")!;
    t.scrollTop = t.scrollHeight;
  });
}

/** What the UI posted, without the scroll reports (layout moves the transcript now and then). */
async function posted(): Promise<unknown[]> {
  const all = await page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted.slice());
  return validIntents(all).filter((m) => m.type !== "scrolled");
}

async function clearPosted(): Promise<void> {
  await page.evaluate(() => {
    (window as unknown as { __posted: unknown[] }).__posted.length = 0;
  });
}

/** Replay events one by one, posting the folded state after each (as the extension streams it). */
async function replay(events: LoviaEvent[], run: RunView): Promise<void> {
  for (const e of events) {
    applyEvent(run, e);
    await postState(baseState(run));
  }
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

describe("chat webview in Chromium", () => {
  const run = createRunView("run_01", "ses_7f3a");

  it("renders the replayed transcript with markdown, collapsed reasoning and tool cards", async () => {
    await replay(fixture.events, run);
    const transcript = page.locator("main.transcript");
    await expect.poll(() => transcript.locator(".msg-user").first().textContent()).toContain("The cart total ignores quantities");
    const first = transcript.locator(".msg-assistant").first();
    expect(await first.locator("code").first().textContent()).toBe("total()");
    expect(await first.locator("strong").textContent()).toBe("src/cart.js");
    expect(await transcript.locator(".msg-assistant pre code").first().textContent()).toContain("sum += item.price * item.quantity;");

    const reasoning = transcript.locator("details.reasoning");
    expect(await reasoning.count()).toBe(1);
    expect(await reasoning.getAttribute("open")).toBeNull();
    expect(await reasoning.locator("summary").textContent()).toBe("Reasoning");

    // The shell tool card: icon, title, command, streamed output with stderr marked, status.
    const shell = transcript.locator("article.tool-execute");
    expect(await shell.locator(".tool-title").textContent()).toBe("Run npm test");
    expect(await shell.locator(".tool-icon svg").count()).toBe(1);
    expect(await shell.locator(".tool-command").textContent()).toBe("$ npm test");
    expect(await shell.locator(".tool-output").textContent()).toContain("✔ total rounds to cents");
    expect(await shell.locator(".tool-output .stderr").textContent()).toContain("ExperimentalWarning");
    expect(await shell.locator(".tool-status").textContent()).toBe("done");

    // The edit tool's result shows the diff.
    const edit = transcript.locator("article.tool-edit").first();
    expect(await edit.locator(".diff-add").allTextContents()).toEqual(["+    sum += item.price * item.quantity;", "+  return Math.round(sum * 100) / 100;"]);
    expect(await edit.locator(".diff-del").allTextContents()).toEqual(["-    sum += item.price;", "-  return sum;"]);
  });

  it("opens locations in the editor when a tool's location is clicked", async () => {
    await clearPosted();
    await page.locator(".tool-read button.location").click();
    expect(await posted()).toEqual([{ type: "openLocation", uri: "file:///home/dev/shop/src/cart.js", line: 1 }]);
  });

  it("shows the todo list and the context meter", async () => {
    const todos = page.locator("section.todos");
    expect(await todos.locator(".section-title").textContent()).toBe("Todo · 2/3");
    expect(await todos.locator("li.todo").count()).toBe(3);
    expect(await todos.locator("li.todo-in_progress .todo-text").textContent()).toBe("Running npm test");
    expect(await todos.locator("li.todo-completed").count()).toBe(2);
    const meter = page.locator('[role="meter"]');
    expect(await meter.getAttribute("aria-valuenow")).toBe("5532");
    expect(await page.locator(".usage-text").textContent()).toContain("5.5k / 128k context");
  });

  it("shows tokens only, never null, when the model's context window is unknown", async () => {
    const unknown = createRunView("run_usage", "ses_usage");
    applyEvent(unknown, { sessionId: "ses_usage", runId: "run_usage", seq: 1, ts: 1, kind: "run.started", prompt: "hi", cwd: "/w", model: "lovia:demo", agent: "demo", resumed: false } as LoviaEvent);
    applyEvent(unknown, { sessionId: "ses_usage", runId: "run_usage", seq: 2, ts: 2, kind: "usage.updated", inputTokens: 1, outputTokens: 2, contextTokens: 0, contextWindow: null } as unknown as LoviaEvent);
    await postState(baseState(unknown));
    const text = (await page.locator(".usage-text").textContent()) ?? "";
    expect(text).toBe("↑1 ↓2");
    expect(text).not.toContain("null");
    expect(await page.locator('[role="meter"]').count()).toBe(0);
    await postState(baseState(run));
  });

  it("shows each run's cost and the session's when the model's price is known", async () => {
    const ev = (r: RunView, seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_cost", runId: r.runId, seq, ts: seq, ...e } as unknown as LoviaEvent);
    const first = createRunView("run_c1", "ses_cost");
    const second = createRunView("run_c2", "ses_cost");
    ev(first, 1, { kind: "run.started", prompt: "a", cwd: "/w", model: "openai:gpt-4.1-mini", agent: "a", resumed: false });
    ev(first, 2, { kind: "run.finished", status: "completed", resumable: false, usage: { inputTokens: 12000, outputTokens: 800, cacheReadTokens: 0, contextTokens: 6000, contextWindow: 128000, costUsd: 0.00608 } });
    ev(second, 1, { kind: "run.started", prompt: "b", cwd: "/w", model: "openai:gpt-4.1-mini", agent: "a", resumed: false });
    ev(second, 2, { kind: "usage.updated", inputTokens: 30000, outputTokens: 2000, cacheReadTokens: 0, contextTokens: 9000, contextWindow: 128000, costUsd: 0.0152 });
    await postState({ ...baseState(second), runs: [first, second] });
    const text = page.locator(".usage-text");
    await expect.poll(() => text.textContent()).toBe("9.0k / 128k context · ↑30k ↓2.0k · $0.015 · session $0.021");
    expect(await page.locator(".usage").getAttribute("title")).toContain("this run $0.015 · this session $0.021");
    await postState(baseState(run));
  });

  it("shows the cached share of input and the server's session cost once the prompt cache is in play", async () => {
    const ev = (r: RunView, seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_cache", runId: r.runId, seq, ts: seq, ...e } as unknown as LoviaEvent);
    const r = createRunView("run_cache", "ses_cache");
    ev(r, 1, { kind: "run.started", prompt: "a", cwd: "/w", model: "anthropic:claude-sonnet-4-5", agent: "a", resumed: false });
    // The first turn only writes the cache: 0% read so far, but caching is visibly at work.
    ev(r, 2, { kind: "usage.updated", inputTokens: 4100, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 4000, contextTokens: 4100, contextWindow: 200000, costUsd: 0.0153, sessionCostUsd: 0.0153, turn: { inputTokens: 4100, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 4000 } });
    await postState({ ...baseState(r), runs: [r] });
    const text = page.locator(".usage-text");
    await expect.poll(() => text.textContent()).toBe("4.1k / 200k context · ↑4.1k ↓20 · 0% cached · $0.015");
    // The second reads it back. The session's cost is the server's (earlier runs this view never loaded).
    ev(r, 3, { kind: "usage.updated", inputTokens: 22500, outputTokens: 60, cacheReadTokens: 18400, cacheWriteTokens: 4100, contextTokens: 18400, contextWindow: 200000, costUsd: 0.0346, sessionCostUsd: 0.5, turn: { inputTokens: 18400, outputTokens: 40, cacheReadTokens: 18000, cacheWriteTokens: 100 } });
    await postState({ ...baseState(r), runs: [r] });
    await expect.poll(() => text.textContent()).toBe("18k / 200k context · ↑23k ↓60 · 82% cached · $0.035 · session $0.500");
    const title = (await page.locator(".usage").getAttribute("title")) ?? "";
    expect(title).toContain("18400 read from the prompt cache, 4100 written to it · last turn 98% cached");
    expect(title).toContain("this run $0.035 · this session $0.500");
    // No cache reads or writes (caching off, or a provider without it): no share is claimed.
    const plain = createRunView("run_plain", "ses_plain");
    ev(plain, 1, { kind: "usage.updated", inputTokens: 900, outputTokens: 9, cacheReadTokens: 0, cacheWriteTokens: 0, contextTokens: 900, contextWindow: null });
    await postState(baseState(plain));
    await expect.poll(() => text.textContent()).toBe("900 context · ↑900 ↓9");
    await postState(baseState(run));
  });

  it("keeps every card, in order, when an earlier card changes in the same update that adds a new one", async () => {
    const r = createRunView("run_order", "ses_order");
    const ev = (seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_order", runId: "run_order", seq, ts: seq, ...e } as unknown as LoviaEvent);
    ev(1, { kind: "run.started", prompt: "go", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(2, { kind: "user.message", messageId: "u1", text: "go", source: "prompt" });
    ev(3, { kind: "tool.call", toolCallId: "ca", name: "edit_file", toolKind: "edit", title: "Edit A", input: {} });
    ev(4, { kind: "tool.call", toolCallId: "cb", name: "todo_write", toolKind: "other", title: "Update B", input: {} });
    await postState(baseState(r));
    ev(5, { kind: "tool.result", toolCallId: "ca", status: "completed", content: [{ type: "text", text: "edited" }], isError: false });
    ev(6, { kind: "message.completed", messageId: "m1", text: "All done here." });
    await postState(baseState(r));
    const transcript = page.locator("main.transcript");
    await expect.poll(() => transcript.locator(".msg-assistant").count()).toBe(1);
    expect(await transcript.locator("article.tool .tool-title").allTextContents()).toEqual(["Edit A", "Update B"]);
    expect(await transcript.locator("article.tool-status-running").count()).toBe(1);
    const order = await transcript.locator(".rows").evaluate((t) => Array.from(t.children).map((c) => c.getAttribute("aria-label") ?? c.className));
    expect(order).toEqual(["Your message", "Tool: Edit A", "Tool: Update B", "lovia"]);
    await postState(baseState(run));
  });

  it("draws the new-session and sessions buttons once: in the panel, not again in the view title", async () => {
    expect(await page.locator('header.topbar [data-action="newSession"]').count()).toBe(1);
    expect(await page.locator('header.topbar [data-action="toggleSessions"]').count()).toBe(1);
    const manifest = JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { contributes: { menus: Record<string, { command: string }[]> } };
    const viewTitle = manifest.contributes.menus["view/title"]!.map((m) => m.command);
    expect(viewTitle).not.toContain("lovia.newSession");
    expect(viewTitle).not.toContain("lovia.openSession");
  });

  it("offers a model and the offline demo in the empty panel when no model is set up", async () => {
    const empty: ChatViewState = { ...baseState(createRunView("run_x", "ses_x")), runs: [], model: { kind: "none", label: "No model" } };
    delete empty.sessionId;
    await postState(empty);
    await clearPosted();
    expect(await page.locator("header.topbar .model-button").textContent()).toBe("No model");
    await page.locator(".empty-actions button", { hasText: "Try the offline demo" }).click();
    await page.locator(".empty-actions button", { hasText: "Choose a model" }).click();
    await page.locator("header.topbar .model-button").click();
    expect(await posted()).toEqual([{ type: "useDemo" }, { type: "chooseModel" }, { type: "chooseModel" }]);
    await page.screenshot({ path: `${artifacts}/empty-no-model.png` });
    await postState(baseState(run));
    expect(await page.locator("header.topbar .model-button").textContent()).toBe("openai:gpt-4.1-mini");
    expect(await page.locator(".empty-actions").count()).toBe(0);
  });

  it("restores the reader's scroll position when a session is first drawn, and reports scrolling", async () => {
    // A long session, drawn for the first time (as after a window reload) with a saved place.
    const long = createRunView("run_long", "ses_long");
    applyEvent(long, { sessionId: "ses_long", runId: "run_long", seq: 1, ts: 1, kind: "run.started", prompt: "long", cwd: "/w", model: "m", agent: "a", resumed: false } as LoviaEvent);
    for (let i = 0; i < 60; i++) {
      applyEvent(long, { sessionId: "ses_long", runId: "run_long", seq: i + 2, ts: i + 2, kind: "message.completed", messageId: `m${i}`, text: `paragraph ${i}\n\nmore text ${i}` } as LoviaEvent);
    }
    await postState(baseState(long, { scrollTop: 300, atBottom: false }));
    const top = await page.evaluate(() => document.querySelector<HTMLElement>(".transcript")!.scrollTop);
    expect(top).toBe(300);
    await clearPosted();
    await page.evaluate(() => {
      const t = document.querySelector<HTMLElement>(".transcript")!;
      t.scrollTop = 500;
      t.dispatchEvent(new Event("scroll"));
    });
    await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "scrolled"));
    const reports = await page.evaluate(() => (window as unknown as { __posted: { type: string }[] }).__posted.filter((m) => m.type === "scrolled"));
    expect(reports).toEqual([{ type: "scrolled", top: 500, atBottom: false }]);
    await postState(baseState(run));
  });

  it("draws a long session as a bounded window: earlier rows on demand, new ones at the end", async () => {
    const long = longSession(400, "run_big", "ses_big");
    await postState(baseState(long.run));
    const rows = page.locator("main.transcript .rows > *");
    const drawn = await rows.count();
    expect(drawn).toBeLessThanOrEqual(240);
    expect(drawn).toBeLessThan(long.run.items.length);
    const earlier = page.locator("button.show-earlier");
    expect(await earlier.isVisible()).toBe(true);
    expect(await earlier.textContent()).toContain("earlier");
    // The last row drawn is the session's last item.
    const last = long.run.items.at(-1)!;
    expect(await rows.last().getAttribute("data-key")).toBe(`run_big:${last.type}:${last.id}`);
    // The button (as a keyboard user presses it: no scrolling) draws one batch more; a pointer
    // click would first scroll it into view, which draws earlier rows by itself (below), and
    // on a slow machine moves the button away before the click lands.
    await earlier.dispatchEvent("click");
    await expect.poll(() => rows.count()).toBeGreaterThan(drawn);
    const afterClick = await rows.count();
    // Scrolling up to the top of the window draws the rows before it.
    await page.evaluate(() => {
      document.querySelector("main.transcript")!.scrollTop = 0;
    });
    await expect.poll(() => rows.count()).toBeGreaterThan(afterClick);
    // A streamed chunk redraws one row and only that row's message is posted.
    const before = sizes.length;
    long.emit({ kind: "message.delta", messageId: "m_new", text: "Still going" });
    await postState(baseState(long.run));
    await expect.poll(() => rows.last().textContent()).toContain("Still going");
    long.emit({ kind: "message.delta", messageId: "m_new", text: " — and more." });
    await postState(baseState(long.run));
    await expect.poll(() => rows.last().textContent()).toContain("Still going — and more.");
    expect(sizes.slice(before).every((n) => n < 1000)).toBe(true);
    await postState(baseState(run));
  });

  it("neutralises script injection in model text", async () => {
    const pwned = await page.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned);
    expect(pwned).toBeUndefined();
    const second = page.locator("main.transcript .msg-assistant").nth(1);
    const text = await second.textContent();
    expect(text).toContain("<script>window.__pwned = 1</script>");
    expect(text).toContain('<img src=x onerror="window.__pwned = 2">');
    expect(await page.locator("main.transcript script").count()).toBe(0);
    expect(await page.locator("main.transcript img").count()).toBe(0);
    expect(await page.locator("main.transcript [onerror]").count()).toBe(0);
    expect(await page.locator('main.transcript a[href^="javascript"]').count()).toBe(0);
    // The page's own CSP held: nothing needed blocking.
    expect(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations)).toEqual([]);
  });

  it("shows the pending approval with the event's options; its buttons post the decision", async () => {
    const card = page.locator(`article.approval[data-approval-id="${fixture.pendingApprovalId}"]`);
    expect(await card.getAttribute("role")).toBe("alertdialog");
    expect(await card.locator(".approval-title").textContent()).toBe("Create CHANGELOG.md");
    expect(await card.locator(".actions button").allTextContents()).toEqual(["Accept", "Accept always", "Reject"]);
    expect(await card.locator(".diff .badge").textContent()).toBe("new file");
    expect(await page.locator("article.approval.approval-allowed").count()).toBe(2);
    // The tool card waiting on this approval says so (no "running" spinner).
    const waiting = page.locator("article.tool.tool-status-awaiting");
    expect(await waiting.count()).toBe(1);
    expect(await waiting.locator(".tool-status").textContent()).toBe("awaiting approval");
    await scrollToBottom();
    await page.screenshot({ path: `${artifacts}/webview-approval.png` });

    await clearPosted();
    await card.locator("button.review").click();
    expect(await posted()).toEqual([{ type: "openDiff", runId: "run_01", approvalId: "ap_changelog" }]);

    // Keyboard: focus "Accept" and press Enter.
    await clearPosted();
    await card.getByRole("button", { name: "Accept", exact: true }).focus();
    await page.keyboard.press("Enter");
    expect(await posted()).toEqual([{ type: "approve", runId: "run_01", approvalId: "ap_changelog", decision: "allow_once" }]);
    expect(await card.locator(".actions button:disabled").count()).toBe(3);

    // A re-render (new rev) enables it again; a rejection carries the typed reason.
    const item = run.items.find((i) => i.id === fixture.pendingApprovalId)!;
    run.rev += 1000;
    item.rev = run.rev;
    await postState(baseState(run));
    await clearPosted();
    await card.locator("input.reason").fill("Keep the changelog in docs/");
    await card.getByRole("button", { name: "Reject", exact: true }).click();
    expect(await posted()).toEqual([
      { type: "approve", runId: "run_01", approvalId: "ap_changelog", decision: "reject_once", message: "Keep the changelog in docs/" },
    ]);
  });

  it("draws one card per approval: the shell command once, the decision inside the tool's card", async () => {
    const r = createRunView("run_one", "ses_one");
    const ev = (seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_one", runId: "run_one", seq, ts: seq, ...e } as unknown as LoviaEvent);
    ev(1, { kind: "run.started", prompt: "test", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(2, { kind: "tool.call", toolCallId: "sh", name: "shell", toolKind: "execute", title: "Run make check", input: { command: "make check" }, locations: [] });
    ev(3, {
      kind: "approval.requested", approvalId: "ap_sh", toolCallId: "sh", action: "shell", title: "Run make check", detail: "Run in .: make check", paths: [], command: "make check",
      options: [{ decision: "allow_once", label: "Run" }, { decision: "allow_always", label: "Always run" }, { decision: "reject_once", label: "Reject" }],
    });
    await postState(baseState(r));
    const transcript = page.locator("main.transcript");
    // the page renders the posted state on its own schedule
    await expect.poll(() => transcript.locator("article").count()).toBe(1);
    const card = transcript.locator("article.tool.approval-pending");
    expect(await card.getAttribute("role")).toBe("alertdialog");
    expect(await card.locator(".tool-command").count()).toBe(1);
    expect((await card.textContent())!.split("make check").length - 1).toBe(2); // the title and the command, no repeat
    await clearPosted();
    await card.getByRole("button", { name: "Run", exact: true }).click();
    expect(await posted()).toEqual([{ type: "approve", runId: "run_one", approvalId: "ap_sh", decision: "allow_once" }]);
    ev(4, { kind: "approval.resolved", approvalId: "ap_sh", outcome: "allowed", decision: "allow_once", by: "user" });
    ev(5, { kind: "tool.result", toolCallId: "sh", status: "completed", isError: false, content: [{ type: "text", text: "exit code: 0" }] });
    await postState(baseState(r));
    expect(await transcript.locator("article").count()).toBe(1);
    expect(await transcript.locator("article.tool .approval-outcome").textContent()).toBe("Allowed by user");
    await postState(baseState(run));
  });

  it("a change to editor configuration says so first and offers no 'always'", async () => {
    const r = createRunView("run_cfg", "ses_cfg");
    const ev = (seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_cfg", runId: "run_cfg", seq, ts: seq, ...e } as unknown as LoviaEvent);
    ev(1, { kind: "run.started", prompt: "test", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(2, { kind: "tool.call", toolCallId: "w1", name: "write_file", toolKind: "edit", title: "Write .vscode/settings.json", input: { path: ".vscode/settings.json" }, locations: [] });
    const warning = "This change alters agent or editor configuration (.vscode/settings.json). Such files can give the agent more power or run code later, so they always need your approval.";
    ev(3, {
      kind: "approval.requested", approvalId: "ap_cfg", toolCallId: "w1", action: "file.write", title: "Write .vscode/settings.json",
      detail: "The agent wants to edit .vscode/settings.json.", paths: ["/w/.vscode/settings.json"], warning,
      options: [{ decision: "allow_once", label: "Accept this change" }, { decision: "reject_once", label: "Reject" }],
    });
    await postState(baseState(r));
    const card = page.locator("main.transcript article.approval-pending");
    const alert = card.locator(".approval-warning");
    expect(await alert.getAttribute("role")).toBe("alert");
    expect(await alert.textContent()).toBe(warning);
    const buttons = await card.locator(".actions button").allTextContents();
    expect(buttons).toEqual(["Accept this change", "Reject"]);
    await page.screenshot({ path: `${artifacts}/webview-protected-approval.png` });
    await postState(baseState(run));
  });

  it("reviews an edit hunk by hunk: the posted approval carries exactly the text of the kept hunks", async () => {
    const OLD = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
    const NEW = OLD.replace("line 2\n", "line two\n").replace("line 19\n", "line nineteen\n");
    const r = createRunView("run_hunks", "ses_hunks");
    const ev = (seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_hunks", runId: "run_hunks", seq, ts: seq, ...e } as unknown as LoviaEvent);
    ev(1, { kind: "run.started", prompt: "notes", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(2, { kind: "tool.call", toolCallId: "w1", name: "write_file", toolKind: "edit", title: "Write notes.txt", input: { path: "notes.txt", content: NEW }, locations: [] });
    ev(3, {
      kind: "approval.requested", approvalId: "ap_w1", toolCallId: "w1", action: "file.write", title: "Write notes.txt", detail: "The agent wants to edit notes.txt.", paths: ["/w/notes.txt"],
      diff: [{ path: "/w/notes.txt", uri: "file:///w/notes.txt", oldText: OLD, newText: NEW }],
      options: [{ decision: "allow_once", label: "Accept" }, { decision: "reject_once", label: "Reject" }],
    });
    await postState(baseState(r));
    const card = page.locator('article.approval-pending[data-approval-id="ap_w1"]');
    const bars = card.locator(".hunk-bar");
    expect(await bars.count()).toBe(2);
    expect(await bars.locator(".hunk-label").allTextContents()).toEqual(["Hunk 1 of 2", "Hunk 2 of 2"]);
    // Each hunk's buttons carry its one id: the one the diff editor's CodeLens commands use.
    const ids = hunksOf(OLD, NEW, 0).map((hunk) => hunk.id);
    expect(await bars.locator('button[data-reject="1"]').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.hunk))).toEqual(ids);
    // Reject the second hunk: it is struck out and Accept says what it applies.
    await bars.nth(1).getByRole("button", { name: "Reject hunk 2" }).click();
    await expect.poll(() => card.locator(".hunk-rejected").count()).toBe(2);
    expect(await card.locator('button[data-decision="allow_once"]').textContent()).toBe("Accept (1 of 2 hunks)");
    await page.screenshot({ path: `${artifacts}/webview-hunk-review.png` });
    await clearPosted();
    await card.locator('button[data-decision="allow_once"]').click();
    expect(await posted()).toEqual([
      { type: "approve", runId: "run_hunks", approvalId: "ap_w1", decision: "allow_once", edits: [{ path: "/w/notes.txt", newText: OLD.replace("line 2\n", "line two\n") }] },
    ]);
    // Rejecting every hunk leaves Reject as the only answer.
    r.rev += 1;
    (r.items[1] as { rev: number }).rev = r.rev;
    await postState(baseState(r));
    await card.locator(".hunk-bar").nth(0).getByRole("button", { name: "Reject hunk 1" }).click();
    await expect.poll(() => card.locator('button[data-decision="allow_once"]').isDisabled()).toBe(true);
    // Keep it again: the full proposal is a plain accept (no edits).
    await card.locator(".hunk-bar").nth(0).getByRole("button", { name: "Keep hunk 1" }).click();
    await card.locator(".hunk-bar").nth(1).getByRole("button", { name: "Keep hunk 2" }).click();
    await clearPosted();
    await card.locator('button[data-decision="allow_once"]').click();
    expect(await posted()).toEqual([{ type: "approve", runId: "run_hunks", approvalId: "ap_w1", decision: "allow_once" }]);
    ev(4, { kind: "approval.resolved", approvalId: "ap_w1", outcome: "allowed", decision: "allow_once", by: "user", edited: true });
    await postState(baseState(r));
    expect(await page.locator('article[data-approval-id="ap_w1"] .approval-outcome').textContent()).toBe("Allowed with your changes by user");
    await postState(baseState(run));
  });

  it("draws reads and searches as one-line rows that expand", async () => {
    const r = createRunView("run_rows", "ses_rows");
    const ev = (seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_rows", runId: "run_rows", seq, ts: seq, ...e } as unknown as LoviaEvent);
    ev(1, { kind: "run.started", prompt: "look", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(2, { kind: "tool.call", toolCallId: "r1", name: "read_file", toolKind: "read", title: "Read src/a.ts", input: { path: "src/a.ts" }, locations: [{ path: "/w/src/a.ts", uri: "file:///w/src/a.ts" }] });
    ev(3, { kind: "tool.result", toolCallId: "r1", status: "completed", isError: false, content: [{ type: "text", text: "line 1\nline 2\nline 3" }] });
    ev(4, { kind: "tool.call", toolCallId: "g1", name: "grep_files", toolKind: "search", title: "Search for TODO", input: { pattern: "TODO" }, locations: [] });
    ev(5, { kind: "tool.result", toolCallId: "g1", status: "completed", isError: false, content: [{ type: "text", text: "a.ts:1: TODO one\nb.ts:2: TODO two" }] });
    await postState(baseState(r));
    const rows = page.locator("main.transcript details.tool-row");
    expect(await rows.count()).toBe(2);
    expect(await rows.locator("summary .tool-meta").allTextContents()).toEqual(["3 lines", "2 results"]);
    const first = rows.first();
    const height = (await first.boundingBox())!.height;
    expect(height).toBeLessThan(32); // one line
    expect(await first.locator(".tool-text").isVisible()).toBe(false);
    await first.locator("summary .tool-title").click();
    await expect.poll(() => first.locator(".tool-text").isVisible()).toBe(true);
    expect(await first.locator(".tool-text").textContent()).toBe("line 1\nline 2\nline 3");
    // Redrawn by a later patch, it stays open.
    r.rev += 1;
    (r.items[1] as { rev: number }).rev = r.rev;
    await postState(baseState(r));
    expect(await page.locator("main.transcript details.tool-row").first().getAttribute("open")).toBe("");
    await postState(baseState(run));
  });

  it("ends a finished run with the files it changed, +/− counts, each opening its diff", async () => {
    const r = createRunView("run_ch", "ses_ch");
    const ev = (seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_ch", runId: "run_ch", seq, ts: seq, ...e } as unknown as LoviaEvent);
    ev(1, { kind: "run.started", prompt: "edit", cwd: "/w", model: "m", agent: "a", resumed: false });
    const diff = (path: string, oldText: string | null, newText: string) => ({ type: "diff", path, uri: `file://${path}`, oldText, newText });
    ev(2, { kind: "tool.call", toolCallId: "e1", name: "edit_file", toolKind: "edit", title: "Edit a.ts", input: {}, locations: [] });
    ev(3, { kind: "tool.result", toolCallId: "e1", status: "completed", isError: false, content: [diff("/w/a.ts", "one\ntwo\n", "one\n2\n")] });
    ev(4, { kind: "tool.call", toolCallId: "e2", name: "edit_file", toolKind: "edit", title: "Edit a.ts", input: {}, locations: [] });
    ev(5, { kind: "tool.result", toolCallId: "e2", status: "completed", isError: false, content: [diff("/w/a.ts", "one\n2\n", "one\n2\nthree\n")] });
    ev(6, { kind: "tool.call", toolCallId: "w1", name: "write_file", toolKind: "edit", title: "Create b.md", input: {}, locations: [] });
    ev(7, { kind: "tool.result", toolCallId: "w1", status: "completed", isError: false, content: [diff("/w/b.md", null, "# b\n")] });
    await postState(baseState(r));
    expect(await page.locator("section.changes").count()).toBe(0); // only once the run is over
    ev(8, { kind: "run.finished", status: "completed", resumable: false, usage: { inputTokens: 1, outputTokens: 1 } });
    await postState(baseState(r));
    const changes = page.locator("section.changes");
    expect(await changes.locator(".section-title").textContent()).toBe("2 files changed +3 −1");
    expect(await changes.locator("li").allTextContents()).toEqual(["a.ts+2 −1", "b.mdnew+1 −0"]);
    await clearPosted();
    await changes.getByRole("button", { name: /a\.ts/ }).click();
    expect(await posted()).toEqual([{ type: "openChange", runId: "run_ch", path: "/w/a.ts" }]);
    await page.screenshot({ path: `${artifacts}/webview-files-changed.png` });
    await postState(baseState(run));
  });

  it("completes @ mentions in the composer, sends them as context and shows them as chips", async () => {
    const r = createRunView("run_m", "ses_m");
    const ev = (seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_m", runId: "run_m", seq, ts: seq, ...e } as unknown as LoviaEvent);
    ev(1, { kind: "run.started", prompt: "x", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(2, { kind: "run.finished", status: "completed", resumable: false, usage: { inputTokens: 1, outputTokens: 1 } });
    await postState(baseState(r));
    await clearPosted();
    const input = page.locator("textarea.composer-input");
    await input.fill("");
    await input.pressSequentially("explain @ca");
    await expect.poll(async () => (await posted()).filter((m) => (m as { type: string }).type === "mentionQuery").at(-1)).toMatchObject({ type: "mentionQuery", query: "ca" });
    const requestId = ((await posted()).filter((m) => (m as { type: string }).type === "mentionQuery").at(-1) as { requestId: number }).requestId;
    const items = [
      { kind: "file", label: "cart.js", detail: "src/cart.js", uri: "file:///w/src/cart.js" },
      { kind: "folder", label: "src/cart/", detail: "folder", uri: "file:///w/src/cart" },
      { kind: "symbol", label: "cartTotal", detail: "src/cart.js", uri: "file:///w/src/cart.js", range: { start: { line: 3, character: 0 }, end: { line: 9, character: 1 } } },
    ];
    await web.post({ type: "mentions", requestId, items } as never);
    const popup = page.locator(".mention-popup");
    await expect.poll(() => popup.locator("li").count()).toBe(3);
    expect(await popup.locator("li.active .mention-label").textContent()).toBe("cart.js");
    await input.press("ArrowDown");
    await input.press("ArrowDown");
    await input.press("Enter");
    expect(await input.inputValue()).toBe("explain @cartTotal ");
    expect(await popup.isHidden()).toBe(true);
    expect(await page.locator("form.composer .mention-chips .chip-label").allTextContents()).toEqual(["cartTotal"]);
    await input.pressSequentially("and @");
    const second = ((await posted()).filter((m) => (m as { type: string }).type === "mentionQuery").at(-1) as { requestId: number }).requestId;
    await web.post({ type: "mentions", requestId: second, items: [items[0]] } as never);
    await expect.poll(() => popup.locator("li").count()).toBe(1);
    await popup.locator("li").first().dispatchEvent("mousedown");
    expect(await input.inputValue()).toBe("explain @cartTotal and @cart.js ");
    await clearPosted();
    await input.press("Enter");
    expect(await posted()).toEqual([{ type: "send", text: "explain @cartTotal and @cart.js", mode: "prompt", context: [items[2], items[0]] }]);
    expect(await page.locator("form.composer .mention-chips .chip").count()).toBe(0);
    // The server's summaries become chips on the user message; a cut one says so.
    ev(3, { kind: "run.started", prompt: "explain", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(4, {
      kind: "user.message", messageId: "u_m", text: "explain @cartTotal and @big.log", source: "prompt",
      context: [
        { kind: "symbol", label: "cartTotal", uri: "file:///w/src/cart.js", line: 4, endLine: 10, chars: 200, truncated: false },
        { kind: "file", label: "big.log", uri: "file:///w/big.log", chars: 60000, truncated: true, note: "cut to the first 600 of 9,000 lines" },
      ],
    });
    await postState(baseState(r));
    const chips = page.locator("article.msg-user .chip");
    await expect.poll(() => chips.count()).toBe(2);
    expect(await chips.allTextContents()).toEqual(["cartTotal", "big.logcut"]);
    expect(await chips.nth(1).getAttribute("title")).toContain("cut to the first 600");
    await clearPosted();
    await chips.first().click();
    expect(await posted()).toEqual([{ type: "openLocation", uri: "file:///w/src/cart.js", line: 4 }]);
    await page.screenshot({ path: `${artifacts}/webview-mentions.png` });
    await postState(baseState(run));
  });

  it("lists the commands in a / menu with their descriptions and sources, and sends the picked one", async () => {
    const r = createRunView("run_c", "ses_c");
    const ev = (seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_c", runId: "run_c", seq, ts: seq, ...e } as unknown as LoviaEvent);
    ev(1, { kind: "run.started", prompt: "x", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(2, { kind: "run.finished", status: "completed", resumable: false, usage: { inputTokens: 1, outputTokens: 1 } });
    await postState(baseState(r));
    await clearPosted();
    const input = page.locator("textarea.composer-input");
    await input.fill("");
    await input.pressSequentially("/");
    const queries = async () => (await posted()).filter((m) => (m as { type: string }).type === "commandQuery");
    await expect.poll(async () => (await queries()).length).toBe(1);
    const requestId = ((await queries()).at(-1) as { requestId: number }).requestId;
    const items = [
      { name: "help", description: "List the commands (answered here, never sent to the model)", source: "built-in" },
      { name: "plan", description: "Plan first: explore and propose a plan, change nothing", argumentHint: "<what to plan>", source: "built-in" },
      { name: "review", description: "Review the working tree's changes (git diff), changing nothing", argumentHint: "[focus]", source: "built-in" },
      { name: "fix-issue", description: "Fix a GitHub issue", argumentHint: "[issue-number]", source: "workspace" },
      { name: "frontend:component", description: "A component", source: "workspace" },
      { name: "mine", description: "my own", source: "user" },
    ];
    await web.post({ type: "commands", requestId, items } as never);
    const menu = page.locator(".command-popup");
    await expect.poll(() => menu.locator("li").count()).toBe(6);
    expect(await menu.locator("li .command-name").allTextContents()).toEqual(["/help", "/plan", "/review", "/fix-issue", "/frontend:component", "/mine"]);
    const fix = menu.locator("li").nth(3);
    expect(await fix.locator(".command-description").textContent()).toBe("Fix a GitHub issue");
    expect(await fix.locator(".command-hint").textContent()).toBe("[issue-number]");
    expect(await fix.locator(".command-source").textContent()).toBe("workspace");
    expect(await menu.locator("li").first().locator(".command-source").count()).toBe(0);
    await input.pressSequentially("fi");
    await expect.poll(() => menu.locator("li").count()).toBe(1);
    expect(await queries()).toHaveLength(1); // narrowing does not ask again
    await input.press("Tab");
    expect(await input.inputValue()).toBe("/fix-issue ");
    expect(await menu.isHidden()).toBe(true);
    await input.pressSequentially("123");
    await clearPosted();
    await input.press("Enter");
    expect(await posted()).toEqual([{ type: "send", text: "/fix-issue 123", mode: "prompt" }]);
    // a path is a message, not a command: the menu closes at its second slash
    await input.pressSequentially("/usr/bin/python is broken");
    expect(await menu.isHidden()).toBe(true);
    await input.fill("");
    await input.pressSequentially("/");
    await expect.poll(async () => (await queries()).length).toBe(2);
    await web.post({ type: "commands", requestId: ((await queries()).at(-1) as { requestId: number }).requestId, items } as never);
    await expect.poll(() => menu.locator("li").count()).toBe(6);
    await page.screenshot({ path: `${artifacts}/webview-commands.png` });
    await input.fill("");
    await postState(baseState(run));
  });

  it("keeps a / menu answered after its line was sent closed (Enter then picks nothing)", async () => {
    const r = createRunView("run_late", "ses_late");
    const ev = (seq: number, e: Record<string, unknown>) => applyEvent(r, { sessionId: "ses_late", runId: "run_late", seq, ts: seq, ...e } as unknown as LoviaEvent);
    ev(1, { kind: "run.started", prompt: "x", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(2, { kind: "run.finished", status: "completed", resumable: false, usage: { inputTokens: 1, outputTokens: 1 } });
    await postState(baseState(r));
    await clearPosted();
    const input = page.locator("textarea.composer-input");
    await input.fill("");
    await input.pressSequentially("/help");
    const query = (await posted()).find((m) => (m as { type: string }).type === "commandQuery") as { requestId: number };
    await input.press("Enter"); // the menu has no items yet: the line is sent
    expect(await posted()).toContainEqual({ type: "send", text: "/help", mode: "prompt" });
    expect(await input.inputValue()).toBe("");
    // the server's list arrives now, for a line that is gone
    await web.post({ type: "commands", requestId: query.requestId, items: [{ name: "help", description: "List the commands", source: "built-in" }] } as never);
    expect(await page.locator(".command-popup").isHidden()).toBe(true);
    await clearPosted();
    await input.press("Enter");
    expect(await input.inputValue()).toBe("");
    expect(await posted()).toEqual([]);
    await postState(baseState(run));
  });

  it("turns the composer into a steer box with stop and withdraw while the run is live", async () => {
    const composer = page.locator("form.composer");
    expect(await composer.getAttribute("class")).toContain("steering");
    expect(await page.locator("textarea").getAttribute("placeholder")).toContain("Steer");
    expect(await composer.locator("button.send").textContent()).toBe("Steer");
    await clearPosted();
    await page.locator("textarea").fill("Also update the README");
    await page.locator("textarea").press("Enter");
    await composer.locator("button.stop").click();
    expect(await posted()).toEqual([
      { type: "send", text: "Also update the README", mode: "steer" },
      { type: "cancel" },
    ]);
    expect(await page.locator("textarea").inputValue()).toBe("");

    await postState(baseState(run, { pendingSteers: [{ runId: "run_01", messageId: "steer_9", text: "Also update the README" }] }));
    await clearPosted();
    await page.locator(".steers button", { hasText: "Withdraw" }).click();
    expect(await posted()).toEqual([{ type: "unsteer", runId: "run_01", messageId: "steer_9" }]);
  });

  it("lists sessions with resumable runs marked", async () => {
    await clearPosted();
    await page.getByRole("button", { name: "Sessions" }).click();
    const list = page.locator(".session-list");
    await expect.poll(() => list.isVisible()).toBe(true);
    expect(await list.locator("li.session").count()).toBe(2);
    const old = list.locator("li.session.resumable");
    expect(await old.locator(".session-title").textContent()).toBe("Refactor checkout flow");
    expect(await old.locator(".badge").textContent()).toBe("resumable");
    await old.getByRole("button", { name: "Resume Refactor checkout flow" }).click();
    await list.locator("li.session").first().locator("button.session-open").click();
    expect(await posted()).toEqual([
      { type: "refreshSessions" },
      { type: "resume", runId: "run_old" },
      { type: "selectSession", sessionId: "ses_7f3a" },
    ]);
    await page.getByRole("button", { name: "Sessions" }).click();
  });

  it("renders the finished run: approvals resolved, composer back to send", async () => {
    await replay(fixture.finish, run);
    await expect.poll(() => page.locator("form.composer button.send").textContent()).toBe("Send");
    expect(await page.locator("form.composer button.stop").isHidden()).toBe(true);
    expect(await page.locator("article.approval.approval-pending").count()).toBe(0);
    expect(await page.locator(`article.approval[data-approval-id="${fixture.pendingApprovalId}"] .approval-outcome`).textContent()).toBe("Allowed by user");
    expect(await page.locator("section.todos .section-title").textContent()).toBe("Todo · 3/3");
    expect(await page.locator("main.transcript .msg-assistant").last().textContent()).toContain("both tests pass");
    await scrollToBottom();
    await page.screenshot({ path: `${artifacts}/webview-completed.png` });
  });

  it("asks the agent's questions with choices and a free answer", async () => {
    const q = createRunView("run_q", "ses_7f3a");
    applyEvent(q, { sessionId: "ses_7f3a", runId: "run_q", seq: 1, ts: 1, kind: "run.started", prompt: "Set up a database", cwd: "/w", model: null, agent: "lovia:coding", resumed: false });
    applyEvent(q, { sessionId: "ses_7f3a", runId: "run_q", seq: 2, ts: 2, kind: "question.requested", questionId: "q1", text: "Which database should I use?", choices: ["SQLite", "PostgreSQL"] });
    await postState(baseState(q));
    const card = page.locator("article.question");
    expect(await card.locator(".question-text").textContent()).toBe("Which database should I use?");
    await clearPosted();
    await card.getByRole("button", { name: "PostgreSQL" }).click();
    await card.getByRole("textbox", { name: "Your answer" }).fill("SQLite for tests, PostgreSQL in prod");
    await card.getByRole("textbox", { name: "Your answer" }).press("Enter");
    expect(await posted()).toEqual([
      { type: "answer", runId: "run_q", questionId: "q1", answer: "PostgreSQL" },
      { type: "answer", runId: "run_q", questionId: "q1", answer: "SQLite for tests, PostgreSQL in prod" },
    ]);
    applyEvent(q, { sessionId: "ses_7f3a", runId: "run_q", seq: 3, ts: 3, kind: "question.answered", questionId: "q1", answer: "PostgreSQL" });
    await postState(baseState(q));
    expect(await page.locator("article.question .answer").textContent()).toBe("PostgreSQL");
    expect(await page.locator("article.question form").count()).toBe(0);
  });

  it("offers Restore to here and Compare on a prompt whose turn has a restore point, not while a run is live", async () => {
    const ev = (seq: number, kind: string, payload: object) => ({ sessionId: "ses_rp", runId: "run_rp", seq, ts: seq, kind, ...payload }) as unknown as LoviaEvent;
    const turn = createRunView("run_rp", "ses_rp");
    applyEvent(turn, ev(1, "run.started", { prompt: "Rename total()", cwd: "/w", model: null, agent: "lovia:coding", resumed: false }));
    applyEvent(turn, ev(2, "user.message", { messageId: "u_rp", text: "Rename total()", source: "prompt" }));
    await postState(baseState(turn));
    const prompt = page.locator("article.msg-user", { hasText: "Rename total()" });
    await prompt.waitFor();
    expect(await prompt.locator(".checkpoint-actions").count()).toBe(0); // no point yet: nothing to restore
    applyEvent(turn, ev(3, "checkpoint.created", { checkpointId: "rp-0000000000000001-abcdef", turnIndex: 0, label: "Rename total()", createdAt: 1, root: "/w", rootUri: "file:///w" }));
    await postState(baseState(turn));
    const restore = prompt.locator("button.restore-here");
    await restore.waitFor({ state: "attached" });
    expect(await restore.textContent()).toBe("Restore to here");
    // the run is still live: the actions are hidden (the workspace must hold still)
    expect(await restore.isVisible()).toBe(false);
    applyEvent(turn, ev(4, "run.finished", { status: "completed", usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, contextTokens: null, contextWindow: null }, resumable: false }));
    await postState(baseState(turn));
    await expect.poll(() => restore.isVisible()).toBe(true);
    await prompt.screenshot({ path: `${artifacts}/webview-restore-to-here.png` });
    await clearPosted();
    await restore.click();
    await prompt.getByRole("button", { name: "Compare" }).click();
    expect(await posted()).toEqual([
      { type: "restoreCheckpoint", runId: "run_rp", checkpointId: "rp-0000000000000001-abcdef" },
      { type: "compareCheckpoint", runId: "run_rp", checkpointId: "rp-0000000000000001-abcdef" },
    ]);
    // after a conversation restore the cut prompt comes back into the composer, once
    await postState(baseState(turn, { draft: { id: 42, text: "Rename total() to sum()" } }));
    await expect.poll(() => page.locator("textarea.composer-input").inputValue()).toBe("Rename total() to sum()");
    await page.locator("textarea.composer-input").fill("edited");
    await postState(baseState(turn, { draft: { id: 42, text: "Rename total() to sum()" } }));
    expect(await page.locator("textarea.composer-input").inputValue()).toBe("edited");
    await page.locator("textarea.composer-input").fill("");
    await postState(baseState(run));
  });

  it("shows server errors with the hint and a Set API key action", async () => {
    await postState(baseState(run, { error: { text: "No model is configured", hint: "Set lovia.model and an API key", code: -32016 } }));
    const banner = page.locator(".banner-error");
    expect(await banner.textContent()).toContain("Set lovia.model and an API key");
    await clearPosted();
    await banner.getByRole("button", { name: "Set API key" }).click();
    await banner.getByRole("button", { name: "Dismiss" }).click();
    expect(await posted()).toEqual([{ type: "setApiKey" }, { type: "dismissError" }]);
  });

  it("names the instruction files in use, each a link that opens it", async () => {
    const instructions = [
      { label: "AGENTS.md", uri: "file:///ws/AGENTS.md" },
      { label: ".github/instructions/ts.instructions.md (for **/*.ts)", uri: "file:///ws/.github/instructions/ts.instructions.md" },
    ];
    await postState(baseState(run, { instructions }));
    const line = page.locator(".instructions-area");
    await expect.poll(() => line.textContent()).toBe("Instructions: AGENTS.md, .github/instructions/ts.instructions.md (for **/*.ts)");
    await clearPosted();
    await line.getByRole("button", { name: "AGENTS.md", exact: true }).click();
    expect(await posted()).toEqual([{ type: "openLocation", uri: "file:///ws/AGENTS.md" }]);
    await postState(baseState(run));
    await expect.poll(() => line.textContent()).toBe("");
    expect(await line.isVisible()).toBe(false);
  });

  it("says once that shell commands are not sandboxed, with a Dismiss", async () => {
    const notice = "Shell commands are not sandboxed on this machine: bubblewrap (bwrap) is not installed";
    await postState(baseState(run, { sandboxNotice: notice }));
    const banner = page.locator(".banner-warn");
    await expect.poll(() => banner.textContent()).toContain(`${notice}.`);
    await clearPosted();
    await banner.getByRole("button", { name: "Dismiss" }).click();
    expect(await posted()).toEqual([{ type: "dismissSandboxNotice" }]);
    await postState(baseState(run));
    await expect.poll(() => page.locator(".banner-warn").count()).toBe(0);
  });
});
