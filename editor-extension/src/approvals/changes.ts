import * as path from "node:path";
import * as vscode from "vscode";

export const BEFORE_SCHEME = "lovia-before";

/**
 * "Files changed" under a run: each file opens VS Code's diff editor with the text before the
 * run (a read-only virtual document) on the left and the file as it is now on the right.
 */
export class RunChangesView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;

  async open(change: { runId: string; path: string; uri: string; before: string | null }): Promise<void> {
    const left = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${encodeURIComponent(change.runId)}/${path.basename(change.path)}`, query: change.path });
    this.texts.set(left.toString(), change.before ?? "");
    this.emitter.fire(left);
    const right = vscode.Uri.parse(change.uri, true);
    const verb = change.before === null ? "created" : "changed";
    await vscode.commands.executeCommand("vscode.diff", left, right, `${path.basename(change.path)} (${verb} by lovia)`, { preview: true });
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  dispose(): void {
    this.emitter.dispose();
    this.texts.clear();
  }
}
