/**
 * Subagents in the built chat webview (headless Chromium): a child run nested under the
 * `spawn_subagent` card as a live one-line status, its approval card labelled with whose request
 * it is, per-child Stop and steer, and the expanded transcript. Events go through the real
 * reducer (`applyEvent`) and the child list through the controller's own helper.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childRunsOf } from "../../src/chat/children";
import { renderWebviewHtml } from "../../src/chat/html";
import type { ChatViewState } from "../../src/chat/messages";
import { applyEvent, createRunView, type LoviaEvent } from "../../src/protocol";

const root = fileURLToPath(new URL("../../", import.meta.url));
const CHROMIUM = process.env.LOVIA_CHROMIUM ?? "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"];

let server: Server;
let origin: string;
let browser: Browser;
let page: Page;

const parent = createRunView("run_p", "ses_p");
const child = createRunView("run_c", "ses_c");
let parentSeq = 0;
let childSeq = 0;

function toParent(event: Record<string, unknown>): void {
  applyEvent(parent, { sessionId: "ses_p", runId: "run_p", seq: ++parentSeq, ts: parentSeq, ...event } as unknown as LoviaEvent);
}

function toChild(event: Record<string, unknown>): void {
  applyEvent(child, { sessionId: "ses_c", runId: "run_c", parentRunId: "run_p", seq: ++childSeq, ts: childSeq, ...event } as unknown as LoviaEvent);
}

function state(): ChatViewState {
  const runs = [parent];
  const live = parent.status === "running";
  return {
    server: { state: "running" },
    trusted: true,
    sessions: [],
    sessionId: "ses_p",
    sessionTitle: "Delegate the notes",
    runs,
    childRuns: childRunsOf(runs, (id) => (id === child.runId ? child : undefined)),
    ...(live ? { liveRunId: parent.runId } : {}),
    pendingSteers: [],
    busy: false,
    model: { kind: "demo", label: "demo" },
  };
}

async function show(): Promise<void> {
  await page.evaluate((s) => window.postMessage({ type: "state", state: s }, "*"), JSON.parse(JSON.stringify(state())) as unknown);
}

async function posted(): Promise<unknown[]> {
  return page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted.splice(0));
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM} (set LOVIA_CHROMIUM)`);
  if (!existsSync(`${root}dist/webview.js`)) execFileSync(process.execPath, ["esbuild.mjs"], { cwd: root, stdio: "inherit" });
  const nonce = "c3ViYWdlbnRzLW5vbmNl";
  server = createServer((req, res) => {
    const files: Record<string, [string, string]> = {
      "/dist/webview.js": [`${root}dist/webview.js`, "text/javascript"],
      "/dist/webview.css": [`${root}dist/webview.css`, "text/css"],
      "/theme.css": [`${root}test/browser/theme-dark.css`, "text/css"],
    };
    if (req.url === "/") {
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
  await page.addInitScript(() => {
    const w = window as unknown as Record<string, unknown>;
    w.__posted = [];
    w.acquireVsCodeApi = () => ({ postMessage: (m: unknown) => (w.__posted as unknown[]).push(m), getState: () => undefined, setState: () => undefined });
  });
  await page.goto(`${origin}/`);
  await page.addStyleTag({ url: `${origin}/theme.css` });
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
  await posted();
});

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
});

describe("subagents in the chat webview", () => {
  it("nests a running child under its spawn card with a live one-line status", async () => {
    toParent({ kind: "run.started", prompt: "Delegate the notes", cwd: "/w", model: "demo", agent: "lovia:demo", resumed: false });
    toParent({ kind: "tool.call", toolCallId: "s1", name: "spawn_subagent", toolKind: "other", title: "Start subagent: Create NOTES.md", input: { prompt: "Create NOTES.md" }, locations: [] });
    toParent({ kind: "tool.result", toolCallId: "s1", status: "completed", content: [{ type: "text", text: "Subagent t1 started" }], isError: false });
    toParent({ kind: "subagent.started", childRunId: "run_c", childSessionId: "ses_c", taskId: "t1", name: "demo-helper", prompt: "Create NOTES.md", toolCallId: "s1", resumed: false });
    toParent({ kind: "tool.call", toolCallId: "w1", name: "wait_subagents", toolKind: "other", title: "Wait for subagents", input: {}, locations: [] });
    toChild({ kind: "run.started", prompt: "Create NOTES.md", cwd: "/w", model: "demo", agent: "demo-helper", resumed: false, subagent: { runId: "run_c", taskId: "t1", name: "demo-helper" } });
    toChild({ kind: "usage.updated", inputTokens: 900, outputTokens: 300, cacheReadTokens: 0, contextTokens: 900, contextWindow: null });
    toChild({ kind: "tool.call", toolCallId: "c1", name: "write_file", toolKind: "edit", title: "Write NOTES.md", input: { path: "NOTES.md" }, locations: [] });
    await show();

    const spawn = page.locator("article.tool", { has: page.locator(".tool-title", { hasText: "Start subagent" }) });
    const nested = spawn.locator("section.subagent");
    await nested.waitFor();
    expect(await nested.count()).toBe(1);
    expect(await nested.locator(".subagent-name").textContent()).toBe("t1 · demo-helper");
    expect(await nested.locator(".subagent-step").textContent()).toBe("Write NOTES.md");
    expect(await nested.locator(".subagent-tokens").textContent()).toBe("1.2k tokens");
    expect(await nested.locator(".subagent-transcript").getAttribute("open")).toBeNull(); // collapsed
    // The wait card has no child of its own.
    expect(await page.locator("article.tool", { hasText: "Wait for subagents" }).locator("section.subagent").count()).toBe(0);
  });

  it("shows the child's approval labelled with whose request it is, answered on the child's run", async () => {
    toChild({
      kind: "approval.requested",
      approvalId: "ap1",
      toolCallId: "c1",
      title: "Write NOTES.md",
      paths: ["/w/NOTES.md"],
      action: "file.create",
      detail: "The agent wants to create /w/NOTES.md.",
      options: [
        { decision: "allow_once", label: "Accept" },
        { decision: "reject_once", label: "Reject" },
      ],
      subagent: { runId: "run_c", taskId: "t1", name: "demo-helper" },
    });
    await show();
    const card = page.locator("section.subagent article.approval-pending");
    await card.waitFor();
    expect(await card.locator(".approval-requester").textContent()).toBe("from t1 · demo-helper");
    expect(await page.locator("section.subagent .subagent-step").textContent()).toBe("waiting for approval");
    await card.getByRole("button", { name: "Accept" }).click();
    expect(await posted()).toEqual([{ type: "approve", runId: "run_c", approvalId: "ap1", decision: "allow_once" }]);
  });

  it("stops and steers one child from its own controls", async () => {
    const nested = page.locator("section.subagent");
    await nested.getByRole("textbox", { name: "Message subagent t1" }).fill("Mention the date too");
    await nested.getByRole("textbox", { name: "Message subagent t1" }).press("Enter");
    await nested.getByRole("button", { name: "Stop subagent t1" }).click();
    expect(await posted()).toEqual([
      { type: "steerRun", runId: "run_c", text: "Mention the date too" },
      { type: "cancel", runId: "run_c" },
    ]);
    // The parent's own Stop still stops the parent.
    await page.locator("button.stop").click();
    expect(await posted()).toEqual([{ type: "cancel" }]);
  });

  it("expands to the child's transcript and collapses to its answer when it finishes", async () => {
    toChild({ kind: "approval.resolved", approvalId: "ap1", outcome: "cancelled", by: "user" });
    toChild({ kind: "tool.result", toolCallId: "c1", status: "cancelled", content: [{ type: "text", text: "Cancelled." }], isError: true });
    toChild({ kind: "run.finished", status: "cancelled", usage: { inputTokens: 900, outputTokens: 300, cacheReadTokens: 0, contextTokens: 900, contextWindow: null }, resumable: false });
    toParent({ kind: "subagent.finished", childRunId: "run_c", taskId: "t1", status: "cancelled", usage: { inputTokens: 900, outputTokens: 300, cacheReadTokens: 0, contextTokens: null, contextWindow: null } });
    await show();
    const nested = page.locator("section.subagent");
    await expect.poll(() => nested.locator(".subagent-status").textContent()).toBe("stopped");
    expect(await nested.getByRole("button", { name: "Stop subagent t1" }).count()).toBe(0);
    expect(await nested.locator("form.subagent-steer").count()).toBe(0);
    await nested.locator(".subagent-transcript > summary").click();
    await expect.poll(() => nested.locator(".subagent-transcript article.tool .tool-title").textContent()).toBe("Write NOTES.md");
    expect(await nested.locator(".subagent-transcript .subagent-prompt").textContent()).toBe("Create NOTES.md");
    // Stays open across the next update.
    await show();
    expect(await page.locator("section.subagent .subagent-transcript").getAttribute("open")).toBe("");
    await page.screenshot({ path: `${root}test/artifacts/subagents.png` }).catch(() => undefined);
  });
});
