/**
 * The transcript as the webview draws it: a flat list of rows, each with a stable `key` and a
 * `rev` that changes whenever the row would render differently. A row is a transcript item of
 * one run (plus what the panel joins onto it) or a piece the panel adds (a run's footer).
 *
 * Subagents nest: after the tool call that spawned a child come the child's status row and
 * then the child's own rows, each naming the row it is drawn inside (`nestedIn`). The list
 * stays flat, so a child's streamed chunk patches the child's one row like any other.
 *
 * Pure and free of `vscode`, shared by the extension (which projects and diffs rows, see
 * viewSync.ts) and the webview (which renders them). New row kinds go here: add the type to
 * {@link Row}, produce it in {@link projectRun}, render it in media/render.ts.
 */
import type { ApprovalItem, ChildRef, RunView, ToolItem, TranscriptItem, UserItem } from "../protocol/runView";
import { lineDiff, withContext, type DiffLine } from "../diff/lineDiff";
import type { FinalStatus, ToolContent } from "../protocol/types";

interface RowBase {
  /** Unique across the session: `<runId>:<type>:<id>`. */
  key: string;
  runId: string;
  rev: number;
  /** The row this one is drawn inside (a subagent's), instead of the transcript itself. */
  nestedIn?: string;
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

/** A message of the user; a prompt whose turn took a restore point offers "Restore to here". */
export type UserRow = UserItem &
  RowBase & {
    /** The run's restore point (`checkpoint.created`), on its prompt only. */
    checkpointId?: string;
  };

/** An approval whose tool call the run never announced (drawn as its own card). */
export type ItemRow = (Exclude<TranscriptItem, ToolItem | UserItem> & RowBase) | UserRow | ToolRow;

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

/**
 * A subagent, under the tool call that spawned it (or, when the run names no such call, at the
 * end of its parent's rows): one live line, its Stop and steer box, and a collapsible transcript
 * of the child's rows (which name this row in `nestedIn`).
 */
export interface SubagentRow extends RowBase {
  type: "subagent";
  /** The child's run id (`runId` is the parent's). */
  id: string;
  taskId: string;
  name: string;
  prompt: string;
  /** A child waiting for approval or being stopped is still "running". */
  status: "running" | FinalStatus;
  /** What it does now while it runs; its summary once it finished. */
  step: string;
  /** Input plus output tokens so far, when known. */
  tokens?: number;
}

export type Row = ItemRow | FooterRow | ChangesRow | SubagentRow;
export type RowType = Row["type"];

export function rowKey(runId: string, type: string, id: string): string {
  return `${runId}:${type}:${id}`;
}

/** Per-run memo of projected rows: an item whose rev did not change keeps its row object. */
export class RowProjector {
  private readonly cache = new Map<string, { rev: number; nestedIn: string | undefined; rows: Row[]; byKey: Map<string, Row> }>();
  private readonly subagents = new Map<string, SubagentRow>();

  /** The rows of one run, in order (recomputed only when the run's rev moved). */
  rows(run: RunView, nestedIn?: string): Row[] {
    const held = this.cache.get(run.runId);
    if (held && held.rev === run.rev && held.nestedIn === nestedIn) return held.rows;
    const byKey = new Map<string, Row>();
    const rows = projectRun(run, held?.nestedIn === nestedIn ? held?.byKey : undefined, nestedIn);
    for (const r of rows) byKey.set(r.key, r);
    this.cache.set(run.runId, { rev: run.rev, nestedIn, rows, byKey });
    return rows;
  }

  /**
   * Rows of several runs (a session), oldest run first, with each run's subagents (`children`:
   * the child runs the view has) nested under the calls that spawned them.
   */
  session(runs: RunView[], children: RunView[] = []): Row[] {
    if (!runs.some((r) => r.children.length > 0)) {
      if (runs.length === 1) return this.rows(runs[0]!);
      const out: Row[] = [];
      for (const run of runs) for (const r of this.rows(run)) out.push(r);
      return out;
    }
    const byId = new Map(children.map((r) => [r.runId, r]));
    const out: Row[] = [];
    const seen = new Set(runs.map((r) => r.runId));
    for (const run of runs) this.withChildren(run, undefined, byId, seen, out);
    return out;
  }

  /** Drop what is memoised for runs no longer shown. */
  forget(keep: (runId: string) => boolean): void {
    for (const id of [...this.cache.keys()]) if (!keep(id)) this.cache.delete(id);
    for (const [key, row] of [...this.subagents]) if (!keep(row.runId)) this.subagents.delete(key);
  }

  private withChildren(run: RunView, nestedIn: string | undefined, byId: Map<string, RunView>, seen: Set<string>, out: Row[]): void {
    const rows = this.rows(run, nestedIn);
    if (run.children.length === 0) {
      for (const r of rows) out.push(r);
      return;
    }
    const spawns = new Map<string, ChildRef[]>();
    const calls = new Set<string>();
    for (const r of rows) if (r.type === "tool") calls.add(r.toolCallId);
    const unplaced: ChildRef[] = [];
    for (const ref of run.children) {
      if (ref.toolCallId !== null && calls.has(ref.toolCallId)) {
        const list = spawns.get(ref.toolCallId);
        if (list) list.push(ref);
        else spawns.set(ref.toolCallId, [ref]);
      } else unplaced.push(ref);
    }
    let placed = false;
    const placeRest = () => {
      placed = true;
      for (const ref of unplaced) this.child(run, ref, nestedIn, byId, seen, out);
    };
    for (const r of rows) {
      if (!placed && (r.type === "changes" || r.type === "footer")) placeRest();
      out.push(r);
      if (r.type === "tool") for (const ref of spawns.get(r.toolCallId) ?? []) this.child(run, ref, r.key, byId, seen, out);
    }
    if (!placed) placeRest();
  }

  private child(parent: RunView, ref: ChildRef, nestedIn: string | undefined, byId: Map<string, RunView>, seen: Set<string>, out: Row[]): void {
    if (seen.has(ref.runId)) return;
    seen.add(ref.runId);
    const run = byId.get(ref.runId);
    const row = this.subagentRow(parent, ref, run, nestedIn);
    out.push(row);
    if (run) this.withChildren(run, row.key, byId, seen, out);
  }

  /** A subagent's status row; the same object (and rev) while nothing it shows changed. */
  private subagentRow(parent: RunView, ref: ChildRef, run: RunView | undefined, nestedIn: string | undefined): SubagentRow {
    const key = rowKey(parent.runId, "subagent", ref.runId);
    const raw = run?.status ?? ref.status;
    const status = raw === "awaiting_approval" || raw === "cancelling" ? "running" : raw;
    const step = status === "running" ? (run?.activity ?? "starting") : (ref.summary ?? "");
    const tokens = run?.usage ? run.usage.inputTokens + run.usage.outputTokens : 0;
    const old = this.subagents.get(key);
    if (
      old &&
      old.status === status &&
      old.step === step &&
      (old.tokens ?? 0) === tokens &&
      old.nestedIn === nestedIn &&
      old.taskId === ref.taskId &&
      old.name === ref.name &&
      old.prompt === ref.prompt
    ) {
      return old;
    }
    const row: SubagentRow = { type: "subagent", id: ref.runId, key, runId: parent.runId, rev: (old?.rev ?? 0) + 1, taskId: ref.taskId, name: ref.name, prompt: ref.prompt, status, step };
    if (tokens > 0) row.tokens = tokens;
    if (nestedIn !== undefined) row.nestedIn = nestedIn;
    this.subagents.set(key, row);
    return row;
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
 * `nestedIn`: the subagent row a child run's rows are drawn inside.
 */
export function projectRun(run: RunView, previous?: Map<string, Row>, nestedIn?: string): Row[] {
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
        if (nestedIn !== undefined) row.nestedIn = nestedIn;
        rows.push(row);
      }
      continue;
    }
    if (old && old.rev === item.rev) rows.push(old);
    else {
      const row = nest({ ...item, key, runId: run.runId } as ItemRow, nestedIn);
      // checkpoint.created bumps the prompt's rev, so the cached row is drawn again with it.
      if (row.type === "user" && row.source === "prompt" && run.checkpoint) row.checkpointId = run.checkpoint.checkpointId;
      rows.push(row);
    }
  }
  if (run.status !== "running") {
    const key = rowKey(run.runId, "changes", "files");
    const old = previous?.get(key);
    if (old && old.type === "changes" && old.rev === run.rev) rows.push(old);
    else {
      const files = changedFiles(run);
      if (files.length > 0) rows.push(nest({ type: "changes", id: "files", key, runId: run.runId, rev: run.rev, files }, nestedIn));
    }
  }
  // A subagent is resumed with its parent: no resume offer of its own.
  if (run.status !== "running" && run.resumable && nestedIn === undefined) {
    const key = rowKey(run.runId, "footer", "resume");
    const old = previous?.get(key);
    rows.push(old && old.type === "footer" && old.status === run.status ? old : nest({ type: "footer", id: "resume", key, runId: run.runId, rev: run.rev, status: run.status, resumable: true }, nestedIn));
  }
  return rows;
}

function nest<T extends Row>(row: T, nestedIn: string | undefined): T {
  if (nestedIn !== undefined) row.nestedIn = nestedIn;
  return row;
}

