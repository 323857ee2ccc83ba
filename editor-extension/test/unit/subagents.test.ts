import { describe, expect, it } from "vitest";
import { childRunsOf, runningChildren, unloadedChildren } from "../../src/chat/children";
import { isWebviewIntent } from "../../src/chat/messages";
import { applyEvent, createRunView, type LoviaEvent, type RunView } from "../../src/protocol";

function feed(run: RunView, events: Record<string, unknown>[]): void {
  events.forEach((e, i) => applyEvent(run, { sessionId: run.sessionId, runId: run.runId, seq: run.lastSeq + 1, ts: i, ...e } as unknown as LoviaEvent));
}

describe("subagents in the run view", () => {
  it("records children from subagent events and labels a child's approvals and questions", () => {
    const parent = createRunView("r_p", "s_p");
    feed(parent, [
      { kind: "tool.call", toolCallId: "s1", name: "spawn_subagent", toolKind: "other", title: "Start subagent", input: {}, locations: [], server: undefined },
      { kind: "subagent.started", childRunId: "r_c", childSessionId: "s_c", taskId: "t1", name: "helper", prompt: "p", toolCallId: "s1", resumed: false },
    ]);
    expect(parent.children).toEqual([{ runId: "r_c", sessionId: "s_c", taskId: "t1", name: "helper", prompt: "p", toolCallId: "s1", status: "running" }]);
    feed(parent, [{ kind: "subagent.finished", childRunId: "r_c", taskId: "t1", status: "completed", usage: {}, summary: "done it" }]);
    expect(parent.children[0]).toMatchObject({ status: "completed", summary: "done it" });

    const child = createRunView("r_c", "s_c");
    const who = { runId: "r_c", taskId: "t1", name: "helper" };
    feed(child, [
      { kind: "run.started", parentRunId: "r_p", prompt: "p", cwd: "/w", model: null, agent: "helper", resumed: false, subagent: who },
      { kind: "approval.requested", approvalId: "a", toolCallId: "c", title: "t", paths: [], action: "other", detail: "d", options: [], subagent: who },
      { kind: "question.requested", questionId: "q", text: "?", subagent: who },
    ]);
    expect(child.parentRunId).toBe("r_p");
    expect(child.subagent).toEqual(who);
    const approval = child.items.find((i) => i.type === "approval");
    const question = child.items.find((i) => i.type === "question");
    expect(approval && "requester" in approval ? approval.requester : undefined).toEqual(who);
    expect(question && "requester" in question ? question.requester : undefined).toEqual(who);
  });

  it("shows MCP failures and restarts as notices and keeps a tool's server", () => {
    const run = createRunView("r", "s");
    feed(run, [
      { kind: "tool.call", toolCallId: "m", name: "git__log", toolKind: "other", title: "git__log", input: {}, locations: [], server: "git" },
      { kind: "mcp.status", server: "git", state: "failed", tools: [], error: "Could not connect\nhint" },
      { kind: "mcp.status", server: "git", state: "restarting", tools: [] },
      { kind: "mcp.status", server: "git", state: "running", tools: ["git__log"] },
    ]);
    const tool = run.items.find((i) => i.type === "tool");
    expect(tool && "server" in tool ? tool.server : undefined).toBe("git");
    const notices = run.items.filter((i) => i.type === "notice").map((i) => ("text" in i ? i.text : ""));
    expect(notices).toEqual(["MCP server git is unavailable: Could not connect", "MCP server git stopped; restarting it"]);
  });

  it("collects nested children, the unloaded ones and the running count", () => {
    const parent = createRunView("r_p", "s_p");
    const child = createRunView("r_c", "s_c");
    const grandchild = createRunView("r_g", "s_g");
    parent.children = [{ runId: "r_c", sessionId: "s_c", taskId: "t1", name: "a", prompt: "", toolCallId: "s1", status: "running" }];
    child.children = [
      { runId: "r_g", sessionId: "s_g", taskId: "t1", name: "b", prompt: "", toolCallId: "x", status: "running" },
      { runId: "r_missing", sessionId: "s_m", taskId: "t2", name: "c", prompt: "", toolCallId: "y", status: "running" },
    ];
    child.parentRunId = "r_p";
    grandchild.parentRunId = "r_c";
    grandchild.status = "completed";
    const runs = new Map([child, grandchild].map((r) => [r.runId, r]));
    expect(childRunsOf([parent], (id) => runs.get(id)).map((r) => r.runId)).toEqual(["r_c", "r_g"]);
    expect(unloadedChildren([child], (id) => runs.has(id))).toEqual([{ runId: "r_missing", sessionId: "s_m" }]);
    expect(runningChildren([parent, child, grandchild])).toBe(1);
  });

  it("accepts per-run cancel and steer intents from the webview, and rejects malformed ones", () => {
    expect(isWebviewIntent({ type: "cancel", runId: "r_c" })).toBe(true);
    expect(isWebviewIntent({ type: "cancel" })).toBe(true);
    expect(isWebviewIntent({ type: "cancel", runId: 3 })).toBe(false);
    expect(isWebviewIntent({ type: "steerRun", runId: "r_c", text: "hi" })).toBe(true);
    expect(isWebviewIntent({ type: "steerRun", runId: "r_c" })).toBe(false);
  });
});
