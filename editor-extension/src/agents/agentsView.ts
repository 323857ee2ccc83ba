/**
 * The Agents view in the lovia sidebar: the worktree runs (issue 27), each with its status,
 * elapsed time, files changed and cost, and its changed files as children (click: a diff of
 * the workspace's file against the run's). A tree view rather than a part of the chat panel:
 * the panel shows one conversation at a time while these runs are several conversations side
 * by side, and a tree gives each row its own inline actions and palette commands for free.
 */
import * as vscode from "vscode";
import type { WorktreeFile } from "../protocol/types";
import type { AgentRow, WorktreeRuns } from "./worktreeRuns";

export const AGENTS_VIEW_ID = "lovia.agents";

/** A row of the view: a run, or one file it changed. */
export type AgentNode = { kind: "run"; row: AgentRow } | { kind: "file"; row: AgentRow; file: WorktreeFile };

/** How often elapsed times move while a run works: a local clock, nothing is asked. */
const CLOCK_MS = 1000;

export class AgentsTreeProvider implements vscode.TreeDataProvider<AgentNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<AgentNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly subscription: { dispose(): void };
  private clock: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly runs: WorktreeRuns) {
    this.subscription = runs.onDidChange(() => this.changed());
  }

  getTreeItem(node: AgentNode): vscode.TreeItem {
    if (node.kind === "file") return fileItem(node.row, node.file);
    const row = node.row;
    const hasFiles = (row.files?.length ?? 0) > 0;
    const item = new vscode.TreeItem(row.label, hasFiles ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = `run:${row.runId}`;
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.iconPath = new vscode.ThemeIcon(row.icon);
    item.contextValue = row.context;
    item.accessibilityInformation = { label: `${row.title}, ${row.description}` };
    item.command = { command: "lovia.agents.open", title: "Open in Panel", arguments: [node] };
    return item;
  }

  getChildren(node?: AgentNode): AgentNode[] {
    if (!node) return this.runs.rows().map((row) => ({ kind: "run", row }));
    if (node.kind === "run") return (node.row.files ?? []).map((file) => ({ kind: "file", row: node.row, file }));
    return [];
  }

  dispose(): void {
    if (this.clock !== undefined) clearInterval(this.clock);
    this.subscription.dispose();
    this.emitter.dispose();
  }

  private changed(): void {
    this.emitter.fire(undefined);
    // The clock runs only while some run works, and stops with the last one.
    const live = this.runs.anyLive();
    if (live && this.clock === undefined) this.clock = setInterval(() => this.changed(), CLOCK_MS);
    else if (!live && this.clock !== undefined) {
      clearInterval(this.clock);
      this.clock = undefined;
    }
  }
}

function fileItem(row: AgentRow, file: WorktreeFile): vscode.TreeItem {
  const item = new vscode.TreeItem(file.path, vscode.TreeItemCollapsibleState.None);
  item.id = `file:${row.runId}:${file.path}`;
  const verdict = file.verdict === "clean" ? "" : ` · ${file.verdict}`;
  item.description = `${file.status}${verdict}${file.protected ? " · protected" : ""}`;
  const notes = [file.reason, file.protected ? "Protected (editor, git, CI or agent configuration): applying asks you to confirm it." : null].filter(Boolean);
  item.tooltip = [file.path, ...notes].join("\n");
  item.iconPath = new vscode.ThemeIcon(file.verdict === "conflict" ? "warning" : file.status === "added" ? "diff-added" : file.status === "deleted" ? "diff-removed" : "diff-modified");
  item.contextValue = "agentFile";
  item.command = { command: "lovia.agents.diff", title: "Show Changes", arguments: [{ kind: "file", row, file } satisfies AgentNode] };
  return item;
}
