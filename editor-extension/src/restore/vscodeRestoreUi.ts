/**
 * The VS Code side of restoring: checkpoint texts as read-only documents, the multi-file
 * diff view (`vscode.changes`), the confirmation (the diff view's title actions, and a quick
 * pick that stays open while the diff is reviewed), and open editors brought in line with the
 * restored files.
 */
import * as vscode from "vscode";
import {
  CHECKPOINT_SCHEME,
  docKey,
  type ChangeEntry,
  type ChangesView,
  type RestoreChoice,
  type RestoreQuestion,
  type RestoreUi,
  type VirtualDoc,
} from "./restoreFlow";

/** The context key set while a restore waits for its confirmation (title actions show). */
export const RESTORE_PENDING_KEY = "lovia.restorePending";

/** How long an open, unmodified editor gets to reload a restored file by itself. */
const RELOAD_GRACE_MS = 1500;

interface Pending {
  view: ChangesView;
  question: RestoreQuestion;
  resolve(choice: RestoreChoice | undefined): void;
  pick: vscode.QuickPick<ChoiceItem>;
}

type ChoiceItem = vscode.QuickPickItem & { choice?: RestoreChoice };

/** The diff view's tab: VS Code labels it with the title plus a file count ("… (4 files)"). */
function isTabOf(label: string, view: ChangesView): boolean {
  return label === view.title || label.startsWith(`${view.title} (`);
}

export class VsCodeRestoreUi implements RestoreUi, vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private pending: Pending | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor() {
    this.subscriptions.push(
      this.changed,
      // Closing the diff view cancels the restore it previews.
      vscode.window.tabGroups.onDidChangeTabs((e) => {
        const pending = this.pending;
        if (pending && e.closed.some((tab) => isTabOf(tab.label, pending.view))) this.answer(undefined);
      }),
    );
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(docKey({ path: uri.path, query: uri.query })) ?? "";
  }

  private uriOf(doc: VirtualDoc): vscode.Uri {
    return vscode.Uri.from({ scheme: CHECKPOINT_SCHEME, path: doc.path, query: doc.query });
  }

  private side(side: ChangeEntry["original"]): vscode.Uri | undefined {
    if (side === undefined) return undefined;
    return "file" in side ? vscode.Uri.parse(side.file, true) : this.uriOf(side);
  }

  async showChanges(view: ChangesView): Promise<void> {
    for (const [key, text] of view.contents) this.texts.set(key, text);
    for (const entry of view.entries) {
      for (const side of [entry.original, entry.modified]) {
        if (side !== undefined && !("file" in side)) this.changed.fire(this.uriOf(side));
      }
    }
    const resources = view.entries.map((e) => [vscode.Uri.parse(e.resource, true), this.side(e.original), this.side(e.modified)]);
    await vscode.commands.executeCommand("vscode.changes", view.title, resources);
  }

  confirm(question: RestoreQuestion, view: ChangesView): Promise<RestoreChoice | undefined> {
    this.answer(undefined); // one restore at a time: a newer one replaces an unanswered one
    return new Promise((resolve) => {
      // A quick pick rather than a notification: it stays while the diff is reviewed (focus
      // may move to the diff) and goes away whichever way the restore is answered.
      const pick = vscode.window.createQuickPick<ChoiceItem>();
      pick.title = `lovia: ${question.title}`;
      const notes = [question.warning && `⚠ ${question.warning}`, question.note].filter(Boolean).join(" · ");
      pick.placeholder = notes || "Review the changes, then choose (or ✓ Confirm Restore in the diff view's title)";
      pick.ignoreFocusOut = true;
      pick.items = [
        ...question.choices.map((c) => ({ label: c.label, detail: c.detail, choice: c.choice })),
        { label: "Cancel", detail: "Restore nothing" },
      ];
      pick.onDidAccept(() => this.answer(pick.selectedItems[0]?.choice));
      pick.onDidHide(() => {
        if (this.pending?.pick === pick) this.answer(undefined); // Escape
      });
      this.pending = { view, question, resolve, pick };
      void vscode.commands.executeCommand("setContext", RESTORE_PENDING_KEY, true);
      pick.show();
    });
  }

  /** A title action of the diff view, the quick pick (or a command) answers the confirmation. */
  answer(choice: RestoreChoice | undefined): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = undefined;
    void vscode.commands.executeCommand("setContext", RESTORE_PENDING_KEY, false);
    pending.pick.hide();
    pending.pick.dispose();
    const offered = choice === undefined || pending.question.choices.some((c) => c.choice === choice);
    pending.resolve(offered ? choice : undefined);
  }

  /** The choice "Confirm" stands for: the first one offered (files & conversation, or files). */
  defaultChoice(): RestoreChoice | undefined {
    return this.pending?.question.choices[0]?.choice;
  }

  async closeChanges(view: ChangesView): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => isTabOf(t.label, view));
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs, true);
  }

  async syncEditors(files: { path: string; uri: string; deleted: boolean }[], overwriteUnsaved: boolean): Promise<void> {
    const open = new Map(vscode.workspace.textDocuments.map((d) => [d.uri.toString(), d]));
    const stale: vscode.TextDocument[] = [];
    const disk = new Map<string, string>();
    for (const file of files) {
      if (file.deleted) continue;
      const uri = vscode.Uri.parse(file.uri, true);
      const doc = open.get(uri.toString());
      if (!doc || (doc.isDirty && !overwriteUnsaved)) continue;
      let text: string;
      try {
        text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
      } catch {
        continue;
      }
      if (doc.getText() === text) continue;
      disk.set(uri.toString(), text);
      stale.push(doc);
    }
    if (stale.length === 0) return;
    // An unmodified editor reloads the file by itself once it sees the change.
    const deadline = Date.now() + RELOAD_GRACE_MS;
    let waiting = stale.filter((d) => !d.isDirty);
    while (waiting.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      waiting = waiting.filter((d) => d.getText() !== disk.get(d.uri.toString()));
    }
    for (const doc of stale) {
      if (doc.getText() === disk.get(doc.uri.toString())) continue;
      // Revert = read the disk again (for an unsaved buffer: the user chose to overwrite it).
      await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: false });
      await vscode.commands.executeCommand("workbench.action.files.revert");
    }
  }

  info(message: string): void {
    void vscode.window.showInformationMessage(message);
  }

  dispose(): void {
    this.answer(undefined);
    for (const s of this.subscriptions) s.dispose();
  }
}
