/**
 * "Restore to here" and "Compare with checkpoint": the preview of a restore point in a
 * multi-file diff view, a confirmation, the restore, and editors brought in line with the
 * disk. Free of `vscode`: the editor side is a {@link RestoreUi}. A restore that writes a
 * protected file (editor, git, CI or agent configuration) says so in its question, and only
 * an accepted question confirms those files to the server (`confirmProtected`).
 */
import type { LoviaClient } from "../protocol/client";
import type { CheckpointInfo, RestoreFile, RestoreFilesResult, RestorePreviewResult } from "../protocol/types";
import { protectedWarning } from "../approvals/protectedWarning";

/** The scheme of the read-only documents that hold a checkpoint's (or the current) text. */
export const CHECKPOINT_SCHEME = "lovia-checkpoint";

/** A virtual document: `lovia-checkpoint:<path>?<query>`, its text kept by the UI. */
export interface VirtualDoc {
  path: string;
  query: string;
}

/** One row of the multi-file diff view; a missing side is a file that is added or removed. */
export interface ChangeEntry {
  /** The workspace file (a `file:` URI). */
  resource: string;
  original?: VirtualDoc | { file: string };
  modified?: VirtualDoc | { file: string };
}

export interface ChangesView {
  title: string;
  entries: ChangeEntry[];
  /** Text of each virtual document, by {@link docKey}. */
  contents: Map<string, string>;
}

export type RestoreChoice = "filesAndConversation" | "filesOnly" | "overwriteAll";

export interface RestoreQuestion {
  /** One line: what would be restored. */
  title: string;
  /** What is kept, if anything (files changed by hand). */
  note?: string;
  /** The warning for protected files the restore writes (they are named in `protectedPaths`). */
  warning?: string;
  /** Protected files the restore writes: confirmed to the server when the user accepts. */
  protectedPaths: string[];
  /** The first one is what "Confirm" means. */
  choices: { choice: RestoreChoice; label: string; detail: string }[];
}

/** What the flow needs from the editor. */
export interface RestoreUi {
  showChanges(view: ChangesView): Promise<void>;
  /** Ask once; the answer, or undefined when dismissed (or the diff view was closed). */
  confirm(question: RestoreQuestion, view: ChangesView): Promise<RestoreChoice | undefined>;
  closeChanges(view: ChangesView): Promise<void>;
  /** Open editors of these files (restored on disk) show the disk's text. */
  syncEditors(files: { path: string; uri: string; deleted: boolean }[], overwriteUnsaved: boolean): Promise<void>;
  info(message: string): void;
}

export const CHOICE_LABELS: Record<RestoreChoice, string> = {
  filesAndConversation: "Restore Files & Conversation",
  filesOnly: "Restore Files Only",
  overwriteAll: "Restore All, Overwrite My Changes",
};

export function docKey(doc: VirtualDoc): string {
  return `${doc.path}?${doc.query}`;
}

function virtual(file: RestoreFile, side: "now" | "restored" | "checkpoint", checkpointId: string): VirtualDoc {
  return { path: file.path, query: `${side}=${encodeURIComponent(checkpointId)}` };
}

function shown(file: RestoreFile, text: string | null | undefined): string {
  if (!file.textOmitted) return text ?? "";
  return file.binary ? "(binary file: not shown)\n" : "(too large to show here)\n";
}

function baseName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

function quoted(point: CheckpointInfo): string {
  const label = point.label.length > 60 ? `${point.label.slice(0, 59)}…` : point.label;
  return `“${label}”`;
}

/** The restore as a diff: each file now (left) and as the restore leaves it (right). */
export function restoreView(preview: RestorePreviewResult): ChangesView {
  const id = preview.checkpoint.checkpointId;
  const contents = new Map<string, string>();
  const entries = preview.files.map((file): ChangeEntry => {
    const entry: ChangeEntry = { resource: file.uri };
    if (file.action !== "create") {
      entry.original = virtual(file, "now", id);
      contents.set(docKey(entry.original), shown(file, file.oldText));
    }
    if (file.action !== "delete") {
      entry.modified = virtual(file, "restored", id);
      contents.set(docKey(entry.modified), shown(file, file.newText));
    }
    return entry;
  });
  return { title: `Restore to ${quoted(preview.checkpoint)}`, entries, contents };
}

/** What changed since the checkpoint: the checkpoint's text (left), the file as it is (right). */
export function compareView(preview: RestorePreviewResult): ChangesView {
  const id = preview.checkpoint.checkpointId;
  const contents = new Map<string, string>();
  const entries = preview.files.map((file): ChangeEntry => {
    const entry: ChangeEntry = { resource: file.uri };
    // The preview's `newText` is the checkpoint's version; `delete` = created since then.
    if (file.action !== "delete") {
      const doc = virtual(file, "checkpoint", id);
      entry.original = doc;
      contents.set(docKey(doc), shown(file, file.newText));
    }
    if (file.action !== "create") entry.modified = { file: file.uri };
    return entry;
  });
  return { title: `Changes since ${quoted(preview.checkpoint)}`, entries, contents };
}

export function restoreQuestion(preview: RestorePreviewResult, allowConversation: boolean): RestoreQuestion {
  const n = preview.files.length;
  const kept = preview.files.filter((f) => f.handChanged);
  const label = quoted(preview.checkpoint);
  const files = `${n} file${n === 1 ? "" : "s"}`;
  const guarded = preview.files.filter((f) => f.protected && f.action !== "delete").map((f) => f.path);
  const question: RestoreQuestion = {
    title: n === 0 ? `The files are as they were before ${label}` : `Restore ${files} to how they were before ${label}?`,
    choices: [],
    protectedPaths: guarded,
  };
  // The folder too: `.vscode/settings.json`, not a bare `settings.json`.
  if (guarded.length > 0) question.warning = protectedWarning(guarded.map((p) => p.split(/[\\/]/).slice(-2).join("/")));
  let names = "";
  if (kept.length > 0) {
    names = kept.slice(0, 3).map((f) => baseName(f.path)).join(", ") + (kept.length > 3 ? ", …" : "");
    question.note = `${kept.length} changed by you since then ${kept.length === 1 ? "is" : "are"} kept: ${names}`;
  }
  const keeping = kept.length > 0 ? `; keeps ${names}` : "";
  const conversation = "removes this message and what followed; its text comes back into the composer";
  if (allowConversation) {
    question.choices.push({
      choice: "filesAndConversation",
      label: n === 0 ? "Restore Conversation" : CHOICE_LABELS.filesAndConversation,
      detail: n === 0 ? `Only ${conversation}` : `Restores ${files}${keeping}, and ${conversation}`,
    });
  }
  if (n > 0) question.choices.push({ choice: "filesOnly", label: CHOICE_LABELS.filesOnly, detail: `Restores ${files}${keeping}; the conversation stays` });
  if (kept.length > 0) {
    question.choices.push({
      choice: "overwriteAll",
      label: CHOICE_LABELS.overwriteAll,
      detail: `Also overwrites ${names} (unsaved editor changes of them are discarded)${allowConversation ? `, and ${conversation}` : ""}`,
    });
  }
  return question;
}

export class RestoreFlow {
  constructor(
    private readonly client: Pick<LoviaClient, "restorePreview" | "restore">,
    private readonly ui: RestoreUi,
  ) {}

  /**
   * Preview, confirm, restore. Resolves with the server's result, or undefined when the user
   * cancelled. Request errors (a live run, an unknown checkpoint) are thrown.
   */
  async restoreTo(checkpointId: string, opts: { conversation?: boolean } = {}): Promise<RestoreFilesResult | undefined> {
    const allowConversation = opts.conversation !== false;
    const preview = await this.client.restorePreview({ checkpointId });
    const view = restoreView(preview);
    if (view.entries.length > 0) await this.ui.showChanges(view);
    let choice: RestoreChoice | undefined;
    const question = restoreQuestion(preview, allowConversation && preview.checkpoint.kind === "turn");
    try {
      choice = await this.ui.confirm(question, view);
    } finally {
      if (view.entries.length > 0) await this.ui.closeChanges(view);
    }
    if (choice === undefined) return undefined;
    const result = await this.client.restore({
      checkpointId,
      conversation: choice === "filesAndConversation" || (choice === "overwriteAll" && allowConversation && preview.checkpoint.kind === "turn"),
      forceAll: choice === "overwriteAll",
      ...(question.protectedPaths.length > 0 ? { confirmProtected: question.protectedPaths } : {}),
    });
    if (result.restored.length > 0) {
      await this.ui.syncEditors(
        result.restored.map((f) => ({ path: f.path, uri: f.uri, deleted: f.status === "deleted" })),
        choice === "overwriteAll",
      );
    }
    if (result.kept.length > 0) {
      this.ui.info(`lovia: kept ${result.kept.length} file${result.kept.length === 1 ? "" : "s"} you changed: ${result.kept.map(baseName).join(", ")}.`);
    }
    return result;
  }

  /** Open the changes made since the checkpoint (the files as they are now, editable). */
  async compare(checkpointId: string): Promise<void> {
    const preview = await this.client.restorePreview({ checkpointId });
    const view = compareView(preview);
    if (view.entries.length === 0) {
      this.ui.info(`lovia: nothing changed since ${quoted(preview.checkpoint)}.`);
      return;
    }
    await this.ui.showChanges(view);
  }
}
