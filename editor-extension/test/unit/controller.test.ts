import { afterEach, describe, expect, it } from "vitest";
import { ChatController, type ChatHost, type PanelPlace } from "../../src/chat/controller";
import type { ChatViewState, ModelChoice } from "../../src/chat/messages";
import type { InstructionFileInfo, RestoreFilesResult } from "../../src/protocol/types";
import { EventStore, LoviaClient } from "../../src/protocol";
import { LoviaRequestError } from "../../src/protocol/client";
import { ResponseError } from "vscode-jsonrpc/node";
import { FakeLoviaServer, waitFor } from "../support/fakeServer";

let server: FakeLoviaServer;
let controller: ChatController;
const opened: { uri: string; line?: number }[] = [];
const diffs: string[] = [];
const changes: unknown[] = [];
let keyPrompts = 0;
/** What the host persisted (workspaceState in VS Code), kept across "reloads" in a test. */
let saved: { place: PanelPlace; model: ModelChoice; notices: string[] };
let picks: (ModelChoice | undefined)[] = [];
/** What the host's restore flow answers next (undefined: the user cancelled), and its calls. */
let restoreAnswer: RestoreFilesResult | Error | undefined;
const restoreCalls: string[] = [];
const compareCalls: string[] = [];
/** Worktree runs the controller told its host about. */
const worktreeStarts: string[] = [];

function setup(keep = false): { store: EventStore; states: ChatViewState[] } {
  if (!keep) saved = { place: {}, model: { kind: "default" }, notices: [] };
  server = keep && server ? server : new FakeLoviaServer();
  const client = new LoviaClient(server.attach());
  const store = new EventStore(client);
  client.onEvent((e) => store.ingest(e));
  opened.length = 0;
  diffs.length = 0;
  changes.length = 0;
  restoreCalls.length = 0;
  compareCalls.length = 0;
  worktreeStarts.length = 0;
  restoreAnswer = undefined;
  keyPrompts = 0;
  const host: ChatHost = {
    openLocation: (uri, line) => {
      opened.push(line === undefined ? { uri } : { uri, line });
    },
    openDiff: (_runId, approvalId) => {
      diffs.push(approvalId);
    },
    openChange: (change) => {
      changes.push(change);
    },
    proposalEdits: (approvalId) => (approvalId === "ap_edited" ? [{ path: "/w/a.ts", newText: "mine\n" }] : []),
    resolveMentions: (mentions) => mentions.map((m) => ({ uri: m.uri, kind: m.kind, label: m.label })),
    copy: (text) => {
      changes.push({ copied: text });
    },
    insertCode: (text, language) => {
      changes.push({ inserted: text, language });
    },
    setApiKey: () => {
      keyPrompts += 1;
    },
    defaultCwd: () => "/work/project",
    isTrusted: () => true,
    chooseModel: () => Promise.resolve(picks.shift()),
    loadPlace: () => saved.place,
    savePlace: (place) => {
      saved.place = place;
    },
    loadModel: () => saved.model,
    saveModel: (choice) => {
      saved.model = choice;
    },
    restoreCheckpoint: (checkpointId) => {
      restoreCalls.push(checkpointId);
      return restoreAnswer instanceof Error ? Promise.reject(restoreAnswer) : Promise.resolve(restoreAnswer);
    },
    compareCheckpoint: (checkpointId) => {
      compareCalls.push(checkpointId);
      return Promise.resolve();
    },
    worktreeRunStarted: (runId) => {
      worktreeStarts.push(runId);
    },
    noticeDismissed: (text) => saved.notices.includes(text),
    dismissNotice: (text) => {
      saved.notices.push(text);
    },
  };
  controller = new ChatController(client, store, host);
  controller.setServerState("running");
  const states: ChatViewState[] = [];
  controller.onDidChange((s) => states.push(s));
  return { store, states };
}

/** Send a prompt and wait until the fake server has started the run (run.started, user.message). */
async function prompt(text: string): Promise<string> {
  await controller.handle({ type: "send", text, mode: "prompt" });
  const runId = controller.liveRun()!.runId;
  await waitFor(() => (controller.state().runs.find((r) => r.runId === runId)?.lastSeq ?? 0) >= 2, 2000, "run started");
  return runId;
}

afterEach(() => {
  controller?.dispose();
  server?.detachAll();
});

describe("ChatController", () => {
  it("starts a run in a new session, then continues the same session", async () => {
    setup();
    const runId = await prompt("  first  ");
    const first = server.requestsOf("lovia/run")[0];
    expect(first).toEqual({ prompt: "first", cwd: "/work/project" });
    const sessionId = controller.activeSessionId!;
    server.finish(runId);
    await waitFor(() => controller.liveRun() === undefined);
    await prompt("second");
    expect(server.requestsOf("lovia/run")[1]).toEqual({ prompt: "second", cwd: "/work/project", sessionId });
    expect(controller.state().runs.map((r) => r.prompt)).toEqual(["first", "second"]);
    expect(controller.state().sessionTitle).toBe("first");
  });

  it("turns the composer into a steer box while a run is live, and withdraws a queued steer", async () => {
    setup();
    const runId = await prompt("work");
    await controller.handle({ type: "send", text: "use tabs", mode: "steer" });
    await controller.handle({ type: "send", text: "also docs", mode: "prompt" });
    expect(server.requestsOf("lovia/run")).toHaveLength(1);
    expect(server.requestsOf("lovia/steer")).toEqual([
      { runId, message: "use tabs" },
      { runId, message: "also docs" },
    ]);
    const [tabs, docs] = controller.state().pendingSteers;
    expect(controller.state().pendingSteers.map((s) => s.text)).toEqual(["use tabs", "also docs"]);

    await controller.handle({ type: "unsteer", runId, messageId: docs!.messageId });
    expect(server.requestsOf("lovia/unsteer")).toEqual([{ runId, messageId: docs!.messageId }]);
    expect(controller.state().pendingSteers.map((s) => s.text)).toEqual(["use tabs"]);

    // Delivery at the next turn echoes user.message{source: steer}: the queue empties.
    server.deliverSteers(runId);
    await waitFor(() => controller.state().pendingSteers.length === 0, 2000, "steer delivered");
    const user = controller.state().runs[0]!.items.filter((i) => i.type === "user");
    expect(user.map((u) => [u.id, (u as { source: string }).source])).toEqual([
      [expect.any(String), "prompt"],
      [tabs!.messageId, "steer"],
    ]);

    // Too late to withdraw: the server says false, the steer stays shown until delivered.
    await controller.handle({ type: "send", text: "late", mode: "steer" });
    const late = controller.state().pendingSteers[0]!;
    server.runs.get(runId)!.steers.get(late.messageId)!.delivered = true;
    await controller.handle({ type: "unsteer", runId, messageId: late.messageId });
    expect(controller.state().pendingSteers).toEqual([{ runId, messageId: late.messageId, text: "late", withdrawing: false }]);
  });

  it("sends approvals with a message only for rejections, and tolerates already-resolved ones", async () => {
    const { store } = setup();
    const runId = await prompt("go");
    server.emit(runId, "approval.requested", {
      approvalId: "a1", toolCallId: "t", action: "shell", title: "rm -rf build", detail: "", paths: [], command: "rm -rf build",
      options: [{ decision: "allow_once", label: "Run" }, { decision: "reject_once", label: "Don't" }],
    });
    await waitFor(() => store.get(runId)!.items.some((i) => i.type === "approval"));
    await controller.handle({ type: "approve", runId, approvalId: "a1", decision: "reject_once", message: " use make clean " });
    expect(server.requestsOf("lovia/approve")).toEqual([{ runId, approvalId: "a1", decision: "reject_once", message: "use make clean" }]);
    await waitFor(() => store.get(runId)!.items.find((i) => i.type === "approval")?.rev !== undefined && (store.get(runId)!.items.find((i) => i.type === "approval") as { state: string }).state === "rejected");

    // Deciding again (e.g. from the diff after the card): ApprovalNotFound is not an error.
    await controller.handle({ type: "approve", runId, approvalId: "a1", decision: "allow_once", message: "ignored" });
    expect(server.requestsOf("lovia/approve")[1]).toEqual({ runId, approvalId: "a1", decision: "allow_once" });
    expect(controller.state().error).toBeUndefined();

    // Decisions outside the protocol never reach the server.
    await controller.handle({ type: "approve", runId, approvalId: "a1", decision: "yes" as never });
    expect(server.requestsOf("lovia/approve")).toHaveLength(2);
  });

  it("an accept from the card keeps what the user edited in the diff editor; the card's own edits win", async () => {
    setup();
    const runId = await prompt("go");
    await controller.handle({ type: "approve", runId, approvalId: "ap_edited", decision: "allow_once" });
    await controller.handle({ type: "approve", runId, approvalId: "ap_edited", decision: "allow_once", edits: [{ path: "/w/a.ts", newText: "card\n" }] });
    await controller.handle({ type: "approve", runId, approvalId: "ap_edited", decision: "reject_once" });
    expect(server.requestsOf("lovia/approve").map((r) => (r as { edits?: unknown }).edits)).toEqual([
      [{ path: "/w/a.ts", newText: "mine\n" }],
      [{ path: "/w/a.ts", newText: "card\n" }],
      undefined,
    ]);
  });

  it("answers questions and cancels", async () => {
    const { store } = setup();
    const runId = await prompt("ask me");
    server.emit(runId, "question.requested", { questionId: "q1", text: "Which port?", choices: ["80", "8080"] });
    await controller.handle({ type: "answer", runId, questionId: "q1", answer: "8080" });
    expect(server.requestsOf("lovia/answer")).toEqual([{ runId, questionId: "q1", answer: "8080" }]);
    await waitFor(() => (store.get(runId)!.items.find((i) => i.type === "question") as { answer?: string }).answer === "8080");
    await controller.handle({ type: "cancel" });
    expect(server.requestsOf("lovia/cancel")).toEqual([{ runId }]);
    await waitFor(() => controller.state().liveRunId === undefined);
    expect(controller.state().runs[0]!.status).toBe("cancelled");
  });

  it("shows a run's subagents and stops or steers one of them without touching the parent", async () => {
    setup();
    const parent = await prompt("delegate");
    const child = server.startRun("child task", "ses_child");
    server.emit(parent, "subagent.started", { childRunId: child.runId, childSessionId: "ses_child", taskId: "t1", name: "helper", prompt: "child task", toolCallId: "s1", resumed: false });
    server.emit(child.runId, "run.started", { prompt: "child task", cwd: "/w", model: null, agent: "helper", resumed: false, parentRunId: parent } as never);
    // both events must have arrived: the child is listed at the first, linked at the second
    await waitFor(() => controller.state().childRuns[0]?.parentRunId === parent, 2000, "child shown");
    expect(controller.state().childRuns).toHaveLength(1);
    expect(controller.state().childRuns[0]).toMatchObject({ runId: child.runId, parentRunId: parent });
    expect(controller.state().runs.map((r) => r.runId)).toEqual([parent]); // not a run of the session
    await controller.handle({ type: "steerRun", runId: child.runId, text: "hurry" });
    await controller.handle({ type: "cancel", runId: child.runId });
    expect(server.requestsOf("lovia/steer")).toEqual([{ runId: child.runId, message: "hurry" }]);
    expect(server.requestsOf("lovia/cancel")).toEqual([{ runId: child.runId }]);
    expect(controller.liveRun()?.runId).toBe(parent);
  });

  it("shows request errors with their hint and code, and clears them on dismiss", async () => {
    setup();
    server.overrides.set("lovia/run", () => {
      throw new ResponseError(-32016, "No model is configured", { hint: "Set lovia.model and an API key" });
    });
    await controller.handle({ type: "send", text: "hi", mode: "prompt" });
    expect(controller.state().error).toEqual({ text: "No model is configured", code: -32016, hint: "Set lovia.model and an API key" });
    expect(controller.state().busy).toBe(false);
    await controller.handle({ type: "setApiKey" });
    expect(keyPrompts).toBe(1);
    await controller.handle({ type: "dismissError" });
    expect(controller.state().error).toBeUndefined();
  });

  it("lists sessions, opens one by replaying its runs, deletes one", async () => {
    setup();
    const a = server.startRun("old session");
    // A session from an earlier window: this client never saw its events live.
    for (let seq = 1; seq <= 3; seq++) server.drop.add(`${a.runId}:${seq}`);
    server.emit(a.runId, "run.started", { prompt: "old session", cwd: "/w", model: null, agent: "lovia:coding", resumed: false });
    server.emit(a.runId, "message.completed", { messageId: "m", text: "old answer" });
    server.finish(a.runId, "interrupted", true);
    await controller.handle({ type: "ready" });
    expect(controller.state().sessions).toEqual([
      expect.objectContaining({ sessionId: a.sessionId, resumable: true, lastRunId: a.runId }),
    ]);
    await controller.handle({ type: "selectSession", sessionId: a.sessionId });
    const s = controller.state();
    expect(s.sessionId).toBe(a.sessionId);
    expect(s.runs[0]!.items.find((i) => i.type === "assistant")).toMatchObject({ text: "old answer" });
    expect(s.runs[0]!.resumable).toBe(true);
    expect(server.requestsOf("lovia/replay")).toContainEqual({ runId: a.runId, afterSeq: 0 });

    await controller.handle({ type: "resume", runId: a.runId });
    await waitFor(() => controller.state().liveRunId === a.runId);
    server.finish(a.runId);
    await waitFor(() => controller.state().liveRunId === undefined);

    await controller.handle({ type: "deleteSession", sessionId: a.sessionId });
    expect(controller.state().sessionId).toBeUndefined();
    expect(controller.state().runs).toEqual([]);
    expect(controller.state().sessions).toEqual([]);
  });

  it("routes location and diff intents to the host", async () => {
    setup();
    await controller.handle({ type: "openLocation", uri: "file:///w/a.ts", line: 3 });
    await controller.handle({ type: "openDiff", runId: "r", approvalId: "ap" });
    expect(opened).toEqual([{ uri: "file:///w/a.ts", line: 3 }]);
    expect(diffs).toEqual(["ap"]);
  });

  it("sends a prompt's mentions as the run's context", async () => {
    setup();
    await controller.handle({ type: "send", text: "explain @a.ts", mode: "prompt", context: [{ kind: "file", label: "a.ts", uri: "file:///w/a.ts" }] });
    await waitFor(() => server.requestsOf("lovia/run").length === 1);
    expect((server.requestsOf("lovia/run")[0] as { context: unknown }).context).toEqual([{ uri: "file:///w/a.ts", kind: "file", label: "a.ts" }]);
  });

  it("opens a finished run's changed file against what it was before the run", async () => {
    setup();
    const runId = (await controller.startRun("edit"))!;
    await waitFor(() => (controller.state().runs[0]?.lastSeq ?? 0) >= 2, 2000, "run started");
    const diff = (oldText: string, newText: string) => ({ type: "diff" as const, path: "/w/a.ts", uri: "file:///w/a.ts", oldText, newText });
    for (const [id, before, after] of [["c1", "one\n", "two\n"], ["c2", "two\n", "three\n"]] as const) {
      server.emit(runId, "tool.call", { toolCallId: id, name: "edit_file", toolKind: "edit", title: "Edit a.ts", input: {}, locations: [] });
      server.emit(runId, "tool.result", { toolCallId: id, status: "completed", isError: false, content: [diff(before, after)] });
    }
    server.emit(runId, "run.finished", { status: "completed", resumable: false, usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, contextTokens: null, contextWindow: null } });
    await waitFor(() => controller.state().runs[0]?.status === "completed", 2000, "run finished");
    await controller.handle({ type: "openChange", runId, path: "/w/a.ts" });
    expect(changes).toEqual([{ runId, path: "/w/a.ts", uri: "file:///w/a.ts", before: "one\n" }]);
  });

  it("new session clears the view; the next prompt starts a fresh session", async () => {
    setup();
    server.finish(await prompt("one"));
    await waitFor(() => controller.liveRun() === undefined);
    const first = controller.activeSessionId;
    await controller.handle({ type: "newSession" });
    expect(controller.state().runs).toEqual([]);
    await controller.handle({ type: "send", text: "two", mode: "prompt" });
    expect(server.requestsOf("lovia/run")[1]).toEqual({ prompt: "two", cwd: "/work/project" });
    expect(controller.activeSessionId).not.toBe(first);
  });

  it("starts a worktree agent beside the shown conversation, never as a steer of its live run", async () => {
    const { store } = setup();
    await controller.handle({ type: "useDemo" });
    const live = await prompt("main task");
    const shown = controller.activeSessionId;
    const mention = { kind: "file" as const, label: "a.ts", uri: "file:///work/project/a.ts" };
    await controller.handle({ type: "newWorktreeAgent", text: "  try it another way ", context: [mention] });
    expect(server.requestsOf("lovia/run")[1]).toEqual({
      prompt: "try it another way",
      agent: "lovia:demo",
      cwd: "/work/project",
      context: [{ uri: mention.uri, kind: "file", label: "a.ts" }],
      isolation: "worktree",
    });
    expect(server.requestsOf("lovia/steer")).toEqual([]);
    expect(worktreeStarts).toHaveLength(1);
    // The panel stays where it was; the new run is followed in the store for the Agents view.
    expect(controller.activeSessionId).toBe(shown);
    expect(controller.liveRun()?.runId).toBe(live);
    expect(controller.state().runs.map((r) => r.runId)).toEqual([live]);
    await waitFor(() => (store.get(worktreeStarts[0]!)?.lastSeq ?? 0) >= 1, 2000, "worktree run's events");
    await controller.handle({ type: "newWorktreeAgent", text: "   " });
    expect(server.requestsOf("lovia/run")).toHaveLength(2);
  });

  it("runs the offline demo or a picked model, and remembers the choice", async () => {
    setup();
    picks = [{ kind: "model", model: "anthropic:claude-sonnet-4-5" }];
    await controller.handle({ type: "useDemo" });
    expect(controller.state().model).toEqual({ kind: "demo", label: "Offline demo" });
    const demoRun = await prompt("hello demo");
    expect(server.requestsOf("lovia/run")[0]).toMatchObject({ prompt: "hello demo", agent: "lovia:demo" });
    server.finish(demoRun);
    await waitFor(() => controller.liveRun() === undefined, 2000, "demo run finished");
    await controller.handle({ type: "chooseModel" });
    expect(saved.model).toEqual({ kind: "model", model: "anthropic:claude-sonnet-4-5" });
    await prompt("now for real");
    const second = server.requestsOf("lovia/run")[1] as Record<string, unknown>;
    expect(second.model).toBe("anthropic:claude-sonnet-4-5");
    expect(second.agent).toBeUndefined();
  });

  it("shows the configured model, or 'No model' when the server has none", async () => {
    setup();
    await controller.serverReady();
    expect(controller.state().model).toEqual({ kind: "setting", label: "scripted" });
    controller.dispose();
    setup();
    server.overrides.set("lovia/status", () => ({ version: "fake", model: null }));
    await controller.serverReady();
    expect(controller.state().model).toEqual({ kind: "none", label: "No model" });
  });

  it("says once, until dismissed, that shell commands are not sandboxed here", async () => {
    const reason = "Shell commands are not sandboxed on this machine: bubblewrap (bwrap) is not installed";
    const sandbox = { kind: null, enabled: false, setting: "auto", network: "ask", allowedDomains: [], reason };
    setup();
    server.overrides.set("lovia/status", () => ({ version: "fake", model: "scripted", sandbox }));
    await controller.serverReady();
    expect(controller.state().sandboxNotice).toBe(reason);
    await controller.handle({ type: "dismissSandboxNotice" });
    expect(controller.state().sandboxNotice).toBeUndefined();
    expect(saved.notices).toEqual([reason]);
    controller.dispose();
    setup(true); // a reload: dismissed stays dismissed
    await controller.serverReady();
    expect(controller.state().sandboxNotice).toBeUndefined();
    controller.dispose();
    setup(); // sandboxed, or turned off on purpose: nothing to say
    for (const status of [{ ...sandbox, kind: "bubblewrap", enabled: true, reason: null }, { ...sandbox, setting: "off" }]) {
      server.overrides.set("lovia/status", () => ({ version: "fake", model: "scripted", sandbox: status }));
      await controller.serverReady();
      expect(controller.state().sandboxNotice).toBeUndefined();
    }
  });

  it("links the instruction files in use, and lists them again after a live run ends", async () => {
    const folder = "/ws";
    let files: InstructionFileInfo[] = [{ path: "/ws/AGENTS.md", folder, scope: "root", applyTo: [], cut: false }];
    setup();
    server.overrides.set("lovia/status", () => ({ version: "fake", model: "scripted", instructions: files }));
    await controller.serverReady();
    expect(controller.state().instructions).toEqual([{ label: "AGENTS.md", uri: "file:///ws/AGENTS.md" }]);
    files = [
      ...files,
      { path: "/ws/.github/instructions/ts.instructions.md", folder, scope: "scoped", applyTo: ["**/*.ts"], cut: true },
    ];
    const runId = await prompt("write the instructions");
    server.finish(runId);
    await waitFor(() => (controller.state().instructions ?? []).length === 2, 2000, "listed again");
    expect(controller.state().instructions?.[1]).toEqual({
      label: ".github/instructions/ts.instructions.md (for **/*.ts) (cut)",
      uri: "file:///ws/.github/instructions/ts.instructions.md",
    });
    controller.dispose();
    setup(); // none in use: no line
    server.overrides.set("lovia/status", () => ({ version: "fake", model: "scripted", instructions: [] }));
    await controller.serverReady();
    expect(controller.state().instructions).toBeUndefined();
  });

  it("reopens the session it showed before a reload, with the reader's scroll position", async () => {
    setup();
    const runId = await prompt("keep my place");
    const sessionId = controller.state().sessionId!;
    await controller.handle({ type: "scrolled", top: 120, atBottom: false });
    expect(saved.place).toEqual({ sessionId, scrollTop: 120, atBottom: false });
    controller.dispose();
    // A window reload: a new controller over the same server and the same workspaceState.
    const { states } = setup(true);
    expect(controller.state().sessionId).toBeUndefined();
    await controller.serverReady();
    expect(controller.state().sessionId).toBe(sessionId);
    expect(controller.state().runs.map((r) => r.runId)).toEqual([runId]);
    expect(controller.state()).toMatchObject({ scrollTop: 120, atBottom: false });
    // the live run keeps streaming into the reopened view
    server.emit(runId, "message.delta", { messageId: "m1", text: "still here" });
    await waitFor(() => states.some((s) => JSON.stringify(s.runs).includes("still here")), 2000, "events after reload");
  });

  it("starts fresh when the remembered session is gone", async () => {
    setup();
    saved.place = { sessionId: "ses_deleted" };
    controller.dispose();
    setup(true);
    await controller.serverReady();
    expect(controller.state().sessionId).toBeUndefined();
    expect(controller.state().error).toBeUndefined();
    expect(saved.place).toEqual({});
  });

  it("Restore to here: the host restores; cut runs leave the panel and the prompt comes back", async () => {
    setup();
    const first = await prompt("refactor");
    server.emit(first, "checkpoint.created", {
      checkpointId: "rp-1",
      turnIndex: 0,
      label: "refactor",
      createdAt: 1,
      root: "/work/project",
      rootUri: "file:///work/project",
    });
    server.finish(first);
    await waitFor(() => controller.liveRun() === undefined);
    const second = await prompt("more");
    server.emit(second, "checkpoint.created", {
      checkpointId: "rp-2",
      turnIndex: 1,
      label: "more",
      createdAt: 2,
      root: "/work/project",
      rootUri: "file:///work/project",
    });
    await waitFor(() => controller.state().runs[1]?.checkpoint?.checkpointId === "rp-2", 2000, "checkpoint event");

    // while the run is live the restore is refused in the panel (the server would refuse too)
    await controller.handle({ type: "restoreCheckpoint", runId: second, checkpointId: "rp-2" });
    expect(restoreCalls).toEqual([]);
    expect(controller.state().error?.text).toMatch(/Stop the running agent/);
    server.finish(second);
    await waitFor(() => controller.liveRun() === undefined);

    // cancelled in the preview: nothing changes
    await controller.handle({ type: "restoreCheckpoint", runId: second, checkpointId: "rp-2" });
    expect(restoreCalls).toEqual(["rp-2"]);
    expect(controller.state().runs.map((r) => r.runId)).toEqual([first, second]);
    expect(controller.state().error).toBeUndefined();

    restoreAnswer = {
      checkpoint: {} as RestoreFilesResult["checkpoint"],
      undoCheckpoint: null,
      restored: [],
      kept: [],
      skipped: [],
      removedRuns: [second],
      prompt: "more",
    };
    await controller.handle({ type: "restoreCheckpoint", runId: second, checkpointId: "rp-2" });
    const state = controller.state();
    expect(state.runs.map((r) => r.runId)).toEqual([first]);
    expect(state.draft?.text).toBe("more");

    // a refusal from the server is shown with its code
    restoreAnswer = new LoviaRequestError("lovia/restore", -32017, "A run is live", undefined);
    await controller.handle({ type: "restoreCheckpoint", runId: first, checkpointId: "rp-1" });
    expect(controller.state().error).toMatchObject({ code: -32017 });

    await controller.handle({ type: "compareCheckpoint", runId: first, checkpointId: "rp-1" });
    expect(compareCalls).toEqual(["rp-1"]);
  });

  it("a new session forgets the remembered one", async () => {
    setup();
    await prompt("one");
    expect(saved.place.sessionId).toBeDefined();
    await controller.handle({ type: "newSession" });
    expect(saved.place).toEqual({});
  });
});
