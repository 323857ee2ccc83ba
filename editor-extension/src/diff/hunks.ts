/**
 * The hunks of a proposed edit, and the text that results from accepting some of them.
 * Lines keep their line ends, so the result is exact (a missing final newline included).
 * Pure: used by the chat card (media/) and the diff editor (src/approvals/).
 */
import { diffArrays, withContext } from "./lineDiff";

export interface Hunk {
  index: number;
  /**
   * The hunk's one id, the same on the chat card, in the diff editor and its commands: its
   * file and what it changes (not its place, which moves when another hunk is put back).
   */
  id: string;
  /** 0-based line of the hunk in the old text, and in the new one. */
  oldStart: number;
  newStart: number;
  removed: string[];
  added: string[];
}

export interface ReviewLine {
  op: " " | "+" | "-";
  /** The line without its line end. */
  text: string;
  /** The hunk a changed line belongs to. */
  hunk?: number;
}

/** `text` as lines, each with its line end. */
export function linesOf(text: string | null): string[] {
  return text ? (text.match(/[^\n]*\n|[^\n]+$/g) ?? []) : [];
}

/** The line diff with each changed line numbered by its hunk (a run of changed lines). */
function numbered(oldText: string | null, newText: string): { op: " " | "+" | "-"; text: string; hunk: number }[] {
  let hunk = -1;
  let inHunk = false;
  return diffArrays(linesOf(oldText), linesOf(newText)).map((line) => {
    if (line.op === " ") inHunk = false;
    else if (!inHunk) {
      inHunk = true;
      hunk++;
    }
    return { op: line.op, text: line.text, hunk };
  });
}

/** A short stable tag of a hunk's content (FNV-1a, 32 bits). */
function tag(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/** The hunks of file `file` (its index in the approval's diff), each with its {@link Hunk.id}. */
export function hunksOf(oldText: string | null, newText: string, file = 0): Hunk[] {
  const hunks: Hunk[] = [];
  let oldLine = 0;
  let newLine = 0;
  for (const line of numbered(oldText, newText)) {
    if (line.op !== " " && hunks.length === line.hunk) hunks.push({ index: line.hunk, id: "", oldStart: oldLine, newStart: newLine, removed: [], added: [] });
    if (line.op === "-") hunks[line.hunk]!.removed.push(line.text);
    if (line.op === "+") hunks[line.hunk]!.added.push(line.text);
    if (line.op !== "+") oldLine++;
    if (line.op !== "-") newLine++;
  }
  // Identical changes in one file are told apart by their order.
  const seen = new Map<string, number>();
  for (const hunk of hunks) {
    const content = tag(`${hunk.removed.join("")}\u0000${hunk.added.join("")}`);
    const n = seen.get(content) ?? 0;
    seen.set(content, n + 1);
    hunk.id = `${file}:${content}:${n}`;
  }
  return hunks;
}

/** The new text of file `file` with the hunks whose id is in `rejected` put back. */
export function withoutHunks(oldText: string | null, newText: string, file: number, rejected: ReadonlySet<string>): string {
  const indices = hunksOf(oldText, newText, file).filter((h) => rejected.has(h.id)).map((h) => h.index);
  return indices.length === 0 ? newText : applyHunks(oldText, newText, new Set(indices));
}

/** The new text with the hunks in `rejected` (by index) put back as they were. */
export function applyHunks(oldText: string | null, newText: string, rejected: ReadonlySet<number>): string {
  return numbered(oldText, newText)
    .filter((line) => line.op === " " || (line.op === "-") === rejected.has(line.hunk))
    .map((line) => line.text)
    .join("");
}

/** Lines to show for reviewing hunks: changes with `context` lines around; gaps are null. */
export function reviewLines(oldText: string | null, newText: string, context = 3): (ReviewLine | null)[] {
  const lines = numbered(oldText, newText).map((line): ReviewLine => {
    const text = line.text.replace(/\r?\n$/, "");
    return line.op === " " ? { op: " ", text } : { op: line.op, text, hunk: line.hunk };
  });
  return withContext(lines, context);
}
