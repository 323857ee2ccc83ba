/**
 * Subagents in the built chat webview (headless Chromium): a child run nested under the
 * `spawn_subagent` card as a live one-line status, its approval card labelled with whose request
 * it is, per-child Stop and steer, and the expanded transcript. Events go through the real
 * reducer (`applyEvent`), the child list through the controller's own helper, and what the
 * webview gets through the real view sync (a reset, then patches), as the chat view posts it.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childRunsOf } from "../../src/chat/children";
import type { ChatViewState, PatchMessage } from "../../src/chat/messages";
import { ViewSync } from "../../src/chat/viewSync";
import { applyEvent, createRunView, type LoviaEvent } from "../../src/protocol";
import { artifacts, openWebview, validIntents, type WebviewPage } from "./page";

let web: WebviewPage;
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

const sync = new ViewSync();

/** Post what the chat view would for the current state; returns the message (none: nothing changed). */
async function show(): Promise<ReturnType<ViewSync["next"]>> {
  const message = sync.next(state());
  if (message) await web.post(message);
  return message;
}

async function posted(): Promise<unknown[]> {
  const all = await page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted.splice(0));
  return validIntents(all).filter((m) => m.type !== "scrolled");
}

/** Tag the drawn elements of these rows, to tell later whether they were drawn again. */
async function tag(keys: string[]): Promise<void> {
  await page.evaluate((ks) => {
    for (const k of ks) (document.querySelector(`[data-row][data-key="${k}"]`) as unknown as { __tag?: string }).__tag = k;
  }, keys);
}

async function stillTagged(keys: string[]): Promise<boolean[]> {
  return page.evaluate((ks) => ks.map((k) => (document.querySelector(`[data-row][data-key="${k}"]`) as unknown as { __tag?: string } | null)?.__tag === k), keys);
}

beforeAll(async () => {
  web = await openWebview();
  page = web.page;
  await web.load("dark");
  await posted();
});

afterAll(async () => {
  await web?.close();
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

  it("streams a child's answer as a patch of the child's one row: the spawn card and the status line stay as drawn", async () => {
    const spawnKey = "run_p:tool:s1";
    const lineKey = "run_p:subagent:run_c";
    await tag([spawnKey, lineKey]);
    toChild({ kind: "message.delta", messageId: "cm1", text: "Writing the notes" });
    await show();
    toChild({ kind: "message.delta", messageId: "cm1", text: " now." });
    const message = (await show()) as PatchMessage;
    expect(message.type).toBe("patch");
    expect(message.chrome).toBeUndefined();
    expect(message.patch).toEqual([{ key: "run_c:assistant:cm1", rev: child.rev, append: { text: " now." } }]);
    expect(JSON.stringify(message).length).toBeLessThan(200);
    // Collapsed, the child's transcript is not drawn at all: one line of DOM however long it runs.
    const transcript = page.locator("section.subagent .subagent-transcript");
    expect(await transcript.locator("[data-row]").count()).toBe(0);
    expect(await stillTagged([spawnKey, lineKey])).toEqual([true, true]);
    // Opened, it is drawn; the next chunk redraws that one row in place.
    await transcript.locator("> summary").click();
    const answer = transcript.locator("article.msg-assistant");
    await expect.poll(() => answer.textContent()).toContain("Writing the notes now.");
    expect(await transcript.locator("article.tool .tool-title").textContent()).toBe("Write NOTES.md");
    toChild({ kind: "message.delta", messageId: "cm1", text: " Almost." });
    await show();
    await expect.poll(() => answer.textContent()).toContain("Writing the notes now. Almost.");
    expect(await stillTagged([spawnKey, lineKey])).toEqual([true, true]);
    // Closed again, its rows are dropped.
    await transcript.locator("> summary").click();
    await expect.poll(() => transcript.locator("[data-row]").count()).toBe(0);
    // New tokens redraw the status line alone, never the spawning card.
    toChild({ kind: "usage.updated", inputTokens: 1500, outputTokens: 500, cacheReadTokens: 0, contextTokens: 1500, contextWindow: null });
    const usage = (await show()) as PatchMessage;
    expect(usage.patch?.map((p) => p.key)).toEqual([lineKey]);
    await expect.poll(() => page.locator("section.subagent .subagent-tokens").textContent()).toBe("2.0k tokens");
    expect(await stillTagged([spawnKey, lineKey])).toEqual([true, false]);
    expect(await page.locator("section.subagent").count()).toBe(1);
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
    // One card: the approval is inside the child's tool card, above its collapsed transcript.
    expect(await page.locator('section.subagent article[data-approval-id="ap1"]').count()).toBe(1);
    expect(await page.locator("section.subagent article.tool").count()).toBe(1);
    expect(await card.locator(".tool-title").textContent()).toBe("Write NOTES.md");
    expect(await page.locator("section.subagent .subagent-waiting article.approval-pending").count()).toBe(1);
    await page.screenshot({ path: `${artifacts}/subagents-approval.png` }).catch(() => undefined);
    await card.getByRole("button", { name: "Accept" }).click();
    expect(await posted()).toEqual([{ type: "approve", runId: "run_c", approvalId: "ap1", decision: "allow_once" }]);
  });

  it("stops and steers one child from its own controls", async () => {
    const nested = page.locator("section.subagent");
    await nested.getByRole("textbox", { name: "Message subagent t1" }).fill("Mention the date too");
    // The child's line is drawn again while the user types: the text and the focus stay.
    toChild({ kind: "usage.updated", inputTokens: 2500, outputTokens: 500, cacheReadTokens: 0, contextTokens: 2500, contextWindow: null });
    await show();
    await expect.poll(() => nested.locator(".subagent-tokens").textContent()).toBe("3.0k tokens");
    expect(await nested.getByRole("textbox", { name: "Message subagent t1" }).inputValue()).toBe("Mention the date too");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe("Message subagent t1");
    await page.keyboard.press("Enter");
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
    // Stays open when the webview gets everything again (a reset redraws every row).
    sync.reset();
    expect((await show())?.type).toBe("reset");
    expect(await page.locator("section.subagent .subagent-transcript").getAttribute("open")).toBe("");
    expect(await page.locator("article.tool section.subagent .subagent-transcript article.tool .tool-title").textContent()).toBe("Write NOTES.md");
    expect(web.errors).toEqual([]);
    await page.screenshot({ path: `${artifacts}/subagents.png` }).catch(() => undefined);
  });
  it("keeps a child's question in sight while collapsed, labelled, and answers it on the child's run", async () => {
    const p = createRunView("run_q", "ses_q");
    const c = createRunView("run_qc", "ses_qc");
    let n = 0;
    const to = (run: typeof p, e: Record<string, unknown>) => applyEvent(run, { sessionId: run.sessionId, runId: run.runId, seq: ++n, ts: n, ...e } as unknown as LoviaEvent);
    to(p, { kind: "run.started", prompt: "Ask through a helper", cwd: "/w", model: "demo", agent: "lovia:demo", resumed: false });
    to(p, { kind: "tool.call", toolCallId: "s1", name: "spawn_subagent", toolKind: "other", title: "Start subagent: pick a database", input: {}, locations: [] });
    to(p, { kind: "subagent.started", childRunId: "run_qc", childSessionId: "ses_qc", taskId: "t3", name: "planner", prompt: "Pick a database", toolCallId: "s1", resumed: false });
    to(c, { kind: "run.started", prompt: "Pick a database", cwd: "/w", model: "demo", agent: "planner", resumed: false, subagent: { runId: "run_qc", taskId: "t3", name: "planner" } });
    to(c, { kind: "question.requested", questionId: "q1", text: "Which database?", choices: ["SQLite", "PostgreSQL"], subagent: { runId: "run_qc", taskId: "t3", name: "planner" } });
    await web.post(sync.next({ ...state(), sessionId: "ses_q", sessionTitle: "Ask", runs: [p], childRuns: [c], liveRunId: "run_q" })!);
    const question = page.locator("section.subagent .subagent-waiting article.question");
    await question.waitFor();
    expect(await page.locator("section.subagent .subagent-transcript").getAttribute("open")).toBeNull();
    expect(await question.locator(".approval-requester").textContent()).toBe("from t3 · planner");
    expect(await page.locator("section.subagent .subagent-step").textContent()).toBe("waiting for your answer");
    await question.getByRole("button", { name: "SQLite" }).click();
    expect(await posted()).toEqual([{ type: "answer", runId: "run_qc", questionId: "q1", answer: "SQLite" }]);
    // Answered, it joins the child's (collapsed, so undrawn) transcript.
    to(c, { kind: "question.answered", questionId: "q1", answer: "SQLite" });
    await web.post(sync.next({ ...state(), sessionId: "ses_q", sessionTitle: "Ask", runs: [p], childRuns: [c], liveRunId: "run_q" })!);
    await expect.poll(() => page.locator("section.subagent .subagent-waiting > *").count()).toBe(0);
    expect(await page.locator("section.subagent .subagent-transcript [data-row]").count()).toBe(0);
    await page.locator("section.subagent .subagent-transcript > summary").click();
    await expect.poll(() => page.locator("section.subagent .subagent-transcript article.question.answered .answer").textContent()).toBe("SQLite");
    expect(web.errors).toEqual([]);
  });

  it("nests a subagent's own subagents, drawn as its transcript opens and dropped as it closes", async () => {
    const p = createRunView("run_n", "ses_n");
    const c = createRunView("run_nc", "ses_nc");
    const g = createRunView("run_ng", "ses_ng");
    let n = 0;
    const to = (run: typeof p, e: Record<string, unknown>) => applyEvent(run, { sessionId: run.sessionId, runId: run.runId, seq: ++n, ts: n, ...e } as unknown as LoviaEvent);
    const spawn = (run: typeof p, id: string, childRun: typeof p, task: string, name: string) => {
      to(run, { kind: "tool.call", toolCallId: id, name: "spawn_subagent", toolKind: "other", title: `Start subagent: ${name}`, input: {}, locations: [] });
      to(run, { kind: "subagent.started", childRunId: childRun.runId, childSessionId: childRun.sessionId, taskId: task, name, prompt: `Be the ${name}`, toolCallId: id, resumed: false });
      to(childRun, { kind: "run.started", prompt: `Be the ${name}`, cwd: "/w", model: "demo", agent: name, resumed: false, subagent: { runId: childRun.runId, taskId: task, name } });
    };
    to(p, { kind: "run.started", prompt: "Delegate twice", cwd: "/w", model: "demo", agent: "lovia:demo", resumed: false });
    spawn(p, "s1", c, "t1", "lead");
    spawn(c, "s2", g, "t2", "worker");
    to(g, { kind: "message.completed", messageId: "gm", text: "The worker reports in." });
    const st = (): ChatViewState => ({ ...state(), sessionId: "ses_n", sessionTitle: "Nested", runs: [p], childRuns: [c, g], liveRunId: "run_n" });
    await web.post(sync.next(st())!);
    const lead = page.locator('section.subagent[data-run-id="run_nc"]');
    await lead.waitFor();
    expect(await page.locator('section.subagent[data-run-id="run_ng"]').count()).toBe(0); // inside t1's collapsed transcript
    await lead.locator(":scope > .subagent-transcript > summary").click();
    const worker = lead.locator('article.tool section.subagent[data-run-id="run_ng"]');
    await worker.waitFor();
    expect(await worker.locator(".subagent-name").textContent()).toBe("t2 · worker");
    await worker.locator(":scope > .subagent-transcript > summary").click();
    await expect.poll(() => worker.locator(".subagent-transcript article.msg-assistant").textContent()).toContain("The worker reports in.");
    // Closing t1's transcript drops everything drawn inside it; opening it again brings it back as it was.
    await lead.locator(":scope > .subagent-transcript > summary").click();
    await expect.poll(() => lead.locator("[data-row]").count()).toBe(0);
    await lead.locator(":scope > .subagent-transcript > summary").click();
    await expect.poll(() => worker.locator(".subagent-transcript article.msg-assistant").textContent()).toContain("The worker reports in.");
    expect(web.errors).toEqual([]);
  });

  it("names the MCP server on an MCP tool's card and on a compact row, approval inside the card, and shows a failing server as a notice", async () => {
    const run = createRunView("run_m", "ses_m");
    let n = 0;
    const ev = (e: Record<string, unknown>) => applyEvent(run, { sessionId: "ses_m", runId: "run_m", seq: ++n, ts: n, ...e } as unknown as LoviaEvent);
    ev({ kind: "run.started", prompt: "Look at the history", cwd: "/w", model: "demo", agent: "lovia:demo", resumed: false });
    ev({ kind: "mcp.status", server: "docs", state: "failed", tools: [], error: "Could not connect to MCP server 'docs'\nCheck the URL" });
    ev({ kind: "tool.call", toolCallId: "g0", name: "git__grep", toolKind: "search", title: "git grep TODO", input: {}, locations: [], server: "git" });
    ev({ kind: "tool.result", toolCallId: "g0", status: "completed", isError: false, content: [{ type: "text", text: "a.ts:1: TODO" }] });
    ev({ kind: "tool.call", toolCallId: "g1", name: "git__log", toolKind: "other", title: "git log", input: { limit: 5 }, locations: [], server: "git" });
    ev({
      kind: "approval.requested", approvalId: "ap_g", toolCallId: "g1", action: "other", title: "git log", detail: "Run the MCP tool git__log", paths: [],
      options: [{ decision: "allow_once", label: "Allow" }, { decision: "reject_once", label: "Reject" }],
    });
    const st = (): ChatViewState => ({ ...state(), sessionId: "ses_m", sessionTitle: "History", runs: [run], childRuns: [], liveRunId: "run_m" });
    await web.post(sync.next(st())!);
    const card = page.locator("main.transcript article.tool.approval-pending");
    await card.waitFor();
    expect(await page.locator("main.transcript article").count()).toBe(1); // one card for the call and its approval
    expect(await card.locator(".tool-head .tool-server").textContent()).toBe("git");
    expect(await card.locator(".tool-head .tool-server").getAttribute("title")).toBe("Served by the MCP server git");
    expect(await page.locator("main.transcript details.tool-row summary .tool-server").textContent()).toBe("git");
    expect(await page.locator("main.transcript .notice-error").textContent()).toContain("MCP server docs is unavailable: Could not connect to MCP server 'docs'");
    await card.getByRole("button", { name: "Allow" }).click();
    expect(await posted()).toEqual([{ type: "approve", runId: "run_m", approvalId: "ap_g", decision: "allow_once" }]);
    ev({ kind: "approval.resolved", approvalId: "ap_g", outcome: "allowed", decision: "allow_once", by: "user" });
    ev({ kind: "tool.result", toolCallId: "g1", status: "completed", isError: false, content: [{ type: "text", text: "abc123 first commit" }] });
    await web.post(sync.next(st())!);
    const done = page.locator("main.transcript article.tool", { has: page.locator(".tool-title", { hasText: "git log" }) });
    await expect.poll(() => done.locator(".approval-outcome").textContent()).toBe("Allowed by user");
    expect(await done.locator(".tool-server").textContent()).toBe("git");
    await page.screenshot({ path: `${artifacts}/subagents-mcp.png` }).catch(() => undefined);
    expect(web.errors).toEqual([]);
  });
});
