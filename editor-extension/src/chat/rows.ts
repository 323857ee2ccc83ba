/**
 * The transcript as the webview draws it: a flat list of rows, each with a stable `key` and a
 * `rev` that changes whenever the row would render differently. A row is a transcript item of
 * one run (plus what the panel joins onto it) or a piece the panel adds (a run's footer).
 *
 * Pure and free of `vscode`, shared by the extension (which projects and diffs rows, see
 * viewSync.ts) and the webview (which renders them). New row kinds go here: add the type to
 * {@link Row}, produce it in {@link projectRun}, render it in media/render.ts.
 */
import type { ApprovalItem, RunView, ToolItem, TranscriptItem } from "../protocol/runView";
import { lineDiff, withContext, type DiffLine } from "../diff/lineDiff";
import type { ToolContent } from "../protocol/types";

interface RowBase {
  /** Unique across the session: `<runId>:<type>:<id>`. */
  key: string;
  runId: string;
  rev: number;
}

/** A tool result's text as drawn: the first {@link MAX_SHOWN_TEXT} characters. */
export interface ShownText {
  type: "text";
  text: string;
  /** Non-empty lines of the whole text. */
  lines: number;
  /** Characters left out. */
  more: number;
}

/** A tool result's diff as drawn: changed lines with context, not the file texts. */
export interface ShownDiff {
  type: "diff";
  path: string;
  uri: string;
  created: boolean;
  added: number;
  removed: number;
  /** The first {@link MAX_SHOWN_DIFF_LINES}; null is a gap. */
  lines: (DiffLine | null)[];
  more: number;
}

export type ShownContent = ShownText | ShownDiff;

/** Bounds on what a finished tool's row carries (the transcript is for reading, not a copy). */
export const MAX_SHOWN_TEXT = 16_000;
export const MAX_SHOWN_DIFF_LINES = 80;

export type ToolRow = Omit<ToolItem, "content"> &
  RowBase & {
    content: ShownContent[];
    /** An approval of this call is pending (its card says "awaiting approval"). */
    awaiting: boolean;
    /** The call's (latest) approval: drawn inside the tool's card, never as a second card. */
    approval?: ApprovalItem;
  };

/** An approval whose tool call the run never announced (drawn as its own card). */
export type ItemRow = (Exclude<TranscriptItem, ToolItem> & RowBase) | ToolRow;

/** One file a finished run changed, from its first original to its last text. */
export interface ChangedFile {
  path: string;
  uri: string;
  added: number;
  removed: number;
  created: boolean;
}

/** "Files changed" under a finished run that edited files. */
export interface ChangesRow extends RowBase {
  type: "changes";
  id: string;
  files: ChangedFile[];
}

/** Under a finished run that can be resumed. */
export interface FooterRow extends RowBase {
  type: "footer";
  id: string;
  status: RunView["status"];
  resumable: boolean;
}

export type Row = ItemRow | FooterRow | ChangesRow;
export type RowType = Row["type"];

export function rowKey(runId: string, type: string, id: string): string {
  return `${runId}:${type}:${id}`;
}

/** Per-run memo of projected rows: an item whose rev did not change keeps its row object. */
export class RowProjector {
  private readonly cache = new Map<string, { rev: number; rows: Row[]; byKey: Map<string, Row> }>();

  /** The rows of one run, in order (recomputed only when the run's rev moved). */
  rows(run: RunView): Row[] {
    const held = this.cache.get(run.runId);
    if (held && held.rev === run.rev) return held.rows;
    const byKey = new Map<string, Row>();
    const rows = projectRun(run, held?.byKey);
    for (const r of rows) byKey.set(r.key, r);
    this.cache.set(run.runId, { rev: run.rev, rows, byKey });
    return rows;
  }

  /** Rows of several runs (a session), oldest run first. */
  session(runs: RunView[]): Row[] {
    if (runs.length === 1) return this.rows(runs[0]!);
    const out: Row[] = [];
    for (const run of runs) for (const r of this.rows(run)) out.push(r);
    return out;
  }

  forget(keep: (runId: string) => boolean): void {
    for (const id of [...this.cache.keys()]) if (!keep(id)) this.cache.delete(id);
  }
}

function shown(content: ToolContent[]): ShownContent[] {
  return content.map((c): ShownContent => {
    if (c.type === "text") {
      const lines = c.text === "" ? 0 : c.text.split("\n").filter((l) => l.trim() !== "").length;
      const text = c.text.length > MAX_SHOWN_TEXT ? c.text.slice(0, MAX_SHOWN_TEXT) : c.text;
      return { type: "text", text, lines, more: c.text.length - text.length };
    }
    const all = withContext(lineDiff(c.oldText ?? null, c.newText));
    let added = 0;
    let removed = 0;
    for (const l of all) {
      if (l?.op === "+") added++;
      else if (l?.op === "-") removed++;
    }
    const lines = all.slice(0, MAX_SHOWN_DIFF_LINES);
    return { type: "diff", path: c.path, uri: c.uri, created: c.oldText === null || c.oldText === undefined, added, removed, lines, more: all.length - lines.length };
  });
}

/** The latest approval of each tool call. */
function approvalsByCall(run: RunView): Map<string, ApprovalItem> {
  const out = new Map<string, ApprovalItem>();
  for (const i of run.items) if (i.type === "approval") out.set(i.toolCallId, i);
  return out;
}

/** What each file looked like before the run's first edit and after its last completed one. */
export function runChanges(run: RunView): { path: string; uri: string; oldText: string | null; newText: string }[] {
  const files = new Map<string, { path: string; uri: string; oldText: string | null; newText: string }>();
  for (const item of run.items) {
    if (item.type !== "tool" || item.status !== "completed") continue;
    for (const c of item.content) {
      if (c.type !== "diff") continue;
      const held = files.get(c.path);
      if (held) held.newText = c.newText;
      else files.set(c.path, { path: c.path, uri: c.uri, oldText: c.oldText ?? null, newText: c.newText });
    }
  }
  return [...files.values()];
}

function changedFiles(run: RunView): ChangedFile[] {
  const out: ChangedFile[] = [];
  for (const f of runChanges(run)) {
    let added = 0;
    let removed = 0;
    for (const line of lineDiff(f.oldText, f.newText)) {
      if (line.op === "+") added++;
      else if (line.op === "-") removed++;
    }
    if (added > 0 || removed > 0 || f.oldText === null) out.push({ path: f.path, uri: f.uri, added, removed, created: f.oldText === null });
  }
  return out;
}

/**
 * A run's rows. `previous` (the last projection, by key) lets an unchanged item keep its row
 * object, so diffing a long run costs a map lookup per row. An approval is drawn inside its
 * tool call's card; a finished run that changed files ends with a "files changed" row.
 */
export function projectRun(run: RunView, previous?: Map<string, Row>): Row[] {
  const approvals = approvalsByCall(run);
  const tools = new Set<string>();
  for (const i of run.items) if (i.type === "tool") tools.add(i.toolCallId);
  const rows: Row[] = [];
  for (const item of run.items) {
    if (item.type === "approval" && tools.has(item.toolCallId)) continue; // inside its tool card
    const key = rowKey(run.runId, item.type, item.id);
    const old = previous?.get(key);
    if (item.type === "tool") {
      const approval = approvals.get(item.toolCallId);
      const rev = Math.max(item.rev, approval?.rev ?? 0);
      if (old && old.rev === rev && old.type === "tool") rows.push(old);
      else {
        const row: ToolRow = { ...item, content: shown(item.content), key, runId: run.runId, rev, awaiting: approval?.state === "pending" };
        if (approval) row.approval = { ...approval };
        rows.push(row);
      }
      continue;
    }
    if (old && old.rev === item.rev) rows.push(old);
    else rows.push({ ...item, key, runId: run.runId } as ItemRow);
  }
  if (run.status !== "running") {
    const key = rowKey(run.runId, "changes", "files");
    const old = previous?.get(key);
    if (old && old.type === "changes" && old.rev === run.rev) rows.push(old);
    else {
      const files = changedFiles(run);
      if (files.length > 0) rows.push({ type: "changes", id: "files", key, runId: run.runId, rev: run.rev, files });
    }
  }
  if (run.status !== "running" && run.resumable) {
    const key = rowKey(run.runId, "footer", "resume");
    const old = previous?.get(key);
    rows.push(old && old.type === "footer" && old.status === run.status ? old : { type: "footer", id: "resume", key, runId: run.runId, rev: run.rev, status: run.status, resumable: true });
  }
  return rows;
}

