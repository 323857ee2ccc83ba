/**
 * Loads the built chat webview (dist/webview.js + the page the extension serves) in
 * headless Chromium, replays a recorded event stream through the real reducer, and
 * checks what a person would see and what the buttons post.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderWebviewHtml } from "../../src/chat/html";
import type { ChatViewState } from "../../src/chat/messages";
import { applyEvent, createRunView, type LoviaEvent, type RunView } from "../../src/protocol";

const root = fileURLToPath(new URL("../../", import.meta.url));
const artifacts = `${root}test/artifacts`;
const CHROMIUM = process.env.LOVIA_CHROMIUM ?? "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const fixture = JSON.parse(readFileSync(`${root}test/fixtures/run-events.json`, "utf8")) as {
  events: LoviaEvent[];
  finish: LoviaEvent[];
  pendingApprovalId: string;
};

let server: Server;
let origin: string;
let browser: Browser;
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

async function postState(state: ChatViewState): Promise<void> {
  await page.evaluate((s) => window.postMessage({ type: "state", state: s }, "*"), JSON.parse(JSON.stringify(state)) as unknown);
}

async function scrollToBottom(): Promise<void> {
  await page.evaluate(() => {
    const t = document.querySelector("main.transcript")!;
    t.scrollTop = t.scrollHeight;
  });
}

async function posted(): Promise<unknown[]> {
  return page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted.slice());
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
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or set LOVIA_CHROMIUM).`);
  }
  if (!existsSync(`${root}dist/webview.js`)) execFileSync(process.execPath, ["esbuild.mjs"], { cwd: root, stdio: "inherit" });
  mkdirSync(artifacts, { recursive: true });
  const nonce = "dGVzdC1ub25jZS0xMjM0NQ==";
  server = createServer((req, res) => {
    const files: Record<string, [string, string]> = {
      "/dist/webview.js": [`${root}dist/webview.js`, "text/javascript"],
      "/dist/webview.css": [`${root}dist/webview.css`, "text/css"],
      "/theme.css": [`${root}test/browser/theme-dark.css`, "text/css"],
    };
    if (req.url === "/" || req.url === "/index.html") {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(renderWebviewHtml({ cspSource: origin, nonce, scriptUri: `${origin}/dist/webview.js`, styleUri: `${origin}/dist/webview.css` }));
      return;
    }
    const file = files[req.url ?? ""];
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": file[1] });
    res.end(readFileSync(file[0]));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
  page = await browser.newPage({ viewport: { width: 420, height: 900 } });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // VS Code provides acquireVsCodeApi inside the webview; the stub records what the UI posts.
  await page.addInitScript(() => {
    const w = window as unknown as Record<string, unknown>;
    w.__posted = [];
    w.__violations = [];
    w.__state = undefined;
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => (w.__posted as unknown[]).push(m),
      getState: () => w.__state,
      setState: (s: unknown) => {
        w.__state = s;
      },
    });
    document.addEventListener("securitypolicyviolation", (e) => (w.__violations as string[]).push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.goto(`${origin}/index.html`);
  await page.addStyleTag({ url: `${origin}/theme.css` });
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
  expect(errors).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
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
    await page.locator("article.tool-read button.location").click();
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
    const order = await transcript.evaluate((t) => Array.from(t.children).map((c) => c.getAttribute("aria-label") ?? c.className));
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
    expect((await posted()).filter((m) => (m as { type: string }).type === "scrolled")).toEqual([{ type: "scrolled", top: 500, atBottom: false }]);
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
    item.rev += 1000;
    await postState(baseState(run));
    await clearPosted();
    await card.locator("input.reason").fill("Keep the changelog in docs/");
    await card.getByRole("button", { name: "Reject", exact: true }).click();
    expect(await posted()).toEqual([
      { type: "approve", runId: "run_01", approvalId: "ap_changelog", decision: "reject_once", message: "Keep the changelog in docs/" },
    ]);
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

  it("shows server errors with the hint and a Set API key action", async () => {
    await postState(baseState(run, { error: { text: "No model is configured", hint: "Set lovia.model and an API key", code: -32016 } }));
    const banner = page.locator(".banner-error");
    expect(await banner.textContent()).toContain("Set lovia.model and an API key");
    await clearPosted();
    await banner.getByRole("button", { name: "Set API key" }).click();
    await banner.getByRole("button", { name: "Dismiss" }).click();
    expect(await posted()).toEqual([{ type: "setApiKey" }, { type: "dismissError" }]);
  });
});
