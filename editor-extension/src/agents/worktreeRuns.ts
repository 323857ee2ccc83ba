/**
 * The worktree runs of this workspace (issue 27) as the Agents view shows them: one row per
 * run with its status, elapsed time, files changed and cost. Free of `vscode`.
 *
 * What the rows say comes from two places: `lovia/worktree/list` (which runs exist, their
 * state, branch and worktree) and the event store (each run's live status, times and usage,
 * which arrive as ordinary run events). The list is asked again only when an event says
 * something changed (a run started, finished or changed a file), never on a timer.
 */
import type { Disposable, LoviaClient } from "../protocol/client";
import type { EventStore } from "../protocol/eventStore";
import type { RunView } from "../protocol/runView";
import type { WorktreeFile, WorktreeRun, WorktreeState } from "../protocol/types";

/** The protocol requests the Agents view needs (`LoviaClient` has them). */
export type WorktreeClient = Pick<LoviaClient, "worktreeList" | "worktreeDiff" | "worktreeApply" | "worktreeDiscard" | "worktreeKeep">;

/** Where a worktree run is, in the words the view shows. */
export type AgentStatus = "queued" | "starting" | "running" | "waiting for approval" | "cancelling" | "completed" | "failed" | "cancelled" | "interrupted";

export interface AgentRow {
  runId: string;
  sessionId: string;
  /** The prompt's first line. */
  title: string;
  /** The title, shortened so that a narrow sidebar still shows the description beside it. */
  label: string;
  prompt: string;
  state: WorktreeState;
  status: AgentStatus;
  /** The run is working (or queued): apply, discard and keep wait until it is done. */
  live: boolean;
  branch: string;
  /** The worktree's folder. */
  path: string;
  elapsedMs: number | undefined;
  /** What the run changed against its base; undefined until its diff was asked. */
  files: WorktreeFile[] | undefined;
  costUsd: number | undefined;
  /** One line under the title: status · elapsed · files · cost. */
  description: string;
  tooltip: string;
  /** A codicon name. */
  icon: string;
  /** The tree item's `contextValue`: which actions its menus offer. */
  context: "agentRun.queued" | "agentRun.live" | "agentRun.done";
}

/** Characters of the prompt a row's label shows (the tooltip has all of it). */
const LABEL_MAX = 48;

const LIVE: ReadonlySet<string> = new Set(["running", "awaiting_approval", "cancelling"]);

const ICONS: Record<AgentStatus, string> = {
  queued: "clock",
  starting: "loading~spin",
  running: "loading~spin",
  "waiting for approval": "bell-dot",
  cancelling: "loading~spin",
  completed: "pass-filled",
  failed: "error",
  cancelled: "circle-slash",
  interrupted: "debug-pause",
};

/** `75_000` → `1m 15s`. */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

export function formatCost(usd: number): string {
  return usd < 0.01 ? "<$0.01" : `$${usd.toFixed(2)}`;
}

function statusOf(run: WorktreeRun, view: RunView | undefined): AgentStatus {
  if (run.state === "queued") return "queued";
  const status = view && view.lastSeq > 0 ? view.status : run.runStatus;
  if (status === null || status === undefined) return "starting";
  if (status === "awaiting_approval") return "waiting for approval";
  if (status === "running" && view?.items.some((i) => i.type === "approval" && i.state === "pending")) return "waiting for approval";
  switch (status) {
    case "running":
    case "cancelling":
    case "completed":
    case "failed":
    case "cancelled":
    case "interrupted":
      return status;
    default:
      return "running";
  }
}

/** One row of the Agents view from the run's list entry, its events and its diff. */
export function agentRow(run: WorktreeRun, view: RunView | undefined, files: WorktreeFile[] | undefined, now: number): AgentRow {
  const status = statusOf(run, view);
  const live = status === "queued" || status === "starting" || LIVE.has(view && view.lastSeq > 0 ? view.status : (run.runStatus ?? "running"));
  const started = view?.startedAt ?? (run.state === "queued" ? undefined : run.createdAt);
  const ended = live ? now : view?.finishedAt;
  const elapsedMs = started !== undefined && ended !== undefined ? Math.max(0, ended - started) : undefined;
  const costUsd = view?.usage?.costUsd ?? run.usage?.costUsd;
  const title = run.prompt.split("\n")[0]!.trim() || "(no prompt)";
  const parts: string[] = [status];
  if (elapsedMs !== undefined) parts.push(formatElapsed(elapsedMs));
  if (files !== undefined) parts.push(`${files.length} file${files.length === 1 ? "" : "s"}`);
  if (costUsd !== undefined) parts.push(formatCost(costUsd));
  const conflicts = files?.filter((f) => f.verdict === "conflict").length ?? 0;
  if (conflicts > 0) parts.push(`${conflicts} conflict${conflicts === 1 ? "" : "s"}`);
  const tooltip = [run.prompt, "", `Branch: ${run.branch}`, `Worktree: ${run.path}`, ...(files ?? []).map((f) => `${f.verdict === "conflict" ? "⚠ " : ""}${f.status} ${f.path}${f.reason ? ` (${f.reason})` : ""}`)].join("\n");
  return {
    runId: run.runId,
    sessionId: run.sessionId,
    title,
    label: title.length > LABEL_MAX ? `${title.slice(0, LABEL_MAX - 1).trimEnd()}…` : title,
    prompt: run.prompt,
    state: run.state,
    status,
    live,
    branch: run.branch,
    path: run.path,
    elapsedMs,
    files,
    costUsd,
    description: parts.join(" · "),
    tooltip,
    icon: ICONS[status],
    context: status === "queued" ? "agentRun.queued" : live ? "agentRun.live" : "agentRun.done",
  };
}

export type RowsListener = () => void;

/**
 * The worktree runs and what the view needs of each. `refresh` asks the server; events from
 * the store schedule one refresh (coalesced), so a burst of events costs one request.
 */
export class WorktreeRuns implements Disposable {
  private runs: WorktreeRun[] = [];
  private readonly files = new Map<string, { key: string; files: WorktreeFile[] }>();
  /** Per run, what its events said the last time we looked (status and completed tools). */
  private readonly seen = new Map<string, string>();
  /** Per run, what its row showed of its events the last time the view was told. */
  private readonly shown = new Map<string, string>();
  private readonly listeners = new Set<RowsListener>();
  private readonly subscription: Disposable;
  private pending: Promise<void> | undefined;
  private again = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private disposed = false;

  constructor(
    private readonly client: WorktreeClient,
    private readonly store: EventStore,
    private readonly options: { now?: () => number; debounceMs?: number; onError?: (err: unknown) => void } = {},
  ) {
    this.subscription = store.onDidChange((runId) => this.onRunChanged(runId));
  }

  onDidChange(listener: RowsListener): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** The open worktree runs (queued or active), newest first. */
  list(): WorktreeRun[] {
    return [...this.runs];
  }

  get(runId: string): WorktreeRun | undefined {
    return this.runs.find((r) => r.runId === runId);
  }

  rows(): AgentRow[] {
    const now = (this.options.now ?? Date.now)();
    return this.runs.map((r) => agentRow(r, this.store.get(r.runId), this.files.get(r.runId)?.files, now));
  }

  row(runId: string): AgentRow | undefined {
    return this.rows().find((r) => r.runId === runId);
  }

  /** Some run is working: the view's elapsed times move (a local clock, no request). */
  anyLive(): boolean {
    return this.rows().some((r) => r.live && r.status !== "queued");
  }

  /** Ask the server again; concurrent callers share one request, one more runs if asked meanwhile. */
  refresh(): Promise<void> {
    if (this.pending) {
      this.again = true;
      return this.pending;
    }
    this.pending = this.load()
      .catch((err: unknown) => this.options.onError?.(err))
      .finally(() => {
        this.pending = undefined;
        if (this.again && !this.disposed) {
          this.again = false;
          void this.refresh();
        }
      });
    return this.pending;
  }

  /** Forget a run the user just applied, discarded or kept (the next list agrees). */
  drop(runIds: readonly string[]): void {
    this.runs = this.runs.filter((r) => !runIds.includes(r.runId));
    for (const id of runIds) this.files.delete(id);
    this.changed();
  }

  /** A refresh soon: what events call (one request for a burst of them). */
  schedule(): void {
    if (this.disposed || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, this.options.debounceMs ?? 300);
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.subscription.dispose();
    this.listeners.clear();
  }

  // -------------------------------------------------------------------------

  private async load(): Promise<void> {
    const { worktrees } = await this.client.worktreeList({});
    this.runs = worktrees.filter((r) => r.state === "queued" || r.state === "active");
    const open = new Set(this.runs.map((r) => r.runId));
    // What the events say now is what this list reflects: only later moves ask again.
    for (const id of open) {
      const key = this.keyOf(id);
      if (key !== undefined) this.seen.set(id, key);
    }
    for (const id of [...this.files.keys()]) if (!open.has(id)) this.files.delete(id);
    this.changed();
    // Each run's events (status, times, cost, transcript) come from the store.
    for (const run of this.runs) {
      if (run.state !== "queued" && !this.store.has(run.runId)) await this.store.load(run.runId, run.sessionId).catch(() => undefined);
    }
    await Promise.all(this.runs.filter((r) => r.state === "active").map((r) => this.loadFiles(r)));
    this.changed();
  }

  /** The run's diff, asked again only when its status or its count of finished tools moved. */
  private async loadFiles(run: WorktreeRun): Promise<void> {
    const key = this.keyOf(run.runId) ?? String(run.runStatus);
    if (this.files.get(run.runId)?.key === key) return;
    try {
      const diff = await this.client.worktreeDiff({ runId: run.runId });
      this.files.set(run.runId, { key, files: diff.files });
    } catch (err) {
      this.options.onError?.(err);
    }
  }

  private keyOf(runId: string): string | undefined {
    const view = this.store.get(runId);
    if (!view) return undefined;
    const tools = view.items.filter((i) => i.type === "tool" && i.status !== "running").length;
    return `${view.status}:${tools}`;
  }

  private onRunChanged(runId: string): void {
    const known = this.runs.some((r) => r.runId === runId);
    const key = this.keyOf(runId);
    const before = this.seen.get(runId);
    if (key !== undefined) this.seen.set(runId, key);
    if (known) {
      // A new status or a finished tool: the files (and maybe the list) moved.
      if (key !== before) this.schedule();
      // Streamed text changes nothing a row shows: redraw only for its status or cost.
      const shown = this.shownOf(runId);
      if (shown !== this.shown.get(runId)) {
        this.shown.set(runId, shown);
        this.changed();
      }
    } else if (before === undefined && this.store.get(runId)?.parentRunId === undefined) {
      // A run we have not seen: it may be a worktree run another client (or a queue) started.
      this.schedule();
    }
  }

  /** What of a run's events its row shows (besides the elapsed time, which the clock moves). */
  private shownOf(runId: string): string {
    const view = this.store.get(runId);
    const pending = view?.items.some((i) => i.type === "approval" && i.state === "pending") ?? false;
    return `${view?.status}:${pending}:${view?.usage?.costUsd}`;
  }

  private changed(): void {
    for (const l of [...this.listeners]) l();
  }
}
