/**
 * Applying a worktree run: the same review as an edit approval (a diff editor per file, the
 * workspace's text against what applying writes, editable, with a CodeLens per hunk to put it
 * back), then `lovia/worktree/apply` with the reviewed text of each file the user changed.
 * A file that conflicts with the workspace is shown as a conflict (workspace ↔ the run's
 * version) and nothing is written: the server refuses to land any file over a conflict.
 * A protected file (editor, git, CI or agent configuration: `protected` in the diff) lands only
 * when the user confirmed the warning; the server refuses it otherwise.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { hunksOf, withoutHunks } from "../diff/hunks";
import { parseProposalUri, PROPOSED_SCHEME, proposalUri, type ProposalContentProvider } from "../approvals/proposals";
import type { FileDiff, WorktreeApplyResult, WorktreeFile } from "../protocol/types";
import type { WorktreeFiles } from "./worktreeFiles";
import type { WorktreeClient, WorktreeRuns } from "./worktreeRuns";
import { protectedWarning } from "../approvals/protectedWarning";

/** Review ids share the proposals' URIs with approvals; the prefix tells them apart (menus too). */
export const REVIEW_PREFIX = "worktree-";
export const REVIEW_CONTEXT = "lovia.worktreeReview";
export const APPLY_PROTECTED = "Apply, Including Protected Files";
export const APPLY_WITHOUT_PROTECTED = "Apply Without Them";

interface Review {
  id: string;
  runId: string;
  title: string;
  /** The files shown for review (text that applying writes). */
  diffs: FileDiff[];
  /** Every file the run changed (deleted and binary ones land as they are). */
  files: WorktreeFile[];
  alsoDiscard: string[];
  done: (result: WorktreeApplyResult | undefined) => void;
}

export function reviewId(runId: string): string {
  return `${REVIEW_PREFIX}${runId}`;
}

export class WorktreeReview implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly reviews = new Map<string, Review>();
  private readonly lensEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensEmitter.event;

  constructor(
    private readonly client: WorktreeClient,
    private readonly runs: WorktreeRuns,
    private readonly proposals: ProposalContentProvider,
    private readonly files: WorktreeFiles,
  ) {}

  /**
   * Review a run's changes and apply them (discarding `alsoDiscard` once it landed). Resolves
   * with the server's answer, or undefined when the review was cancelled or could not start.
   */
  async start(runId: string, alsoDiscard: string[] = []): Promise<WorktreeApplyResult | undefined> {
    const id = reviewId(runId);
    if (this.reviews.has(id)) {
      await this.reveal(id);
      return undefined;
    }
    const title = this.runs.row(runId)?.title ?? runId;
    const diff = await this.client.worktreeDiff({ runId });
    if (diff.files.length === 0) {
      void vscode.window.showInformationMessage(`lovia: “${title}” changed no files: nothing to apply.`);
      return undefined;
    }
    const conflicts = diff.files.filter((f) => f.verdict === "conflict");
    if (conflicts.length > 0) {
      await this.showConflicts(runId, title, conflicts);
      return undefined;
    }
    const diffs: FileDiff[] = diff.files
      .filter((f) => !f.binary && f.newText !== null && f.verdict !== "unchanged")
      .map((f) => ({ path: f.path, uri: f.uri, oldText: f.oldText, newText: f.newText! }));
    const result = new Promise<WorktreeApplyResult | undefined>((resolve) => {
      this.reviews.set(id, { id, runId, title, diffs, files: diff.files, alsoDiscard, done: resolve });
    });
    this.proposals.set(id, diffs);
    void vscode.commands.executeCommand("setContext", REVIEW_CONTEXT, true);
    await this.reveal(id);
    this.lensEmitter.fire();
    const others = diff.files.length - diffs.length;
    const guarded = protectedOf(diff.files).length;
    const what = `${diff.files.length} file${diff.files.length === 1 ? "" : "s"}${others > 0 ? ` (${others} deleted, binary or already there, landing as they are)` : ""}${guarded > 0 ? `, ${guarded} protected (you confirm them when applying)` : ""}`;
    if (diffs.length > 0) {
      // No buttons here: a toast with buttons would outlive the review; the diff editors have them.
      void vscode.window.showInformationMessage(`lovia: review “${title}”: ${what}. Edit the right side or reject hunks, then Apply Reviewed Changes (editor title).`);
    } else {
      // Nothing to show in an editor (deleted or binary files only): ask here.
      void vscode.window.showInformationMessage(`lovia: apply “${title}”: ${what}?`, "Apply Reviewed Changes", "Cancel Review").then((choice) => {
        if (choice === "Apply Reviewed Changes") void this.apply(id);
        else void this.cancel(id);
      });
    }
    return result;
  }

  /** The review an argument names: a review id, a proposal URI, or the active diff editor's. */
  target(arg: unknown): string | undefined {
    if (typeof arg === "string" && this.reviews.has(arg)) return arg;
    const uri = arg instanceof vscode.Uri ? arg : activeProposal();
    const ref = uri ? parseProposalUri(uri) : undefined;
    if (ref && this.reviews.has(ref.approvalId)) return ref.approvalId;
    return this.reviews.size === 1 ? [...this.reviews.keys()][0] : undefined;
  }

  /** Land the reviewed text. A conflict (the workspace moved meanwhile) writes nothing. */
  async apply(id: string | undefined): Promise<void> {
    const review = id ? this.reviews.get(id) : undefined;
    if (!review) {
      void vscode.window.showInformationMessage("lovia: no worktree review is open.");
      return;
    }
    const landing = await this.confirmProtected(review);
    if (!landing) return; // the review stays open
    const edits = review.diffs.flatMap((d, i) => {
      const now = this.proposals.currentText(review.id, i);
      if (landing.paths && !landing.paths.includes(d.path)) return [];
      return now !== undefined && now !== d.newText ? [{ path: d.path, newText: now }] : [];
    });
    let result: WorktreeApplyResult;
    try {
      result = await this.client.worktreeApply({ runId: review.runId, edits, alsoDiscard: review.alsoDiscard, ...landing });
    } catch (err) {
      void vscode.window.showErrorMessage(`lovia: applying “${review.title}” failed: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    await this.close(review.id);
    review.done(result);
    if (!result.applied) {
      await this.showConflicts(review.runId, review.title, result.conflicts);
      return;
    }
    this.runs.drop([review.runId, ...result.discarded]);
    void this.runs.refresh();
    const discarded = result.discarded.length > 0 ? `; discarded ${result.discarded.length} other run${result.discarded.length === 1 ? "" : "s"}` : "";
    void vscode.window.showInformationMessage(`lovia: applied “${review.title}” (${result.files.length} file${result.files.length === 1 ? "" : "s"})${discarded}.`);
  }

  /**
   * The protected files the run changed need the user's yes after the warning (modal): with
   * it they are sent as `confirmProtected`; "without them" lands the other files only; no
   * answer lands nothing. Undefined: do not apply.
   */
  private async confirmProtected(review: Review): Promise<{ confirmProtected?: string[]; paths?: string[] } | undefined> {
    const guarded = protectedOf(review.files);
    if (guarded.length === 0) return {};
    const rest = review.files.filter((f) => !guarded.includes(f.path)).map((f) => f.path);
    const choices = rest.length > 0 ? [APPLY_PROTECTED, APPLY_WITHOUT_PROTECTED] : [APPLY_PROTECTED];
    const choice = await vscode.window.showWarningMessage(
      `lovia: “${review.title}” changes protected files: ${guarded.join(", ")}`,
      { modal: true, detail: protectedWarning(guarded) },
      ...choices,
    );
    if (choice === APPLY_PROTECTED) return { confirmProtected: guarded };
    if (choice === APPLY_WITHOUT_PROTECTED) return { paths: rest };
    return undefined;
  }

  async cancel(id: string | undefined): Promise<void> {
    const review = id ? this.reviews.get(id) : undefined;
    if (!review) return;
    await this.close(review.id);
    review.done(undefined);
  }

  /** Put one hunk of a reviewed file back as the workspace has it. */
  async rejectHunk(id: string, index: number, hunkId: string): Promise<void> {
    const d = this.reviews.get(id)?.diffs[index];
    if (!d) return;
    const current = this.proposals.currentText(id, index) ?? d.newText;
    const next = withoutHunks(d.oldText, current, index, new Set([hunkId]));
    const uri = proposalUri(id, index, "proposed", d.path);
    const doc = await vscode.workspace.openTextDocument(uri);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), next);
    await vscode.workspace.applyEdit(edit);
    this.lensEmitter.fire();
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const ref = document.uri.scheme === PROPOSED_SCHEME ? parseProposalUri(document.uri) : undefined;
    const review = ref ? this.reviews.get(ref.approvalId) : undefined;
    const d = review?.diffs[ref!.index];
    if (!review || !ref || !d) return [];
    const top = new vscode.Range(0, 0, 0, 0);
    const lenses = [
      new vscode.CodeLens(top, { title: "$(check) Apply Reviewed Changes", command: "lovia.agents.applyReviewed", arguments: [review.id] }),
      new vscode.CodeLens(top, { title: "$(close) Cancel Review", command: "lovia.agents.cancelReview", arguments: [review.id] }),
    ];
    const hunks = hunksOf(d.oldText, this.proposals.currentText(review.id, ref.index) ?? d.newText, ref.index);
    hunks.forEach((hunk, i) => {
      const at = new vscode.Range(hunk.newStart, 0, hunk.newStart, 0);
      lenses.push(new vscode.CodeLens(at, { title: `$(discard) Reject hunk ${i + 1} of ${hunks.length}`, command: "lovia.agents.rejectHunk", arguments: [review.id, ref.index, hunk.id] }));
    });
    return lenses;
  }

  dispose(): void {
    for (const review of this.reviews.values()) review.done(undefined);
    this.reviews.clear();
    this.lensEmitter.dispose();
  }

  // -------------------------------------------------------------------------

  private async reveal(id: string): Promise<void> {
    const review = this.reviews.get(id);
    if (!review) return;
    for (let i = 0; i < review.diffs.length; i++) {
      const d = review.diffs[i]!;
      const guarded = review.files.some((f) => f.path === d.path && f.protected);
      const title = `${path.basename(d.path)} (lovia: apply “${review.title}” — review${guarded ? ", protected" : ""})`;
      await vscode.commands.executeCommand("vscode.diff", proposalUri(id, i, "original", d.path), proposalUri(id, i, "proposed", d.path), title, { preview: false });
    }
  }

  /** Conflicts: each file's workspace text against the run's version; nothing was written. */
  private async showConflicts(runId: string, title: string, conflicts: readonly WorktreeFile[]): Promise<void> {
    await this.files.openDiffs(runId, conflicts, `“${title}”`);
    const list = conflicts.map((f) => `${f.path}${f.reason ? ` (${f.reason})` : ""}`).join(", ");
    void vscode.window.showWarningMessage(
      `lovia: “${title}” conflicts with your workspace in ${conflicts.length} file${conflicts.length === 1 ? "" : "s"}: ${list}. Nothing was applied; resolve the files (or save them) and apply again, or keep the run's branch.`,
    );
  }

  private async close(id: string): Promise<void> {
    // An edited proposal is saved into its own (virtual) file first: closing never asks.
    for (const doc of vscode.workspace.textDocuments) {
      const ref = doc.uri.scheme === PROPOSED_SCHEME ? parseProposalUri(doc.uri) : undefined;
      if (ref?.approvalId === id && doc.isDirty) await doc.save();
    }
    const tabs: vscode.Tab[] = [];
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        if (tab.input instanceof vscode.TabInputTextDiff && parseProposalUri(tab.input.modified)?.approvalId === id) tabs.push(tab);
      }
    }
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs, true);
    this.reviews.delete(id);
    this.proposals.delete(id);
    void vscode.commands.executeCommand("setContext", REVIEW_CONTEXT, this.reviews.size > 0);
    this.lensEmitter.fire();
  }
}

/** The protected files applying would change (an unchanged one is not written). */
function protectedOf(files: readonly WorktreeFile[]): string[] {
  return files.filter((f) => f.protected && f.verdict !== "unchanged").map((f) => f.path);
}

function activeProposal(): vscode.Uri | undefined {
  const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  return input instanceof vscode.TabInputTextDiff ? input.modified : undefined;
}
