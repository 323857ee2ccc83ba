/**
 * What the extension posts to the chat webview: the first message after a (re)load is a
 * reset with every row; after that each message carries only what changed since the last one
 * — chrome fields, inserted/removed rows, and per-row field patches, streamed text as appends.
 * A streamed chunk therefore costs a few hundred bytes however long the session is.
 *
 * Pure (no `vscode`): the chat view calls {@link ViewSync.next} with the controller's state
 * and posts what it returns; tests and the benchmark drive it directly.
 */
import type { OutputChunk, RunView } from "../protocol/runView";
import type { ActiveRunView, ChatViewState, ChromeField, ChromeState, PatchMessage, RowPatch, SyncMessage } from "./messages";
import { RowProjector, type Row } from "./rows";

/** What the webview holds of one row: its fields as last sent. */
interface Mirror {
  rev: number;
  fields: Record<string, unknown>;
  /** JSON of object-valued fields as last sent. */
  json: Map<string, string>;
}

/** Fields every row has that never change for a key. */
const FIXED = new Set(["key", "runId", "type", "id"]);

function activeRun(state: ChatViewState): RunView | undefined {
  if (state.liveRunId) return state.runs.find((r) => r.runId === state.liveRunId);
  return state.runs[state.runs.length - 1];
}

export function chromeOf(state: ChatViewState): ChromeState {
  // Subagents' runs are rows (nested under their spawning calls), never chrome.
  const { runs: _runs, childRuns: _children, ...rest } = state;
  const chrome: ChromeState = rest;
  const run = activeRun(state);
  if (run) {
    const active: ActiveRunView = { runId: run.runId, status: run.status, todos: run.todos };
    if (run.activity !== undefined) active.activity = run.activity;
    if (run.usage !== undefined) active.usage = run.usage;
    chrome.active = active;
  }
  // The server's sum covers runs this view never loaded; without it, the runs shown.
  const costs = state.runs.map((r) => r.usage?.costUsd).filter((c): c is number => typeof c === "number");
  const serverSum = run?.usage?.sessionCostUsd;
  if (typeof serverSum === "number") chrome.sessionCostUsd = serverSum;
  else if (costs.length > 0) chrome.sessionCostUsd = costs.reduce((a, b) => a + b, 0);
  return chrome;
}

/** The output appended after the first `skip` of `total` characters, as chunks. */
function outputTail(output: OutputChunk[], count: number): OutputChunk[] {
  const out: OutputChunk[] = [];
  let need = count;
  for (let i = output.length - 1; i >= 0 && need > 0; i--) {
    const c = output[i]!;
    if (c.text.length <= need) {
      out.unshift({ stream: c.stream, text: c.text });
      need -= c.text.length;
    } else {
      out.unshift({ stream: c.stream, text: c.text.slice(c.text.length - need) });
      need = 0;
    }
  }
  return out;
}

function keptChars(output: OutputChunk[]): number {
  let n = 0;
  for (const c of output) n += c.text.length;
  return n;
}

function snapshot(row: Row): Mirror {
  const fields: Record<string, unknown> = { ...row };
  const json = new Map<string, string>();
  for (const [k, v] of Object.entries(row)) {
    if (k === "output") continue; // tracked by outputTotal
    if (v !== null && typeof v === "object") json.set(k, JSON.stringify(v));
  }
  return { rev: row.rev, fields, json };
}

/** The patch that turns `old` into `row` (a row whose rev moved is always redrawn). */
export function diffRow(old: Mirror, row: Row): RowPatch {
  const patch: RowPatch = { key: row.key, rev: row.rev };
  const now = row as unknown as Record<string, unknown>;
  for (const field of Object.keys(now)) {
    if (FIXED.has(field) || field === "rev" || field === "output") continue;
    const a = old.fields[field];
    const b = now[field];
    if (b === undefined) continue;
    if (field === "outputTotal") {
      if (a === b) continue;
      const tool = row as Extract<Row, { type: "tool" }>;
      const grown = b as number - ((a as number | undefined) ?? 0);
      if (grown > 0 && grown <= keptChars(tool.output) && (a as number | undefined) !== undefined) {
        patch.output = outputTail(tool.output, grown);
      } else {
        (patch.set ??= {}).output = tool.output.map((c) => ({ ...c }));
        patch.set.outputTruncated = tool.outputTruncated;
        patch.set.outputTotal = b;
      }
      continue;
    }
    if (b !== null && typeof b === "object") {
      const j = JSON.stringify(b);
      if (old.json.get(field) === j) continue;
      (patch.set ??= {})[field] = b;
      continue;
    }
    if (a === b) continue;
    if (typeof a === "string" && typeof b === "string" && a.length > 0 && b.length > a.length && b.startsWith(a)) {
      (patch.append ??= {})[field] = b.slice(a.length);
    } else {
      (patch.set ??= {})[field] = b;
    }
  }
  for (const field of Object.keys(old.fields)) {
    if (!FIXED.has(field) && old.fields[field] !== undefined && now[field] === undefined) {
      (patch.unset ??= []).push(field);
    }
  }
  return patch;
}

/**
 * Keeps a mirror of what the webview has and turns each new state into the smallest message
 * that brings the webview up to date.
 */
export class ViewSync {
  private readonly projector = new RowProjector();
  private mirrors = new Map<string, Mirror>();
  private order: string[] = [];
  private chromeJson = new Map<string, string>();
  private needsReset = true;

  /** The webview (re)loaded: the next message is a full reset. */
  reset(): void {
    this.needsReset = true;
  }

  /** The message that brings the webview from what it has to `state`; undefined: nothing changed. */
  next(state: ChatViewState): SyncMessage | undefined {
    const rows = this.projector.session(state.runs, state.childRuns);
    const shown = new Set<string>();
    for (const r of state.runs) shown.add(r.runId);
    for (const r of state.childRuns) shown.add(r.runId);
    this.projector.forget((id) => shown.has(id));
    const chrome = chromeOf(state);
    if (this.needsReset) return this.fullReset(chrome, rows);
    const message: PatchMessage = { type: "patch" };
    let changed = this.diffChrome(chrome, message);
    const structure = this.diffOrder(rows, message);
    if (structure === undefined) return this.fullReset(chrome, rows);
    changed ||= structure;
    const patches: RowPatch[] = [];
    for (const row of rows) {
      const mirror = this.mirrors.get(row.key);
      if (!mirror) {
        this.mirrors.set(row.key, snapshot(row));
        continue;
      }
      if (mirror.rev === row.rev) continue;
      patches.push(diffRow(mirror, row));
      this.mirrors.set(row.key, snapshot(row));
    }
    if (patches.length > 0) {
      message.patch = patches;
      changed = true;
    }
    return changed ? message : undefined;
  }

  private fullReset(chrome: ChromeState, rows: Row[]): SyncMessage {
    this.needsReset = false;
    this.mirrors = new Map(rows.map((r) => [r.key, snapshot(r)]));
    this.order = rows.map((r) => r.key);
    this.chromeJson = new Map(Object.entries(chrome).map(([k, v]) => [k, JSON.stringify(v)]));
    return { type: "reset", chrome, rows };
  }

  private diffChrome(chrome: ChromeState, message: PatchMessage): boolean {
    let changed = false;
    const seen = new Set<string>();
    for (const [k, v] of Object.entries(chrome)) {
      if (v === undefined) continue;
      seen.add(k);
      const j = JSON.stringify(v);
      if (this.chromeJson.get(k) === j) continue;
      this.chromeJson.set(k, j);
      (message.chrome ??= {} as Partial<ChromeState>)[k as ChromeField] = v as never;
      changed = true;
    }
    for (const k of [...this.chromeJson.keys()]) {
      if (!seen.has(k)) {
        this.chromeJson.delete(k);
        (message.unsetChrome ??= []).push(k as ChromeField);
        changed = true;
      }
    }
    return changed;
  }

  /**
   * Inserts and removals that turn the webview's order into the new one. Rows that kept their
   * place need nothing; undefined means rows moved (rare: a reset is simpler and cheaper).
   */
  private diffOrder(rows: Row[], message: PatchMessage): boolean | undefined {
    const old = this.order;
    // The common case: the old order is a prefix (rows were appended, or nothing changed).
    let same = old.length <= rows.length;
    for (let i = 0; same && i < old.length; i++) same = old[i] === rows[i]!.key;
    if (same) {
      if (old.length === rows.length) return false;
      const insert = [];
      for (let i = old.length; i < rows.length; i++) insert.push({ after: i === 0 ? null : rows[i - 1]!.key, row: rows[i]! });
      message.insert = insert;
      for (let i = old.length; i < rows.length; i++) this.order.push(rows[i]!.key);
      return true;
    }
    const now = new Set(rows.map((r) => r.key));
    const before = new Set(old);
    const kept = old.filter((k) => now.has(k));
    const keptNow = rows.filter((r) => before.has(r.key)).map((r) => r.key);
    for (let i = 0; i < kept.length; i++) if (kept[i] !== keptNow[i]) return undefined;
    const remove = old.filter((k) => !now.has(k));
    if (remove.length > 0) {
      message.remove = remove;
      for (const k of remove) this.mirrors.delete(k);
    }
    const insert = [];
    for (let i = 0; i < rows.length; i++) {
      if (!before.has(rows[i]!.key)) insert.push({ after: i === 0 ? null : rows[i - 1]!.key, row: rows[i]! });
    }
    if (insert.length > 0) message.insert = insert;
    this.order = rows.map((r) => r.key);
    return true;
  }
}
