/**
 * Subagents in the chat: the child runs of the shown session's runs, taken from the event
 * store (every child event carries `parentRunId`). Pure, shared by the controller and tests.
 */
import type { RunView } from "../protocol/runView";

/** The subagent runs of `parents`, and theirs, in spawn order (runs the store lacks skipped). */
export function childRunsOf(parents: RunView[], get: (runId: string) => RunView | undefined): RunView[] {
  const out: RunView[] = [];
  const seen = new Set(parents.map((r) => r.runId));
  const queue = [...parents];
  while (queue.length > 0) {
    const run = queue.shift()!;
    for (const ref of run.children) {
      if (seen.has(ref.runId)) continue;
      seen.add(ref.runId);
      const child = get(ref.runId);
      if (child) {
        out.push(child);
        queue.push(child);
      }
    }
  }
  return out;
}

/** Children announced by `parents` that the store has not loaded yet (a reopened session). */
export function unloadedChildren(parents: RunView[], has: (runId: string) => boolean): { runId: string; sessionId: string }[] {
  return parents.flatMap((r) => r.children).filter((c) => !has(c.runId)).map((c) => ({ runId: c.runId, sessionId: c.sessionId }));
}

/** How many subagent runs are running now (for the status bar). */
export function runningChildren(runs: RunView[]): number {
  return runs.filter((r) => r.parentRunId !== undefined && r.status === "running").length;
}
