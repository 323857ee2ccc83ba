import { afterEach, describe, expect, it } from "vitest";
import { agentRow, formatElapsed, WorktreeRuns, type WorktreeClient } from "../../src/agents/worktreeRuns";
import { AgentsTreeProvider } from "../../src/agents/agentsView";
import { EventStore } from "../../src/protocol/eventStore";
import type { LoviaEvent, ReplayResult, WorktreeFile, WorktreeRun } from "../../src/protocol/types";

const T0 = 1_800_000_000_000;

function worktreeRun(over: Partial<WorktreeRun> = {}): WorktreeRun {
  return {
    runId: "r_a",
    sessionId: "s_a",
    state: "active",
    runStatus: "running",
    prompt: 'Tidy up the README "variant A"\nand nothing else',
    branch: "lovia/tidy-up-the-readme-000r_a",
    path: "/state/worktrees/tidy-up-the-readme-000r_a",
    workspace: "/work/project",
    base: "4e0c",
    createdAt: T0,
    usage: null,
    ...over,
  };
}

function file(over: Partial<WorktreeFile> = {}): WorktreeFile {
  return { path: "README.md", uri: "file:///work/project/README.md", status: "modified", binary: false, oldText: "# a\n", newText: "# b\n", patch: "", verdict: "clean", ...over } as WorktreeFile;
}

let seqs = new Map<string, number>();
function event(runId: string, kind: string, ts: number, payload: Record<string, unknown> = {}): LoviaEvent {
  const seq = (seqs.get(runId) ?? 0) + 1;
  seqs.set(runId, seq);
  return { sessionId: `s_${runId.slice(2)}`, runId, seq, ts, kind, ...payload } as unknown as LoviaEvent;
}
const started = (runId: string, ts: number) => event(runId, "run.started", ts, { prompt: "p", cwd: "/wt", model: "demo", agent: "lovia-demo", resumed: false });
const usage = { inputTokens: 1200, outputTokens: 300, cacheReadTokens: 0, cacheWriteTokens: 0, contextTokens: null, contextWindow: null, costUsd: 0.0432 };
const finished = (runId: string, ts: number) => event(runId, "run.finished", ts, { status: "completed", usage, resumable: false });

/** The events a replay would return: none (the store only learns from live events here). */
const emptyReplay = { replay: async (): Promise<ReplayResult> => ({ events: [], status: "running", lastSeq: 0 }) as unknown as ReplayResult };

/** A client answering from `list` and `diffs`, counting each request. */
function fakeClient(list: () => WorktreeRun[], diffs: Record<string, WorktreeFile[]>) {
  const calls: string[] = [];
  const client = {
    worktreeList: async () => {
      calls.push("list");
      return { worktrees: list() };
    },
    worktreeDiff: async ({ runId }: { runId: string }) => {
      calls.push(`diff ${runId}`);
      return { runId, branch: "b", base: "c", files: diffs[runId] ?? [], skipped: [] };
    },
  } as unknown as WorktreeClient;
  return { client, calls };
}

const waitFor = async (what: string, check: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

afterEach(() => {
  seqs = new Map();
});

describe("an Agents view row", () => {
  it("says a queued run waits, without elapsed time, files or cost", () => {
    const row = agentRow(worktreeRun({ state: "queued", runStatus: null }), undefined, undefined, T0 + 5000);
    expect(row).toMatchObject({ status: "queued", live: true, elapsedMs: undefined, context: "agentRun.queued", description: "queued", icon: "clock" });
    expect(row.title).toBe('Tidy up the README "variant A"');
    expect(row.label).toBe('Tidy up the README "variant A"');
    const long = agentRow(worktreeRun({ prompt: "Make the parser streaming and keep the old API working for one release" }), undefined, undefined, T0);
    expect(long.label).toBe("Make the parser streaming and keep the old API…");
  });

  it("times a working run from its start to now and shows its live cost", () => {
    const store = new EventStore(emptyReplay);
    store.ingest(started("r_a", T0 + 1000));
    store.ingest(event("r_a", "usage.updated", T0 + 2000, { ...usage, costUsd: 0.004 }));
    const row = agentRow(worktreeRun(), store.get("r_a"), undefined, T0 + 76_000);
    expect(row).toMatchObject({ status: "running", live: true, elapsedMs: 75_000, costUsd: 0.004, context: "agentRun.live" });
    expect(row.description).toBe("running · 1m 15s · <$0.01");
  });

  it("says a finished run's time, files, cost and conflicts, and offers landing it", () => {
    const store = new EventStore(emptyReplay);
    store.ingest(started("r_a", T0 + 1000));
    store.ingest(finished("r_a", T0 + 13_500));
    const files = [file(), file({ path: "src/app.py", uri: "file:///work/project/src/app.py", verdict: "conflict", reason: "you changed the same lines" })];
    const row = agentRow(worktreeRun({ runStatus: "completed" }), store.get("r_a"), files, T0 + 99_000);
    expect(row).toMatchObject({ status: "completed", live: false, elapsedMs: 12_500, costUsd: 0.0432, context: "agentRun.done", icon: "pass-filled" });
    expect(row.description).toBe("completed · 12s · 2 files · $0.04 · 1 conflict");
    expect(row.tooltip).toContain("⚠ modified src/app.py (you changed the same lines)");
    expect(row.tooltip).toContain("Branch: lovia/tidy-up-the-readme-000r_a");
  });

  it("says a run waits for approval when one is pending", () => {
    const store = new EventStore(emptyReplay);
    store.ingest(started("r_a", T0));
    store.ingest(event("r_a", "approval.requested", T0 + 10, { approvalId: "ap1", action: "file.write", title: "Edit README.md", paths: ["README.md"], options: [{ decision: "allow_once", label: "Accept" }] }));
    expect(agentRow(worktreeRun(), store.get("r_a"), undefined, T0 + 20).status).toBe("waiting for approval");
  });

  it("falls back to the list's status before any event of the run arrived", () => {
    expect(agentRow(worktreeRun({ runStatus: "interrupted" }), undefined, [], T0).context).toBe("agentRun.done");
    expect(agentRow(worktreeRun({ runStatus: null }), undefined, undefined, T0).status).toBe("starting");
  });

  it("formats elapsed time in seconds, minutes and hours", () => {
    expect([formatElapsed(0), formatElapsed(59_999), formatElapsed(60_000), formatElapsed(3_725_000)]).toEqual(["0s", "59s", "1m 00s", "1h 02m"]);
  });
});

describe("the worktree runs behind the Agents view", () => {
  it("lists the open runs with their files, and asks again only when events say something moved", async () => {
    let runs = [worktreeRun(), worktreeRun({ runId: "r_b", sessionId: "s_b", prompt: "other" }), worktreeRun({ runId: "r_old", state: "applied" })];
    const { client, calls } = fakeClient(() => runs, { r_a: [file()], r_b: [] });
    const store = new EventStore(emptyReplay);
    store.ingest(started("r_a", T0));
    store.ingest(started("r_b", T0));
    const model = new WorktreeRuns(client, store, { debounceMs: 10, now: () => T0 + 3000 });
    let changes = 0;
    model.onDidChange(() => changes++);
    await model.refresh();
    // Applied runs are not listed; each open run's diff was asked once.
    expect(model.rows().map((r) => [r.runId, r.files?.length])).toEqual([["r_a", 1], ["r_b", 0]]);
    expect(calls.sort()).toEqual(["diff r_a", "diff r_b", "list"]);
    expect(changes).toBeGreaterThan(0);

    // Streamed text changes nothing the list says: no request.
    calls.length = 0;
    for (let i = 0; i < 20; i++) store.ingest(event("r_a", "message.delta", T0 + 10 + i, { messageId: "m", text: "x" }));
    await new Promise((r) => setTimeout(r, 40));
    expect(calls).toEqual([]);

    // Run A finishes: one list request and A's diff asked again (B's did not move).
    runs = [worktreeRun({ runStatus: "completed" }), runs[1]!];
    store.ingest(finished("r_a", T0 + 2000));
    await waitFor("the refresh after run.finished", () => calls.includes("diff r_a"));
    expect(calls).toEqual(["list", "diff r_a"]);
    expect(model.row("r_a")).toMatchObject({ status: "completed", live: false, elapsedMs: 2000 });
    model.dispose();
  });

  it("refreshes once for a run it has not seen (a worktree run another client started)", async () => {
    let runs: WorktreeRun[] = [];
    const { client, calls } = fakeClient(() => runs, { r_c: [file()] });
    const store = new EventStore(emptyReplay);
    const model = new WorktreeRuns(client, store, { debounceMs: 10 });
    await model.refresh();
    expect(model.rows()).toEqual([]);
    calls.length = 0;
    runs = [worktreeRun({ runId: "r_c", sessionId: "s_c" })];
    store.ingest(started("r_c", T0));
    store.ingest(event("r_c", "message.delta", T0 + 1, { messageId: "m", text: "x" }));
    await waitFor("the refresh for a new run", () => model.rows().length === 1 && model.rows()[0]!.files !== undefined);
    expect(calls.filter((c) => c === "list")).toHaveLength(1);
    model.dispose();
  });

  it("drops a landed run at once, and coalesces concurrent refreshes into one more request", async () => {
    const runs = [worktreeRun(), worktreeRun({ runId: "r_b", sessionId: "s_b" })];
    const { client, calls } = fakeClient(() => runs, {});
    const store = new EventStore(emptyReplay);
    const model = new WorktreeRuns(client, store);
    await Promise.all([model.refresh(), model.refresh(), model.refresh()]);
    await waitFor("the second round", () => calls.filter((c) => c === "list").length === 2);
    model.drop(["r_b"]);
    expect(model.rows().map((r) => r.runId)).toEqual(["r_a"]);
    model.dispose();
  });

  it("shows runs in the tree with their changed files as children", async () => {
    const { client } = fakeClient(() => [worktreeRun({ runStatus: "completed" })], { r_a: [file(), file({ path: "NEW.md", status: "added", oldText: null })] });
    const store = new EventStore(emptyReplay);
    const model = new WorktreeRuns(client, store);
    const tree = new AgentsTreeProvider(model);
    await model.refresh();
    const [run] = tree.getChildren();
    const item = tree.getTreeItem(run!);
    expect(item).toMatchObject({ label: 'Tidy up the README "variant A"', contextValue: "agentRun.done", tooltip: expect.stringContaining('Tidy up the README "variant A"') });
    expect(item.accessibilityInformation?.label).toMatch(/^Tidy up the README "variant A", completed/);
    expect(item.command).toMatchObject({ command: "lovia.agents.open" });
    const files = tree.getChildren(run);
    expect(files.map((f) => tree.getTreeItem(f).label)).toEqual(["README.md", "NEW.md"]);
    expect(tree.getTreeItem(files[1]!)).toMatchObject({ description: "added", command: { command: "lovia.agents.diff" } });
    tree.dispose();
    model.dispose();
  });
});
