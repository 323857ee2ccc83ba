import { afterEach, describe, expect, it } from "vitest";
import type { MessageConnection } from "vscode-jsonrpc/node";
import {
  EventStore,
  LoviaClient,
  type Disposable,
  type RpcEndpoint,
  type RunView,
  type TranscriptItem,
} from "../../src/protocol";
import { FakeLoviaServer, waitFor } from "../support/fakeServer";

/** Drop the render revision numbers to compare content only. */
function content(run: RunView | undefined): unknown {
  if (!run) return undefined;
  const strip = (i: TranscriptItem) => {
    const { rev: _rev, ...rest } = i;
    return rest;
  };
  return { status: run.status, lastSeq: run.lastSeq, items: run.items.map(strip), todos: run.todos, usage: run.usage };
}

/**
 * An endpoint whose underlying connection can be swapped, like a LanguageClient that
 * restarts its server: notification handlers are re-attached to each new connection.
 */
class ReconnectingEndpoint implements RpcEndpoint {
  private handlers: { method: string; handler: (p: unknown) => void; sub?: Disposable }[] = [];
  constructor(private conn: MessageConnection) {}
  sendRequest(method: string, params: unknown): Promise<unknown> {
    return this.conn.sendRequest(method, params);
  }
  onNotification(method: string, handler: (params: unknown) => void): Disposable {
    const entry: { method: string; handler: (p: unknown) => void; sub?: Disposable } = { method, handler };
    entry.sub = this.conn.onNotification(method, handler);
    this.handlers.push(entry);
    return { dispose: () => entry.sub?.dispose() };
  }
  reconnect(conn: MessageConnection): void {
    this.conn = conn;
    for (const h of this.handlers) h.sub = conn.onNotification(h.method, h.handler);
  }
}

describe("EventStore", () => {
  let server: FakeLoviaServer;
  let client: LoviaClient;
  let store: EventStore;
  let endpoint: ReconnectingEndpoint;
  const errors: unknown[] = [];

  function setup(): void {
    server = new FakeLoviaServer();
    endpoint = new ReconnectingEndpoint(server.attach());
    client = new LoviaClient(endpoint);
    errors.length = 0;
    store = new EventStore(client, { onError: (_id, e) => errors.push(e) });
    client.onEvent((e) => store.ingest(e));
  }

  afterEach(() => {
    store?.dispose();
    client?.dispose();
    server?.detachAll();
  });

  function startDirect(prompt = "fix the bug") {
    const run = server.startRun(prompt);
    server.emit(run.runId, "run.started", { prompt, cwd: "/w", model: "m", agent: "a", resumed: false });
    server.emit(run.runId, "user.message", { messageId: "u1", text: prompt, source: "prompt" });
    return run;
  }

  it("folds events in seq order into the run view", async () => {
    setup();
    const run = startDirect();
    server.emit(run.runId, "message.delta", { messageId: "a1", text: "Hel" });
    server.emit(run.runId, "message.delta", { messageId: "a1", text: "lo" });
    await waitFor(() => store.get(run.runId)?.lastSeq === 4);
    const view = store.get(run.runId)!;
    expect(view.sessionId).toBe(run.sessionId);
    expect(view.items.map((i) => [i.type, i.id])).toEqual([
      ["user", "u1"],
      ["assistant", "a1"],
    ]);
    expect(view.items[1]).toMatchObject({ text: "Hello", streaming: true });
    expect(store.stats).toMatchObject({ applied: 4, duplicates: 0, gaps: 0, replays: 0 });
  });

  it("drops duplicates instead of applying them twice", async () => {
    setup();
    const run = startDirect();
    const delta = server.emit(run.runId, "message.delta", { messageId: "a1", text: "once" });
    await waitFor(() => store.get(run.runId)?.lastSeq === 3);
    expect(store.ingest(delta)).toBe(false);
    expect(store.ingest({ ...delta })).toBe(false);
    expect(store.get(run.runId)!.items[1]).toMatchObject({ text: "once" });
    expect(store.stats.duplicates).toBe(2);
  });

  it("detects a gap and catches up with lovia/replay {runId, afterSeq}", async () => {
    setup();
    const run = startDirect();
    await waitFor(() => store.get(run.runId)?.lastSeq === 2);
    server.drop.add(`${run.runId}:3`).add(`${run.runId}:4`);
    server.emit(run.runId, "message.delta", { messageId: "a1", text: "A" }); // 3 lost
    server.emit(run.runId, "message.delta", { messageId: "a1", text: "B" }); // 4 lost
    server.emit(run.runId, "message.delta", { messageId: "a1", text: "C" }); // 5 arrives
    await waitFor(() => store.get(run.runId)?.lastSeq === 5, 2000, "catch-up");
    expect(store.get(run.runId)!.items[1]).toMatchObject({ text: "ABC" });
    expect(server.requestsOf("lovia/replay")).toEqual([{ runId: run.runId, afterSeq: 2 }]);
    expect(store.stats.gaps).toBe(1);
    // The replayed 5 and the held-back 5 are one event.
    server.emit(run.runId, "message.completed", { messageId: "a1", text: "ABC!" });
    await waitFor(() => store.get(run.runId)?.lastSeq === 6);
    expect(store.get(run.runId)!.items[1]).toMatchObject({ text: "ABC!", streaming: false });
  });

  it("catches up events that were emitted before the client knew the run (events before the response)", async () => {
    setup();
    server.eventsBeforeRunResponse = true;
    // A second client that subscribes late: it misses run.started and user.message.
    const result = await client.run({ prompt: "early" });
    const lateStore = new EventStore(client);
    lateStore.track(result.runId, result.sessionId);
    await lateStore.catchUp(result.runId);
    expect(lateStore.get(result.runId)!.items).toHaveLength(1);
    expect(lateStore.get(result.runId)!.prompt).toBe("early");
    lateStore.dispose();
  });

  it("shares one replay request between concurrent catch-ups", async () => {
    setup();
    const run = startDirect();
    await waitFor(() => store.get(run.runId)?.lastSeq === 2);
    const before = server.requestsOf("lovia/replay").length;
    await Promise.all([store.catchUp(run.runId), store.catchUp(run.runId), store.catchUp(run.runId)]);
    expect(server.requestsOf("lovia/replay").length - before).toBe(1);
  });

  it("rebuilds a run from the server's log to the same view (webview reload / new window)", async () => {
    setup();
    const run = startDirect();
    server.emit(run.runId, "reasoning.delta", { messageId: "a1", text: "think" });
    server.emit(run.runId, "tool.call", { toolCallId: "t1", name: "shell", toolKind: "execute", title: "Run ls", input: { command: "ls" }, locations: [] });
    server.emit(run.runId, "tool.update", { toolCallId: "t1", output: { text: "a\n", stream: "stdout" } });
    server.emit(run.runId, "tool.result", { toolCallId: "t1", status: "completed", content: [{ type: "text", text: "ok" }], isError: false });
    server.emit(run.runId, "todo.updated", { items: [{ content: "x", status: "completed" }] });
    server.finish(run.runId);
    await waitFor(() => store.get(run.runId)?.status === "completed");

    const fresh = new EventStore(client);
    await fresh.load(run.runId);
    expect(content(fresh.get(run.runId))).toEqual(content(store.get(run.runId)));
    expect(fresh.get(run.runId)!.sessionId).toBe(run.sessionId);

    await store.rebuild(run.runId);
    expect(content(store.get(run.runId))).toEqual(content(fresh.get(run.runId)));
    fresh.dispose();
  });

  it("resyncs after a reconnect: missed events are replayed, nothing is doubled", async () => {
    setup();
    const run = startDirect();
    server.emit(run.runId, "message.delta", { messageId: "a1", text: "before " });
    await waitFor(() => store.get(run.runId)?.lastSeq === 3);

    // The connection drops; the server keeps running the run.
    server.detachAll();
    server.emit(run.runId, "message.delta", { messageId: "a1", text: "during " });
    server.emit(run.runId, "message.completed", { messageId: "a1", text: "before during after" });
    expect(store.get(run.runId)!.lastSeq).toBe(3);

    endpoint.reconnect(server.attach());
    await store.resync();
    expect(store.get(run.runId)!.lastSeq).toBe(5);
    expect(store.get(run.runId)!.items[1]).toMatchObject({ text: "before during after", streaming: false });

    // Live events flow again on the new connection.
    server.finish(run.runId);
    await waitFor(() => store.get(run.runId)?.status === "completed");
    expect(store.stats.duplicates).toBe(0);
  });

  it("marks a live run interrupted when the restarted server reports it so", async () => {
    setup();
    const run = startDirect();
    await waitFor(() => store.get(run.runId)?.lastSeq === 2);
    // Server crashed: no run.finished was ever sent; the new server says "interrupted".
    server.runs.get(run.runId)!.status = "interrupted";
    server.runs.get(run.runId)!.resumable = true;
    await store.resync();
    const view = store.get(run.runId)!;
    expect(view.status).toBe("interrupted");
    expect(view.resumable).toBe(true);
    expect(view.items.at(-1)).toMatchObject({ type: "notice", text: expect.stringContaining("resumed") as unknown });
    expect(store.liveRuns()).toHaveLength(0);
  });

  it("applies held-back events anyway when replay fails, and reports the error", async () => {
    setup();
    const run = startDirect();
    await waitFor(() => store.get(run.runId)?.lastSeq === 2);
    server.overrides.set("lovia/replay", () => {
      throw new Error("replay broke");
    });
    server.drop.add(`${run.runId}:3`);
    server.emit(run.runId, "message.delta", { messageId: "a1", text: "lost" });
    server.emit(run.runId, "message.delta", { messageId: "a2", text: "kept" });
    await waitFor(() => store.get(run.runId)?.lastSeq === 4, 2000, "forced drain");
    expect(errors).toHaveLength(1);
    expect(store.get(run.runId)!.items.map((i) => i.id)).toEqual(["u1", "a2"]);
    // Later events keep flowing without more replays.
    server.emit(run.runId, "message.delta", { messageId: "a2", text: "!" });
    await waitFor(() => store.get(run.runId)?.lastSeq === 5);
    expect(store.get(run.runId)!.items[1]).toMatchObject({ text: "kept!" });
  });

  it("notifies listeners per run and forgets runs on request", async () => {
    setup();
    const changed: string[] = [];
    store.onDidChange((id) => changed.push(id));
    const a = startDirect("a");
    const b = startDirect("b");
    await waitFor(() => store.get(a.runId)?.lastSeq === 2 && store.get(b.runId)?.lastSeq === 2);
    expect(new Set(changed)).toEqual(new Set([a.runId, b.runId]));
    expect(store.runsOfSession(a.sessionId).map((r) => r.runId)).toEqual([a.runId]);
    store.forget((r) => r.sessionId === a.sessionId);
    expect(store.has(a.runId)).toBe(false);
    expect(store.has(b.runId)).toBe(true);
  });
});
