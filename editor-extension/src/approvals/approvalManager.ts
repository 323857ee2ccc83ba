import * as path from "node:path";
import * as vscode from "vscode";
import type { EventStore } from "../protocol/eventStore";
import type { ApprovalItem, RunView } from "../protocol/runView";
import type { ApprovalChoice, ApproveParams, EditedFile } from "../protocol/types";
import { hunksOf, withoutHunks, type Hunk } from "../diff/hunks";
import { parseProposalUri, PROPOSED_SCHEME, proposalUri, type ProposalContentProvider } from "./proposals";

/** Sends a decision as `lovia/approve`'s params (the chat controller's `approve`). */
export type Decide = (params: ApproveParams) => Promise<boolean>;

export const PENDING_APPROVAL_CONTEXT = "lovia.pendingApproval";

interface Tracked {
  runId: string;
  item: ApprovalItem;
  diffOpened: boolean;
  modalShown: boolean;
  /** Hunks the user kept in the diff editor, by `Hunk.id`. */
  kept?: Set<string>;
}

/**
 * Inline approval of file edits: opens VS Code's diff editor (original ↔ proposed) for
 * `approval.requested` events carrying a diff, offers Accept / Accept always / Reject in
 * the editor title and as CodeLens, asks reads outside the workspace in a modal, and
 * closes the diff tabs once `approval.resolved` arrives.
 */
export class ApprovalManager implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly tracked = new Map<string, Tracked>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly codeLensEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.codeLensEmitter.event;
  private hadPending = false;

  constructor(
    private readonly store: EventStore,
    private readonly proposals: ProposalContentProvider,
    private readonly decide: Decide,
  ) {
    this.disposables.push(store.onDidChange((runId) => this.sync(runId)));
  }

  /** Pending approvals, oldest first. */
  pending(): { runId: string; item: ApprovalItem }[] {
    return [...this.tracked.values()].filter((t) => t.item.state === "pending").map((t) => ({ runId: t.runId, item: t.item }));
  }

  /** Reconcile with the store after a change to one run. */
  sync(runId: string): void {
    const run = this.store.get(runId);
    if (!run) return;
    for (const item of run.items) {
      if (item.type !== "approval") continue;
      const known = this.tracked.get(item.approvalId);
      if (item.state === "pending") {
        if (!known) {
          const t: Tracked = { runId, item, diffOpened: false, modalShown: false };
          this.tracked.set(item.approvalId, t);
          this.onRequested(run, t);
        } else {
          known.item = item;
        }
      } else if (known) {
        this.tracked.delete(item.approvalId);
        void this.onResolved(item.approvalId);
      }
    }
    // Runs that ended with approvals never resolved (interrupted): drop their tabs too.
    if (run.status !== "running") {
      for (const [id, t] of this.tracked) {
        if (t.runId === runId) {
          this.tracked.delete(id);
          void this.onResolved(id);
        }
      }
    }
    this.updateContext();
  }

  /** Open (or reveal) the diff editor(s) of an approval. */
  async openDiff(approvalId: string): Promise<void> {
    const t = this.tracked.get(approvalId) ?? this.findInStore(approvalId);
    const diffs = t?.item.diff;
    if (!t || !diffs || diffs.length === 0) return;
    this.proposals.set(approvalId, diffs);
    t.diffOpened = true;
    for (let i = 0; i < diffs.length; i++) {
      const d = diffs[i]!;
      const left = proposalUri(approvalId, i, "original", d.path);
      const right = proposalUri(approvalId, i, "proposed", d.path);
      const verb = d.oldText === null ? "create" : "change";
      const title = `${path.basename(d.path)} (lovia: ${verb} — review)`;
      await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: false, preserveFocus: false });
    }
    this.codeLensEmitter.fire();
  }

  /**
   * Decide from a command: the argument is an approval id (CodeLens, chat), a URI (editor
   * title menu), or nothing (keybinding, palette: the active diff, else the only pending one).
   */
  async decideFromCommand(arg: unknown, decision: ApprovalChoice): Promise<boolean> {
    const approvalId = this.resolveTarget(arg);
    if (!approvalId) {
      const many = this.pending().length > 1;
      void vscode.window.showInformationMessage(
        many
          ? "lovia: several approvals are pending — decide from their diff editor or the chat card."
          : "lovia: no pending approval to decide.",
      );
      return false;
    }
    const t = this.tracked.get(approvalId);
    if (!t) return false;
    if (!t.item.options.some((o) => o.decision === decision)) {
      // An option this approval does not offer (e.g. "always" for a change to editor
      // configuration): say so instead of sending it.
      void vscode.window.showWarningMessage(
        t.item.warning
          ? "lovia: a change to editor or agent configuration is approved one change at a time."
          : "lovia: this approval does not offer that choice.",
      );
      return false;
    }
    const edits = decision.startsWith("allow") ? this.edits(t) : [];
    return this.decide({ runId: t.runId, approvalId, decision, edits });
  }

  /** What the user changed of an approval's proposal in the diff editor. */
  editsFor(approvalId: string): EditedFile[] {
    const t = this.tracked.get(approvalId);
    return t ? this.edits(t) : [];
  }

  /** The files whose proposal the user changed in the diff editor (edited or hunks rejected). */
  edits(t: Tracked): EditedFile[] {
    const out: EditedFile[] = [];
    (t.item.diff ?? []).forEach((d, i) => {
      const now = this.proposals.currentText(t.item.approvalId, i);
      if (now !== undefined && now !== d.newText) out.push({ path: d.path, newText: now });
    });
    return out;
  }

  /** The hunks of one proposed file as it is now in the diff editor. */
  private hunks(t: Tracked, index: number): Hunk[] {
    const d = t.item.diff?.[index];
    if (!d) return [];
    return hunksOf(d.oldText, this.proposals.currentText(t.item.approvalId, index) ?? d.newText, index);
  }

  /** The file (its index in the diff) that has the hunk `hunkId` now. */
  private fileOf(t: Tracked, hunkId: string): number | undefined {
    const index = (t.item.diff ?? []).findIndex((_, i) => this.hunks(t, i).some((h) => h.id === hunkId));
    return index < 0 ? undefined : index;
  }

  /** Put one hunk of the proposal back as it was (the diff editor's buffer changes). */
  async rejectHunk(approvalId: string, hunkId: string): Promise<void> {
    const t = this.tracked.get(approvalId);
    const index = t ? this.fileOf(t, hunkId) : undefined;
    const d = index === undefined ? undefined : t?.item.diff?.[index];
    if (!t || index === undefined || !d) return;
    const current = this.proposals.currentText(approvalId, index) ?? d.newText;
    const next = withoutHunks(d.oldText, current, index, new Set([hunkId]));
    const uri = proposalUri(approvalId, index, "proposed", d.path);
    const doc = await vscode.workspace.openTextDocument(uri);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), next);
    await vscode.workspace.applyEdit(edit);
    this.codeLensEmitter.fire();
    await this.settleIfDecided(t);
  }

  /** Keep one hunk as proposed; once every hunk is kept or rejected, the change is decided. */
  async keepHunk(approvalId: string, hunkId: string): Promise<void> {
    const t = this.tracked.get(approvalId);
    if (!t || this.fileOf(t, hunkId) === undefined) return;
    (t.kept ??= new Set()).add(hunkId);
    this.codeLensEmitter.fire();
    await this.settleIfDecided(t);
  }

  private async settleIfDecided(t: Tracked): Promise<void> {
    const diffs = t.item.diff ?? [];
    const left = diffs.flatMap((_, i) => this.hunks(t, i).filter((h) => !t.kept?.has(h.id)));
    if (left.length > 0 || t.item.state !== "pending") return;
    const anyKept = diffs.some((_, i) => this.hunks(t, i).length > 0);
    if (!anyKept) {
      await this.decide({ runId: t.runId, approvalId: t.item.approvalId, decision: "reject_once", message: "The user rejected every hunk of this change." });
      return;
    }
    await this.decide({ runId: t.runId, approvalId: t.item.approvalId, decision: "allow_once", edits: this.edits(t) });
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const ref = parseProposalUri(document.uri);
    if (!ref || document.uri.scheme !== PROPOSED_SCHEME) return [];
    const t = this.tracked.get(ref.approvalId);
    if (!t || t.item.state !== "pending") return [];
    const range = new vscode.Range(0, 0, 0, 0);
    const label = (decision: ApprovalChoice, fallback: string) =>
      t.item.options.find((o) => o.decision === decision)?.label ?? fallback;
    const lenses: vscode.CodeLens[] = [
      new vscode.CodeLens(range, { title: `$(check) ${label("allow_once", "Accept")}`, command: "lovia.approval.accept", arguments: [ref.approvalId] }),
    ];
    if (t.item.options.some((o) => o.decision === "allow_always")) {
      lenses.push(
        new vscode.CodeLens(range, { title: `$(check-all) ${label("allow_always", "Accept always")}`, command: "lovia.approval.acceptAlways", arguments: [ref.approvalId] }),
      );
    }
    lenses.push(
      new vscode.CodeLens(range, { title: `$(close) ${label("reject_once", "Reject")}`, command: "lovia.approval.reject", arguments: [ref.approvalId] }),
    );
    // Each hunk: keep it as proposed, or put it back as it was.
    const hunks = this.hunks(t, ref.index);
    hunks.forEach((hunk, i) => {
      const at = new vscode.Range(hunk.newStart, 0, hunk.newStart, 0);
      const kept = t.kept?.has(hunk.id) === true;
      const name = `hunk ${i + 1} of ${hunks.length}`;
      lenses.push(
        new vscode.CodeLens(at, { title: kept ? `$(pass-filled) Kept ${name}` : `$(check) Keep ${name}`, command: "lovia.approval.keepHunk", arguments: [ref.approvalId, hunk.id] }),
        new vscode.CodeLens(at, { title: `$(discard) Reject ${name}`, command: "lovia.approval.rejectHunk", arguments: [ref.approvalId, hunk.id] }),
      );
    });
    return lenses;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.codeLensEmitter.dispose();
    this.tracked.clear();
  }

  // -------------------------------------------------------------------------

  private onRequested(run: RunView, t: Tracked): void {
    const item = t.item;
    if (item.diff && item.diff.length > 0) {
      this.proposals.set(item.approvalId, item.diff);
      const open = vscode.workspace.getConfiguration("lovia").get<boolean>("openDiffOnApproval", true);
      if (open) void this.openDiff(item.approvalId);
    } else if (item.action === "read.outside") {
      t.modalShown = true;
      void this.askModal(run.runId, item);
    }
  }

  private async askModal(runId: string, item: ApprovalItem): Promise<void> {
    const labels = item.options.map((o) => o.label);
    const detail = [item.detail, ...item.paths].filter(Boolean).join("\n");
    const choice = await vscode.window.showWarningMessage(item.title, { modal: true, detail }, ...labels);
    // Dismissed: the approval stays pending on the chat card.
    if (choice === undefined) return;
    const option = item.options.find((o) => o.label === choice);
    if (option && this.tracked.get(item.approvalId)?.item.state === "pending") {
      await this.decide({ runId, approvalId: item.approvalId, decision: option.decision });
    }
  }

  private async onResolved(approvalId: string): Promise<void> {
    // An edited proposal is saved into its own (virtual) file first: closing never asks.
    for (const doc of vscode.workspace.textDocuments) {
      const ref = doc.uri.scheme === PROPOSED_SCHEME ? parseProposalUri(doc.uri) : undefined;
      if (ref?.approvalId === approvalId && doc.isDirty) await doc.save();
    }
    await this.closeTabs(approvalId);
    this.proposals.delete(approvalId);
    this.codeLensEmitter.fire();
  }

  /** Close every diff tab that shows this approval's proposal. */
  async closeTabs(approvalId: string): Promise<void> {
    const tabs: vscode.Tab[] = [];
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        const input = tab.input;
        if (input instanceof vscode.TabInputTextDiff) {
          const ref = parseProposalUri(input.modified);
          if (ref && ref.approvalId === approvalId) tabs.push(tab);
        }
      }
    }
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs, true);
  }

  private resolveTarget(arg: unknown): string | undefined {
    if (typeof arg === "string" && this.tracked.has(arg)) return arg;
    if (arg instanceof vscode.Uri) {
      const ref = parseProposalUri(arg);
      if (ref) return ref.approvalId;
    }
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    if (input instanceof vscode.TabInputTextDiff) {
      const ref = parseProposalUri(input.modified);
      if (ref && this.tracked.has(ref.approvalId)) return ref.approvalId;
    }
    const pending = this.pending();
    return pending.length === 1 ? pending[0]!.item.approvalId : undefined;
  }

  private findInStore(approvalId: string): Tracked | undefined {
    for (const run of this.store.all()) {
      const item = run.items.find((i): i is ApprovalItem => i.type === "approval" && i.approvalId === approvalId);
      if (item) return { runId: run.runId, item, diffOpened: false, modalShown: false };
    }
    return undefined;
  }

  private updateContext(): void {
    const has = this.pending().length > 0;
    if (has !== this.hadPending) {
      this.hadPending = has;
      void vscode.commands.executeCommand("setContext", PENDING_APPROVAL_CONTEXT, has);
    }
    this.codeLensEmitter.fire();
  }
}
