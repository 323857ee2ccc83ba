import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  MAX_TOOL_OUTPUT_CHARS,
  applyEvent,
  applyReplayStatus,
  createRunView,
  pendingApprovalsOf,
  type LoviaEvent,
  type RunView,
  type ToolItem,
} from "../../src/protocol";

const fixture = JSON.parse(readFileSync(new URL("../fixtures/run-events.json", import.meta.url), "utf8")) as {
  events: LoviaEvent[];
  finish: LoviaEvent[];
};

function fold(events: LoviaEvent[], run = createRunView(events[0]!.runId, events[0]!.sessionId)): RunView {
  for (const e of events) applyEvent(run, e);
  return run;
}

const USAGE = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, contextTokens: null, contextWindow: null };

let seq = 0;
function ev<K extends LoviaEvent["kind"]>(kind: K, payload: Omit<Extract<LoviaEvent, { kind: K }>, "kind" | "seq" | "ts" | "runId" | "sessionId">): LoviaEvent {
  seq += 1;
  return { sessionId: "s", runId: "r", seq, ts: seq, kind, ...payload } as unknown as LoviaEvent;
}

describe("applyEvent on the recorded fixture", () => {
  it("builds the transcript: messages, collapsed reasoning, tools, approvals", () => {
    const run = fold(fixture.events);
    expect(run.status).toBe("running");
    expect(run.lastSeq).toBe(30);
    expect(run.items.map((i) => `${i.type}:${i.id}`)).toEqual([
      "user:m_user_1",
      "reasoning:reasoning:m_a1",
      "assistant:m_a1",
      "tool:call_read",
      "assistant:m_a2",
      "tool:call_edit",
      "approval:ap_edit",
      "tool:call_sh",
      "approval:ap_sh",
      "tool:call_write",
      "approval:ap_changelog",
    ]);
    const shell = run.items.find((i) => i.id === "call_sh") as ToolItem;
    expect(shell.status).toBe("completed");
    expect(shell.output.map((c) => c.stream)).toEqual(["stdout", "stderr"]);
    expect(shell.output[0]!.text).toContain("✔ total multiplies quantity");
    expect(run.todos.map((t) => t.status)).toEqual(["completed", "completed", "in_progress"]);
    expect(run.usage).toEqual({ inputTokens: 5120, outputTokens: 412, cacheReadTokens: 0, cacheWriteTokens: 0, contextTokens: 5532, contextWindow: 128000 });
    expect(pendingApprovalsOf(run).map((a) => a.approvalId)).toEqual(["ap_changelog"]);
    expect(run.activity).toBe("waiting for approval");
    const reasoning = run.items[1]!;
    expect(reasoning).toMatchObject({ streaming: false });
  });

  it("finishes: approvals resolved, status completed, nothing streaming", () => {
    const run = fold([...fixture.events, ...fixture.finish]);
    expect(run.status).toBe("completed");
    expect(run.resumable).toBe(false);
    expect(pendingApprovalsOf(run)).toHaveLength(0);
    expect(run.items.some((i) => (i.type === "assistant" || i.type === "reasoning") && i.streaming)).toBe(false);
    expect(run.activity).toBeUndefined();
    expect(run.items.at(-1)).toMatchObject({ type: "assistant", text: expect.stringContaining("Done.") as unknown });
  });

  it("bumps rev only on items that changed", () => {
    const run = fold(fixture.events.slice(0, 8));
    const before = new Map(run.items.map((i) => [i.id, i.rev]));
    applyEvent(run, fixture.events[8]!); // tool.call
    for (const item of run.items) if (before.has(item.id)) expect(item.rev).toBe(before.get(item.id));
  });
});

describe("applyEvent edge cases", () => {
  it("message.completed is authoritative and output.discarded drops a retried turn", () => {
    const run = createRunView("r", "s");
    applyEvent(run, ev("message.delta", { messageId: "a", text: "garbled" }));
    applyEvent(run, ev("reasoning.delta", { messageId: "a", text: "hmm" }));
    applyEvent(run, ev("output.discarded", { messageId: "a" }));
    expect(run.items).toHaveLength(0);
    applyEvent(run, ev("message.delta", { messageId: "b", text: "Hel" }));
    applyEvent(run, ev("message.completed", { messageId: "b", text: "Hello." }));
    expect(run.items).toEqual([expect.objectContaining({ type: "assistant", text: "Hello.", streaming: false })]);
    // An empty completed message (tool calls only) leaves no bubble.
    applyEvent(run, ev("message.completed", { messageId: "c", text: "" }));
    expect(run.items).toHaveLength(1);
  });

  it("model.retrying shows one notice per message, updated at each retry, with the hint", () => {
    const run = createRunView("r", "s");
    applyEvent(run, ev("run.started", { prompt: "p", cwd: "/w", model: "m", agent: "a", resumed: false }));
    const retry = { messageId: "a", maxAttempts: 5, retryAt: 0, reason: "OpenAI Chat stream returned HTTP 501: Not Implemented", statusCode: 501 };
    applyEvent(run, ev("model.retrying", { ...retry, attempt: 1, delayMs: 1234, hint: "check OPENAI_BASE_URL" }));
    expect(run.activity).toBe("retrying the model call");
    applyEvent(run, ev("model.retrying", { ...retry, attempt: 2, delayMs: 12_400 }));
    expect(run.items).toEqual([
      expect.objectContaining({
        type: "notice",
        level: "info",
        text: "The model call failed (OpenAI Chat stream returned HTTP 501: Not Implemented); retrying in 12 s (attempt 3 of 5)",
        hint: "check OPENAI_BASE_URL",
      }),
    ]);
    applyEvent(run, ev("message.delta", { messageId: "a", text: "back" }));
    expect(run.activity).toBe("thinking");
  });

  it("keeps only the tail of very long tool output", () => {
    const run = createRunView("r", "s");
    applyEvent(run, ev("tool.call", { toolCallId: "t", name: "shell", toolKind: "execute", title: "yes", input: {}, locations: [] }));
    const chunk = "x".repeat(30_000);
    for (let i = 0; i < 5; i++) applyEvent(run, ev("tool.update", { toolCallId: "t", output: { text: chunk, stream: i === 4 ? "stderr" : "stdout" } }));
    const tool = run.items[0] as ToolItem;
    const total = tool.output.reduce((n, c) => n + c.text.length, 0);
    expect(total).toBe(MAX_TOOL_OUTPUT_CHARS);
    expect(tool.outputTruncated).toBe(true);
    expect(tool.output.at(-1)).toMatchObject({ stream: "stderr" });
  });

  it("an interrupted run keeps its running tool; a cancelled one marks it cancelled", () => {
    const a = createRunView("r", "s");
    applyEvent(a, ev("tool.call", { toolCallId: "t", name: "shell", toolKind: "execute", title: "sleep", input: {}, locations: [] }));
    applyEvent(a, ev("run.finished", { status: "interrupted", usage: USAGE, resumable: true }));
    expect((a.items[0] as ToolItem).status).toBe("running");
    expect(a.items.at(-1)).toMatchObject({ type: "notice", text: expect.stringContaining("can be resumed") as unknown });

    const b = createRunView("r2", "s");
    applyEvent(b, ev("tool.call", { toolCallId: "t", name: "shell", toolKind: "execute", title: "sleep", input: {}, locations: [] }));
    applyEvent(b, ev("run.finished", { status: "cancelled", usage: USAGE, resumable: false }));
    expect((b.items[0] as ToolItem).status).toBe("cancelled");
  });

  it("a resumed run re-asks its approval under the same id", () => {
    const run = createRunView("r", "s");
    const ask = ev("approval.requested", {
      approvalId: "ap", toolCallId: "t", action: "shell", title: "rm", detail: "", paths: [], command: "rm x",
      options: [{ decision: "allow_once", label: "Run" }],
    });
    applyEvent(run, ask);
    applyEvent(run, ev("run.finished", { status: "interrupted", usage: USAGE, resumable: true }));
    applyEvent(run, ev("run.started", { prompt: "p", cwd: "/", model: null, agent: "lovia:coding", resumed: true }));
    expect(run.status).toBe("running");
    applyEvent(run, { ...ask, seq: 99 });
    expect(pendingApprovalsOf(run)).toHaveLength(1);
    expect(run.items.filter((i) => i.type === "approval")).toHaveLength(1);
  });

  it("run.finished with an error shows it with its hint", () => {
    const run = createRunView("r", "s");
    applyEvent(run, ev("run.finished", { status: "failed", error: { type: "ModelNotConfigured", message: "no model", hint: "set lovia.model" }, usage: USAGE, resumable: false }));
    expect(run.error?.type).toBe("ModelNotConfigured");
    expect(run.items.at(-1)).toMatchObject({ type: "notice", level: "error", hint: "set lovia.model" });
  });

  it("questions are asked and answered; handoff and compaction become notices", () => {
    const run = createRunView("r", "s");
    applyEvent(run, ev("question.requested", { questionId: "q", text: "Which db?", choices: ["sqlite", "postgres"] }));
    expect(run.activity).toBe("waiting for your answer");
    applyEvent(run, ev("question.answered", { questionId: "q", answer: "sqlite" }));
    expect(run.items[0]).toMatchObject({ answer: "sqlite" });
    applyEvent(run, ev("handoff", { fromAgent: "triage", toAgent: "coder", reason: "code change" }));
    applyEvent(run, ev("compaction", { tokensBefore: 120000, tokensAfter: 30000, stages: [], reactive: false, detail: [] }));
    expect(run.items.slice(1).map((i) => i.type)).toEqual(["notice", "notice"]);
    expect(run.activity).toBe("thinking");
  });

  it("applyReplayStatus only touches runs still believed live", () => {
    const run = createRunView("r", "s");
    applyEvent(run, ev("message.delta", { messageId: "a", text: "x" }));
    applyReplayStatus(run, "interrupted");
    expect(run.status).toBe("interrupted");
    expect(run.items[0]).toMatchObject({ streaming: false });
    const done = createRunView("r", "s");
    applyEvent(done, ev("run.finished", { status: "completed", usage: USAGE, resumable: false }));
    applyReplayStatus(done, "interrupted");
    expect(done.status).toBe("completed");
    // A run caught up while it waits for approval (a subagent found late) stays live.
    const waiting = createRunView("r", "s");
    applyReplayStatus(waiting, "awaiting_approval");
    applyReplayStatus(waiting, "cancelling");
    expect(waiting.status).toBe("running");
  });
});

describe("checkpoint.created", () => {
  it("records the turn's restore point and re-renders its prompt", () => {
    seq = 0;
    const run = fold([
      ev("run.started", { prompt: "fix it", cwd: "/w", model: "m", agent: "a", resumed: false }),
      ev("user.message", { messageId: "u1", text: "fix it", source: "prompt" }),
    ]);
    const prompt = run.items[0]!;
    const before = prompt.rev;
    applyEvent(
      run,
      ev("checkpoint.created", { checkpointId: "rp-1", turnIndex: 3, label: "fix it", createdAt: 5, root: "/w", rootUri: "file:///w" }),
    );
    expect(run.checkpoint).toEqual({ checkpointId: "rp-1", turnIndex: 3, label: "fix it", createdAt: 5 });
    expect(prompt.rev).toBeGreaterThan(before);
  });
});
