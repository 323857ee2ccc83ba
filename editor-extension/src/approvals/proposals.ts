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
 * Serves the two sides of proposed edits. The texts come from `approval.requested.diff` (the
 * server computed the new text), so nothing touches the disk before the user decides. The
 * original side is a read-only virtual document; the proposed side is a small file system
 * ({@link fileSystem}), so the user can edit the proposal in the diff editor before accepting.
 */
export class ProposalContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly diffs = new Map<string, FileDiff[]>();
  /** Proposed texts the user saved in the diff editor, by proposed URI. */
  private readonly saved = new Map<string, string>();
  /** When each proposed text last changed (a stable mtime: VS Code compares it on save). */
  private readonly mtimes = new Map<string, number>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  private readonly fileEmitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
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
    const diffs = this.diffs.get(approvalId) ?? [];
    diffs.forEach((d, i) => this.saved.delete(proposalUri(approvalId, i, "proposed", d.path).toString()));
    this.diffs.delete(approvalId);
  }

  /** The proposed text of one file as the user left it: the open buffer, else what was saved. */
  currentText(approvalId: string, index: number): string | undefined {
    const diff = this.diffs.get(approvalId)?.[index];
    if (!diff) return undefined;
    const uri = proposalUri(approvalId, index, "proposed", diff.path).toString();
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
    return open ? open.getText() : (this.saved.get(uri) ?? diff.newText);
  }

  /** The proposed side as an editable file system (VS Code saves edits through `writeFile`). */
  fileSystem(): vscode.FileSystemProvider {
    const text = (uri: vscode.Uri): string => {
      const key = uri.toString();
      if (this.saved.has(key)) return this.saved.get(key)!;
      const ref = parseProposalUri(uri);
      const diff = ref ? this.diffs.get(ref.approvalId)?.[ref.index] : undefined;
      if (!diff) throw vscode.FileSystemError.FileNotFound(uri);
      return diff.newText;
    };
    const readonly = (uri: vscode.Uri) => {
      throw vscode.FileSystemError.NoPermissions(uri);
    };
    return {
      onDidChangeFile: this.fileEmitter.event,
      watch: () => new vscode.Disposable(() => undefined),
      stat: (uri) => ({ type: vscode.FileType.File, ctime: 0, mtime: this.mtimes.get(uri.toString()) ?? 0, size: Buffer.byteLength(text(uri)) }),
      readDirectory: () => [],
      createDirectory: readonly,
      readFile: (uri) => Buffer.from(text(uri), "utf8"),
      writeFile: (uri, content) => {
        if (!parseProposalUri(uri)) readonly(uri);
        this.saved.set(uri.toString(), Buffer.from(content).toString("utf8"));
        this.mtimes.set(uri.toString(), Date.now());
        this.fileEmitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
      },
      delete: readonly,
      rename: readonly,
    };
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
    this.fileEmitter.dispose();
    this.diffs.clear();
    this.saved.clear();
  }
}
