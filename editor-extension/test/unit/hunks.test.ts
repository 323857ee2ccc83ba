import { describe, expect, it } from "vitest";
import { applyHunks, hunksOf, linesOf } from "../../src/diff/hunks";

const OLD = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
const NEW = OLD.replace("line 2\n", "line two\n").replace("line 19\n", "line nineteen\nline 19b\n");

describe("hunks of a proposed edit", () => {
  it("finds each changed region with its place in both texts", () => {
    const hunks = hunksOf(OLD, NEW);
    expect(hunks.map((h) => [h.oldStart, h.newStart, h.removed, h.added])).toEqual([
      [1, 1, ["line 2\n"], ["line two\n"]],
      [18, 18, ["line 19\n"], ["line nineteen\n", "line 19b\n"]],
    ]);
  });

  it("accepting some hunks gives the exact text", () => {
    expect(applyHunks(OLD, NEW, new Set())).toBe(NEW);
    expect(applyHunks(OLD, NEW, new Set([0, 1]))).toBe(OLD);
    expect(applyHunks(OLD, NEW, new Set([1]))).toBe(OLD.replace("line 2\n", "line two\n"));
    expect(applyHunks(OLD, NEW, new Set([0]))).toBe(OLD.replace("line 19\n", "line nineteen\nline 19b\n"));
  });

  it("keeps a missing final newline and handles a new file", () => {
    expect(linesOf("a\nb")).toEqual(["a\n", "b"]);
    expect(applyHunks("a\nb", "a\nc", new Set([0]))).toBe("a\nb");
    expect(applyHunks("a\nb", "a\nc", new Set())).toBe("a\nc");
    expect(hunksOf(null, "x\ny\n")).toHaveLength(1);
    expect(applyHunks(null, "x\ny\n", new Set([0]))).toBe("");
  });
});
