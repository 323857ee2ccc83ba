import { describe, expect, it } from "vitest";
import { approvalParams } from "../../src/protocol";

const EDIT = { path: "/w/a.py", newText: "x = 1\n" };

describe("approvalParams: a message only with a rejection, edits only with an allow", () => {
  it("keeps a rejection's reason, trimmed, and never sends edits with it", () => {
    expect(approvalParams({ runId: "r", approvalId: "a", decision: "reject_once", message: "  not that file ", edits: [EDIT] })).toEqual({
      runId: "r",
      approvalId: "a",
      decision: "reject_once",
      message: "not that file",
    });
    expect(approvalParams({ runId: "r", approvalId: "a", decision: "reject_always", message: "   " })).toEqual({ runId: "r", approvalId: "a", decision: "reject_always" });
  });

  it("keeps an allow's edits when there are some, and never a message", () => {
    expect(approvalParams({ runId: "r", approvalId: "a", decision: "allow_once", message: "why", edits: [EDIT] })).toEqual({
      runId: "r",
      approvalId: "a",
      decision: "allow_once",
      edits: [EDIT],
    });
    expect(approvalParams({ runId: "r", approvalId: "a", decision: "allow_always", edits: [] })).toEqual({ runId: "r", approvalId: "a", decision: "allow_always" });
  });
});
