/**
 * The webview's copy of the panel: the chrome state and every row, folded from the
 * extension's reset and patch messages. It tells the renderer what changed, so only those
 * rows (and chrome sections) are drawn again.
 */
import type { ChromeField, ChromeState, RowPatch, SyncMessage } from "../src/chat/messages";
import type { Row } from "../src/chat/rows";
import { appendOutput, type ToolItem } from "../src/protocol/runView";

export interface Change {
  /** A reset: draw everything. */
  reset: boolean;
  /** Chrome fields that changed. */
  chrome: Set<ChromeField>;
  /** Rows whose content changed (not new ones). */
  rows: Set<string>;
  inserted: string[];
  removed: string[];
}

export class PanelModel {
  chrome: ChromeState | undefined;
  readonly rows = new Map<string, Row>();
  order: string[] = [];
  private index = new Map<string, number>();

  /** Position of a row in the transcript (-1: unknown). */
  indexOf(key: string): number {
    return this.index.get(key) ?? -1;
  }

  apply(msg: SyncMessage): Change {
    const change: Change = { reset: false, chrome: new Set(), rows: new Set(), inserted: [], removed: [] };
    if (msg.type === "reset") {
      change.reset = true;
      this.chrome = msg.chrome;
      this.rows.clear();
      this.order = [];
      for (const row of msg.rows) {
        this.rows.set(row.key, row);
        this.order.push(row.key);
      }
      this.reindex();
      return change;
    }
    if (!this.chrome) return change; // a patch before any reset: wait for one
    if (msg.chrome) {
      Object.assign(this.chrome, msg.chrome);
      for (const k of Object.keys(msg.chrome)) change.chrome.add(k as ChromeField);
    }
    for (const k of msg.unsetChrome ?? []) {
      delete this.chrome[k];
      change.chrome.add(k);
    }
    let structural = false;
    if (msg.remove && msg.remove.length > 0) {
      const gone = new Set(msg.remove);
      for (const k of gone) this.rows.delete(k);
      this.order = this.order.filter((k) => !gone.has(k));
      change.removed.push(...gone);
      structural = true;
    }
    for (const { after, row } of msg.insert ?? []) {
      this.rows.set(row.key, row);
      change.inserted.push(row.key);
      if (!structural && after === (this.order[this.order.length - 1] ?? null)) {
        this.index.set(row.key, this.order.length);
        this.order.push(row.key);
      } else {
        const at = after === null ? 0 : this.order.indexOf(after) + 1;
        this.order.splice(at, 0, row.key);
        structural = true;
      }
    }
    if (structural) this.reindex();
    for (const p of msg.patch ?? []) {
      const row = this.rows.get(p.key);
      if (!row) continue;
      applyPatch(row, p);
      change.rows.add(p.key);
    }
    return change;
  }

  private reindex(): void {
    this.index = new Map(this.order.map((k, i) => [k, i]));
  }
}

export function applyPatch(row: Row, p: RowPatch): void {
  const r = row as unknown as Record<string, unknown>;
  r.rev = p.rev;
  if (p.set) Object.assign(r, p.set);
  for (const k of p.unset ?? []) delete r[k];
  for (const [k, text] of Object.entries(p.append ?? {})) r[k] = String(r[k] ?? "") + text;
  if (p.output) {
    const tool = row as unknown as ToolItem;
    for (const chunk of p.output) appendOutput(tool, chunk);
  }
}
