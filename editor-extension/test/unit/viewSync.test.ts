import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PanelModel } from "../../media/model";
import type { ChatViewState, PatchMessage, SyncMessage as ExtensionMessage } from "../../src/chat/messages";
import { projectRun, RowProjector } from "../../src/chat/rows";
import { ViewSync } from "../../src/chat/viewSync";
import { applyEvent, createRunView, type LoviaEvent, type RunView } from "../../src/protocol";

const fixture = JSON.parse(readFileSync(new URL("../fixtures/run-events.json", import.meta.url), "utf8")) as { events: LoviaEvent[]; finish: LoviaEvent[] };

function state(runs: RunView[], extra: Partial<ChatViewState> = {}): ChatViewState {
  const live = runs.find((r) => r.status === "running");
  return {
    server: { state: "running" },
    trusted: true,
    sessions: [],
    sessionId: runs[0]?.sessionId ?? "s",
    runs,
    childRuns: [],
    ...(live ? { liveRunId: live.runId } : {}),
    pendingSteers: [],
    busy: false,
    model: { kind: "setting", label: "m" },
    ...extra,
  };
}

/** The webview's side: fold messages as it does (after a structured clone). */
function webview() {
  const model = new PanelModel();
  return {
    model,
    take(m: ExtensionMessage | undefined) {
      if (m) model.apply(JSON.parse(JSON.stringify(m)) as ExtensionMessage);
      return m;
    },
    rows: () => model.order.map((k) => model.rows.get(k)),
  };
}

const plain = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;
let seq = 0;
const ev = (run: RunView, e: Record<string, unknown>) =>
  applyEvent(run, { sessionId: run.sessionId, runId: run.runId, seq: ++seq, ts: seq, ...e } as unknown as LoviaEvent);

describe("ViewSync: the webview gets a reset, then only what changed", () => {
  it("folds to exactly the projected rows after every event of a recorded run", () => {
    const run = createRunView("run_01", "ses_7f3a");
    const sync = new ViewSync();
    const w = webview();
    let resets = 0;
    for (const e of [...fixture.events, ...fixture.finish]) {
      applyEvent(run, e);
      const m = w.take(sync.next(state([run])));
      if (m?.type === "reset") resets += 1;
      expect(plain(w.rows())).toEqual(plain(projectRun(run)));
    }
    expect(resets).toBe(1);
    expect(w.model.chrome!.active!.todos).toEqual(plain(run.todos));
  });

  it("sends a streamed chunk as an append to its one row", () => {
    const run = createRunView("r", "s");
    ev(run, { kind: "run.started", prompt: "p", cwd: "/w", model: "m", agent: "a", resumed: false });
    for (let i = 0; i < 300; i++) ev(run, { kind: "tool.call", toolCallId: `c${i}`, name: "read_file", toolKind: "read", title: `Read f${i}`, input: { path: `f${i}` } });
    const sync = new ViewSync();
    const w = webview();
    w.take(sync.next(state([run])));
    ev(run, { kind: "message.delta", messageId: "m1", text: "Hello" });
    w.take(sync.next(state([run])));
    ev(run, { kind: "message.delta", messageId: "m1", text: ", world" });
    const m = w.take(sync.next(state([run]))) as PatchMessage;
    expect(m.type).toBe("patch");
    expect(m.insert).toBeUndefined();
    expect(m.patch).toEqual([{ key: "r:assistant:m1", rev: run.rev, append: { text: ", world" } }]);
    expect(JSON.stringify(m).length).toBeLessThan(200);
    expect((w.rows().at(-1) as { text: string }).text).toBe("Hello, world");
    // Nothing changed: nothing is posted.
    expect(sync.next(state([run]))).toBeUndefined();
  });

  it("sends new shell output only, and the whole output again once the kept tail moved past it", () => {
    const run = createRunView("r", "s");
    ev(run, { kind: "run.started", prompt: "p", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(run, { kind: "tool.call", toolCallId: "sh", name: "shell", toolKind: "execute", title: "Run", input: { command: "make" } });
    const sync = new ViewSync();
    const w = webview();
    w.take(sync.next(state([run])));
    ev(run, { kind: "tool.update", toolCallId: "sh", output: { text: "one\n", stream: "stdout" } });
    ev(run, { kind: "tool.update", toolCallId: "sh", output: { text: "warn\n", stream: "stderr" } });
    const m = w.take(sync.next(state([run]))) as PatchMessage;
    expect(m.patch![0]!.output).toEqual([
      { stream: "stdout", text: "one\n" },
      { stream: "stderr", text: "warn\n" },
    ]);
    ev(run, { kind: "tool.update", toolCallId: "sh", output: { text: "x".repeat(150_000), stream: "stdout" } });
    const big = w.take(sync.next(state([run]))) as PatchMessage;
    expect(big.patch![0]!.set!.output).toBeDefined();
    expect(plain(w.rows())).toEqual(plain(projectRun(run)));
  });

  it("bounds what a tool's result row carries: the text's head, a diff's changed lines", () => {
    const run = createRunView("r", "s");
    ev(run, { kind: "run.started", prompt: "p", cwd: "/w", model: "m", agent: "a", resumed: false });
    const sync = new ViewSync();
    const w = webview();
    w.take(sync.next(state([run])));
    ev(run, { kind: "tool.call", toolCallId: "r1", name: "read_file", toolKind: "read", title: "Read big", input: {}, locations: [] });
    const file = Array.from({ length: 5000 }, (_, i) => `line ${i} of a big file`).join("\n");
    ev(run, { kind: "tool.result", toolCallId: "r1", status: "completed", isError: false, content: [{ type: "text", text: file }, { type: "diff", path: "/w/f", uri: "file:///w/f", oldText: file, newText: file.replace("line 2500 ", "LINE 2500 ") }] });
    const m = w.take(sync.next(state([run])))!;
    expect(JSON.stringify(m).length).toBeLessThan(20_000);
    const row = w.rows().at(-1) as unknown as { content: [{ text: string; lines: number; more: number }, { lines: unknown[]; added: number; removed: number }] };
    expect(row.content[0].text.length).toBe(16_000);
    expect(row.content[0].lines).toBe(5000);
    expect(row.content[0].more).toBe(file.length - 16_000);
    expect(row.content[1]).toMatchObject({ added: 1, removed: 1 });
    expect(row.content[1].lines.length).toBe(10); // 3 + 2 changed + 3 context lines, and the gaps around
  });

  it("removes a discarded answer and inserts rows in place", () => {
    const run = createRunView("r", "s");
    ev(run, { kind: "run.started", prompt: "p", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(run, { kind: "message.delta", messageId: "m1", text: "draft" });
    const sync = new ViewSync();
    const w = webview();
    w.take(sync.next(state([run])));
    ev(run, { kind: "output.discarded", messageId: "m1" });
    ev(run, { kind: "message.delta", messageId: "m2", text: "again" });
    const m = w.take(sync.next(state([run]))) as PatchMessage;
    expect(m.remove).toEqual(["r:assistant:m1"]);
    expect(m.insert!.map((i) => i.row.key)).toEqual(["r:assistant:m2"]);
    expect(plain(w.rows())).toEqual(plain(projectRun(run)));
  });

  it("changes chrome fields alone, unsets gone ones, and resets after the webview reloads", () => {
    const run = createRunView("r", "s");
    ev(run, { kind: "run.started", prompt: "p", cwd: "/w", model: "m", agent: "a", resumed: false });
    const sync = new ViewSync();
    const w = webview();
    w.take(sync.next(state([run], { error: { text: "boom" } })));
    const m = w.take(sync.next(state([run], { busy: true }))) as PatchMessage;
    expect(m.chrome).toEqual({ busy: true });
    expect(m.unsetChrome).toEqual(["error"]);
    expect(w.model.chrome!.error).toBeUndefined();
    sync.reset();
    expect(sync.next(state([run]))!.type).toBe("reset");
  });

  it("falls back to a reset when rows moved", () => {
    const a = createRunView("a", "s");
    const b = createRunView("b", "s");
    ev(a, { kind: "run.started", prompt: "p", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(b, { kind: "run.started", prompt: "q", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(a, { kind: "user.message", messageId: "u1", text: "p", source: "prompt" });
    ev(b, { kind: "user.message", messageId: "u2", text: "q", source: "prompt" });
    const sync = new ViewSync();
    const w = webview();
    w.take(sync.next(state([a, b])));
    const m = w.take(sync.next(state([b, a])));
    expect(m!.type).toBe("reset");
    expect(w.rows().map((r) => r!.key)).toEqual(["b:user:u2", "a:user:u1"]);
  });
  it("nests a subagent under its spawning call; the child's chunks, tokens and end patch its own rows alone", () => {
    const parent = createRunView("p", "s");
    const child = createRunView("c", "sc");
    const grand = createRunView("g", "sg");
    ev(parent, { kind: "run.started", prompt: "p", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(parent, { kind: "tool.call", toolCallId: "s1", name: "spawn_subagent", toolKind: "other", title: "Start subagent", input: {} });
    ev(parent, { kind: "subagent.started", childRunId: "c", childSessionId: "sc", taskId: "t1", name: "helper", prompt: "Do it", toolCallId: "s1", resumed: false });
    ev(parent, { kind: "tool.call", toolCallId: "w1", name: "wait_subagents", toolKind: "other", title: "Wait", input: {} });
    ev(child, { kind: "run.started", prompt: "Do it", cwd: "/w", model: "m", agent: "helper", resumed: false, subagent: { runId: "c", taskId: "t1", name: "helper" } });
    ev(child, { kind: "tool.call", toolCallId: "c1", name: "spawn_subagent", toolKind: "other", title: "Start subagent", input: {} });
    ev(child, { kind: "subagent.started", childRunId: "g", childSessionId: "sg", taskId: "t2", name: "deeper", prompt: "Go on", toolCallId: "c1", resumed: false });
    ev(grand, { kind: "run.started", prompt: "Go on", cwd: "/w", model: "m", agent: "deeper", resumed: false });
    const st = () => state([parent], { childRuns: [child, grand] });
    const sync = new ViewSync();
    const w = webview();
    w.take(sync.next(st()));
    expect(w.rows().map((r) => [r!.key, r!.nestedIn])).toEqual([
      ["p:tool:s1", undefined],
      ["p:subagent:c", "p:tool:s1"],
      ["c:tool:c1", "p:subagent:c"],
      ["c:subagent:g", "c:tool:c1"],
      ["p:tool:w1", undefined],
    ]);
    expect(w.rows()[1]).toMatchObject({ type: "subagent", id: "c", taskId: "t1", name: "helper", prompt: "Do it", status: "running", step: "Start subagent" });
    // Child runs are rows, never chrome.
    expect(Object.keys(w.model.chrome!)).not.toContain("childRuns");

    ev(child, { kind: "message.delta", messageId: "m1", text: "Hello" });
    const insert = w.take(sync.next(st())) as PatchMessage;
    expect(insert.chrome).toBeUndefined();
    expect(insert.patch).toBeUndefined();
    expect(insert.insert!.map((i) => [i.after, i.row.key, i.row.nestedIn])).toEqual([["c:subagent:g", "c:assistant:m1", "p:subagent:c"]]);
    ev(child, { kind: "message.delta", messageId: "m1", text: ", world" });
    const chunk = w.take(sync.next(st())) as PatchMessage;
    expect(chunk).toEqual({ type: "patch", patch: [{ key: "c:assistant:m1", rev: child.rev, append: { text: ", world" } }] });

    ev(child, { kind: "usage.updated", inputTokens: 900, outputTokens: 300, cacheReadTokens: 0, contextTokens: 900, contextWindow: null });
    const tokens = w.take(sync.next(st())) as PatchMessage;
    expect(tokens.patch!.map((p) => [p.key, p.set])).toEqual([["p:subagent:c", { tokens: 1200 }]]);

    ev(child, { kind: "run.finished", status: "interrupted", resumable: true, usage: { inputTokens: 900, outputTokens: 300, cacheReadTokens: 0, contextTokens: 900, contextWindow: null } });
    ev(parent, { kind: "subagent.finished", childRunId: "c", taskId: "t1", status: "interrupted", summary: "Stopped halfway", usage: { inputTokens: 900, outputTokens: 300, cacheReadTokens: 0, contextTokens: null, contextWindow: null } });
    w.take(sync.next(st()));
    expect(w.model.rows.get("p:subagent:c")).toMatchObject({ status: "interrupted", step: "Stopped halfway" });
    // A subagent is resumed with its parent: no resume offer of its own.
    expect(w.model.order.some((k) => k.startsWith("c:footer"))).toBe(false);
    // What the webview folded is exactly the projection (a fresh projector counts status revs anew).
    const noRev = (rows: unknown[]) => (plain(rows) as Record<string, unknown>[]).map(({ rev: _rev, ...r }) => r);
    expect(noRev(w.rows())).toEqual(noRev(new RowProjector().session([parent], [child, grand])));
  });

  it("puts a subagent no tool call of the run spawned at the end of its parent's rows", () => {
    const parent = createRunView("p2", "s");
    ev(parent, { kind: "run.started", prompt: "p", cwd: "/w", model: "m", agent: "a", resumed: false });
    ev(parent, { kind: "message.completed", messageId: "a1", text: "Resuming the helper." });
    ev(parent, { kind: "subagent.started", childRunId: "c2", childSessionId: "sc", taskId: "t1", name: "helper", prompt: "Do it", toolCallId: null, resumed: true });
    ev(parent, { kind: "run.finished", status: "interrupted", resumable: true, usage: { inputTokens: 1, outputTokens: 1 } });
    const rows = new RowProjector().session([parent], []).filter((r) => r.type !== "notice");
    expect(rows.map((r) => [r.key, r.nestedIn])).toEqual([
      ["p2:assistant:a1", undefined],
      ["p2:subagent:c2", undefined],
      ["p2:footer:resume", undefined],
    ]);
    // The child run not loaded yet: its line says it is starting.
    expect(rows[1]).toMatchObject({ status: "running", step: "starting" });
  });
});
