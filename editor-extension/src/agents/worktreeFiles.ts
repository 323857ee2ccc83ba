/**
 * A worktree run's files, read-only: `lovia-worktree:/<runId>/<path>` serves the run's version
 * of a file from its worktree on disk (a content provider, so no editor can write into the
 * run's worktree), and {@link WorktreeFiles.openDiffs} opens VS Code diff editors of the
 * workspace's file against it.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import type { WorktreeFile } from "../protocol/types";
import type { WorktreeRuns } from "./worktreeRuns";

export const WORKTREE_SCHEME = "lovia-worktree";

/** The run's version of `rel`, or (with `empty`) a blank side for a file one side lacks. */
export function worktreeUri(runId: string, rel: string, empty = false): vscode.Uri {
  return vscode.Uri.from({ scheme: WORKTREE_SCHEME, path: `/${encodeURIComponent(runId)}/${rel}`, query: empty ? "empty" : "" });
}

export function parseWorktreeUri(uri: vscode.Uri): { runId: string; rel: string; empty: boolean } | undefined {
  if (uri.scheme !== WORKTREE_SCHEME) return undefined;
  const match = /^\/([^/]+)\/(.+)$/.exec(uri.path);
  if (!match) return undefined;
  return { runId: decodeURIComponent(match[1]!), rel: match[2]!, empty: uri.query === "empty" };
}

export class WorktreeFiles implements vscode.TextDocumentContentProvider {
  constructor(private readonly runs: WorktreeRuns) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseWorktreeUri(uri);
    if (!ref || ref.empty) return "";
    const run = this.runs.get(ref.runId);
    if (!run) return "";
    const file = vscode.Uri.file(path.join(run.path, ref.rel));
    try {
      return new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
    } catch {
      return "";
    }
  }

  /** The workspace's side of a diff: the file itself, or a blank one where it does not exist. */
  workspaceSide(runId: string, file: WorktreeFile): vscode.Uri {
    return file.oldText === null ? worktreeUri(runId, file.path, true) : vscode.Uri.parse(file.uri, true);
  }

  /** The run's side: its version in the worktree, or blank for a file it deleted. */
  runSide(runId: string, file: WorktreeFile): vscode.Uri {
    return worktreeUri(runId, file.path, file.status === "deleted");
  }

  /** One diff editor per text file: the workspace's file ↔ the run's version (read-only). */
  async openDiffs(runId: string, files: readonly WorktreeFile[], label: string): Promise<number> {
    let opened = 0;
    for (const file of files) {
      if (file.binary) continue;
      const title = `${path.basename(file.path)} (workspace ↔ ${label}${file.verdict === "conflict" ? ": conflict" : ""})`;
      await vscode.commands.executeCommand("vscode.diff", this.workspaceSide(runId, file), this.runSide(runId, file), title, { preview: files.length === 1 });
      opened += 1;
    }
    return opened;
  }
}
