import { describe, expect, it } from "vitest";
import { applyHunks, hunksOf, linesOf, withoutHunks } from "../../src/diff/hunks";

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

describe("a hunk's one id", () => {
  it("names the file and the change, not its place, so it survives another hunk being put back", () => {
    const [first, second] = hunksOf(OLD, NEW, 3);
    expect(first!.id.startsWith("3:")).toBe(true);
    expect(first!.id).not.toBe(second!.id);
    // Putting the first hunk back moves the second one's lines, not its id.
    const afterFirst = withoutHunks(OLD, NEW, 3, new Set([first!.id]));
    expect(afterFirst).toBe(OLD.replace("line 19\n", "line nineteen\nline 19b\n"));
    expect(hunksOf(OLD, afterFirst, 3).map((h) => h.id)).toEqual([second!.id]);
    // The same change in another file is another hunk.
    expect(hunksOf(OLD, NEW, 4)[0]!.id).not.toBe(first!.id);
  });

  it("tells identical changes in one file apart by their order", () => {
    const twice = "a\nx\nb\nx\nc\n";
    const ids = hunksOf(twice, twice.replaceAll("x\n", "y\n"), 0).map((h) => h.id);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    expect(withoutHunks(twice, twice.replaceAll("x\n", "y\n"), 0, new Set([ids[1]!]))).toBe("a\ny\nb\nx\nc\n");
  });

  it("putting back no hunk (or an unknown id) keeps the proposal", () => {
    expect(withoutHunks(OLD, NEW, 0, new Set())).toBe(NEW);
    expect(withoutHunks(OLD, NEW, 0, new Set(["9:00000000:0"]))).toBe(NEW);
  });
});
