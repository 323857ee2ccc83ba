import { afterEach, describe, expect, it } from "vitest";
import { ChatController, type ChatHost, type PanelPlace } from "../../src/chat/controller";
import type { ChatViewState, ModelChoice } from "../../src/chat/messages";
import { EventStore, LoviaClient } from "../../src/protocol";
import { ResponseError } from "vscode-jsonrpc/node";
import { FakeLoviaServer, waitFor } from "../support/fakeServer";

let server: FakeLoviaServer;
let controller: ChatController;
const opened: { uri: string; line?: number }[] = [];
const diffs: string[] = [];
let keyPrompts = 0;
/** What the host persisted (workspaceState in VS Code), kept across "reloads" in a test. */
let saved: { place: PanelPlace; model: ModelChoice };
let picks: (ModelChoice | undefined)[] = [];

function setup(keep = false): { store: EventStore; states: ChatViewState[] } {
  if (!keep) saved = { place: {}, model: { kind: "default" } };
  server = keep && server ? server : new FakeLoviaServer();
  const client = new LoviaClient(server.attach());
  const store = new EventStore(client);
  client.onEvent((e) => store.ingest(e));
  opened.length = 0;
  diffs.length = 0;
  keyPrompts = 0;
  const host: ChatHost = {
    openLocation: (uri, line) => {
      opened.push(line === undefined ? { uri } : { uri, line });
    },
    openDiff: (_runId, approvalId) => {
      diffs.push(approvalId);
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
    await waitFor(() => controller.state().childRuns.length === 1, 2000, "child shown");
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

  it("a new session forgets the remembered one", async () => {
    setup();
    await prompt("one");
    expect(saved.place.sessionId).toBeDefined();
    await controller.handle({ type: "newSession" });
    expect(saved.place).toEqual({});
  });
});
