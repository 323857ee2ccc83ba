/** A small line diff for showing proposed edits in the chat (LCS; large inputs fall back). */

export interface DiffLine {
  op: " " | "+" | "-";
  text: string;
}

/** Above this many cells in the LCS table, show the change as whole-file replacement. */
export const MAX_DIFF_CELLS = 400_000;

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

export function lineDiff(oldText: string | null, newText: string): DiffLine[] {
  return diffArrays(splitLines(oldText ?? ""), splitLines(newText));
}

/** The line diff of two arrays of lines (compared as they are). */
export function diffArrays(a: string[], b: string[]): DiffLine[] {
  // Trim the common prefix and suffix first: most edits are local.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const head: DiffLine[] = a.slice(0, start).map((text) => ({ op: " ", text }));
  const tail: DiffLine[] = a.slice(endA).map((text) => ({ op: " ", text }));
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const n = midA.length;
  const m = midB.length;
  let middle: DiffLine[];
  if (n * m > MAX_DIFF_CELLS) {
    middle = [...midA.map((text) => ({ op: "-" as const, text })), ...midB.map((text) => ({ op: "+" as const, text }))];
  } else {
    // lcs[i][j] = LCS length of midA[i..] and midB[j..]
    const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i]![j] = midA[i] === midB[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
      }
    }
    middle = [];
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (midA[i] === midB[j]) {
        middle.push({ op: " ", text: midA[i]! });
        i++;
        j++;
      } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) {
        middle.push({ op: "-", text: midA[i++]! });
      } else {
        middle.push({ op: "+", text: midB[j++]! });
      }
    }
    while (i < n) middle.push({ op: "-", text: midA[i++]! });
    while (j < m) middle.push({ op: "+", text: midB[j++]! });
  }
  return [...head, ...middle, ...tail];
}

/** Keep changed lines with `context` unchanged lines around them; gaps become `null`. */
export function withContext<T extends { op: DiffLine["op"] }>(lines: T[], context = 3): (T | null)[] {
  const keep = new Array<boolean>(lines.length).fill(false);
  lines.forEach((l, idx) => {
    if (l.op !== " ") for (let k = Math.max(0, idx - context); k <= Math.min(lines.length - 1, idx + context); k++) keep[k] = true;
  });
  const out: (T | null)[] = [];
  let skipped = false;
  lines.forEach((l, idx) => {
    if (keep[idx]) {
      if (skipped) out.push(null);
      skipped = false;
      out.push(l);
    } else {
      skipped = true;
    }
  });
  if (skipped && out.length > 0) out.push(null);
  return out;
}
