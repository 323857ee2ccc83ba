/**
 * The Agents view's commands (palette, view title, row menus): start a worktree run, open one
 * in the panel, diff, apply (alone, or discarding the other candidates), discard, keep, cancel,
 * open its worktree in a new window. A command given no row acts on the view's selection, else
 * asks which run with a quick pick.
 */
import * as vscode from "vscode";
import { isRequestError } from "../protocol/client";
import { ErrorCodes } from "../protocol/types";
import { AGENTS_VIEW_ID, type AgentNode } from "./agentsView";
import type { WorktreeFiles } from "./worktreeFiles";
import type { WorktreeReview } from "./worktreeReview";
import type { AgentRow, WorktreeClient, WorktreeRuns } from "./worktreeRuns";

export interface AgentCommandDeps {
  client: WorktreeClient;
  runs: WorktreeRuns;
  files: WorktreeFiles;
  review: WorktreeReview;
  view: vscode.TreeView<AgentNode>;
  /** Show a run's conversation in the chat panel (transcript, steer, approve, cancel). */
  openInPanel(sessionId: string): Promise<void>;
  /** `lovia/run` with `isolation: "worktree"` (the panel's model choice); its run id. */
  startWorktreeRun(prompt: string): Promise<string | undefined>;
  cancel(runId: string): Promise<void>;
}

type Want = "any" | "done" | "live";

const fits = (row: AgentRow, want: Want) => want === "any" || (want === "done" ? !row.live : row.live);

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function agentCommands(deps: AgentCommandDeps): [string, (...args: unknown[]) => unknown][] {
  const { runs, view } = deps;

  /** The run a command is about: its argument, the view's selection, or a quick pick. */
  const pick = async (arg: unknown, want: Want, title: string): Promise<AgentRow | undefined> => {
    const given = typeof arg === "string" ? runs.row(arg) : (arg as AgentNode | undefined)?.row ? runs.row((arg as AgentNode).row.runId) : undefined;
    if (given) return given;
    const selected = view.selection[0] ? runs.row(view.selection[0].row.runId) : undefined;
    if (selected && fits(selected, want)) return selected;
    const rows = runs.rows().filter((r) => fits(r, want));
    if (rows.length === 0) {
      void vscode.window.showInformationMessage(want === "done" ? "lovia: no finished worktree run to act on (runs that are still working can be cancelled first)." : "lovia: no worktree runs.");
      return undefined;
    }
    const chosen = await vscode.window.showQuickPick(
      rows.map((row) => ({ label: row.title, description: row.description, detail: row.branch, row })),
      { title, matchOnDescription: true },
    );
    return chosen?.row;
  };

  /** Confirmation for what loses work. */
  const confirm = async (text: string, action: string): Promise<boolean> =>
    (await vscode.window.showWarningMessage(text, { modal: true }, action)) === action;

  const report = (what: string, err: unknown): void => {
    if (isRequestError(err, ErrorCodes.RunAlreadyActive)) {
      void vscode.window.showWarningMessage(`lovia: the run is still working: cancel it or wait until it finishes before you ${what} it.`);
    } else if (isRequestError(err, ErrorCodes.WorktreeNotFound)) {
      void vscode.window.showWarningMessage(`lovia: that worktree run is already gone (${message(err)}).`);
      void runs.refresh();
    } else {
      void vscode.window.showErrorMessage(`lovia: could not ${what} the worktree run: ${message(err)}`);
    }
  };

  const withProgress = <T>(work: () => Promise<T>) => vscode.window.withProgress({ location: { viewId: AGENTS_VIEW_ID } }, work);

  return [
    ["lovia.agents.refresh", () => runs.refresh()],
    [
      "lovia.agents.new",
      async (text?: unknown) => {
        const prompt =
          typeof text === "string" && text.trim()
            ? text.trim()
            : await vscode.window.showInputBox({ title: "lovia: new agent in a worktree", prompt: "The task: the agent works in a git worktree of its own, your files stay as they are until you apply its changes.", ignoreFocusOut: true });
        if (prompt?.trim()) await deps.startWorktreeRun(prompt.trim());
      },
    ],
    [
      "lovia.agents.open",
      async (arg?: unknown) => {
        const row = await pick(arg, "any", "lovia: open a worktree run in the panel");
        if (row) await deps.openInPanel(row.sessionId);
      },
    ],
    [
      "lovia.agents.diff",
      async (arg?: unknown) => {
        const node = arg as AgentNode | undefined;
        const row = await pick(arg, "any", "lovia: show a worktree run's changes");
        if (!row) return;
        let files = node?.kind === "file" ? [node.file] : row.files;
        try {
          if (node?.kind !== "file") files = (await deps.client.worktreeDiff({ runId: row.runId })).files;
        } catch (err) {
          report("diff", err);
          return;
        }
        const opened = await deps.files.openDiffs(row.runId, files ?? [], `“${row.title}”`);
        if (opened === 0) void vscode.window.showInformationMessage(`lovia: “${row.title}” has no text changes to show.`);
      },
    ],
    [
      "lovia.agents.apply",
      async (arg?: unknown) => {
        const row = await pick(arg, "done", "lovia: apply a worktree run's changes");
        if (!row) return;
        await deps.review.start(row.runId).catch((err: unknown) => report("apply", err));
      },
    ],
    [
      "lovia.agents.applyAndDiscardOthers",
      async (arg?: unknown) => {
        const row = await pick(arg, "done", "lovia: apply one worktree run and discard the others");
        if (!row) return;
        const others = runs.rows().filter((r) => r.runId !== row.runId && !r.live);
        let alsoDiscard: string[] = [];
        if (others.length > 0) {
          const chosen = await vscode.window.showQuickPick(
            others.map((r) => ({ label: r.title, description: r.description, detail: r.branch, picked: true, runId: r.runId })),
            { title: `lovia: apply “${row.title}” and discard these once it landed`, canPickMany: true },
          );
          if (!chosen) return;
          alsoDiscard = chosen.map((c) => c.runId);
        }
        await deps.review.start(row.runId, alsoDiscard).catch((err: unknown) => report("apply", err));
      },
    ],
    ["lovia.agents.applyReviewed", (arg?: unknown) => deps.review.apply(deps.review.target(arg))],
    ["lovia.agents.cancelReview", (arg?: unknown) => deps.review.cancel(deps.review.target(arg))],
    ["lovia.agents.rejectHunk", (id: unknown, index: unknown, hunk: unknown) => deps.review.rejectHunk(String(id), Number(index), String(hunk))],
    [
      "lovia.agents.discard",
      async (arg?: unknown) => {
        const row = await pick(arg, "done", "lovia: discard a worktree run");
        if (!row) return;
        if (!(await confirm(`Discard “${row.title}”? Its worktree and its branch ${row.branch} are deleted with the changes it made.`, "Discard"))) return;
        try {
          await withProgress(() => deps.client.worktreeDiscard({ runId: row.runId }));
          runs.drop([row.runId]);
        } catch (err) {
          report("discard", err);
        }
        await runs.refresh();
      },
    ],
    [
      "lovia.agents.keep",
      async (arg?: unknown) => {
        const row = await pick(arg, "done", "lovia: keep a worktree run's branch");
        if (!row) return;
        try {
          const kept = await withProgress(() => deps.client.worktreeKeep({ runId: row.runId }));
          runs.drop([row.runId]);
          void vscode.window.showInformationMessage(`lovia: the run's work is committed on branch ${kept.branch}; the worktree is gone and the branch is yours.`);
        } catch (err) {
          report("keep", err);
        }
        await runs.refresh();
      },
    ],
    [
      "lovia.agents.cancel",
      async (arg?: unknown) => {
        const row = await pick(arg, "live", "lovia: cancel a worktree run");
        if (row) await deps.cancel(row.runId);
      },
    ],
    [
      "lovia.agents.openWorktree",
      async (arg?: unknown) => {
        const row = await pick(arg, "any", "lovia: open a run's worktree in a new window");
        if (row && row.state === "active") await vscode.commands.executeCommand("vscode.openFolder", vscode.Uri.file(row.path), { forceNewWindow: true });
      },
    ],
  ];
}
