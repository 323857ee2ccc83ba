import * as path from "node:path";
import * as vscode from "vscode";
import type { FileDiff } from "../protocol/types";

export const ORIGINAL_SCHEME = "lovia-original";
export const PROPOSED_SCHEME = "lovia-proposed";

export interface ProposalRef {
  approvalId: string;
  index: number;
  side: "original" | "proposed";
}

/** `lovia-proposed:/<approvalId>/<index>/<basename>` (the basename gives the language and tab title). */
export function proposalUri(approvalId: string, index: number, side: ProposalRef["side"], filePath: string): vscode.Uri {
  const scheme = side === "original" ? ORIGINAL_SCHEME : PROPOSED_SCHEME;
  const base = path.basename(filePath) || "untitled";
  return vscode.Uri.from({
    scheme,
    path: `/${encodeURIComponent(approvalId)}/${index}/${base}`,
  });
}

export function parseProposalUri(uri: vscode.Uri): ProposalRef | undefined {
  if (uri.scheme !== ORIGINAL_SCHEME && uri.scheme !== PROPOSED_SCHEME) return undefined;
  const parts = uri.path.split("/");
  // ["", approvalId, index, basename]
  if (parts.length < 4 || !parts[1]) return undefined;
  const index = Number(parts[2]);
  if (!Number.isInteger(index) || index < 0) return undefined;
  return {
    approvalId: decodeURIComponent(parts[1]),
    index,
    side: uri.scheme === ORIGINAL_SCHEME ? "original" : "proposed",
  };
}

/**
 * Serves the two sides of proposed edits as read-only virtual documents. The texts come
 * from `approval.requested.diff` (the server computed the new text), so nothing touches
 * the disk before the user decides.
 */
export class ProposalContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly diffs = new Map<string, FileDiff[]>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;

  set(approvalId: string, diffs: FileDiff[]): void {
    this.diffs.set(approvalId, diffs);
    diffs.forEach((d, i) => {
      this.emitter.fire(proposalUri(approvalId, i, "original", d.path));
      this.emitter.fire(proposalUri(approvalId, i, "proposed", d.path));
    });
  }

  get(approvalId: string): FileDiff[] | undefined {
    return this.diffs.get(approvalId);
  }

  delete(approvalId: string): void {
    this.diffs.delete(approvalId);
  }

  /**
   * The provider to register for one of the two schemes: VS Code ignores (and warns about)
   * change events a provider fires for another scheme.
   */
  forScheme(scheme: string): vscode.TextDocumentContentProvider {
    const onDidChange: vscode.Event<vscode.Uri> = (listener, thisArgs, disposables) =>
      this.emitter.event(
        (uri) => {
          if (uri.scheme === scheme) listener.call(thisArgs, uri);
        },
        undefined,
        disposables,
      );
    return { onDidChange, provideTextDocumentContent: (uri) => this.provideTextDocumentContent(uri) };
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const ref = parseProposalUri(uri);
    if (!ref) return "";
    const diff = this.diffs.get(ref.approvalId)?.[ref.index];
    if (!diff) return "";
    return ref.side === "original" ? (diff.oldText ?? "") : diff.newText;
  }

  dispose(): void {
    this.emitter.dispose();
    this.diffs.clear();
  }
}
