import { describe, expect, it } from "vitest";
import { lineDiff, MAX_DIFF_CELLS, withContext } from "../../src/diff/lineDiff";

describe("lineDiff (chat diff rendering)", () => {
  it("marks changed lines and keeps the common ones", () => {
    expect(lineDiff("a\nb\nc\n", "a\nB\nc\nd\n")).toEqual([
      { op: " ", text: "a" },
      { op: "-", text: "b" },
      { op: "+", text: "B" },
      { op: " ", text: "c" },
      { op: "+", text: "d" },
    ]);
  });

  it("treats a null old text as a new file", () => {
    expect(lineDiff(null, "x\ny")).toEqual([
      { op: "+", text: "x" },
      { op: "+", text: "y" },
    ]);
    expect(lineDiff("same\n", "same\n")).toEqual([{ op: " ", text: "same" }]);
  });

  it("falls back to remove-all/add-all for huge changes", () => {
    const n = Math.ceil(Math.sqrt(MAX_DIFF_CELLS)) + 1;
    const a = Array.from({ length: n }, (_, i) => `a${i}`).join("\n");
    const b = Array.from({ length: n }, (_, i) => `b${i}`).join("\n");
    const d = lineDiff(a, b);
    expect(d.filter((l) => l.op === "-")).toHaveLength(n);
    expect(d.filter((l) => l.op === "+")).toHaveLength(n);
    expect(d[0]!.op).toBe("-");
  });

  it("keeps context lines around changes and marks gaps", () => {
    const old = Array.from({ length: 20 }, (_, i) => `l${i}`).join("\n");
    const next = old.replace("l10", "L10");
    const ctx = withContext(lineDiff(old, next), 2);
    expect(ctx.map((l) => (l === null ? "…" : `${l.op}${l.text}`))).toEqual(["…", " l8", " l9", "-l10", "+L10", " l11", " l12", "…"]);
  });
});
